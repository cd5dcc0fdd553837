"""Best-of-N: sample N solutions, keep the one a scorer ranks highest.

Brown et al., "Large Language Monkeys: Scaling Inference Compute with Repeated Sampling",
arXiv:2407.21787 (2024); Snell et al., arXiv:2408.03314 (2024), §5.

Symbols: N samples y_i ~ π(· | x); s(y_i) the score; ŷ = argmax_i s(y_i).
Without a verifier, s is the sample's mean token log-probability (confidence selection):
s(y) = (1/|y|) Σ_t log π(y_t | x, y_<t). With `verifier=V`, s is V's outcome reward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ttscale.blocks.sampling import PoolParams, sample_pool, score_outcomes
from ttscale.blocks.verified import ChecksVerifier
from ttscale.kit.capabilities import pool_replay
from ttscale.kit.context import Context
from ttscale.kit.params import strategy
from ttscale.kit.selection import best_scored
from ttscale.schema import Answer, Problem, Sample


@dataclass(frozen=True, kw_only=True)
class BestOfNParams(ChecksVerifier, PoolParams):
    verifier: str | None = None
    """Outcome scorer: a name in VERIFIERS (llm_judge, genrm, prm:model=DIR, ...); None = mean token log-prob.
    A verifier's tokens come out of the same budget, after the samples."""


def select_best(samples: list[Sample], p: BestOfNParams) -> tuple[str | None, dict[str, Any]]:
    """ŷ = argmax_i s(y_i), and the info a run stores with it."""
    best = best_scored(samples)
    return (best.answer if best else None), {"n": len(samples), "scorer": p.verifier or "mean_logprob",
                                             "best_score": best.score if best else None}


@strategy(BestOfNParams, replay=pool_replay(select_best), difficulty_pool=True)
async def best_of_n(problem: Problem, ctx: Context, p: BestOfNParams) -> Answer:
    completions = await sample_pool(ctx, p, logprobs=0 if p.verifier is None else None)
    scores: list[float | None]
    if p.verifier is None:
        scores = [c.mean_logprob for c in completions]
    else:
        scores = list(await score_outcomes(ctx, [c.text for c in completions], verifier=p.verifier))
    samples = [ctx.sample(c, score=s) for c, s in zip(completions, scores, strict=True)]
    prediction, info = select_best(samples, p)
    return Answer(prediction=prediction, samples=tuple(samples), info=info)
