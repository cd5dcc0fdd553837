"""Budget forcing and NoThinking as their references write them, on a scripted engine (no model): the exact text
of each request.

s1 (simplescaling/s1, eval/lm-evaluation-harness/lm_eval/models/vllm_causallms.py, `_model_generate`) ends a
thought the budget cut with a newline (unless the thought ends with one), the end-of-thinking delimiter and
"\\nFinal Answer:", and a thought the model ended with the delimiter alone. NoThinking (Ma et al. 2025, §3.1)
prefills "<|beginning_of_thinking|>\\nOkay, I think I have finished thinking.\\n<|end_of_thinking|>".

The engine is one token per character (ttscale.testing's tokenizer); `ThinkTokens` adds `<think>` and `</think>`
as single tokens, as Qwen3's and the R1 distills' tokenizers have them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from ttscale.budget import Budget, Ledger
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.context import Context
from ttscale.schema import Completion, Generation, SamplingParams
from ttscale.strategies.budget_forcing import BudgetForcingParams, budget_forcing
from ttscale.strategies.no_thinking import NoThinkingParams, no_thinking
from ttscale.testing.latency import ASSISTANT, CharTokenizer

TASK = ArithmeticTask(levels=(1,), per_level=1)
CUE = "\nFinal Answer: "


class Scripted(CharTokenizer):
    """Answers each request with the next scripted text, cut as an engine cuts it: at a stop string (dropped from
    the text, kept in the token ids, finish "stop"), else at max_tokens (finish "length"), else whole ("stop")."""

    def __init__(self, *texts: str, opening: str = "") -> None:
        self.texts = list(texts)
        self.opening = opening  # what the chat template writes after the assistant's header (`<think>\n`: opened)
        self.requests: list[tuple[str, SamplingParams]] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "scripted"}

    async def close(self) -> None:
        return None

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        return super().chat_prompt(messages, add_generation_prompt=add_generation_prompt) + self.tokenize(self.opening)

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        ids = self.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        self.requests.append((self.detokenize(ids), params))
        text = self.texts.pop(0)
        stops = sorted((text.index(s), s) for s in params.stop if s in text)
        tokens = self.tokenize(text[: stops[0][0] + len(stops[0][1])] if stops else text)
        reason: Any = "stop"
        if len(tokens) > params.max_tokens:
            tokens, reason = tokens[: params.max_tokens], "length"
        shown = self.detokenize(tokens)
        if stops and reason == "stop":
            shown = shown[: stops[0][0]]
        completion = Completion(text=shown, token_ids=tuple(tokens), finish_reason=reason)
        return Generation(completions=(completion,), prompt_tokens=len(ids))


class ThinkTokens(Scripted):
    """The same, with `<think>` and `</think>` one token each."""

    SPECIAL: ClassVar[dict[str, int]] = {"<think>": 1_000_001, "</think>": 1_000_002}

    def tokenize(self, text: str) -> list[int]:
        ids: list[int] = []
        for piece in re.split(r"(</?think>)", text):
            ids += [self.SPECIAL[piece]] if piece in self.SPECIAL else super().tokenize(piece)
        return ids

    def detokenize(self, token_ids: Sequence[int]) -> str:
        names = {v: k for k, v in self.SPECIAL.items()}
        out, run = "", list[int]()
        for t in [*token_ids, -1]:
            if t in names or t == -1:
                out += super().detokenize(run) + names.get(t, "")
                run = []
            else:
                run.append(t)
        return out


def _run(engine: Scripted, fn: Any, params: Any, budget: int = 10_000) -> tuple[Any, Context]:
    ctx = Context(problem=TASK.problems()[0], task=TASK, engine=engine, ledger=Ledger(Budget.parse(budget)))
    return asyncio.run(fn(ctx.problem, ctx, params)), ctx


def _after_prompt(engine: Scripted, request: int) -> str:
    """What request `request` holds after the chat prompt (the assistant's header)."""
    return engine.requests[request][0].split(ASSISTANT, 1)[1]


# -- budget forcing: the cue only after a cut thought -----------------------------------------------------------


def test_a_thought_the_model_ended_is_closed_by_the_delimiter_alone() -> None:
    engine = Scripted("I add 2 and 3.\n</think>\nmore", "The answer is 5.")
    answer, _ = _run(engine, budget_forcing, BudgetForcingParams(thinking_budget=100))
    assert _after_prompt(engine, 1) == "<think>\nI add 2 and 3.\n</think>\n"  # no cue: s1's `thinking_end` alone
    [sample], [chain] = answer.samples, answer.info["chains"]
    assert sample.text == "I add 2 and 3.\n</think>\nThe answer is 5." and chain["thinking_cut"] is False


def test_a_thought_the_budget_cut_is_closed_on_its_own_line_and_cued() -> None:
    # B_think = 10 cuts "I add 2 and 3." after "I add 2 an"; the plain delimiter brings its own newline.
    engine = Scripted("I add 2 and 3.\n</think>\n", "5")
    answer, _ = _run(engine, budget_forcing, BudgetForcingParams(thinking_budget=10))
    assert engine.requests[0][1].max_tokens == 10
    assert _after_prompt(engine, 1) == "<think>\nI add 2 an\n</think>\n\nFinal Answer: "
    assert answer.samples[0].text == "I add 2 an\n</think>\n\nFinal Answer: 5"
    assert answer.info["chains"][0]["thinking_cut"] is True


def test_with_the_models_delimiter_token_a_cut_thought_gets_the_newline_s1_adds() -> None:
    engine = ThinkTokens("I add 2 and 3.\n</think>", "5")
    _run(engine, budget_forcing, BudgetForcingParams(thinking_budget=10))
    assert _after_prompt(engine, 1) == "<think>\nI add 2 an\n</think>" + CUE  # s1: `cont + newline + end + cue`
    close = engine.requests[1][0].index("</think>")
    assert ThinkTokens.SPECIAL["</think>"] in engine.tokenize(engine.requests[1][0][close:])  # one token
    # A cut that falls just after a newline gets none added (s1: "\n appears a lot ... we don't need to add a newline").
    engine = ThinkTokens("I add 2 a\nnd 3.</think>", "5")
    _run(engine, budget_forcing, BudgetForcingParams(thinking_budget=10))
    assert _after_prompt(engine, 1) == "<think>\nI add 2 a\n</think>" + CUE
    # Ended by the model: the delimiter alone, no newline added and no cue.
    engine = ThinkTokens("I add 2 and 3.\n</think>", "5")
    _run(engine, budget_forcing, BudgetForcingParams(thinking_budget=100))
    assert _after_prompt(engine, 1) == "<think>\nI add 2 and 3.\n</think>"


def test_a_forced_word_needs_room_to_think_after_it() -> None:
    # "First." and its delimiter are 16 generated tokens; "Wait" would make 20 = B_think and leave no token to think
    # on. s1 forces a wait only while tokens are left to generate after it, so none is forced: the model's own end
    # of thinking stands (a wait that filled B_think used to end the thought cut, with no continuation).
    engine = Scripted("First.\n</think>\n", "5")
    answer, _ = _run(engine, budget_forcing, BudgetForcingParams(thinking_budget=20, waits=1))
    assert len(engine.requests) == 2
    assert _after_prompt(engine, 1) == "<think>\nFirst.\n</think>\n"
    assert answer.info["chains"][0]["thinking_cut"] is False and answer.info["chains"][0]["waits"] == 0
    # One token more, and the wait is forced, with that token to think on.
    engine = Scripted("First.\n</think>\n", "A", "5")
    answer, _ = _run(engine, budget_forcing, BudgetForcingParams(thinking_budget=21, waits=1))
    assert engine.requests[1][1].max_tokens == 1 and _after_prompt(engine, 1) == "<think>\nFirst.Wait"
    assert answer.info["chains"][0]["waits"] == 1


# -- budget forcing: forced words counted one way in info, sample and ledger ------------------------------------


def test_forced_words_are_prompt_tokens_in_the_chain_the_sample_and_the_ledger_alike() -> None:
    thoughts = ["First.\n</think>\n", " Second.\n</think>\n", " Third.\n</think>\n"]
    engine = Scripted(*thoughts, "The answer is 5.")
    answer, ctx = _run(engine, budget_forcing, BudgetForcingParams(thinking_budget=100, waits=2))
    ledger = ctx.ledger.to_dict()
    [sample], [chain] = answer.samples, answer.info["chains"]
    generated = sum(len(t) for t in thoughts)  # each thought through its delimiter: what the engine returned
    assert chain["waits"] == 2 and chain["forced_tokens"] == 2 * len("Wait") == ledger["forced_tokens"]
    assert chain["thinking_tokens"] == generated == ledger["thinking_tokens"]
    assert sample.num_tokens == generated + len("The answer is 5.") == ledger["generated_tokens"]
    assert chain["answer_tokens"] == ledger["answer_tokens"] and chain["thinking_cut"] is False
    # The words were sent as prompt: each continuation ends with one, and B_think counts them.
    assert [_after_prompt(engine, i)[-4:] for i in (1, 2)] == ["Wait", "Wait"]
    assert engine.requests[2][1].max_tokens == 100 - len(thoughts[0]) - len(thoughts[1]) - 2 * len("Wait")
    assert _after_prompt(engine, 3) == "<think>\nFirst.Wait Second.Wait Third.\n</think>\n"  # ended: no cue


def test_min_thinking_without_waits_is_refused() -> None:
    with pytest.raises(ValueError) as refused:
        BudgetForcingParams(min_thinking=256)
    assert str(refused.value) == ("min_thinking needs waits ≥ 1, got min_thinking=256 with waits=0 "
                                  "(give waits ≥ 1, or leave min_thinking unset)")
    assert BudgetForcingParams(min_thinking=256, waits=1).min_thinking == 256


# -- NoThinking: the paper's prefill -----------------------------------------------------------------------------

PAPER = "Okay, I think I have finished thinking."


@pytest.mark.parametrize(
    ("engine", "prefill"),
    [
        # Plain text: PLAIN_OPEN "<think>\n" and PLAIN_CLOSE "\n</think>\n" bring the newlines themselves.
        (Scripted("5"), f"<think>\n{PAPER}\n</think>\n"),
        # The model's tokens, the template not opening the block: `<think>\n` opens it, `</think>` after a newline.
        (ThinkTokens("5"), f"<think>\n{PAPER}\n</think>"),
        # The template opened it (R1 distills: "<think>\n"): nothing is added before the thought.
        (ThinkTokens("5", opening="<think>\n"), f"<think>\n{PAPER}\n</think>"),
        # A template that opens it without the newline: the thought still starts a line.
        (ThinkTokens("5", opening="<think>"), f"<think>\n{PAPER}\n</think>"),
    ],
    ids=["plain", "tokens", "template-opened", "template-opened-no-newline"],
)
def test_no_thinking_prefills_the_papers_block(engine: Scripted, prefill: str) -> None:
    _run(engine, no_thinking, NoThinkingParams(n=1, answer_tokens=8))
    [(prompt, params)] = engine.requests
    assert prompt.split(ASSISTANT, 1)[1] == prefill and params.max_tokens == 8
