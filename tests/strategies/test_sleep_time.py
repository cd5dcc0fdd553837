"""Sleep-time compute (strategies/sleep_time.py) on the SIMULATOR: the stage runs once per context, its tokens
are metered apart from the queries', budgets hold, a resumed run reuses the stored stage, a sweep derives the
smaller test-time budgets from the pool. kill -9 and resume of a sleep-time run from the CLI:
tests/distributed/test_crash_resume.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import ttscale
from ttscale.engine.base import EngineFatalError
from ttscale.strategies.sleep_time import SleepTimeParams
from ttscale.testing.policy import SimulatedArithmeticPolicy

TASK = {"task": "arithmetic_stateful:1-2", "task_options": {"queries": 3, "per_level": 2}}  # 4 contexts × 3


def _sleep_prompts(policy: SimulatedArithmeticPolicy) -> Counter[str]:
    """Sleep-time requests the engine served, by the context they were about."""
    texts = [policy.detokenize(r["prompt"]) for r in policy.requests]
    return Counter(t.split("yet.\n\n", 1)[1].split("\n\nWork out", 1)[0] for t in texts if "A question about" in t)


def _run(out: Path, policy: SimulatedArithmeticPolicy, *, limit: int = 12, **params: Any) -> ttscale.Run:
    return ttscale.run(strategy="sleep_time", budget="96", limit=limit, engine=policy, out=out, concurrency=8,
                       params={"sleep_tokens": 40, "max_tokens": 32, **params}, **TASK)  # type: ignore[arg-type]


def test_the_stage_runs_once_per_context_and_is_metered_apart(tmp_path: Path) -> None:
    policy = SimulatedArithmeticPolicy(seed=1)
    run = _run(tmp_path / "run", policy)
    records = [json.loads(line) for line in (run.path / "results.jsonl").read_text().splitlines()]
    stages = [json.loads(line) for line in (run.path / "stages.jsonl").read_text().splitlines()]
    contexts = {r["info"]["context_id"] for r in records}
    assert len(records) == 12 and len(contexts) == 4
    assert len(stages) == 4 and sorted(_sleep_prompts(policy).values()) == [1, 1, 1, 1]  # once per context
    for stage in stages:  # the stage's own ledger: its budget is sleep_tokens, never passed
        assert 0 < stage["ledger"]["generated_tokens"] <= 40 and stage["ledger"]["budget"] == 40
        assert stage["ledger"]["sleep_tokens"] == stage["ledger"]["generated_tokens"]
    by_context = {s["key"].split("\x00")[1]: s for s in stages}
    for r in records:
        stage = by_context[r["info"]["context_id"]]
        assert r["info"]["sleep_tokens"] == stage["value"]["tokens"] == stage["ledger"]["generated_tokens"]
        assert r["ledger"]["sleep_tokens_amortised"] == pytest.approx(r["info"]["sleep_tokens"] / 3, abs=1e-3)
        # The query's ledger holds test-time tokens only: every one counted as the test phase, within the budget.
        assert r["ledger"]["test_tokens"] == r["ledger"]["generated_tokens"] <= 96
        assert "Notes worked out from this earlier" in policy.detokenize(_query_prompt(policy, r))
    # Phases add up: every token the engine generated is a stage's or a query's.
    assert policy.generated_tokens == sum(s["ledger"]["generated_tokens"] for s in stages) + sum(
        r["ledger"]["generated_tokens"] for r in records)
    assert sum(r["info"]["sleep_computed_here"] for r in records) == 4
    summary = run.summary
    assert summary["contexts"] == 4 and summary["total_sleep_tokens"] == sum(s["value"]["tokens"] for s in stages)
    assert summary["mean_sleep_tokens_amortised"] == pytest.approx(summary["total_sleep_tokens"] / 12, abs=1e-3)


def _query_prompt(policy: SimulatedArithmeticPolicy, record: dict[str, Any]) -> list[int]:
    """A test-time request of the run (the simulator does not know ids: any shows the template)."""
    return next(r["prompt"] for r in policy.requests if r["max_tokens"] == 32)


class _Dies(SimulatedArithmeticPolicy):
    """The simulator whose engine dies at its `after`-th request: the run stops there, as after a crash."""

    def __init__(self, *, after: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.after = after

    async def generate(self, prompt: Any, params: Any, *, seed: int | None = None) -> Any:
        if len(self.requests) + 1 >= self.after:
            raise EngineFatalError("engine died")
        return await super().generate(prompt, params, seed=seed)


def test_a_resumed_run_reads_the_stored_stages_and_computes_only_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = _Dies(seed=2, after=10)
    with pytest.raises(EngineFatalError):
        _run(out, first, limit=12)
    stored = [json.loads(line)["key"] for line in (out / "stages.jsonl").read_text().splitlines()]
    done = len((out / "results.jsonl").read_text().splitlines())
    assert 0 < len(stored) < 4 and done < 12  # stopped midway: some stages and some queries kept
    second = SimulatedArithmeticPolicy(seed=2)
    run = _run(out, second, limit=12)
    assert run.summary["problems"] == 12 and run.summary["resumed"] is True
    asked = _sleep_prompts(second)
    assert sum(asked.values()) == 4 - len(stored) and all(v == 1 for v in asked.values())  # only the missing ones
    stages = [json.loads(line) for line in (out / "stages.jsonl").read_text().splitlines()]
    assert len({s["key"] for s in stages}) == len(stages) == 4
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    sleep_of = {s["key"].split("\x00")[1]: s["value"]["tokens"] for s in stages}
    assert all(r["info"]["sleep_tokens"] == sleep_of[r["info"]["context_id"]] for r in records)


def test_baseline_and_refusals(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert SleepTimeParams(sleep_tokens=0).sleep_tokens == 0
    with pytest.raises(ValueError, match="sleep_tokens must be ≥ 0, got -1"):
        SleepTimeParams(sleep_tokens=-1)
    with pytest.raises(ValueError, match="needs a stateful task"):
        ttscale.run(strategy="sleep_time", budget="64", limit=1, engine=SimulatedArithmeticPolicy(seed=0),
                    task="arithmetic", out=out)
    assert not out.exists()  # refused before the run directory was made


def test_sleep_tokens_zero_asks_the_raw_question(tmp_path: Path) -> None:
    policy = SimulatedArithmeticPolicy(seed=3)
    run = _run(tmp_path / "run", policy, limit=3, sleep_tokens=0)
    assert not _sleep_prompts(policy) and not (run.path / "stages.jsonl").exists()
    records = [json.loads(line) for line in (run.path / "results.jsonl").read_text().splitlines()]
    assert all(r["info"]["sleep_tokens"] == 0 and r["ledger"]["sleep_tokens_amortised"] == 0 for r in records)
    assert all("Notes worked out" not in policy.detokenize(r["prompt"]) for r in policy.requests)


def test_a_sweep_reads_smaller_test_budgets_from_each_sleep_budgets_pool(tmp_path: Path) -> None:
    policy = SimulatedArithmeticPolicy(seed=4)
    result = ttscale.sweep(strategies=["sleep_time sleep_tokens=0|40 max_tokens=32"], budgets=[32, 64, 128],
                           limit=6, engine=policy, out=tmp_path / "sweep", **TASK)  # type: ignore[arg-type]
    cells = {(c["candidate"].split("sleep_tokens=")[1], int(c["budget"])): c for c in result.cells}
    assert len(cells) == 6 and all(c["mean_tokens"] <= int(c["budget"]) for c in cells.values())
    assert all(cells[s, 32]["mean_tokens"] <= cells[s, 128]["mean_tokens"] for s in ("0", "40"))
    runs = sorted((tmp_path / "sweep" / "cells").iterdir())
    derived = [d for d in runs if "derived_from" in json.loads((d / "summary.json").read_text())]
    assert len(derived) == 4  # two pools ran (one per sleep budget); the four smaller budgets were read from them
    assert len(_sleep_prompts(policy)) == 2  # 2 contexts in 6 problems, thought about once in the pool run
    for d in derived:
        for r in (json.loads(line) for line in (d / "results.jsonl").read_text().splitlines()):
            assert r["ledger"]["generated_tokens"] <= r["ledger"]["budget"]
            assert "context_id" in r["info"] and "sleep_tokens" in r["info"]

