"""Reading a yes/no verdict from ONE generated token's log-probabilities.

Requests with `prompt_logprobs` bypass vLLM's prefix cache (ENGINE_NOTES.md), so a model judge
here generates a single token with top-k log-probs instead: the judge prompt shares its prefix
(problem, earlier steps) with every other judgement of the same problem and is served from cache.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ttscale.kit.context import Context
from ttscale.schema import SamplingParams

YES = frozenset({"yes", "y", "correct", "true", "+"})
NO = frozenset({"no", "n", "incorrect", "wrong", "false", "-"})
#: Top alternatives read at the verdict position (vLLM caps at 20).
TOP_K = 20


def yes_probability(top: Mapping[str, float]) -> float | None:
    """P(yes) / (P(yes) + P(no)) over the verdict tokens among the top alternatives; None if neither appears."""
    p_yes = p_no = 0.0
    for token, logprob in top.items():
        word = token.strip().strip(".,:!").lower()
        if word in YES:
            p_yes += math.exp(logprob)
        elif word in NO:
            p_no += math.exp(logprob)
    if p_yes + p_no == 0:
        return None
    return p_yes / (p_yes + p_no)


async def judge(ctx: Context, prompt: Sequence[int], *, default: float = 0.5) -> float:
    """One verifier request of one greedy token; the verdict's probability, `default` when unreadable.

    `default` also covers a spent budget: the judge then abstains rather than failing the search.
    """
    generation = await ctx.generate(
        prompt, SamplingParams(n=1, temperature=0.0, max_tokens=1, logprobs=TOP_K), role="verifier"
    )
    if not generation.completions:
        return default
    top = generation.completions[0].top_logprobs
    p = yes_probability(top[0]) if top else None
    return default if p is None else p


async def steps_as_outcomes(verifier: Any, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
    """Step scores from a verifier that judges whole solutions: each step gets the outcome score of the path so far
    (one `score_outcomes` call for every prefix of every candidate)."""
    paths = ["\n\n".join(steps[: i + 1]) for steps in candidates for i in range(len(steps))]
    flat = iter(await verifier.score_outcomes(ctx, paths))
    return [[next(flat) for _ in steps] for steps in candidates]

