"""PRM-guided step-level beam search, as huggingface/search-and-learn runs it.

Snell, Lee, Xu, Kumar, "Scaling LLM Test-Time Compute Optimally can be More Effective than
Scaling Model Parameters", arXiv:2408.03314 (2024), §5.2 (beam search against a PRM); the
procedure is search-and-learn's (Beeching, Tunstall, Rush, Hugging Face blog, Dec 2024):
`src/sal/search/beam_search.py` `_beam_search`, with its MATH recipes' `filter_duplicates: true`.

Symbols: N beams (`n`); M beam width (`width`); T iterations at most (`max_steps`, the reference's
`num_iterations`); r(s) the verifier's value of prefix s (its step scores aggregated, `last` by
default as in the paper); C the completed set.
1. sample N first steps (one per beam);
2. score them; a candidate that ends its solution (EOS) or hits a path limit is completed: it joins C
   and leaves the beam;
3. stop when no candidate is left open (every beam completed) or the budget is spent;
4. drop each open candidate whose text repeats an earlier one's (`filter_duplicates`);
5. keep the N/M open candidates with the highest r (all of them when fewer are left);
6. sample N next steps from the kept prefixes: M each, or, when fewer than N/M are kept, the survivors
   repeated in turn until there are N (the reference pads its beams back to N); go to 2.
   Iteration T runs every beam to the end of its solution, so all complete there.
7. the final candidates are the first N of C to complete (the reference recipes; `sort_completed`: the
   N of C with the highest r); the answer is selected over them (`select`, weighted by r; paths ended by EOS are
   preferred to cut ones). Fewer than N only when the budget ended first; then the best open
   candidates of the last round fill in (`info` says so).
With `n` unset, N = B / max_tokens rounded down to a multiple of M (best-of-N's N).
"""

from __future__ import annotations

from dataclasses import dataclass

from ttscale.blocks.verified import ChecksVerifier, open_search
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, strategy
from ttscale.schema import Answer, Problem
from ttscale.search import Node, SearchParams


@dataclass(frozen=True, kw_only=True)
class BeamShapeParams(ChecksVerifier, SearchParams):
    """N and M: the shape that beam search and DVTS share."""

    n: int | None = None
    """N: candidates per step; None = B / max_tokens, rounded down to a multiple of `width`."""
    width: int = 4
    """M: children per kept prefix; N/M prefixes are kept at each step."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("n", self.n, allow_none=True)
        check_positive("width", self.width)
        if self.n is not None and self.n % self.width:
            raise ValueError(f"n must be a multiple of width ({self.width}), got {self.n}")


@dataclass(frozen=True, kw_only=True)
class BeamParams(BeamShapeParams):
    """Beam search over steps."""

    filter_duplicates: bool = True
    """Drop an open candidate whose text repeats an earlier one's before the N/M are kept, so that
    identical prefixes do not take several beams (search-and-learn's MATH recipes,
    `recipes/*/beam_search.yaml`, set `filter_duplicates: true`; its config's default is false)."""
    sort_completed: bool = False
    """False: the final N are the first N paths to complete, in order, as search-and-learn's beam-search
    recipes run (its `sort_completed` is false by default and they leave it unset); true: the N completed
    paths with the highest r."""


@strategy(BeamParams)
async def beam(problem: Problem, ctx: Context, p: BeamParams) -> Answer:
    search, n = open_search(ctx, p, n=p.n, multiple_of=p.width)
    width = min(p.width, n)  # a budget for fewer than M paths: one prefix, as many children as it pays for
    if n < 1:
        return await search.answer([], info={"n": 0, "width": p.width})
    keep = n // width
    completed: list[Node] = []  # C, in the order the paths completed
    open_: list[Node] = []  # the last round's open candidates: the fallback when the budget ends first
    beams, shares = [search.root], [n]  # iteration 1: all N beams start at the root
    iterations = 0
    while True:
        last = max(b.depth for b in beams) + 1 >= p.max_steps
        groups = await search.expand(beams, shares, to_end=last)
        candidates = [child for group in groups for child in group]
        if not candidates:  # the budget ended inside the step
            break
        iterations += 1
        await search.score(candidates)
        completed += [c for c in candidates if c.terminal]
        open_ = [c for c in candidates if not c.terminal]
        if not open_ or not search.can_expand:  # all beams completed (the reference's early stop), or no budget
            break
        search.selection_round(open_)  # the round chooses among every open candidate, duplicates included
        pool = search.distinct(open_) if p.filter_duplicates else open_
        kept = search.top(pool, keep)
        # In candidate order, as the reference repeats its surviving beams in list order to refill N.
        beams = [c for c in pool if c in kept]
        shares = [n // len(beams) + (i < n % len(beams)) for i in range(len(beams))]  # M each, or padded to N
    # A stable sort, as the reference's sorted(): on equal r the path that completed first ranks first.
    final = sorted(completed, key=lambda c: -(c.value or 0.0))[:n] if p.sort_completed else completed[:n]
    if len(final) < n:
        final += search.top(open_, n - len(final))
    info = {
        "n": n,
        "width": width,
        "iterations": iterations,
        "completed": len(completed),
        "final": len(final),  # < n only when the budget ended (or nothing was left to sample)
        "budget_ended": not search.can_expand,
    }
    return await search.answer(final, info=info)
