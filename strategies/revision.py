"""Sequential revisions beside parallel sampling.

Snell, Lee, Xu, Kumar, "Scaling LLM Test-Time Compute Optimally can be More Effective than Scaling Model
Parameters", arXiv:2408.03314 (2024), §6: a model revises its own earlier attempts, kept in its context;
the compute splits between sequential revisions and parallel chains (the sequential:parallel ratio), and
the answer is selected across chains — over every attempt of every chain, or the last of each.

Symbols: C parallel chains (`chains`); R attempts per chain (`revisions`, the first included), so C·R
samples in all and R : C the sequential:parallel ratio; K the earlier attempts kept in context (`keep`; the
paper keeps up to 4, the most recent, and fewer when the context cannot hold them). Per chain:
1. attempt 1 answers the problem;
2. attempt r sees attempts max(1, r−K)..r−1 as the model's earlier replies, each followed by the request
   to revise (`revise_prompt`), and writes a new solution; repeat up to R.
All chains run at once; selection by majority vote, or the best verifier score (`verifier`).
On a reasoning model each attempt thinks before it answers: its tokens are metered by phase, the thinking
(through the model's end-of-thinking delimiter, `ttscale.blocks.thinking`) apart from the answer, as budget forcing's
are; on a model that does not think, an attempt is all answer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from ttscale.blocks.sampling import vote_or_verify
from ttscale.blocks.thinking import ThinkingFormat, ThinkingParams, tally_phases, thinking_format
from ttscale.blocks.verified import ChecksVerifier
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range, strategy
from ttscale.schema import Answer, Completion, Problem, SamplingParams


@dataclass(frozen=True, kw_only=True)
class RevisionParams(ChecksVerifier):
    """C chains of R attempts, each revising the ones before it."""

    chains: int = 2
    """C: parallel chains."""
    revisions: int = 4
    """R: attempts per chain, the first included (R / C is the sequential:parallel ratio)."""
    keep: int = 4
    """K: earlier attempts kept in context at most (the most recent; fewer when they do not fit)."""
    select_from: Literal["all", "last"] = "all"
    """Candidates for selection: every attempt of every chain (the paper), or each chain's last."""
    verifier: str | None = None
    """Selects the best-scored candidate with this verifier; None = majority vote."""
    revise_prompt: str = "Review your previous answer, find any mistake, and write a corrected solution."
    """The request to revise that follows each earlier attempt."""
    max_tokens: int = 256
    """Tokens per attempt at most."""
    temperature: float = 0.8
    """Sampling temperature."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("chains", self.chains)
        check_positive("revisions", self.revisions)
        check_positive("keep", self.keep)
        check_positive("max_tokens", self.max_tokens)
        check_range("temperature", self.temperature, 0, 10)
        if self.select_from not in ("all", "last"):
            raise ValueError(f"select_from must be all or last, got {self.select_from!r}")


@strategy(RevisionParams)
async def revision(problem: Problem, ctx: Context, p: RevisionParams) -> Answer:
    fmt = thinking_format(ctx, ThinkingParams())  # the model's own delimiters: where its thinking ends
    chains = await asyncio.gather(*(_chain(ctx, p, fmt) for _ in range(p.chains)))
    candidates = [c for chain in chains for c in (chain if p.select_from == "all" else chain[-1:])]
    prediction, samples, votes = await vote_or_verify(ctx, candidates, verifier=p.verifier)
    return Answer(prediction=prediction, samples=tuple(samples),
                  info={"attempts_per_chain": [len(c) for c in chains], "votes": dict(votes)})


async def _chain(ctx: Context, p: RevisionParams, fmt: ThinkingFormat) -> list[Completion]:
    attempts: list[Completion] = []
    params = SamplingParams(temperature=p.temperature, max_tokens=p.max_tokens)
    for _ in range(p.revisions):
        prompt = _prompt(ctx, p, attempts)
        generation = await ctx.generate(prompt, params)  # one request thinks and answers: split below
        tally_phases(ctx, fmt, generation.completions)
        if not generation.completions:  # the budget is spent
            break
        attempts.append(generation.completions[0])
    return attempts


def _prompt(ctx: Context, p: RevisionParams, attempts: list[Completion]) -> list[int]:
    """The problem, then the last K attempts (fewer if the context cannot hold them and one more attempt)."""
    question = ctx.task.messages(ctx.problem)
    for kept in range(min(p.keep, len(attempts)), -1, -1):
        turns = [turn for a in attempts[len(attempts) - kept:] for turn in (
            {"role": "assistant", "content": a.text}, {"role": "user", "content": p.revise_prompt})]
        prompt = ctx.engine.chat_prompt([*question, *turns])
        if kept == 0 or ctx.room(len(prompt)) >= p.max_tokens:
            return prompt
    return ctx.prompt()
