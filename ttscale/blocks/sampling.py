"""Parallel sampling shared by best-of-N, self-consistency and the strategies built on a sample pool."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ttscale.engine.base import EngineFatalError
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range
from ttscale.schema import Completion, Sample, SamplingParams


@dataclass(frozen=True, kw_only=True)
class PoolParams:
    """N independent samples of the problem's prompt."""

    n: int | None = None
    """Samples per problem; None = as many as the budget pays for at `max_tokens` each (N = B / max_tokens)."""
    temperature: float = 0.8
    """Sampling temperature."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    max_tokens: int = 256
    """Tokens per sample at most."""
    refill: bool = False
    """With n=None: keep sampling with what early-stopped samples left unspent, until not one more fits."""

    def __post_init__(self) -> None:
        check_positive("n", self.n, allow_none=True)
        check_range("temperature", self.temperature, 0, 10)
        check_range("top_p", self.top_p, 0, 1, low_open=True)
        check_positive("max_tokens", self.max_tokens)
        if self.n is not None and self.refill:
            raise ValueError("refill applies only when n is derived from the budget (n=None)")


async def sample_pool(
    ctx: Context, p: PoolParams, *, logprobs: int | None = None, prompt: list[int] | None = None,
    phase: str | None = None,
) -> list[Completion]:
    """Draw the pool in one engine request (or a few, with refill); the ledger caps it to the budget.

    `prompt`: another prompt than the problem's (a sleep-time strategy asks the query with its notes);
    `phase`: the ledger counts the pool's tokens under that name too (see `Context.generate`); `logprobs`: asked
    for, they must come back (`require_logprobs`): the first answer without them stops the run."""
    pool: list[Completion] = []
    while True:
        n = p.n if p.n is not None else ctx.ledger.affordable_samples(p.max_tokens)
        if n < 1:
            break
        params = SamplingParams(
            n=n, temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_tokens, logprobs=logprobs
        )
        generation = await ctx.generate(ctx.prompt() if prompt is None else prompt, params, phase=phase)
        if logprobs is not None:
            require_logprobs(generation.completions, top=logprobs > 0)
        pool.extend(generation.completions)
        if not p.refill or not generation.completions:
            break
    return pool


class MissingLogprobsError(EngineFatalError):
    """The engine answered without the log-probs the strategy asked for and scores its samples by.

    It stops the run (it is an `EngineFatalError`): every problem would get the same answer, and each would be
    scored None, answer nothing and count as finished, with no word of why.
    """


def require_logprobs(completions: Sequence[Completion], *, top: bool = False) -> None:
    """Raise `MissingLogprobsError` when a completion with tokens came back without its log-probs (or, `top`,
    without the top alternatives of each token, nor the token confidences made from them), as a server may answer
    a request that asked for them."""
    for completion in completions:
        no_top = completion.top_logprobs is None and completion.confidences is None
        if completion.num_tokens and (completion.logprobs is None or (top and no_top)):
            what = "top log-probs" if completion.logprobs is not None else "log-probs"
            raise MissingLogprobsError(
                f"the engine answered without the {what} it was asked for, and this strategy scores its samples by "
                "them: use a backend that returns them (vLLM's server and engine do), or select by a verifier "
                "(best_of_n --param verifier=NAME) or a vote (self_consistency)"
            )


async def score_outcomes(ctx: Context, texts: list[str], *, verifier: str) -> list[float]:
    """The verifier's value of each whole solution, counted in the ledger as `reward_evaluations`: one per
    solution scored, the unit in which A*-decoding counts reward calls (a PRM's forward pass). Tree searches
    count each partial path they score in the same counter (`Search.score`). GenRM's verification chains are
    generated text, metered as verifier calls and tokens instead."""
    from ttscale.verifiers.loading import load_verifier

    rewards = list(await load_verifier(verifier).score_outcomes(ctx, texts))
    ctx.ledger.tally("reward_evaluations", len(texts))
    return rewards


async def vote_or_verify(
    ctx: Context, completions: list[Completion], *, verifier: str | None
) -> tuple[str | None, list[Sample], Mapping[str, float]]:
    """Majority vote over the candidates, or (with a verifier spec) the best-scored one: best-of-N's selection.

    Returns the prediction, the candidates as samples (scored when a verifier scored them) and the votes.
    """
    from ttscale.kit.selection import best_scored, majority_vote

    if verifier is None:
        samples = [ctx.sample(c) for c in completions]
        prediction, votes = await asyncio.to_thread(majority_vote, samples)  # a symbolic merge waits on the grader
        return prediction, samples, votes
    rewards = await score_outcomes(ctx, [c.text for c in completions], verifier=verifier)
    samples = [ctx.sample(c, score=r) for c, r in zip(completions, rewards, strict=True)]
    best = best_scored(samples)
    return (best.answer if best else None), samples, {}
