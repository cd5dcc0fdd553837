"""REBASE's rounds, shared by the strategies built on them (rebase, and ets, which prunes before allocating).

Wu et al., arXiv:2408.00724, §3.2 (see ttscale.strategies.rebase for the symbols): sample N first steps;
each round, score the frontier, let ended solutions leave it (N_left = N − ended so far), optionally `keep`
a subset of the open nodes (ETS's selection), and give the N_left children to the kept nodes by softmax of
their values at temperature T_b, rounded as the reference code rounds (ttscale.search.score.allocate: greedy
ceilings from the best node down, so the tail may get none). Ends when N solutions ended, nothing is open, or
the budget is spent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ttscale.search.score import allocate
from ttscale.search.search import Search
from ttscale.search.tree import Node

Scored = list[tuple[Node, float]]
Keep = Callable[[Scored, int], Awaitable[Scored]]
"""`keep(open nodes with their values, N_left)` → the nodes that get children (all of them, for REBASE)."""


async def reward_balanced(search: Search, n: int, *, temperature: float, keep: Keep | None = None) -> list[Node]:
    """The ended solutions and the open frontier left when the rounds stop (the candidates of the answer)."""
    (frontier,) = await search.expand([search.root], n)
    ended: list[Node] = []
    while frontier:
        values = await search.score(frontier)
        ended += [node for node in frontier if node.terminal]
        open_ = [(node, value) for node, value in zip(frontier, values, strict=True) if not node.terminal]
        left = n - len(ended)
        if left <= 0 or not open_ or not search.can_expand:
            return ended + [node for node, _ in open_]
        search.selection_round([node for node, _ in open_])  # the reference's KV, counted where it selects
        kept = open_ if keep is None else await keep(open_, left)
        # `select_softmax`'s rule and tie order; a node given 0 children is not expanded (Search.expand skips it).
        counts = allocate([value for _, value in kept], left, temperature=temperature, ties="later")
        groups = await search.expand([node for node, _ in kept], counts)
        frontier = [child for group in groups for child in group]
        if not frontier:  # the budget ended inside the step: the open nodes are all we have
            return ended + [node for node, _ in open_]
    return ended
