"""ttscale.running.launch: a resumed run with nothing left starts no engine. The engine is the SIMULATED policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

import pytest

import ttscale.engine
from ttscale.cli import main
from ttscale.testing import SimulatedArithmeticPolicy


def test_resuming_a_finished_run_rewrites_its_summary_without_starting_an_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def simulated(config: Any) -> SimulatedArithmeticPolicy:
        return SimulatedArithmeticPolicy(seed=1)

    async def refuse(config: Any) -> NoReturn:
        raise AssertionError("an engine was started for a run with nothing left to do")

    out = tmp_path / "run"
    monkeypatch.setattr(ttscale.engine, "start_engine", simulated)
    argv = ["run", "--strategy", "sc", "--budget", "256", "--param", "n=2", "--limit", "3", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    records = (out / "results.jsonl").read_bytes()
    summary = json.loads((out / "summary.json").read_text())
    (out / "summary.json").unlink()  # as if the run was stopped between its last record and its summary
    capsys.readouterr()
    monkeypatch.setattr(ttscale.engine, "start_engine", refuse)
    assert main(["run", "--resume", str(out), "--no-progress", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["resumed"] is True and again["problems"] == 3 and again["correct"] == summary["correct"]
    assert (out / "results.jsonl").read_bytes() == records
    assert json.loads((out / "summary.json").read_text())["accuracy"] == summary["accuracy"]


# -- every engine start is quiet (issue 49 item 4) ------------------------------------------------------------------

CHATTER = ("INFO vLLM's start-up line", "WARNING the engine process's line")


async def _chatty(config: Any) -> SimulatedArithmeticPolicy:
    """A start that prints as vLLM's does: on this process's stderr (descriptor 2), and from a child process it
    starts (vLLM's engine process), which inherits the descriptors and keeps them."""
    import os
    import subprocess
    import sys

    os.write(2, f"{CHATTER[0]}\n".encode())
    subprocess.run([sys.executable, "-c", f"import sys; print({CHATTER[1]!r}, file=sys.stderr)"], check=True)
    return SimulatedArithmeticPolicy(seed=1)


def _said(text: str) -> list[str]:
    return [line for line in CHATTER if line in text]


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        ("compare", ["--strategy", "sc n=2", "--strategy", "best_of_n n=2", "--repeats", "1", "--budget", "256"]),
        ("sweep", ["--strategy", "sc n=2", "--budgets", "256"]),
        ("allocate", ["--space", "genrm", "--setting", "solutions=1,2", "--setting", "verifications=1",
                      "--setting", "max_tokens=32", "--setting", "verify_tokens=16", "--total-budget", "256",
                      "--proposer", "grid", "--seeds", "0", "--trials", "1"]),
    ],
)
def test_compare_sweep_and_allocate_keep_the_engines_output_in_their_folders_engine_log(
    command: str, flags: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    # As `ttscale run` does: the terminal keeps ttscale's own lines, the engine's go to engine.log in the folder the
    # command writes; --verbose shows them instead. Before: only `run` did, the others printed vLLM's start-up.
    monkeypatch.setattr(ttscale.engine, "start_engine", _chatty)
    flags += ["--limit", "2"] + ([] if command == "allocate" else ["--no-progress"])  # allocate has no bar
    out = tmp_path / "quiet"
    assert main([command, *flags, "--out", str(out)]) == 0
    terminal = capfd.readouterr()
    assert _said(terminal.err + terminal.out) == [], terminal.err[-2000:]
    assert _said((out / "engine.log").read_text()) == list(CHATTER)
    loud = tmp_path / "loud"
    assert main([command, *flags, "--out", str(loud), "--verbose"]) == 0
    assert _said(capfd.readouterr().err) == list(CHATTER) and not (loud / "engine.log").exists()


def test_a_shared_engine_logs_its_start_to_a_file_and_a_failed_start_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    import ttscale
    from ttscale.running.launch import EngineStartError

    monkeypatch.setattr(ttscale.engine, "start_engine", _chatty)
    with ttscale.Engine(log=tmp_path / "engine.log") as engine:
        done = ttscale.run(strategy="sc", budget="256", params={"n": 2}, limit=2, engine=engine, out=tmp_path / "r")
        assert done.summary["problems"] == 2 and engine.log_path == tmp_path / "engine.log"
    assert _said(capfd.readouterr().err) == []
    assert _said((tmp_path / "engine.log").read_text()) == list(CHATTER)
    with ttscale.Engine() as engine:  # no log named: a temporary file of its own, never this terminal
        kept = engine.log_path
    assert kept is not None and _said(kept.read_text()) == list(CHATTER) and _said(capfd.readouterr().err) == []
    kept.unlink()
    with ttscale.Engine(verbose=True) as engine:
        assert engine.log_path is None
    assert _said(capfd.readouterr().err) == list(CHATTER)

    async def failing(config: Any) -> NoReturn:
        await _chatty(config)
        raise RuntimeError("Engine core initialization failed. See root cause above.")

    monkeypatch.setattr(ttscale.engine, "start_engine", failing)
    with pytest.raises(EngineStartError) as info, ttscale.Engine(log=tmp_path / "failed.log"):
        pass
    assert str(info.value).endswith(f"(the engine's log: {tmp_path / 'failed.log'})")
    assert _said((tmp_path / "failed.log").read_text()) == list(CHATTER) and _said(capfd.readouterr().err) == []
    with pytest.raises(ValueError, match="log must be a file path or None, got int"):
        ttscale.Engine(log=3)  # type: ignore[arg-type]


def test_the_engine_s_logger_in_this_process_writes_to_the_engine_log_once_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """Issue 59: `compare` printed vLLM's "Passing raw prompts to InputProcessor is deprecated" on the terminal
    without --verbose: vLLM's logger in this process keeps the stream stdout was at its import, which the quiet
    start restores to the terminal. As vLLM configures it (a StreamHandler on sys.stdout) here, with no vLLM."""
    import asyncio
    import logging
    import sys

    from ttscale.running.launch import start_logged

    logger = logging.getLogger("vllm")
    theirs, mine = logging.StreamHandler(sys.stdout), logging.StreamHandler(sys.stderr)
    theirs.set_name("vllm")  # as vLLM's logging config names its handler
    mine.setLevel(logging.CRITICAL)  # a handler of the user's own: left as it is
    monkeypatch.setattr(logger, "handlers", [theirs, mine])
    monkeypatch.setattr(logger, "propagate", False)
    # vLLM sets its logger's level from VLLM_LOGGING_LEVEL when an engine starts in this process (ERROR when a
    # test's engine started before this one in the same worker): INFO, as a run starts it, for this test alone.
    # setLevel, not a patched attribute: it also clears the level cache of every child logger.
    level = logger.level
    logger.setLevel(logging.INFO)
    monkeypatch.setattr(logging.getLogger("vllm.v1.engine.input_processor"), "disabled", False)
    monkeypatch.setattr(ttscale.engine, "start_engine", _chatty)
    log = tmp_path / "engine.log"
    try:
        asyncio.run(start_logged(object(), log=log))
        logging.getLogger("vllm.v1.engine.input_processor").warning("Passing raw prompts is deprecated")
        theirs.flush()
    finally:
        logger.setLevel(level)
    out, err = capfd.readouterr()
    assert "deprecated" not in out + err
    assert "Passing raw prompts is deprecated" in log.read_text() and mine.stream is sys.stderr
