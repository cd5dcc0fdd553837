"""The development verifiers: `arithmetic` (rule-based steps) and `noisy_oracle` (the grader plus known noise)."""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import pytest

from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context
from ttscale.verifiers import VERIFIERS
from ttscale.verifiers.arithmetic import ArithmeticVerifier
from ttscale.verifiers.base import Verifier
from ttscale.verifiers.noisy_oracle import NoisyOracle


def ctx_for(index: int = 0) -> Any:
    return make_context(SimulatedArithmeticPolicy(), "1k", problem_index=index)


def test_both_follow_the_verifier_protocol_and_are_registered() -> None:
    assert isinstance(ArithmeticVerifier(), Verifier) and isinstance(NoisyOracle(), Verifier)
    assert VERIFIERS.get("arithmetic") is ArithmeticVerifier and VERIFIERS.get("noisy_oracle") is NoisyOracle


def test_arithmetic_scores_each_step_and_taints_the_rest_of_the_prefix() -> None:
    v = ArithmeticVerifier()
    steps = ["We add the numbers.", "12 + 7 = 19", "so 19 × 2 = 40", "The answer is 40."]
    assert v.step_scores(steps) == [0.5, 1.0, 0.0, 0.0]
    assert ArithmeticVerifier(cumulative=False).step_scores(steps) == [0.5, 1.0, 0.0, 0.5]
    assert v.step_scores(["$1,200 - $300 = $900", "1/3 = 0.33"]) == [1.0, 1.0]
    outcomes = asyncio.run(v.score_outcomes(ctx_for(), ["12 + 7 = 19. Done", "12 + 7 = 20", "It is 19."]))
    assert outcomes == [1.0, 0.0, 0.5]
    batch = asyncio.run(v.score_steps(ctx_for(), [["1 + 1 = 2"], ["2 + 2 = 5", "ok"]]))
    assert batch == [[1.0], [0.0, 0.0]]


def test_arithmetic_never_evaluates_code() -> None:
    v = ArithmeticVerifier()
    assert v.step_scores(["__import__('os').system('x') = 0"]) == [0.5]
    assert v.step_scores(["9" * 5000 + " * 9 = 1"]) == [0.5]


def test_arithmetic_params_are_validated() -> None:
    with pytest.raises(ValueError, match="ordered"):
        ArithmeticVerifier(neutral=0.9, right=0.8)
    with pytest.raises(ValueError, match=r"wrong must be in \[0, 1\]"):
        ArithmeticVerifier(wrong=-0.1)


def test_noise_free_oracle_is_the_grader() -> None:
    ctx = ctx_for()
    right, wrong = ctx.problem.reference, str(int(ctx.problem.reference) + 1)
    oracle = NoisyOracle(noise=0.0)
    steps = asyncio.run(oracle.score_steps(ctx, [["Let me think.", f"It is {right}."], [f"x = {wrong}"]]))
    assert steps == [[0.5, 1.0], [0.0]]  # "Let me think." states no answer: `unknown`
    assert asyncio.run(oracle.score_outcomes(ctx, [f"The answer is {right}.", "no idea"])) == [1.0, 0.0]


def test_noisy_scores_are_seeded_order_free_and_in_range() -> None:
    ctx = ctx_for()
    texts = [[f"The answer is {i}."] for i in range(40)]
    oracle = NoisyOracle(noise=0.5, seed=3)
    forward = asyncio.run(oracle.score_steps(ctx, texts))
    backward = asyncio.run(oracle.score_steps(ctx, texts[::-1]))[::-1]
    assert forward == backward
    assert all(0.0 <= s[0] <= 1.0 for s in forward)
    assert forward != asyncio.run(NoisyOracle(noise=0.5, seed=4).score_steps(ctx, texts))


def test_shared_path_noise_moves_every_step_together() -> None:
    ctx = ctx_for()
    steps = [["Hmm.", "Still thinking.", "More thinking."]]
    shared = asyncio.run(NoisyOracle(noise=0.3, per_step=False, seed=1).score_steps(ctx, steps))[0]
    independent = asyncio.run(NoisyOracle(noise=0.3, per_step=True, seed=1).score_steps(ctx, steps))[0]
    assert len(set(shared)) == 1  # same verdict (unknown) + one shared draw
    assert len(set(independent)) == 3


def test_noise_level_gives_the_documented_ranking_quality() -> None:
    # AUC of correct vs wrong: Φ(1 / (σ√2)) = 0.76 at σ = 1 before clipping, 0.738 after.
    sigma = 1.0
    oracle = NoisyOracle(noise=sigma, seed=7)
    rng = random.Random(0)
    pairs = 0
    wins = 0.0
    for index in range(10):
        ctx = ctx_for(index)
        reference = int(ctx.problem.reference)
        right = [f"The answer is {reference}. ({rng.random()})" for _ in range(30)]
        wrong = [f"The answer is {reference + 1 + k}. ({rng.random()})" for k in range(30)]
        s_right = asyncio.run(oracle.score_outcomes(ctx, right))
        s_wrong = asyncio.run(oracle.score_outcomes(ctx, wrong))
        for a in s_right:
            for b in s_wrong:
                pairs += 1
                wins += 1.0 if a > b else 0.5 if a == b else 0.0
    unclipped = 0.5 * (1 + math.erf(1 / (sigma * math.sqrt(2)) / math.sqrt(2)))
    assert unclipped == pytest.approx(0.760, abs=1e-3)
    assert wins / pairs == pytest.approx(0.738, abs=0.03)  # the clipped AUC the docstring states
