"""ttscale.pipeline and its writer (ttscale.runstore.writer) on the SIMULATED policy (issue 60): a total-budget
run cut off after some problems and resumed, a finished run resumed, and the flags and counts summary.json holds for
new, resumed and finished runs. Every expectation is computed here from the run's own records (what a killed run
leaves: results.jsonl's finished lines, no summary.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ttscale
import ttscale.engine
import ttscale.running.runner
from ttscale.testing import SimulatedArithmeticPolicy

TASK = "arithmetic:1-2"


def run(out: Path, **kwargs: Any) -> Any:
    settings: dict[str, Any] = {"strategy": "sc", "budget": "256", "params": {"n": 2}, "task": TASK, "limit": 4}
    settings.update(kwargs)
    return ttscale.run(out=out, engine=SimulatedArithmeticPolicy(seed=1), **settings)


def lines(out: Path) -> list[str]:
    return (out / "results.jsonl").read_text().splitlines()


def spent(records: list[dict[str, Any]]) -> float:
    return sum(float(r["ledger"]["spent"]) for r in records)


def cut_off(out: Path, keep: int) -> list[str]:
    """What a run killed after `keep` problems leaves: those records, no summary.json."""
    kept = lines(out)[:keep]
    (out / "results.jsonl").write_text("".join(line + "\n" for line in kept))
    (out / "summary.json").unlink()
    return kept


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The total budget's pool and the problems left, as each call of the runner found them."""
    seen: list[dict[str, Any]] = []
    solve = ttscale.running.runner.solve_problems

    async def spy(prepared: Any, todo: Any, *args: Any, **kwargs: Any) -> Any:
        pool = prepared.pool
        seen.append({"spent": None if pool is None else pool.spent,
                     "planned_for": None if pool is None else pool.extra.get("problems"),
                     "todo": [p.id for p in todo]})
        return await solve(prepared, todo, *args, **kwargs)

    monkeypatch.setattr(ttscale.running.runner, "solve_problems", spy)
    return seen


def test_a_cut_off_total_budget_run_resumes_with_its_spend_counted_and_the_total_kept(
    tmp_path: Path, pools: list[dict[str, Any]]
) -> None:
    out = tmp_path / "run"
    first = run(out, total_budget="600")
    assert first.summary["resumed"] is False and first.summary["total_budget"] == "600 tokens"
    everything = [json.loads(line) for line in lines(out)]
    assert first.summary["total_spent"] == spent(everything) <= 600
    kept = cut_off(out, 2)
    kept_records = [json.loads(line) for line in kept]
    done = run(out, total_budget="600")
    # The pool starts at what the kept problems spent, and plans for the two problems left, which alone run.
    left = sorted({r["id"] for r in everything} - {r["id"] for r in kept_records})
    assert pools[-1]["spent"] == spent(kept_records) > 0
    assert pools[-1]["planned_for"] == 2 and sorted(pools[-1]["todo"]) == left
    after = lines(out)
    assert after[:2] == kept and len(after) == 4  # the finished problems are not run again
    records = [json.loads(line) for line in after]
    assert done.summary["total_spent"] == spent(records) <= 600
    assert done.summary["resumed"] is True and done.summary["problems"] == 4
    assert done.summary["total_budget"] == "600 tokens"


def test_a_per_problem_run_has_no_pool_and_no_total_in_its_summary(tmp_path: Path,
                                                                   pools: list[dict[str, Any]]) -> None:
    done = run(tmp_path / "run")
    assert pools[-1]["spent"] is None and "total_budget" not in done.summary and "total_spent" not in done.summary


def test_a_finished_run_resumed_starts_no_engine_and_writes_the_same_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    first = run(out, total_budget="600").summary
    before = lines(out)

    async def refused(config: Any) -> Any:
        raise AssertionError("a finished run starts no engine")

    monkeypatch.setattr(ttscale.engine, "start_engine", refused)
    again = ttscale.run(strategy="sc", budget="256", params={"n": 2}, task=TASK, limit=4, total_budget="600",
                        out=out).summary
    assert lines(out) == before
    assert again["resumed"] is True and first["resumed"] is False
    for key in ("problems", "correct", "accuracy", "total_spent", "total_generated_tokens", "unfinished"):
        assert again[key] == first[key], key
    # Its wall time is the earlier part's and this one's (nothing ran: about the same).
    assert again["wall_seconds"] >= first["wall_seconds"]
    assert json.loads((out / "summary.json").read_text()) == again


def test_a_resumed_run_counts_what_it_ran_and_what_it_found(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(out)
    kept = [json.loads(line) for line in cut_off(out, 1)]
    done = run(out).summary
    records = [json.loads(line) for line in lines(out)]
    assert records[0] == kept[0] and len(records) == 4
    assert done["problems"] == 4 and done["resumed"] is True and done["unfinished"] == 0
    assert done["correct"] == sum(bool(r.get("correct")) for r in records)
    assert done["total_generated_tokens"] == sum(r["ledger"]["generated_tokens"] for r in records)
