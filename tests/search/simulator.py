"""A SIMULATED arithmetic policy behind the Engine protocol, for fast pure-logic tests of strategies.

It is not a model and not vLLM: it writes arithmetic solutions from a script with seeded
randomness, so strategy logic (tree shapes, budgets, selection) can be tested in milliseconds.
Tests that claim anything about vLLM use the real engine (`sync_engine`), never this.

What it imitates of the real engine, because the search plumbing relies on it:
- a tokenizer (one token per character, EOS = 2) and a chat prompt;
- n samples per request, `max_tokens` (finish "length"), stop strings (dropped from the text,
  kept in the token ids, finish "stop"), EOS kept in the token ids (finish "stop");
- log-probs when asked; a prefix cache per full block of `block_size` tokens, reported as
  `cached_prompt_tokens` (at most prompt length − 1, as vLLM);
- requests awaited together are in flight together (`peak_in_flight` counts them).

The script, one step per "\\n\\n": optionally "We need E." first; then "E = v'" where v' is
right with probability `p_correct` (else off by a small amount); sometimes a "Check: E = v''"
step; then "The answer is <last stated value>." and EOS. So a verifier that checks equations
can steer a search to the right answer, and one that cannot leaves it at chance.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Sequence
from typing import Any

from ttscale.verifiers.safe_eval import safe_eval

from ttscale.types import Completion, Generation, SamplingParams

EOS = 2
_OFFSET = 3
_USER, _ASSISTANT = "<|user|>", "<|assistant|>"
_EXPRESSION = re.compile(r"Calculate (.+?)\. Give")
_STATED = re.compile(r"=\s*(-?\d+)")


class SimulatedArithmeticPolicy:
    """Engine protocol over a scripted, seeded fake policy (see the module docstring)."""

    def __init__(
        self,
        *,
        seed: int = 0,
        p_correct: float = 0.5,
        p_intro: float = 0.3,
        p_recheck: float = 0.15,
        block_size: int = 32,
    ) -> None:
        self.rng = random.Random(seed)
        self.p_correct, self.p_intro, self.p_recheck = p_correct, p_intro, p_recheck
        self.block_size = block_size
        self.requests: list[dict[str, Any]] = []
        """One entry per request: prompt ids, n, max_tokens, stop, cached tokens."""
        self.generated_tokens = 0
        """Every token this policy has returned (what the ledgers must add up to)."""
        self.in_flight = 0
        self.peak_in_flight = 0
        self._blocks: set[tuple[int, ...]] = set()

    # -- Engine protocol --------------------------------------------------------------------------
    def chat_prompt(self, messages: list[dict[str, str]]) -> list[int]:
        return self.tokenize("".join(_USER + m["content"] for m in messages) + _ASSISTANT)

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) + _OFFSET for c in text]

    def detokenize(self, token_ids: Sequence[int]) -> str:
        return "".join("<eos>" if t == EOS else chr(t - _OFFSET) for t in token_ids)

    def describe(self) -> dict[str, Any]:
        return {"backend": "simulator"}

    async def close(self) -> None:
        return None

    async def generate(self, prompt: Any, params: SamplingParams) -> Generation:
        ids = self.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)  # let every coroutine issue its request first, as a real engine batch would
            await asyncio.sleep(0)
        finally:
            self.in_flight -= 1
        question, _, reply = self.detokenize(ids).partition(_ASSISTANT)
        match = _EXPRESSION.search(question)
        expression = match.group(1) if match else "1 + 1"
        value = int(safe_eval(expression))
        completions = tuple(self._sample(expression, value, reply, params) for _ in range(params.n))
        cached = self._cached(ids)
        for c in completions:
            self._remember([*ids, *c.token_ids])
        self.generated_tokens += sum(c.num_tokens for c in completions)
        self.requests.append(
            {"prompt": ids, "n": params.n, "max_tokens": params.max_tokens, "stop": params.stop, "cached": cached}
        )
        return Generation(completions=completions, prompt_tokens=len(ids), cached_prompt_tokens=cached)

    # -- the script -------------------------------------------------------------------------------
    def _next_step(self, expression: str, value: int, so_far: str) -> tuple[str, bool]:
        if "The answer is" in so_far:
            return "", True
        if so_far and not so_far.endswith("\n\n"):  # a step cut by max_tokens: close it at once
            return "\n\n", False
        stated = _STATED.findall(so_far)
        if not stated:
            if "We need" not in so_far and self.rng.random() < self.p_intro:
                return f"We need {expression}.\n\n", False
            return f"{expression} = {self._guess(value)}\n\n", False
        if so_far.count("=") < 3 and self.rng.random() < self.p_recheck:
            return f"Check: {expression} = {self._guess(value)}\n\n", False
        return f"The answer is {stated[-1]}.", True

    def _guess(self, value: int) -> int:
        return value if self.rng.random() < self.p_correct else value + self.rng.choice([-10, -2, -1, 1, 2, 10])

    def _sample(self, expression: str, value: int, reply: str, params: SamplingParams) -> Completion:
        out, done = "", False
        while not done and len(out) < params.max_tokens and not any(s in out for s in params.stop):
            piece, done = self._next_step(expression, value, reply + out)
            out += piece
        tokens = self.tokenize(out) + ([EOS] if done else [])
        stops = [(out.find(s), s) for s in params.stop if s in out]
        if stops:
            at, stop = min(stops)
            text, tokens, reason = out[:at], tokens[: at + len(stop)], "stop"
        else:
            text, reason = out, "stop" if done else "length"
        if len(tokens) > params.max_tokens:
            tokens = tokens[: params.max_tokens]
            text, reason = self.detokenize(tokens).replace("<eos>", ""), "length"
        logprobs = tuple(-self.rng.random() for _ in tokens) if params.logprobs is not None else None
        top = (
            tuple({self.detokenize([t]): lp} for t, lp in zip(tokens, logprobs, strict=True))
            if logprobs is not None and params.logprobs
            else None
        )
        return Completion(text=text, token_ids=tuple(tokens), logprobs=logprobs, top_logprobs=top, finish_reason=reason)

    # -- prefix cache -----------------------------------------------------------------------------
    def _cached(self, ids: list[int]) -> int:
        cached = 0
        for end in range(self.block_size, len(ids), self.block_size):  # the last token is always computed
            if tuple(ids[:end]) not in self._blocks:
                break
            cached = end
        return cached

    def _remember(self, ids: list[int]) -> None:
        for end in range(self.block_size, len(ids) + 1, self.block_size):
            self._blocks.add(tuple(ids[:end]))


def make_context(policy: SimulatedArithmeticPolicy, budget: str | float, *, problem_index: int = 0, task: Any = None):  # type: ignore[no-untyped-def]
    """A Context for one arithmetic problem whose engine is the simulated policy."""
    from ttscale.evals.arithmetic import ArithmeticTask

    from ttscale.budget import Budget, Ledger
    from ttscale.context import Context

    task = task or ArithmeticTask(levels=(1, 2, 3), per_level=20)
    problem = task.problems()[problem_index]
    return Context(problem=problem, task=task, engine=policy, ledger=Ledger(Budget.parse(budget)))
