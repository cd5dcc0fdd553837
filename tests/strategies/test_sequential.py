"""Sequential strategies (budget forcing, NoThinking, revisions) on the REAL engine, tiny; their parameters and
their metering by phase without one (on the simulated policy, and a thinking variant of it).

The embedded model has no thinking tokens: the delimiters are the plain-text defaults, and the mechanics
(budgets, forced "Wait", prefilled thinking, revisions in context) are what these tests check.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from typing import Any

import pytest

from ttscale.budget import Budget, Ledger
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.context import Context
from ttscale.kit.params import params_class
from ttscale.schema import Completion, Generation, SamplingParams
from ttscale.strategies import STRATEGIES
from ttscale.testing.policy import SimulatedArithmeticPolicy, make_context

TASK = ArithmeticTask(levels=(2,), per_level=2)


class Recording:
    """The real engine, passed through, with every request's prompt text and completions kept."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.requests: list[tuple[str, SamplingParams, Generation]] = []

    async def generate(self, prompt: Any, params: SamplingParams, **kwargs: Any) -> Generation:
        generation: Generation = await self.inner.generate(prompt, params, **kwargs)
        text = prompt if isinstance(prompt, str) else self.inner.detokenize(prompt)
        self.requests.append((text, params, generation))
        return generation

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def run(sync_engine: Any, name: str, budget: int, index: int = 0, **params: Any) -> tuple[Any, Ledger, Recording]:
    problem = TASK.problems()[index]
    ledger = Ledger(Budget.parse(budget))
    engine = Recording(sync_engine.engine)
    ctx = Context(problem=problem, task=TASK, engine=engine, ledger=ledger)
    fn = STRATEGIES.get(name)
    answer = sync_engine.loop.run(fn(problem, ctx, params_class(fn)(**params)))
    return answer, ledger, engine


@pytest.mark.slow
def test_budget_forcing_caps_the_thinking_and_forces_waits_as_configured(sync_engine: Any) -> None:
    answer, ledger, engine = run(sync_engine, "budget_forcing", 2000, n=2, thinking_budget=64, waits=2,
                                 answer_tokens=24, temperature=0.8)
    record = ledger.to_dict()
    chains = answer.info["chains"]
    assert len(chains) == len(answer.samples) == 2
    wait = len(sync_engine.engine.tokenize("Wait"))
    for chain, sample in zip(chains, answer.samples, strict=True):
        # The thinking block holds the generated tokens and the forced words, which are prompt tokens.
        assert chain["forced_tokens"] == chain["waits"] * wait
        assert chain["thinking_tokens"] + chain["forced_tokens"] <= 64  # forced words included
        assert sample.num_tokens == chain["thinking_tokens"] + chain["answer_tokens"]  # generated ones only
        assert "\n</think>\n" in sample.text  # every sample has its answer segment ...
        # ... cued only where the budget cut the thinking (s1)
        assert ("\n</think>\n\nFinal Answer: " in sample.text) == chain["thinking_cut"]
        thought = sample.text.split("\n</think>\n")[0]
        assert thought.count("Wait") >= chain["waits"]  # the forced ones (the model may write more)
        # Fewer waits than asked only when the budget cut the thinking, or left no room for another forced word
        # and a token to think after it (the model stopped by itself within len("Wait") tokens of the budget: seen
        # at temperature 0.8).
        no_room = chain["thinking_tokens"] + chain["forced_tokens"] + wait >= 64
        assert chain["waits"] <= 2 and (chain["waits"] == 2 or chain["thinking_cut"] or no_room)
    thinking = [r for r in engine.requests if r[1].stop == ("\n</think>\n",)]
    answers = [r for r in engine.requests if r[1].stop != ("\n</think>\n",)]
    cued = [r for r in answers if r[0].endswith("\n</think>\n\nFinal Answer: ")]
    assert all(r in cued or r[0].endswith("\n</think>\n") for r in answers)
    assert len(cued) == sum(c["thinking_cut"] for c in chains)
    waits = sum(c["waits"] for c in chains)
    assert len(answers) == 2 and waits <= len(thinking) <= waits + 2  # a request per wait, and one to end on
    # The forced word is where the model had stopped: each continuation's prompt ends with it.
    assert sum(r[0].endswith("Wait") for r in thinking) == waits
    # The ledger's thinking + answer tokens are exactly the engine's counts; the forced words are counted apart.
    count = lambda reqs: sum(c.num_tokens for r in reqs for c in r[2].completions)  # noqa: E731
    assert record["thinking_tokens"] == count(thinking) and record["answer_tokens"] == count(answers)
    assert record["thinking_tokens"] + record["answer_tokens"] == record["generated_tokens"]
    assert record["generated_tokens"] == sum(s.num_tokens for s in answer.samples)
    assert record.get("forced_tokens", 0) == waits * wait


@pytest.mark.slow
def test_no_thinking_prefills_a_finished_thought_and_votes_n_answers(sync_engine: Any) -> None:
    answer, ledger, engine = run(sync_engine, "no_thinking", 2000, n=4, answer_tokens=48)
    [(prompt, params, generation)] = engine.requests
    assert prompt.endswith("<think>\nOkay, I think I have finished thinking.\n</think>\n")
    assert params.n == 4 and len(answer.samples) == 4 and sum(answer.info["votes"].values()) <= 4
    assert ledger.to_dict()["answer_tokens"] == sum(c.num_tokens for c in generation.completions)


