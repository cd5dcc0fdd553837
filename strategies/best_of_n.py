"""Best-of-N: sample N solutions, keep the one a scorer ranks highest.

Brown et al., "Large Language Monkeys: Scaling Inference Compute with Repeated Sampling",
arXiv:2407.21787 (2024); Snell et al., arXiv:2408.03314 (2024), §5.

Symbols: N samples y_i ~ π(· | x); s(y_i) the score; ŷ = argmax_i s(y_i).
Without a verifier, s is the sample's mean token log-probability (confidence selection):
s(y) = (1/|y|) Σ_t log π(y_t | x, y_<t).
"""

from __future__ import annotations

from ttscale.context import Context
from ttscale.params import strategy
from ttscale.sampling import PoolParams, sample_pool
from ttscale.select import best_scored
from ttscale.types import Answer, Problem


@strategy(PoolParams)
async def best_of_n(problem: Problem, ctx: Context, p: PoolParams) -> Answer:
    completions = await sample_pool(ctx, p, logprobs=0)
    samples = [ctx.sample(c, score=c.mean_logprob) for c in completions]
    best = best_scored(samples)
    return Answer(
        prediction=best.answer if best else None,
        samples=tuple(samples),
        info={"n": len(samples), "scorer": "mean_logprob", "best_score": best.score if best else None},
    )
