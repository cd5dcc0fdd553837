"""A SIMULATED arithmetic policy behind the AsyncEngine protocol, for fast pure-logic tests of strategies.

It is not a model and not vLLM: it writes arithmetic solutions from a script with seeded
randomness, so strategy logic (tree shapes, budgets, selection) can be tested in milliseconds.
Tests that claim anything about vLLM use the real engine, never this. Plugin authors can test a
strategy against it in milliseconds: `make_context(SimulatedArithmeticPolicy(seed=0), "2k")`.

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

A judgement (a request for ONE token with top log-probs, as model judges send) is answered "Y"
or "N" with P("Y") = `p_judge` when the last value the user's message states after the problem
(a proposed solution's `= v` or `answer is v`) is right, 1 − `p_judge` when it is wrong, and 0.5
when it states none; a generated verification chain before the verdict does not change it.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ttscale.engine.base import check_watched
from ttscale.engine.confidence import token_confidence
from ttscale.schema import Completion, FinishReason, Generation, SamplingParams
from ttscale.testing.latency import ASSISTANT, EOS, CharTokenizer
from ttscale.testing.script import first_stop
from ttscale.verifiers.safe_eval import safe_eval

if TYPE_CHECKING:
    from ttscale.kit.context import Context

_EXPRESSION = re.compile(r"Calculate (.+?)\. Give")
_STATED = re.compile(r"=\s*(-?\d+)")
_PROPOSED = re.compile(r"(?:=|answer is)\s*(-?\d+)")


class SimulatedArithmeticPolicy(CharTokenizer):
    """AsyncEngine protocol over a scripted, seeded fake policy (see the module docstring)."""

    def __init__(
        self,
        *,
        seed: int = 0,
        p_correct: float = 0.5,
        p_intro: float = 0.3,
        p_recheck: float = 0.15,
        p_judge: float = 0.9,
        block_size: int = 32,
        confidence_drop: float = 1.0,
        confidence_script: Callable[[str, int], Sequence[float]] | None = None,
    ) -> None:
        self.rng = random.Random(seed)
        self._confidence_rng = random.Random(seed + 1)  # its own draws: the script's samples stay as they were
        self.confidence_drop = confidence_drop
        """DeepConf's premise, scripted: a sample that states a wrong value has token confidences this much lower
        (each token's is 3 ± 0.5 otherwise)."""
        self.confidence_script = confidence_script
        """(text, tokens) → the token confidences of a sample, replacing the rule above (for hand examples)."""
        self.aborted = 0
        """Watched requests stopped mid-stream (`generate_watched`)."""
        self.p_correct, self.p_intro, self.p_recheck = p_correct, p_intro, p_recheck
        self.p_judge = p_judge
        self.block_size = block_size
        self.requests: list[dict[str, Any]] = []
        """One entry per request: prompt ids, n, max_tokens, stop, cached tokens."""
        self.generated_tokens = 0
        """Every token this policy has returned (what the ledgers must add up to)."""
        self.in_flight = 0
        self.peak_in_flight = 0
        self._blocks: set[tuple[int, ...]] = set()

    # -- AsyncEngine protocol (the tokenizer half is CharTokenizer's) -------------------------------------
    def describe(self) -> dict[str, Any]:
        return {"backend": "simulator"}

    async def close(self) -> None:
        return None

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        # `seed` is the AsyncEngine protocol's per-request seed; the script draws from the policy's own seeded RNG.
        ids = self.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0)  # let every coroutine issue its request first, as a real engine batch would
            await asyncio.sleep(0)
        finally:
            self.in_flight -= 1
        question, _, reply = self.detokenize(ids).partition(ASSISTANT)
        match = _EXPRESSION.search(question)
        expression = match.group(1) if match else "1 + 1"
        value = int(safe_eval(expression))
        if params.max_tokens == 1 and params.logprobs:
            completions: tuple[Completion, ...] = (self._judge(question, expression, value),) * params.n
        else:
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
            reason: FinishReason = "stop"
            text, tokens = out[:at], tokens[: at + len(stop)]
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
        confidences = self._confidences(text, len(tokens), value) if top is not None else None
        return Completion(text=text, token_ids=tuple(tokens), logprobs=logprobs, top_logprobs=top, finish_reason=reason,
                          confidences=confidences)

    def _confidences(self, text: str, length: int, value: int) -> tuple[float, ...]:
        if self.confidence_script is not None:
            return tuple(float(c) for c in self.confidence_script(text, length))
        wrong = any(int(v) != value for v in _STATED.findall(text))
        drop = self.confidence_drop if wrong else 0.0
        return tuple(3.0 - drop + self._confidence_rng.uniform(-0.5, 0.5) for _ in range(length))

    async def generate_watched(
        self, prompt: Any, params: SamplingParams, *, watch: Callable[[float], bool], seed: int | None = None
    ) -> Generation:
        """One sample, "streamed" token by token to `watch`; stopped at the first token it returns True for (the
        tokens after it are never generated: what comes back, and is counted, ends there, finish "abort")."""
        check_watched(params)
        generation = await self.generate(prompt, params, seed=seed)
        if not generation.completions:
            return generation
        whole = generation.completions[0]
        at = first_stop(watch, whole.confidences or ())
        if at is None:
            return generation
        cut = self.cut(whole, at)
        self.generated_tokens -= whole.num_tokens - cut.num_tokens
        self.aborted += 1
        return replace(generation, completions=(cut,))

    def _judge(self, question: str, expression: str, value: int) -> Completion:
        proposal = question.split(expression, 1)[-1]  # what the user's message says after the problem
        stated = _PROPOSED.findall(proposal)
        p_yes = 0.5 if not stated else self.p_judge if int(stated[-1]) == value else 1 - self.p_judge
        p_yes = min(max(p_yes, 1e-6), 1 - 1e-6)
        top = {"Y": math.log(p_yes), "N": math.log(1 - p_yes)}
        verdict = "Y" if p_yes >= 0.5 else "N"
        return Completion(
            text=verdict, token_ids=tuple(self.tokenize(verdict)), logprobs=(top[verdict],), top_logprobs=(top,),
            confidences=(token_confidence(top.values()),),
        )

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


def make_context(
    policy: SimulatedArithmeticPolicy, budget: str | float, *, problem_index: int = 0, task: Any = None
) -> Context:
    """A Context for one arithmetic problem whose engine is the simulated policy."""
    from ttscale.budget import Budget, Ledger
    from ttscale.evals.arithmetic import ArithmeticTask
    from ttscale.kit.context import Context

    task = task or ArithmeticTask(levels=(1, 2, 3), per_level=20)
    problem = task.problems()[problem_index]
    return Context(problem=problem, task=task, engine=policy, ledger=Ledger(Budget.parse(budget)))
