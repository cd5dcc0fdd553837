"""The public strategy simulator (`ttscale.testing`): what a plugin author tests a strategy against."""

from __future__ import annotations

import asyncio

from ttscale.kit.params import params_class
from ttscale.strategies import STRATEGIES
from ttscale.testing import SimulatedArithmeticPolicy, make_context


def test_a_registered_strategy_runs_on_the_public_simulator_within_its_budget() -> None:
    policy = SimulatedArithmeticPolicy(seed=3, p_correct=0.9)
    ctx = make_context(policy, "2k", problem_index=4)
    fn = STRATEGIES.get("self_consistency")
    answer = asyncio.run(fn(ctx.problem, ctx, params_class(fn)(n=4, max_tokens=128)))
    assert len(answer.samples) == 4
    assert ctx.ledger.usage["policy"].generated_tokens == policy.generated_tokens
    assert 0 < policy.generated_tokens <= 2000


def test_the_simulator_is_seeded() -> None:
    def texts(seed: int) -> list[str]:
        ctx = make_context(SimulatedArithmeticPolicy(seed=seed), "1k")
        fn = STRATEGIES.get("best_of_n")
        answer = asyncio.run(fn(ctx.problem, ctx, params_class(fn)(n=3, max_tokens=96)))
        return [s.text for s in answer.samples]

    assert texts(1) == texts(1)
    assert texts(1) != texts(2)
