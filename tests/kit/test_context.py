"""`Context`: a text that cannot fit the engine's context is refused before it is tokenized."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from ttscale.budget import Budget, Ledger
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.context import Context
from ttscale.schema import Generation, SamplingParams


class _SmallEngine:
    """An engine of a 16-token context that counts the texts it is asked to tokenize."""

    config = SimpleNamespace(max_model_len=16)

    def __init__(self) -> None:
        self.tokenized: list[int] = []

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        self.tokenized.append(sum(len(m["content"]) for m in messages))
        return [1, 2, 3]

    def tokenize(self, text: str) -> list[int]:
        self.tokenized.append(len(text))
        return [1, 2, 3]

    async def generate(self, prompt: Sequence[int], params: SamplingParams, *, seed: int | None = None) -> Any:
        return Generation(completions=(), prompt_tokens=len(prompt))


def _context(question: str) -> tuple[Context, _SmallEngine]:
    task = ArithmeticTask(levels=(1,), per_level=1)
    engine = _SmallEngine()
    problem = replace(task.problems()[0], question=question)
    return Context(problem=problem, task=task, engine=engine, ledger=Ledger(Budget.parse("64"))), engine  # type: ignore[arg-type]


def test_a_question_too_long_for_any_prompt_is_refused_before_it_is_tokenized() -> None:
    # 16 tokens hold at most 1,600 characters (no tokenizer packs more than 100 into one).
    ctx, engine = _context("9" * 5000)
    with pytest.raises(ValueError, match=r"the problem's messages have [\d,]+ characters: too long for any prompt "
                                         r"of max_model_len=16 tokens"):
        ctx.prompt()
    assert engine.tokenized == []
    ctx, engine = _context("2+2")
    assert ctx.prompt() == [1, 2, 3] and len(engine.tokenized) == 1


def test_a_text_prompt_too_long_is_refused_before_it_is_tokenized_and_one_that_may_fit_is_not() -> None:
    ctx, engine = _context("2+2")
    params = SamplingParams(n=1, max_tokens=4)
    with pytest.raises(ValueError, match="the prompt has 1,601 characters: too long for any prompt of max_model_len"):
        asyncio.run(ctx.generate("x" * 1601, params))
    assert engine.tokenized == []
    asyncio.run(ctx.generate("x" * 1600, params))  # may fit: the tokenizer decides
    assert engine.tokenized == [1600]
