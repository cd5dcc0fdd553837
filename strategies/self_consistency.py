"""Self-consistency: sample N reasoning paths, answer by (optionally verifier-weighted) majority vote.

Wang et al., "Self-Consistency Improves Chain of Thought Reasoning in Language Models",
arXiv:2203.11171 (2022); weighted voting as in Li et al., "Making Large Language Models Better
Reasoners with Step-Aware Verifier", arXiv:2206.02336 (2022).

Symbols: N samples y_1..y_N ~ π(· | x) at temperature T; a_i = extract(y_i);
â = argmax_a Σ_i w_i·1[a_i = a], with w_i = 1 (plain) or w_i = r(y_i) from a verifier (weighted).
Ties → the answer seen first, so runs are deterministic.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ttscale.blocks.sampling import PoolParams, sample_pool, score_outcomes
from ttscale.blocks.verified import ChecksVerifier
from ttscale.kit.capabilities import pool_replay
from ttscale.kit.context import Context
from ttscale.kit.params import strategy
from ttscale.kit.selection import majority_vote, weighted_vote
from ttscale.schema import Answer, Problem, Sample


@dataclass(frozen=True, kw_only=True)
class SelfConsistencyParams(ChecksVerifier, PoolParams):
    verifier: str | None = None
    """Weights each vote by this verifier's outcome reward (weighted self-consistency); None = plain majority."""


def vote(samples: list[Sample], p: Any) -> tuple[str | None, dict[str, Any]]:
    """â: the (weighted, when the samples carry a verifier's rewards) majority, and the info a run stores."""
    prediction, votes = majority_vote(samples) if getattr(p, "verifier", None) is None else weighted_vote(samples)
    return prediction, {"n": len(samples), "votes": dict(votes)}


@strategy(SelfConsistencyParams, replay=pool_replay(vote), difficulty_pool=True)
async def self_consistency(problem: Problem, ctx: Context, p: SelfConsistencyParams) -> Answer:
    completions = await sample_pool(ctx, p)
    if p.verifier is None:
        samples = [ctx.sample(c) for c in completions]
    else:
        rewards = await score_outcomes(ctx, [c.text for c in completions], verifier=p.verifier)
        samples = [ctx.sample(c, score=r) for c, r in zip(completions, rewards, strict=True)]
    prediction, info = await asyncio.to_thread(vote, samples, p)  # a symbolic merge waits on the grader
    return Answer(prediction=prediction, samples=tuple(samples), info=info)
