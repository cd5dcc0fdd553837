"""`ttscale run` on a code task: refused where code cannot be isolated unless the flag allows it; the level is
recorded. The engine is the SIMULATED code policy (ttscale.testing); executions are real, in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ttscale.engine
import ttscale.sandbox.sandbox as sandbox_module
from ttscale.cli import main
from ttscale.evals.code_synthetic import SyntheticCodeTask
from ttscale.testing import SimulatedCodePolicy

ARGV = ["run", "--strategy", "sc", "--task", "code:1", "--budget", "2k", "--param", "n=3", "--limit", "2"]


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> None:
    async def start(config: Any) -> SimulatedCodePolicy:
        return SimulatedCodePolicy(SyntheticCodeTask(levels=(1,)), seed=0, p_correct=0.5)

    monkeypatch.setattr(ttscale.engine, "start_engine", start)


@pytest.fixture
def no_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine whose kernel forbids unprivileged user namespaces: the weaker level is what runs."""
    monkeypatch.setattr(sandbox_module, "_detect", lambda: ("rlimits", "unprivileged user namespaces are disabled"))


def test_where_code_cannot_be_isolated_the_run_is_refused_in_one_line(
    no_namespaces: None, simulated: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*ARGV, "--out", str(tmp_path / "run"), "--no-progress"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "network isolation is not available on this machine" in lines[0], lines
    assert "--allow-unisolated-code" in lines[0] and not (tmp_path / "run").exists()


def test_the_flag_runs_it_at_the_weaker_level_and_the_run_says_which(
    no_namespaces: None, simulated: None, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    assert main([*ARGV, "--allow-unisolated-code", "--out", str(out), "--no-progress"]) == 0
    sandbox = json.loads((out / "config.json").read_text())["identity"]["task"]["sandbox"]
    assert sandbox["network_isolated"] is False
    assert "the network and the host's files are reachable" in sandbox["isolation"]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    executions = [s["execution"] for r in records for s in r["samples"]]
    assert len(executions) >= 2 and {e["status"] for e in executions} <= {"passed", "failed"}
    assert all(r["correct"] == any(s["correct"] and s["answer"] == r["prediction"] for s in r["samples"])
               for r in records)


def test_with_namespaces_the_run_records_the_isolated_level(simulated: None, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main([*ARGV, "--out", str(out), "--no-progress"]) == 0
    sandbox = json.loads((out / "config.json").read_text())["identity"]["task"]["sandbox"]
    assert sandbox["network_isolated"] is True and "net" in sandbox["isolation"]
    assert sandbox["limits"]["wall_seconds"] == 10.0


FORGER = (
    "class Meta(type):\n    def __eq__(cls, other):\n        return True\n    def __hash__(cls):\n"
    "        return hash(int)\nclass Forged(metaclass=Meta):\n    def __eq__(self, other):\n        return True\n"
    "    __ne__ = lambda self, other: False\n    __hash__ = object.__hash__\n"
)


class ForgingPolicy(SimulatedCodePolicy):
    """Answers every problem with one constant: an object that equals anything, of a class whose metaclass says
    it is `int` (issue 42: it scored 30/30)."""

    def _solution(self, problem: Any) -> str:
        head = problem.reference.split("\n", 1)[0]
        return f"```python\n{FORGER}{head}\n    return Forged()\n```"


def test_a_forged_answer_scores_nothing_end_to_end(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    async def start(config: Any) -> SimulatedCodePolicy:
        return ForgingPolicy(SyntheticCodeTask(levels=(1,)), seed=0)

    monkeypatch.setattr(ttscale.engine, "start_engine", start)
    out = tmp_path / "run"
    assert main([*ARGV, "--out", str(out), "--no-progress"]) == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    executions = [s["execution"] for r in records for s in r["samples"]]
    assert len(executions) >= 2 and not any(r["correct"] for r in records)
    assert all(e["status"] == "failed" and "type Forged" in e["reason"] for e in executions), executions
    sandbox = json.loads((out / "config.json").read_text())["identity"]["task"]["sandbox"]
    assert sandbox["memory"].startswith("1024 MiB for the whole execution: 128 MiB of address space per process")
