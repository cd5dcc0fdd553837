"""A stop signal during the engine's start is the stop, not an engine failure; `--engine-arg` errors are one line.

The start is simulated as vLLM behaves when Ctrl-C (or a scheduler's signal to the whole job) reaches it: the
signal arrives at ttscale's process, the engine process dies of it, and the start fails with vLLM's
"Engine core initialization failed". No engine starts here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

import pytest

import ttscale
import ttscale.engine
from ttscale.cli import main


def _start_stopped_by(signum: signal.Signals) -> Any:
    async def start_engine(config: Any) -> NoReturn:
        print("INFO vLLM starting", file=sys.stderr, flush=True)  # lands in the run's engine.log
        os.kill(os.getpid(), signum)
        raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")

    return start_engine


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder a kept engine log would go to, empty and this test's own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_the_engine_start_is_reported_as_the_stop(
    signum: signal.Signals,
    code: int,
    tmp_path: Path,
    private_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(ttscale.engine, "start_engine", _start_stopped_by(signum))
    out = tmp_path / "run"
    argv = ["run", "--strategy", "sc", "--budget", "64", "--limit", "1", "--out", str(out), "--no-progress"]
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    assert main(argv) == code
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"ttscale: stopped by {signum.name}"], lines
    assert not out.exists()  # a new run that finished nothing is removed
    assert not list(private_tmp.iterdir())  # and its engine log is not kept: the start did not fail
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_signal_during_a_resumed_runs_start_keeps_the_run_and_says_so(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ttscale.testing import SimulatedArithmeticPolicy

    async def simulated(config: Any) -> SimulatedArithmeticPolicy:
        return SimulatedArithmeticPolicy(seed=1)

    out = tmp_path / "run"
    argv = ["run", "--strategy", "sc", "--budget", "256", "--param", "n=2", "--limit", "2", "--out", str(out)]
    monkeypatch.setattr(ttscale.engine, "start_engine", simulated)
    assert main([*argv, "--no-progress"]) == 0
    kept = (out / "results.jsonl").read_bytes().splitlines(keepends=True)[0]
    (out / "results.jsonl").write_bytes(kept)  # as if killed before the second problem was saved
    capsys.readouterr()
    monkeypatch.setattr(ttscale.engine, "start_engine", _start_stopped_by(signal.SIGTERM))
    assert main(["run", "--resume", str(out), "--no-progress"]) == 143
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ttscale: stopped by SIGTERM; 1 finished problems are saved"), lines
    assert (out / "results.jsonl").read_bytes() == kept and not list(private_tmp.iterdir())


def test_ctrl_c_during_the_engine_start_of_a_script_is_a_keyboard_interrupt(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ttscale.engine, "start_engine", _start_stopped_by(signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):  # as Ctrl-C is anywhere else; not EngineStartError
        ttscale.run(strategy="sc", budget="64", limit=1, out=tmp_path / "run")
    assert not (tmp_path / "run").exists() and not list(private_tmp.iterdir())


def test_an_unknown_engine_argument_is_one_line_without_vllms_import_chatter(tmp_path: Path) -> None:
    # A fresh process: importing vLLM to read its fields printed "Triton is installed, ..." before the error.
    argv = ["run", "--strategy", "sc", "--engine-arg", "nonsense_field=1", "--limit", "1", "--out", str(tmp_path / "r")]
    done = subprocess.run([sys.executable, "-m", "ttscale.cli", *argv], capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ttscale: error: run: 'nonsense_field' is not an engine argument")
    assert done.returncode == 2 and done.stdout == "" and not (tmp_path / "r").exists()
