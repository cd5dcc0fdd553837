"""Sleep-time compute (strategies/sleep_time.py) on the SIMULATOR: the stage runs once per context, its tokens
are metered apart from the queries', budgets hold, a resumed run reuses the stored stage, a sweep derives the
smaller test-time budgets from the pool; and the reference's axes (letta-ai/sleep-time-compute) on hand
examples: rethink passes into a bounded memory, the verbosity prompt of the single answer, the pass@k pool.
kill -9 and resume of a sleep-time run from the CLI: tests/running/distributed/test_crash_resume.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import ttscale
from ttscale.engine.base import EngineFatalError
from ttscale.schema import Completion, Generation, SamplingParams
from ttscale.strategies.sleep_time import FINISH, VERBOSITY, SleepTimeParams
from ttscale.testing.policy import SimulatedArithmeticPolicy

TASK = {"task": "arithmetic_stateful:1-2", "task_options": {"queries": 3, "per_level": 2}}  # 4 contexts × 3


def _sleep_prompts(policy: SimulatedArithmeticPolicy) -> Counter[str]:
    """Sleep-time stages the engine was asked to start (their first rethink pass), by the context they were about."""
    texts = [policy.detokenize(r["prompt"]) for r in policy.requests]
    return Counter(t.split("Situation:\n", 1)[1].split("\n\nYour notes so far", 1)[0] for t in texts
                   if "Your notes so far:\n[empty]" in t)


def _rethinks(policy: SimulatedArithmeticPolicy) -> list[str]:
    """The prompts of every rethink pass the engine served, in order."""
    return [t for t in (policy.detokenize(r["prompt"]) for r in policy.requests) if "Your notes so far:" in t]


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
    first = _Dies(seed=2, after=14)
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
    result = ttscale.sweep(strategies=["sleep_time sleep_tokens=0|40 max_tokens=32 test_time=vote"],
                           budgets=[32, 64, 128], limit=6, engine=policy, out=tmp_path / "sweep", **TASK)  # type: ignore[arg-type]
    cells = {(c["candidate"].split("sleep_tokens=")[1].split()[0], int(c["budget"])): c for c in result.cells}
    assert len(cells) == 6 and all(c["mean_tokens"] <= int(c["budget"]) for c in cells.values())
    assert all(cells[s, 32]["mean_tokens"] <= cells[s, 128]["mean_tokens"] for s in ("0", "40"))
    runs = sorted((tmp_path / "sweep" / "cells").iterdir())
    derived = [d for d in runs if "derived_from" in json.loads((d / "summary.json").read_text())]
    assert len(derived) == 4  # two pools ran (one per sleep budget); the four smaller budgets were read from them
    assert len(_sleep_prompts(policy)) == 2  # 2 contexts in 6 problems, thought about once in the pool run
    # Each derived record is its pool record's first N = budget / 32 samples (what a run at that budget would have
    # drawn), with the pool's sleep-time stage: the same notes' tokens, amortised share and context; its ledger
    # counts exactly those samples' tokens as test-time tokens.
    for d in derived:
        source_dir = d.parent / json.loads((d / "summary.json").read_text())["derived_from"]
        source = {r["id"]: r for r in (json.loads(line) for line in (source_dir / "results.jsonl").read_text()
                                      .splitlines())}
        budget = int(d.name.rsplit("-b", 1)[1].split("-")[0])
        for r in (json.loads(line) for line in (d / "results.jsonl").read_text().splitlines()):
            pool = source[r["id"]]
            assert r["samples"] == pool["samples"][: budget // 32] and len(r["samples"]) == budget // 32
            spent = sum(s["num_tokens"] for s in r["samples"])
            assert r["ledger"]["test_tokens"] == r["ledger"]["generated_tokens"] == spent <= r["ledger"]["budget"]
            assert r["ledger"]["sleep_tokens_amortised"] == pool["ledger"]["sleep_tokens_amortised"]
            for key in ("context_id", "sleep_tokens", "rethink_passes", "queries_in_context"):
                assert r["info"][key] == pool["info"][key]



# -- the reference's axes, on hand examples -------------------------------------------------------------------------

class _Scripted(SimulatedArithmeticPolicy):
    """The simulator whose rethink passes write `notes` in turn (then the finish marker), and which keeps the
    sampling parameters of every request."""

    def __init__(self, notes: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.notes = list(notes)
        self.asked: list[tuple[str, SamplingParams]] = []

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        text = self.detokenize(list(prompt))
        self.asked.append((text, params))
        if "Your notes so far:" not in text:
            return await super().generate(prompt, params, seed=seed)
        self.requests.append({"prompt": list(prompt), "n": params.n, "max_tokens": params.max_tokens})
        ids = self.tokenize(self.notes.pop(0) if self.notes else FINISH)[: params.max_tokens]
        self.generated_tokens += len(ids)
        return Generation(completions=(Completion(text=self.detokenize(ids), token_ids=tuple(ids)),),
                          prompt_tokens=len(prompt))


ONE_CONTEXT = {"task": "arithmetic_stateful:1", "task_options": {"queries": 2, "per_level": 1}}  # 1 context × 2


def _records(run: ttscale.Run) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run.path / "results.jsonl").read_text().splitlines()]


def test_the_reference_rethinks_up_to_10_times_at_temperature_0() -> None:
    p = SleepTimeParams()
    assert (p.rethinks, p.memory_chars, p.sleep_temperature, p.test_time, p.verbosity) == (10, 5000, 0.0,
                                                                                            "verbosity", 0)
    assert p.sleep_tokens >= p.rethinks * p.rethink_tokens  # the default budget pays for the reference's 10 passes


def test_rethink_passes_rewrite_a_bounded_memory_until_finished(tmp_path: Path) -> None:
    # Each pass rewrites the whole memory (20 characters at most): the third pass's 27 are refused (the memory keeps
    # the second's) and the fourth is told so; the fifth finishes.
    notes = ["Ann: 3.", "Ann: 3. Ben: 5.", "Ann: 3. Ben: 5. Cara: 7.", "A3 B5 C7 A+B=8", FINISH]
    policy = _Scripted(notes, seed=5)
    run = ttscale.run(strategy="sleep_time", budget="64", limit=2, engine=policy, out=tmp_path / "run",
                      params={"memory_chars": 20, "max_tokens": 32}, **ONE_CONTEXT)  # type: ignore[arg-type]
    prompts = _rethinks(policy)
    assert len(prompts) == 5  # five passes of the ten allowed: the fifth wrote the finish marker
    memories = [p.split("Your notes so far:\n", 1)[1].split("\n\nYour last")[0] for p in prompts]
    assert [m.split("<|assistant|>")[0] for m in memories] == [
        "[empty]", "Ann: 3.", "Ann: 3. Ben: 5.", "Ann: 3. Ben: 5.", "A3 B5 C7 A+B=8"]
    assert "over the limit of 20" in prompts[3] and all("over the limit" not in p for p in prompts[:3] + prompts[4:])
    assert all(params.temperature == 0 and params.max_tokens == 256 for text, params in policy.asked
               if "Your notes so far:" in text)
    stage = json.loads((run.path / "stages.jsonl").read_text())
    assert stage["value"]["notes"] == "A3 B5 C7 A+B=8" and stage["value"]["passes"] == 5
    assert stage["value"]["refused_edits"] == 1 and stage["value"]["ended"] == "finished"
    spent = sum(len(n) for n in notes)  # one token per character: every pass is metered on the stage's ledger
    assert stage["ledger"]["generated_tokens"] == stage["ledger"]["sleep_tokens"] == stage["value"]["tokens"] == spent
    records = _records(run)
    assert all(r["info"]["rethink_passes"] == 5 and r["info"]["sleep_tokens"] == spent for r in records)
    assert all("Notes worked out from this earlier:\nA3 B5 C7 A+B=8" in t for t, _ in policy.asked
               if "Your notes so far:" not in t)


def test_rethinking_stops_at_the_passes_the_budget_or_an_unchanged_memory(tmp_path: Path) -> None:
    # A model that never finishes makes `rethinks` passes; one that rewrites its notes unchanged stops there (the
    # next greedy pass would see the same prompt); the stage's budget ends the loop too, never passed.
    endless = _Scripted([f"note {i}" for i in range(20)], seed=6)
    ttscale.run(strategy="sleep_time", budget="64", limit=1, engine=endless, out=tmp_path / "a",
                params={"rethinks": 3}, **ONE_CONTEXT)  # type: ignore[arg-type]
    assert len(_rethinks(endless)) == 3
    same = _Scripted(["x = 1.", "x = 1.", "never asked"], seed=6)
    ttscale.run(strategy="sleep_time", budget="64", limit=1, engine=same, out=tmp_path / "b", **ONE_CONTEXT)  # type: ignore[arg-type]
    assert len(_rethinks(same)) == 2
    short = _Scripted([f"{i}123456789" for i in range(5)], seed=6)
    run = ttscale.run(strategy="sleep_time", budget="64", limit=1, engine=short, out=tmp_path / "c",
                      params={"sleep_tokens": 25, "rethink_tokens": 10}, **ONE_CONTEXT)  # type: ignore[arg-type]
    stage = json.loads((run.path / "stages.jsonl").read_text())
    passes = [r["max_tokens"] for r in short.requests if "cached" not in r]  # the scripted passes
    assert passes == [10, 10, 5]  # the third pass capped at what is left
    assert stage["ledger"]["generated_tokens"] == 25 == stage["ledger"]["budget"] and stage["value"]["passes"] == 3


@pytest.mark.parametrize("verbosity", [0, 1, 2, 3, 4])
def test_the_verbosity_prompt_asks_one_greedy_answer(verbosity: int, tmp_path: Path) -> None:
    policy = _Scripted(["Ann: 3.", FINISH], seed=7)
    run = ttscale.run(strategy="sleep_time", budget="200", limit=2, engine=policy, out=tmp_path / "run",
                      params={"verbosity": verbosity, "max_tokens": 48}, **ONE_CONTEXT)  # type: ignore[arg-type]
    queries = [(t, params) for t, params in policy.asked if "Your notes so far:" not in t]
    assert len(queries) == 2  # one request per query
    for text, params in queries:
        assert (params.n, params.temperature, params.max_tokens) == (1, 0.0, 48)
        assert text.split("<|user|>", 1)[1].startswith(VERBOSITY[verbosity])  # this level's prompt leads
        assert sum(v in text for v in VERBOSITY) == 1
    assert all(len(r["samples"]) == 1 and r["ledger"]["generated_tokens"] <= 48 for r in _records(run))


def test_the_vote_axis_keeps_its_plain_prompt_and_pass_at_k_samples_the_lowest_verbosity(tmp_path: Path) -> None:
    vote = _Scripted(["Ann: 3.", FINISH], seed=8)
    ttscale.run(strategy="sleep_time", budget="96", limit=2, engine=vote, out=tmp_path / "vote",
                params={"test_time": "vote", "max_tokens": 32}, **ONE_CONTEXT)  # type: ignore[arg-type]
    queries = [(t, params) for t, params in vote.asked if "Your notes so far:" not in t]
    assert all(params.n == 3 and params.temperature == 0.8 for _, params in queries)  # N = 96 / 32, as before
    assert not any(v in t for t, _ in queries for v in VERBOSITY)
    k = _Scripted(["Ann: 3.", FINISH], seed=8)
    run = ttscale.run(strategy="sleep_time", budget="96", limit=2, engine=k, out=tmp_path / "k",
                      params={"test_time": "pass_at_k", "max_tokens": 32}, **ONE_CONTEXT)  # type: ignore[arg-type]
    queries = [(t, params) for t, params in k.asked if "Your notes so far:" not in t]
    assert all(params.n == 3 and params.temperature == 0.8 for _, params in queries)
    assert all(t.split("<|user|>", 1)[1].startswith(VERBOSITY[0]) for t, _ in queries)
    assert all(len(r["samples"]) == 3 and all(s["correct"] is not None for s in r["samples"]) for r in _records(run))


def test_bad_reference_settings_are_refused_in_one_line() -> None:
    for params, message in (({"verbosity": 5}, "verbosity must be within 0-4, got 5"),
                            ({"rethinks": 0}, "rethinks must be ≥ 1, got 0"),
                            ({"rethink_tokens": 0}, "rethink_tokens must be ≥ 1, got 0"),
                            ({"memory_chars": 0}, "memory_chars must be ≥ 1 or None, got 0"),
                            ({"n": 4}, "test_time=verbosity answers once: n and refill apply to pass_at_k and vote"),
                            ({"test_time": "best"}, "test_time must be one of verbosity, pass_at_k, vote")):
        with pytest.raises(ValueError, match=message):
            SleepTimeParams(**params)  # type: ignore[arg-type]
    assert SleepTimeParams(test_time="vote", n=4).n == 4
