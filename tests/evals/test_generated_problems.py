"""Generated tasks make their problems on demand, and their counts are checked as usage errors (issue 43, item 11).

`--task-option per_level=100000000` made every problem before `--limit` took the first ones (the run hung with
no word); a float or NaN `per_level` became a TypeError line from `range`. No engine starts here.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

import ttscale.engine
from ttscale.cli import main
from ttscale.evals import load_task
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.evals.base import GeneratedProblems
from ttscale.schema import Problem

HUGE = 100_000_000


@pytest.mark.parametrize("name", ["arithmetic", "arithmetic_stateful", "code"])
def test_a_huge_per_level_makes_only_the_problems_asked(name: str) -> None:
    started = time.perf_counter()
    task = load_task(name, per_level=HUGE)
    problems = task.problems()
    first = problems[:7]
    took = time.perf_counter() - started
    assert took < 5, f"{took:.1f} s to take 7 problems"
    assert len(problems) == HUGE * 5  # five levels (and one query a context)
    # The same problems, in the same order, as a small task makes them all at once.
    small = list(load_task(name, per_level=2).problems())
    assert first == small[:7] and len(small) == 10
    assert problems[3] == small[3] and problems[-HUGE * 5] == small[0]


def test_generated_problems_behave_as_the_list_they_stand_for() -> None:
    made: list[int] = []

    def generate() -> Any:
        for i in range(4):
            made.append(i)
            yield Problem(id=f"p{i}", question="q", reference=str(i))

    problems = GeneratedProblems(4, generate)
    assert len(problems) == 4 and not made  # a length without making any
    assert [p.id for p in problems[:2]] == ["p0", "p1"] and made == [0, 1]
    assert problems[:0] == [] and problems[10:] == [] and made == [0, 1]
    assert [p.id for p in problems[::-2]] == ["p3", "p1"]
    assert problems[-1].id == "p3" and made == [0, 1, 2, 3]  # each made once
    with pytest.raises(IndexError):
        problems[4]
    assert problems == list(problems) and problems != list(problems)[:3] and problems != "abcd"


@pytest.mark.parametrize("name", ["arithmetic", "arithmetic_stateful", "code"])
def test_a_generated_task_travels_pickled_with_the_problems_it_made(name: str) -> None:
    # Ray hands a prepared run, its task included, to each worker pickled: a half-read generator and a lock
    # cannot be pickled (the distributed run failed with "cannot pickle 'generator' object").
    import pickle

    task = load_task(name, per_level=5)
    problems = task.problems()
    first = problems[:3]  # made before the copy
    copy = pickle.loads(pickle.dumps(task))
    again = copy.problems()
    assert again[:3] == first and list(again) == list(problems) and len(again) == len(problems)


@pytest.mark.parametrize("value", [1.5, math.nan, math.inf, "3", True, 0, -2])
@pytest.mark.parametrize("name", ["arithmetic", "arithmetic_stateful", "code"])
def test_a_count_that_is_not_a_positive_integer_is_refused_by_name(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=r"^per_level must be an integer ≥ 1, got ") as info:
        load_task(name, per_level=value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value", ["1.5", "NaN", "1e400", "x"])
def test_the_cli_refuses_a_bad_per_level_before_any_engine_starts(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def no_engine(config: Any) -> Any:
        raise AssertionError("the engine must not start for a bad task option")

    monkeypatch.setattr(ttscale.engine, "start_engine", no_engine)
    out = tmp_path / "run"
    argv = ["run", "--strategy", "sc", "--budget", "64", "--limit", "1", "--task-option", f"per_level={value}",
            "--out", str(out), "--no-progress"]
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ttscale: error: run: per_level must be an integer ≥ 1, got "), lines
    assert not out.exists()


def test_a_run_with_a_huge_per_level_starts_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ttscale.testing import SimulatedArithmeticPolicy

    async def simulated(config: Any) -> SimulatedArithmeticPolicy:
        return SimulatedArithmeticPolicy(seed=1)

    monkeypatch.setattr(ttscale.engine, "start_engine", simulated)
    out = tmp_path / "run"
    started = time.perf_counter()
    argv = ["run", "--strategy", "sc", "--budget", "256", "--param", "n=2", "--limit", "3",
            "--task-option", f"per_level={HUGE}", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    took = time.perf_counter() - started
    assert took < 30, f"{took:.1f} s"
    ids = {json.loads(line)["id"] for line in (out / "results.jsonl").read_text().splitlines()}
    assert ids == {p.id for p in ArithmeticTask(per_level=1).problems()[:3]}
