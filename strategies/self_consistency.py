"""Self-consistency: sample N reasoning paths, answer by majority vote.

Wang et al., "Self-Consistency Improves Chain of Thought Reasoning in Language Models",
arXiv:2203.11171 (2022).

Symbols: N samples y_1..y_N ~ π(· | x) at temperature T; a_i = extract(y_i);
â = argmax_a Σ_i 1[a_i = a]  (ties → the answer seen first, so runs are deterministic).
"""

from __future__ import annotations

from ttscale.context import Context
from ttscale.params import strategy
from ttscale.sampling import PoolParams, sample_pool
from ttscale.select import majority_vote
from ttscale.types import Answer, Problem


@strategy(PoolParams)
async def self_consistency(problem: Problem, ctx: Context, p: PoolParams) -> Answer:
    samples = [ctx.sample(c) for c in await sample_pool(ctx, p)]
    prediction, votes = majority_vote(samples)
    return Answer(prediction=prediction, samples=tuple(samples), info={"n": len(samples), "votes": votes})
