"""PRM-guided step-level beam search.

Snell, Lee, Xu, Kumar, "Scaling LLM Test-Time Compute Optimally can be More Effective than
Scaling Model Parameters", arXiv:2408.03314 (2024), §5.2 (beam search against a PRM).

Symbols: N beams (`n`); M beam width (`width`); r(s) the verifier's value of prefix s (its step
scores aggregated, `last` by default as in the paper).
1. sample N first steps;  2. score them;  3. keep the N/M prefixes with the highest r;
4. sample N next steps from the kept prefixes (M each; when fewer than N/M are left, the
   survivors share the N, as search-and-learn pads its beams back to N) and go to 2.
A candidate that ends its solution (EOS) or hits a path limit leaves the beam for the finished
set. The last iteration (depth `max_steps`) runs every surviving beam to the end of its solution,
as search-and-learn's does. Stops when N solutions have finished, no prefix is left, or the
budget ends. The answer is selected over the finished solutions (`select`, weighted by r).
With `n` unset, N = B / max_tokens rounded down to a multiple of M (best-of-N's N).
"""

from __future__ import annotations

from dataclasses import dataclass

from ttscale.context import Context
from ttscale.params import check_positive, strategy
from ttscale.schema import Answer, Problem
from ttscale.search import Node, Search, SearchParams


@dataclass(frozen=True, kw_only=True)
class BeamParams(SearchParams):
    """Beam search over steps."""

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


@strategy(BeamParams)
async def beam(problem: Problem, ctx: Context, p: BeamParams) -> Answer:
    search = Search(ctx, p)
    n = p.n if p.n is not None else search.width_from_budget(multiple_of=p.width)
    width = min(p.width, n)  # a budget for fewer than M paths: one prefix, as many children as it pays for
    if n < 1:
        return await search.answer([], info={"n": 0, "width": p.width})
    keep = n // width
    (candidates,) = await search.expand([search.root], n, to_end=p.max_steps <= 1)
    finished: list[Node] = []
    active: list[Node] = []
    while candidates:
        await search.score(candidates)
        finished += [c for c in candidates if c.terminal]
        active = [c for c in candidates if not c.terminal]
        if len(finished) >= n or not active or not search.can_expand:
            break
        search.selection_round(active)
        beams = search.top(active, keep)
        shares = [n // len(beams) + (i < n % len(beams)) for i in range(len(beams))]  # M each, or padded to N
        last = max(b.depth for b in beams) + 1 >= p.max_steps
        groups = await search.expand(beams, shares, to_end=last)
        candidates = [child for group in groups for child in group]
        active = [] if candidates else beams  # no child at all: the budget ended inside the step
    return await search.answer(finished + active, info={"n": n, "width": width})
