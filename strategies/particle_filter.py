"""Particle filtering over reasoning steps.

Puri, Sudalairaj, Xu, Xu, Srivastava, "A Probabilistic Inference Approach to Inference-Time
Scaling of LLMs using Particle-Based Monte Carlo Methods", arXiv:2502.01618 (2025), §3
(reference code: its_hub `ParticleFiltering`).

Symbols: N particles (`n`); r_t^i the verifier value of particle i after step t; its log weight
w_t^i = logit(r_t^i) (the PRM score read as a likelihood); T the resampling temperature
(`temperature_r`, 1 in the paper).
1. propose: every particle that has not ended is extended by one sampled step;
2. weigh: score the new prefixes; a particle that ended keeps its last weight;
3. resample: draw N particles with replacement, P(i) = softmax(w_t / T)_i (ended ones included,
   so a good finished solution multiplies and a bad one dies out); go to 1.
Stops when every particle has ended, `max_steps` is reached, or the budget ends. A particle
drawn k times is extended by one request with n = k (its prefix is computed once). The answer
is the particle of highest weight (`select=best`, as the reference code's argmax); `weighted`
sums the weights of identical answers (the particle posterior). With `n` unset, N = B / max_tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from ttscale.blocks.verified import ChecksVerifier, open_search
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range, strategy
from ttscale.schema import Answer, Problem
from ttscale.search import SearchParams, Select, logit, resample, softmax


@dataclass(frozen=True, kw_only=True)
class ParticleFilterParams(ChecksVerifier, SearchParams):
    """Particle filtering with PRM weights."""

    n: int | None = None
    """N: particles; None = B / max_tokens."""
    temperature_r: float = 1.0
    """T: temperature of the resampling softmax over logit weights; higher = closer to uniform."""
    select: Select = "best"
    """How the final answer is chosen among the N particles: best (highest weight), majority, weighted."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("n", self.n, allow_none=True)
        check_range("temperature_r", self.temperature_r, 0, 100, low_open=True)


@strategy(ParticleFilterParams)
async def particle_filter(problem: Problem, ctx: Context, p: ParticleFilterParams) -> Answer:
    search, n = open_search(ctx, p, n=p.n)
    if n < 1:
        return await search.answer([], info={"n": 0})
    (particles,) = await search.expand([search.root], n)
    resamplings = 0
    while particles:
        values = await search.score(particles)
        if all(node.terminal for node in particles) or not search.can_expand:
            break
        weights = softmax([logit(v) for v in values], temperature=p.temperature_r)
        particles = [particles[i] for i in resample(weights, n, rng=search.rng)]
        resamplings += 1
        groups = await search.expand([node for node in particles if not node.terminal], 1)
        if not any(groups):
            break  # nothing moved: the budget is spent
        # A particle that ended stays as it is; one whose request the budget refused stays too.
        moved = iter(groups)
        particles = [node if node.terminal else (next(moved) or [node])[0] for node in particles]
    return await search.answer(particles, info={"n": n, "resamplings": resamplings})
