"""Model-based verifiers on the real engine: shapes, ranges, metering as verifier tokens, prefix reuse."""

from __future__ import annotations

from typing import Any

import pytest

from ttscale.budget import Budget, Ledger
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.context import Context
from ttscale.verifiers.genrm import GenRM
from ttscale.verifiers.judging import yes_probability
from ttscale.verifiers.llm_judge import LLMJudge

TASK = ArithmeticTask(levels=(1,), per_level=1)


def test_yes_probability_reads_verdict_tokens() -> None:
    assert yes_probability({" Yes": -0.1, "No": -2.4, "The": -1.0}) == pytest.approx(0.9089, abs=1e-3)
    assert yes_probability({"yes.": 0.0}) == 1.0
    assert yes_probability({"Maybe": -0.1}) is None


def context(sync_engine: Any, budget: str = "4k") -> Context:
    problem = TASK.problems()[0]
    return Context(problem=problem, task=TASK, engine=sync_engine.engine, ledger=Ledger(Budget.parse(budget)))


@pytest.mark.slow
def test_llm_judge_scores_each_step_once_and_reuses_prefixes(sync_engine: Any) -> None:
    ctx = context(sync_engine)
    judge = LLMJudge()
    candidates = [["3 + 4 = 7", "The answer is 7."], ["3 + 4 = 7", "The answer is 8."]]
    scores = sync_engine.loop.run(judge.score_steps(ctx, candidates))
    assert [len(s) for s in scores] == [2, 2]
    assert all(0.0 <= x <= 1.0 for row in scores for x in row)
    assert scores[0][0] == scores[1][0]  # the shared first step is judged once
    verifier = ctx.ledger.usage["verifier"]
    assert verifier.calls == 3 and verifier.generated_tokens == 3
    assert ctx.ledger.usage["policy"].calls == 0
    again = sync_engine.loop.run(judge.score_steps(ctx, candidates))
    assert again == scores and verifier.calls == 3  # cached per problem: no new engine calls
    assert verifier.cached_prompt_tokens > 0  # the judge prompts share the problem's prefix


@pytest.mark.slow
def test_genrm_verifies_with_v_chains_metered_as_verifier_tokens(sync_engine: Any) -> None:
    ctx = context(sync_engine)
    genrm = GenRM(verifications=2, max_tokens=16)
    scores = sync_engine.loop.run(
        genrm.score_outcomes(ctx, ["3 + 4 = 7. The answer is 7.", "The answer is 9."])
    )
    assert len(scores) == 2 and all(0.0 <= s <= 1.0 for s in scores)
    verifier = ctx.ledger.usage["verifier"]
    assert verifier.calls == 2 + 4  # one chain request per solution, one verdict token per chain
    assert verifier.samples == 2 * 2 + 4
    assert ctx.ledger.spent == verifier.generated_tokens <= 2 * 2 * 16 + 4
    assert verifier.cached_prompt_tokens > 0  # verdicts reuse the prompt + chain prefix


@pytest.mark.slow
def test_verifiers_abstain_when_the_budget_is_spent(sync_engine: Any) -> None:
    ctx = context(sync_engine, budget="1")
    scores = sync_engine.loop.run(LLMJudge(default=0.25).score_steps(ctx, [["a", "b"]]))
    assert ctx.ledger.spent <= 1
    assert 0.25 in scores[0]  # the second judgement found no budget left


def test_parameters_are_validated() -> None:
    with pytest.raises(ValueError, match="verifications must be ≥ 1, got 0"):
        GenRM(verifications=0)
    with pytest.raises(ValueError, match=r"default must be in \[0, 1\]"):
        LLMJudge(default=2)
