"""Strategies on the real engine: budget-safe, complete records, deterministic selection."""

from __future__ import annotations

from typing import Any

import pytest

from ttscale.budget import Budget, Ledger
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.context import Context
from ttscale.kit.params import params_class, parse_params
from ttscale.kit.selection import majority_vote
from ttscale.schema import SamplingParams
from ttscale.strategies import STRATEGIES

pytestmark = pytest.mark.slow

TASK = ArithmeticTask(levels=(1, 2), per_level=2)


def run(sync_engine: Any, name: str, budget: str, **params: str) -> tuple[Any, Ledger]:
    fn = STRATEGIES.get(name)
    problem = TASK.problems()[0]
    ledger = Ledger(Budget.parse(budget))
    ctx = Context(problem=problem, task=TASK, engine=sync_engine.engine, ledger=ledger)
    answer = sync_engine.loop.run(fn(problem, ctx, parse_params(params_class(fn), params)))
    return answer, ledger


@pytest.mark.parametrize("name", ["self_consistency", "best_of_n"])
@pytest.mark.parametrize("budget", ["300", "1k"])
def test_budget_is_used_and_never_exceeded(sync_engine: Any, name: str, budget: str) -> None:
    answer, ledger = run(sync_engine, name, budget, max_tokens="100")
    limit = Budget.parse(budget).limit
    assert ledger.spent <= limit
    assert len(answer.samples) == int(limit // 100)  # N = B / max_tokens
    assert sum(s.num_tokens for s in answer.samples) == ledger.to_dict()["generated_tokens"]


def test_refill_spends_the_leftover(sync_engine: Any) -> None:
    answer, ledger = run(sync_engine, "self_consistency", "600", max_tokens="60", refill="true")
    assert len(answer.samples) > 10  # 600 // 60 = 10 paid for first; samples stop early, so the leftover buys more
    assert ledger.spent <= 600 and ledger.remaining < 60


def test_self_consistency_answer_is_the_majority(sync_engine: Any) -> None:
    answer, _ = run(sync_engine, "self_consistency", "2k", n="12", max_tokens="64")
    assert len(answer.samples) == 12
    assert answer.prediction == majority_vote(answer.samples)[0]
    assert sum(answer.info["votes"].values()) == sum(s.answer is not None for s in answer.samples)


def test_best_of_n_picks_the_most_confident_sample(sync_engine: Any) -> None:
    answer, _ = run(sync_engine, "best_of_n", "2k", n="6", max_tokens="64")
    scored = [s for s in answer.samples if s.answer is not None]
    assert all(s.score is not None and s.score <= 0 for s in answer.samples)
    if not scored:  # no sample stated an answer: there is nothing to pick, and nothing may be made up
        assert answer.prediction is None
        return
    best = max(scored, key=lambda s: s.score if s.score is not None else float("-inf"))
    assert answer.prediction == best.answer
    assert answer.info["best_score"] == best.score


def test_tiny_budget_gives_no_samples_but_no_error(sync_engine: Any) -> None:
    answer, ledger = run(sync_engine, "self_consistency", "50", max_tokens="100")
    assert answer.samples == () and answer.prediction is None
    assert ledger.spent == 0


@pytest.mark.parametrize("name", ["best_of_n", "self_consistency"])
def test_an_exact_oracle_verifier_finds_any_correct_sample(sync_engine: Any, name: str) -> None:
    """With a noiseless oracle as the scorer, a correct sample in the pool must win."""
    answer, ledger = run(sync_engine, name, "2k", n="16", max_tokens="48", verifier="noisy_oracle:noise=0")
    problem = TASK.problems()[0]
    pool_has_correct = any(TASK.grade(s.answer, problem) for s in answer.samples)
    assert TASK.grade(answer.prediction, problem) == pool_has_correct
    assert all(s.score in (0.0, 1.0) for s in answer.samples)
    assert ledger.spent <= 2000


def test_a_model_verifier_is_metered_within_the_same_budget(sync_engine: Any) -> None:
    answer, ledger = run(sync_engine, "best_of_n", "600", n="4", max_tokens="48", verifier="llm_judge")
    assert answer.info["scorer"] == "llm_judge"
    verifier = ledger.usage["verifier"]
    assert verifier.calls == len(answer.samples) == 4 and verifier.generated_tokens == 4
    assert ledger.spent == ledger.usage["policy"].generated_tokens + 4 <= 600


def test_generation_never_asks_past_the_model_length(sync_engine: Any) -> None:
    """A path that nears max_model_len gets what fits, and nothing once the prompt fills it, instead of an error."""
    problem = TASK.problems()[0]
    ctx = Context(problem=problem, task=TASK, engine=sync_engine.engine, ledger=Ledger(Budget.parse("4k")))
    limit = sync_engine.engine.config.max_model_len
    filler = sync_engine.engine.tokenize(" one two three" * (limit // 3 + 10))
    assert len(filler) > limit  # the path must be able to reach the context limit
    near = sync_engine.loop.run(ctx.generate(filler[: limit - 5], SamplingParams(n=2, max_tokens=100)))
    assert near.completions and all(c.num_tokens <= 5 for c in near.completions)
    full = sync_engine.loop.run(ctx.generate(filler[:limit], SamplingParams(n=2, max_tokens=100)))
    assert full.completions == () and ledger_calls(ctx) == 1


def ledger_calls(ctx: Context) -> int:
    return ctx.ledger.usage["policy"].calls
