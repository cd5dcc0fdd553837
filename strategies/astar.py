"""A*-decoding: best-first search over partial solutions with a PRM heuristic.

Chatziveroglou, "A*-Decoding: Token-Efficient Inference Scaling", arXiv:2505.13672 (2025).

Symbols: s a partial solution (the prompt plus steps); r(s) ∈ [0, 1] the verifier value of s;
h(s) = 1 − r(s) the heuristic (estimated cost to a correct end); c(s, s') = λ_g · (1 − r(s'))
the cost of the step s → s'; g(s') = g(s) + c(s, s') the cost so far (g(root) = 0);
f = g + h; k candidate steps per expansion (`k`); b states expanded per round (`parallel`).

No public code exists; this is our reading of the paper:
- the open list is a priority queue on f over every generated, not yet expanded state;
- an expansion pops the state of lowest f, samples k one-step continuations from the policy
  (the stochastic half of the transition), scores them with the PRM, and pushes them all
  (the deterministic half, choosing argmin f, happens through the queue: the best successor
  is popped next unless an older state is now better);
- the search ends when a goal state (a solution the policy ended with EOS) is popped: it is
  the answer; or when the budget or the open list ends: then the complete solutions seen
  compete under `select` (best value by default), else the open states of lowest f do;
- g is not given a closed form we could read with certainty; we take the accumulated step
  doubt Σ (1 − r) along the path, weighted by λ_g (`cost_weight`): λ_g = 0 is greedy
  best-first on the PRM, larger values favour short, confidently right paths.
`parallel` > 1 pops b states per round and expands them together (fewer sequential rounds for
the same engine batch, at some cost in token efficiency); b = 1 is the paper's algorithm.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

from ttscale.blocks.verified import ChecksVerifier
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range, strategy
from ttscale.schema import Answer, Problem
from ttscale.search import Node, Search, SearchParams, Select
from ttscale.verifiers.loading import load_verifier


@dataclass(frozen=True, kw_only=True)
class AStarParams(ChecksVerifier, SearchParams):
    """A*-decoding."""

    k: int = 4
    """Candidate steps sampled per expansion."""
    cost_weight: float = 1.0
    """λ_g: weight of the step cost c = 1 − r(s') in g; 0 = greedy best-first search on the PRM."""
    parallel: int = 1
    """b: states popped and expanded together per round (1 = the paper's A*)."""
    select: Select = "best"
    """Only when the budget ends before a goal is popped: how to choose among the complete solutions seen."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("k", self.k)
        check_range("cost_weight", self.cost_weight, 0, 100)
        check_positive("parallel", self.parallel)


@strategy(AStarParams)
async def astar(problem: Problem, ctx: Context, p: AStarParams) -> Answer:
    search = Search(ctx, p, verifier=load_verifier(p.verifier))
    g: dict[int, float] = {search.root.id: 0.0}
    f: dict[int, float] = {}
    order = itertools.count()  # FIFO among equal f: the older state first
    open_list: list[tuple[float, int, Node]] = []
    expansions = 0
    goal: Node | None = None

    async def push(children: list[Node]) -> None:
        for child, r in zip(children, await search.score(children), strict=True):
            assert child.parent is not None
            g[child.id] = g[child.parent.id] + p.cost_weight * (1.0 - r)
            f[child.id] = g[child.id] + (1.0 - r)
            heapq.heappush(open_list, (f[child.id], next(order), child))

    popped = [search.root]
    while search.can_expand:
        groups = await search.expand(popped, p.k, live=[node for _, _, node in open_list])
        expansions += len(popped)
        await push([child for group in groups for child in group])
        popped = []
        while open_list and len(popped) < p.parallel:
            node = heapq.heappop(open_list)[2]
            if node.complete:
                goal = node
                break
            if not node.terminal:  # a path cut by a limit is no goal and cannot grow: drop it
                popped.append(node)
        if goal is not None or not popped:
            break
    info = {"k": p.k, "expansions": expansions, "goal_popped": goal is not None}
    if goal is not None:
        return await search.answer([goal], info={**info, "f": round(f[goal.id], 6)})
    # No goal popped (budget or open list ended): the complete solutions seen compete under `select`;
    # with none, the open states of lowest f (those popped last first) stand in.
    pool = popped + [node for _, _, node in sorted(open_list)]
    complete = [node for node in pool if node.complete]
    return await search.answer(complete or pool[: max(p.k, p.parallel)], info=info)
