"""`noisy_oracle`: the task grader's verdict, blurred by a known amount of noise.

It reads the reference answer, so it is no verifier one could deploy: it exists for controlled
experiments on how verifier quality shapes scaling (Snell et al. §5 and the GenRM papers vary
it the same way), and for developing search strategies before model-based verifiers exist.

Symbols: v ∈ {0, 1} the grader's verdict; σ the noise level; z ~ N(0, 1);
score = clip(v + σ·z, 0, 1). A correct candidate outranks a wrong one with probability
Φ(1 / (σ√2)) before clipping; after it (ties at the bounds counted half) the verifier's AUC is
1.0 at σ=0, 0.9998 at σ=0.2, 0.917 at σ=0.5, 0.738 at σ=1 (measured on 2M draws).

Step scores judge the prefix up to each step: v is the grade of the answer the prefix states
so far (`task.extract` on its text), and `unknown` when it states none. Every draw is keyed
by (seed, problem, text), so a prefix gets the same score however often and in whatever order
it is scored: results do not depend on concurrency. `per_step` chooses whether each step of a
path gets its own draw (step-level noise) or the steps of a path share one (noise of a single
judgment spread over the path).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ttscale.kit.params import check_range

if TYPE_CHECKING:
    from ttscale.kit.context import Context


@dataclass(frozen=True, kw_only=True)
class NoisyOracle:
    """The grader's 0/1 verdict plus Gaussian noise of a known σ, clipped to [0, 1]; seeded."""

    name: ClassVar[str] = "noisy_oracle"

    noise: float = 0.2
    """σ of the noise on outcome scores (and on step scores unless `step_noise` is set); 0 = the grader itself."""
    step_noise: float | None = None
    """σ of the noise on step scores; None = `noise`."""
    per_step: bool = True
    """Each step gets its own draw; False: all steps of one path share the draw of its last step."""
    unknown: float = 0.5
    """Verdict of a prefix that states no answer yet (before noise)."""
    seed: int = 0
    """Seed of the noise (combined with the problem id and the scored text)."""

    def __post_init__(self) -> None:
        check_range("noise", self.noise, 0, 10)
        if self.step_noise is not None:
            check_range("step_noise", self.step_noise, 0, 10)
        check_range("unknown", self.unknown, 0, 1)

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        # The grader may be slow on hostile text (it is time-bounded): keep it off the event loop.
        return await asyncio.to_thread(self._score_steps, ctx, [list(steps) for steps in candidates])

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        return await asyncio.to_thread(self._score_outcomes, ctx, list(solutions))

    # -- internals --------------------------------------------------------------------------------
    def _score_outcomes(self, ctx: Context, solutions: list[str]) -> list[float]:
        return [
            self._blur(
                self._verdict(ctx, text, unknown=0.0), self.noise, key=(ctx.problem.id, "outcome", text)
            )
            for text in solutions
        ]

    def _score_steps(self, ctx: Context, candidates: list[list[str]]) -> list[list[float]]:
        sigma = self.noise if self.step_noise is None else self.step_noise
        out = []
        for steps in candidates:
            prefixes = ["\n\n".join(steps[: i + 1]) for i in range(len(steps))]
            verdicts = [self._verdict(ctx, prefix, unknown=self.unknown) for prefix in prefixes]
            if self.per_step:
                keys = [(ctx.problem.id, "step", prefix) for prefix in prefixes]
            else:  # one draw for the path, taken from its full text
                keys = [(ctx.problem.id, "path", prefixes[-1] if prefixes else "")] * len(prefixes)
            out.append([self._blur(v, sigma, key=k) for v, k in zip(verdicts, keys, strict=True)])
        return out

    @staticmethod
    def _verdict(ctx: Context, text: str, *, unknown: float) -> float:
        answer = ctx.task.extract(text)
        if answer is None:
            return unknown
        return 1.0 if ctx.task.grade(answer, ctx.problem) else 0.0

    def _blur(self, verdict: float, sigma: float, *, key: tuple[str, str, str]) -> float:
        if sigma == 0:
            return verdict
        # random.Random seeds a str through SHA-512: the same key gives the same draw in every process.
        z = random.Random(f"{self.seed}\x00{key[0]}\x00{key[1]}\x00{key[2]}").gauss(0.0, 1.0)
        return min(1.0, max(0.0, verdict + sigma * z))
