"""Diverse verifier tree search (DVTS).

Beeching, Tunstall, Rush, "Scaling test-time compute with open models", Hugging Face blog
(Dec 2024), the `search-and-learn` DVTS; an extension of Snell et al., arXiv:2408.03314.

Symbols: N the total candidates per step (`n`); M the width of each subtree (`width`);
N/M independent subtrees. Each subtree is searched greedily: from its current prefix, sample
M next steps, keep the single one with the highest verifier value r, repeat until the solution
ends, a path limit cuts it, or the budget ends; the last iteration (depth `max_steps`) runs each
subtree to the end of its solution. Splitting N into independent greedy subtrees keeps the final
solutions diverse where one beam of N/M would collapse onto one prefix. All subtrees' requests
of a step go out together. As in search-and-learn, the answer is selected (`select`) over all N
final leaves: every subtree's last M candidates, not only its best one.
With `n` unset, N = B / max_tokens rounded down to a multiple of M.
"""

from __future__ import annotations

from dataclasses import dataclass

from ttscale.blocks.verified import open_search
from ttscale.kit.context import Context
from ttscale.kit.params import strategy
from ttscale.schema import Answer, Problem
from ttscale.search import Node
from ttscale.strategies.beam import BeamShapeParams


@dataclass(frozen=True, kw_only=True)
class DVTSParams(BeamShapeParams):
    """Diverse verifier tree search: the same N and M as beam search, spent on N/M greedy subtrees of width M."""


@strategy(DVTSParams)
async def dvts(problem: Problem, ctx: Context, p: DVTSParams) -> Answer:
    search, n = open_search(ctx, p, n=p.n, multiple_of=p.width)
    width = min(p.width, n)
    if n < 1:
        return await search.answer([], info={"n": 0, "width": p.width, "subtrees": 0})
    subtrees = n // width
    # Every subtree starts at the root: its first M candidates are its share of one request of N.
    (first,) = await search.expand([search.root], n, to_end=p.max_steps <= 1)
    groups = [first[i * width : (i + 1) * width] for i in range(subtrees)]
    heads: list[Node | None] = [None] * subtrees  # each subtree's current prefix
    leaves: list[list[Node]] = [[] for _ in range(subtrees)]  # each subtree's latest M candidates
    while True:
        await search.score([c for group in groups for c in group])
        for i, group in enumerate(groups):
            if group:
                heads[i] = search.top(group, 1)[0]  # greedy: the best of its M
                leaves[i] = group
        open_ = [(i, head) for i, head in enumerate(heads) if head is not None and not head.terminal]
        if not open_ or not search.can_expand:
            break
        search.selection_round([c for group in groups for c in group if not c.terminal])
        last = max(head.depth for _, head in open_) + 1 >= p.max_steps
        expanded = await search.expand([head for _, head in open_], width, to_end=last)
        if not any(expanded):
            break
        groups = [[] for _ in range(subtrees)]
        for (i, _), children in zip(open_, expanded, strict=True):
            groups[i] = children
    finals = [leaf for group in leaves for leaf in group]
    return await search.answer(finals, info={"n": n, "width": width, "subtrees": subtrees})
