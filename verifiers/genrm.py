"""`genrm`: generative verification with V chains of thought per solution.

Singhi et al., "When To Solve, When To Verify: Compute-Optimal Problem Solving and Generative
Verification for LLM Reasoning", arXiv:2504.01005 (2025).

Symbols: for a solution s, V verification chains v_1..v_V ~ π_V(· | x, s) of at most T_V tokens;
each chain ends with a verdict, read as r_j = P(Yes | x, s, v_j) from one token's log-probs;
the score is r(s) = (1/V) Σ_j r_j. Verification tokens are metered as verifier tokens, so the
compute C ∝ S·(T_S + V·T_V) = S·T_S·(1 + λV) with λ = T_V / T_S can be measured, not assumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ttscale.context import Context
from ttscale.params import check_positive, check_range
from ttscale.types import SamplingParams
from ttscale.verifiers.judging import judge

VERIFY = (
    "Problem: {question}\n\nProposed solution:\n{solution}\n\n"
    "Check the solution step by step. Then say whether its final answer is correct."
)
VERDICT = "\n\nIs the answer correct (Yes/No)?"


@dataclass(frozen=True, kw_only=True)
class GenRM:
    """Mean verdict probability over V generated verifications."""

    name: ClassVar[str] = "genrm"

    verifications: int = 4
    """V: verification chains per solution."""
    max_tokens: int = 256
    """T_V: tokens per verification chain at most."""
    temperature: float = 0.7
    """Sampling temperature of the verification chains."""
    default: float = 0.5
    """Verdict when it cannot be read, or when the budget is spent."""

    def __post_init__(self) -> None:
        check_positive("verifications", self.verifications)
        check_positive("max_tokens", self.max_tokens)
        check_range("temperature", self.temperature, 0, 10, low_open=True)
        check_range("default", self.default, 0, 1)

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        return list(await asyncio.gather(*(self._verify(ctx, s) for s in solutions)))

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        # A generative verifier judges whole solutions; each step gets the verdict on the path so far.
        paths = ["\n\n".join(steps[: i + 1]) for steps in candidates for i in range(len(steps))]
        flat = iter(await self.score_outcomes(ctx, paths))
        return [[next(flat) for _ in steps] for steps in candidates]

    async def _verify(self, ctx: Context, solution: str) -> float:
        prompt = ctx.engine.chat_prompt(
            [{"role": "user", "content": VERIFY.format(question=ctx.problem.question, solution=solution)}]
        )
        chains = await ctx.generate(
            prompt,
            SamplingParams(n=self.verifications, temperature=self.temperature, max_tokens=self.max_tokens),
            role="verifier",
        )
        if not chains.completions:
            return self.default
        verdict = ctx.engine.tokenize(VERDICT)
        # The verdict token is read after each chain; the prompt + chain prefix is served from the cache.
        votes = await asyncio.gather(
            *(judge(ctx, [*prompt, *c.token_ids, *verdict], default=self.default) for c in chains.completions)
        )
        return sum(votes) / len(votes)
