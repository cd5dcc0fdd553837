"""The `genrm` strategy: the S/V split from the budget, and runs on the SIMULATED policy, whose judge
answers "Y"/"N" with a known accuracy (tests/search/simulator.py). The real engine: test_engine_search.py.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from simulator import SimulatedArithmeticPolicy, make_context

from ttscale.context import Context
from ttscale.params import parse_params
from ttscale.strategies.genrm import GenRMParams, budget_split, genrm
from ttscale.types import Answer


def run(
    budget: str | int = "4k", *, index: int = 0, seed: int = 0, policy: dict[str, Any] | None = None, **params: Any
) -> tuple[Answer, Context, SimulatedArithmeticPolicy]:
    sim = SimulatedArithmeticPolicy(seed=seed, **(policy or {}))
    ctx = make_context(sim, budget, problem_index=index)
    p = parse_params(GenRMParams, {k: str(v) for k, v in params.items()})
    answer = asyncio.run(genrm(ctx.problem, ctx, p))
    return answer, ctx, sim


@pytest.mark.parametrize(("budget", "expected"), [(1000, (1, 1)), (2000, (3, 1)), (4000, (4, 2)), (8000, (7, 3))])
def test_budget_split_at_the_benchmark_budgets(budget: int, expected: tuple[int, int]) -> None:
    t_s = t_v = 256
    c = budget // t_s
    s, v = budget_split(c, lam=(t_v + 1) / t_s, solution_share=0.594)
    assert (s, v) == expected
    assert s * t_s + s * v * (t_v + 1) <= budget  # the plan never passes the budget, verdict tokens included


def test_budget_split_grows_solutions_faster_than_verifications() -> None:
    # Over a wide range the fitted log-slopes follow the paper's ordering a > b (0.57 vs 0.39).
    budgets = [2**k for k in range(4, 15)]
    splits = [budget_split(c, lam=1.0, solution_share=0.594) for c in budgets]
    logs = [math.log(c) for c in budgets]

    def slope(values: list[float]) -> float:
        mx, my = sum(logs) / len(logs), sum(values) / len(values)
        return sum((x - mx) * (y - my) for x, y in zip(logs, values, strict=True)) / sum((x - mx) ** 2 for x in logs)

    a = slope([math.log(s) for s, _ in splits])
    b = slope([math.log(v) for _, v in splits])
    assert a > b > 0.2
    assert 0.5 < a < 0.7
    for c, (s, v) in zip(budgets, splits, strict=True):
        assert s * (1 + v) <= c  # within the budget
        assert (s + 1) * (1 + v) > c  # and not leaving a whole solution's worth of it unused


def test_budget_split_keeps_what_is_given_and_fits_the_other() -> None:
    assert budget_split(30, lam=1.0, solution_share=0.594, s=5, v=9) == (5, 9)
    assert budget_split(30, lam=1.0, solution_share=0.594, s=5) == (5, 5)  # 5·(1 + 5) = 30
    assert budget_split(30, lam=1.0, solution_share=0.594, v=2) == (10, 2)
    assert budget_split(0, lam=1.0, solution_share=0.594) == (1, 1)  # never 0: the ledger caps instead
    with pytest.raises(ValueError, match="lam > 0"):
        budget_split(10, lam=0.0, solution_share=0.5)


def test_genrm_sends_s_solutions_then_v_chains_each_and_a_verdict_per_chain() -> None:
    answer, ctx, sim = run("4k", max_tokens=64, verify_tokens=48)
    s, v = answer.info["S"], answer.info["V"]
    assert (s, v) == budget_split(4000 // 64, lam=49 / 64, solution_share=0.594)
    assert answer.info["lambda"] == 0.75 and answer.info["solutions"] == s == len(answer.samples)
    first, *rest = sim.requests
    assert first["n"] == s and first["max_tokens"] == 64
    chains = [r for r in rest if r["max_tokens"] == 48]
    verdicts = [r for r in rest if r["max_tokens"] == 1]
    assert len(chains) == s and all(r["n"] == v for r in chains)
    assert len(verdicts) == s * v
    ledger = ctx.budget.to_dict()
    assert ledger["verifier"]["calls"] == s + s * v
    assert ledger["generated_tokens"] == sim.generated_tokens <= 4000
    assert ledger["verifier"]["generated_tokens"] > s * v  # chains, not only verdict tokens


def test_genrm_picks_the_solution_of_highest_mean_verdict() -> None:
    # The judge is right 90% of the time (p_judge); the policy states the right value 40% of the time.
    correct = 0
    for i in range(12):
        answer, ctx, _ = run("4k", index=i, seed=i, policy={"p_correct": 0.4}, max_tokens=64, verify_tokens=32)
        best = max(answer.samples, key=lambda sample: sample.score or 0.0)
        assert answer.prediction == best.answer
        assert all(0.0 <= (sample.score or 0.0) <= 1.0 for sample in answer.samples)
        correct += ctx.task.grade(answer.prediction, ctx.problem)
    blind = 0
    for i in range(12):
        policy = {"p_correct": 0.4, "p_judge": 0.5}
        answer, ctx, _ = run("4k", index=i, seed=i, policy=policy, max_tokens=64, verify_tokens=32)
        blind += ctx.task.grade(answer.prediction, ctx.problem)
    assert correct >= 11
    assert correct >= blind + 3


def test_explicit_s_and_v_and_weighted_selection() -> None:
    answer, _, sim = run("8k", n=3, verifications=2, max_tokens=64, verify_tokens=16, select="weighted")
    assert (answer.info["S"], answer.info["V"]) == (3, 2)
    assert sim.requests[0]["n"] == 3
    assert sum(1 for r in sim.requests if r["max_tokens"] == 1) == 6
    assert answer.info["select"] == "weighted" and answer.info["votes"]
    assert answer.prediction == max(answer.info["votes"], key=answer.info["votes"].get)


def test_tiny_budgets_end_cleanly() -> None:
    for budget in (1, 30, 200):
        answer, ctx, sim = run(budget, max_tokens=64, verify_tokens=64)
        ledger = ctx.budget.to_dict()
        assert ledger["spent"] <= budget and ledger["generated_tokens"] == sim.generated_tokens
        assert answer.info["S"] >= 1 and answer.info["V"] >= 1


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"verifications": "0"}, "verifications must be ≥ 1, got 0"),
        ({"verify_tokens": "0"}, "verify_tokens must be ≥ 1, got 0"),
        ({"solution_share": "0"}, r"solution_share must be in \(0, 1\], got 0.0"),
        ({"refill": "true"}, "refill does not apply to genrm"),
        ({"select": "majority"}, "parameter select must be"),
    ],
)
def test_params_are_validated(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_params(GenRMParams, raw)