@pytest.mark.slow
def test_revision_chains_see_their_earlier_attempts(sync_engine: Any) -> None:
    answer, _, engine = run(sync_engine, "revision", 3000, chains=2, revisions=3, max_tokens=48)
    assert answer.info["attempts_per_chain"] == [3, 3] and len(answer.samples) == 6
    texts = [r[2].completions[0].text for r in engine.requests]
    # The earlier attempts a prompt carries are its assistant turns, each followed by the request to revise.
    turns = {i: re.findall(r"<\|im_start\|>assistant\n(.*?)<\|im_end\|>", r[0], flags=re.S)
             for i, r in enumerate(engine.requests) if "Review your previous answer" in r[0]}
    assert sorted(len(t) for t in turns.values()) == [1, 1, 2, 2]  # attempts 2 and 3 of each chain
    for i, carried in turns.items():
        assert len(carried) == engine.requests[i][0].count("Review your previous answer")
        # Each is an attempt the engine wrote before this request (texts may repeat: a list, not a set) ...
        assert all(text in texts[:i] for text in carried)
        # ... and attempt 3 carries attempt 2's context, then the attempt it wrote.
        if len(carried) == 2:
            assert any(turns.get(j) == carried[:1] and texts[j] == carried[1] for j in range(i))


class ThinkingPolicy(SimulatedArithmeticPolicy):
    """The simulated policy as a reasoning model: each sample thinks (plain-text delimiters), then answers."""

    THOUGHT = "<think>\nI add the numbers.\n</think>\n"

    def _sample(self, expression: str, value: int, reply: str, params: SamplingParams) -> Completion:
        thought = self.tokenize(self.THOUGHT)
        if params.max_tokens <= len(thought):  # cut while thinking
            return Completion(text=self.THOUGHT[: params.max_tokens], token_ids=tuple(thought[: params.max_tokens]),
                              finish_reason="length")
        answer = super()._sample(expression, value, reply, replace(params, max_tokens=params.max_tokens - len(thought)))
        return replace(answer, text=self.THOUGHT + answer.text, token_ids=(*thought, *answer.token_ids))


def _simulated(policy: SimulatedArithmeticPolicy, name: str, budget: int, **params: Any) -> tuple[Any, dict[str, Any]]:
    ctx = make_context(policy, budget, problem_index=3)
    fn = STRATEGIES.get(name)
    answer = asyncio.run(fn(ctx.problem, ctx, params_class(fn)(**params)))
    return answer, ctx.ledger.to_dict()


def test_revision_meters_thinking_and_answer_tokens_apart() -> None:
    policy = ThinkingPolicy(seed=1)
    answer, ledger = _simulated(policy, "revision", 5000, chains=2, revisions=3, max_tokens=80)
    assert answer.info["attempts_per_chain"] == [3, 3]
    thought = len(policy.THOUGHT)  # one token per character
    # Every attempt thought the same thought, through its end-of-thinking delimiter; the rest was its answer.
    assert ledger["thinking_tokens"] == 6 * thought
    assert ledger["thinking_tokens"] + ledger["answer_tokens"] == ledger["generated_tokens"] == policy.generated_tokens
    assert ledger["answer_tokens"] == sum(s.num_tokens for s in answer.samples) - 6 * thought > 0
    # Attempts cut while thinking are all thinking.
    policy = ThinkingPolicy(seed=1)
    _, ledger = _simulated(policy, "revision", 5000, chains=1, revisions=2, max_tokens=10)
    assert ledger["thinking_tokens"] == ledger["generated_tokens"] == 20 and ledger["answer_tokens"] == 0


def test_revision_on_a_model_that_does_not_think_is_all_answer() -> None:
    policy = SimulatedArithmeticPolicy(seed=1)
    _, ledger = _simulated(policy, "revision", 5000, chains=2, revisions=2, max_tokens=80)
    assert ledger["thinking_tokens"] == 0
    assert ledger["answer_tokens"] == ledger["generated_tokens"] == policy.generated_tokens > 0


def test_no_thinking_records_why_a_budget_below_one_answer_draws_nothing() -> None:
    policy = SimulatedArithmeticPolicy(seed=1)
    answer, ledger = _simulated(policy, "no_thinking", 2000, answer_tokens=2048)
    assert answer.prediction is None and answer.info["n"] == 0 and policy.requests == []
    assert answer.info["reason"] == ("the budget left (2,000 tokens) pays for no answer of answer_tokens=2048: "
                                     "give a budget of at least one answer, or a smaller answer_tokens")
    answer, ledger = _simulated(SimulatedArithmeticPolicy(seed=1), "no_thinking", 4096, answer_tokens=2048)
    assert answer.info["n"] == 2 and "reason" not in answer.info
    assert ledger["answer_tokens"] == ledger["generated_tokens"] > 0


def test_sequential_parameters_are_checked() -> None:
    from ttscale.strategies.budget_forcing import BudgetForcingParams
    from ttscale.strategies.revision import RevisionParams

    with pytest.raises(ValueError, match="thinking_budget must be ≥ 1, got 0"):
        BudgetForcingParams(thinking_budget=0)
    with pytest.raises(ValueError, match="waits must be ≥ 0"):
        BudgetForcingParams(waits=-1)
    with pytest.raises(ValueError, match="select_from must be all or last"):
        RevisionParams(select_from="best")  # type: ignore[arg-type]
    assert BudgetForcingParams(answer_cue="\\nAnswer:").answer_cue == "\nAnswer:"
