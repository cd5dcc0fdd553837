"""ttscale.launch: a resumed run with nothing left starts no engine. The engine is the SIMULATED policy."""

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
