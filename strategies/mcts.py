"""MCTS: Monte Carlo tree search over reasoning steps.

Kocsis, Szepesvári, "Bandit based Monte-Carlo Planning", ECML 2006 (UCT); Silver et al., "Mastering the game of Go
without human knowledge", Nature 2017 (PUCT); over an LLM's reasoning steps as in RAP (Hao et al., "Reasoning with
Language Model is Planning with World Model", arXiv:2305.14992, code maitrix-org/llm-reasoners), OpenR (Wang et al.,
arXiv:2410.09671) and rStar (Qi et al., arXiv:2408.06195). Our own code; the natural baseline of beam, REBASE, ETS, A*.

Symbols: s a node (the prompt and the steps so far), a a child step of s; N(s) its visits, W(s) the sum of the values
backed up through it, Q(s, a) = W(a) / N(a) the mean value; v ∈ [0, 1] a leaf's value; k children per expansion
(`expand`); c the exploration constant (`c_puct`); P(s, a) PUCT's prior.
0. expand the root: k first steps (one engine request, n = k).
Each simulation, until `simulations` have run or the budget is spent:
1. select: from the root, while the node is expanded, go to the child a of highest
     UCT (`selection=uct`, default)  Q(s, a) + c·sqrt(ln N(s) / N(s, a)); an unvisited child first, in sampled order;
     PUCT (`selection=puct`)         Q(s, a) + c·P(s, a)·sqrt(N(s)) / (1 + N(s, a)), Q = 0 unvisited (AlphaZero's),
                                     P(s, a) = softmax over the siblings of each step's mean token log-prob (OpenR's
                                     prior; uniform when the engine gives no log-probs); ties: the likelier step;
   the walk ends at a leaf ℓ: a node not visited yet, or a finished solution (terminal: never expanded).
2. evaluate ℓ (`evaluation`): `verifier` (default): v = the verifier's value of ℓ's path (its step scores aggregated by
   `aggregate`, as beam and REBASE score); `rollout`: v = the verifier's value of ℓ's solution sampled to its end (one
   request, n = 1; RAP's and rStar's simulation); a finished ℓ is its own outcome.
3. expand ℓ when it is open: k next steps, one request of n = k; they wait, unvisited, for a later selection.
4. back up: N += 1 and W += v for every node on the path from the root to ℓ (so Σ_a N(root, a) = simulations).
With `simulations` unset the search runs until the budget is spent, or until SETTLED simulations in a row end at a
solution already visited: the selection has settled on finished paths, and such simulations spend nothing.
The answer (`final`): `most_visited` (default): from the root, follow the most-visited child (ties: higher Q) to the
last visited node; its solution when it is finished, else (the budget ended first) the solutions finished below it
compete under `select`, or its partial solution stands alone. `vote`: every finished solution the search found (tree
nodes and rollouts) votes under `select` (the verifier-value-weighted vote by default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from ttscale.context import Context
from ttscale.params import check_positive, check_range, strategy
from ttscale.schema import Answer, Problem
from ttscale.search import LivePrefixes, Node, Search, SearchParams, softmax

SETTLED = 16
"""Simulations in a row that end at an already visited solution, after which an until-budget search stops."""


@dataclass(frozen=True, kw_only=True)
class MCTSParams(SearchParams):
    """Monte Carlo tree search over steps."""

    expand: int = 4
    """k: children sampled per expansion (one engine request of n = k)."""
    c_puct: float = 1.0
    """c: the exploration constant of the selection rule (UCT's or PUCT's); 0 = greedy on Q."""
    selection: Literal["uct", "puct"] = "uct"
    """uct: Q + c·sqrt(ln N(s) / N(s,a)), unvisited children first; puct: Q + c·P·sqrt(N(s)) / (1 + N(s,a)), with the
    prior P from the steps' mean token log-probs."""
    evaluation: Literal["verifier", "rollout"] = "verifier"
    """verifier: a leaf's value is the verifier's value of its path; rollout: of its solution sampled to the end."""
    final: Literal["most_visited", "vote"] = "most_visited"
    """most_visited: the end of the most-visited path answers; vote: every finished solution found votes (`select`)."""
    simulations: int | None = None
    """Simulations at most; None = until the budget is spent (or the search settles on finished solutions)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("expand", self.expand)
        check_range("c_puct", self.c_puct, 0, 100)
        check_positive("simulations", self.simulations, allow_none=True)
        for name, allowed in (("selection", ("uct", "puct")), ("evaluation", ("verifier", "rollout")),
                              ("final", ("most_visited", "vote"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be {' or '.join(allowed)}, got {getattr(self, name)!r}")


@strategy(MCTSParams)
async def mcts(problem: Problem, ctx: Context, p: MCTSParams) -> Answer:
    search = Search(ctx, p, logprobs=p.selection == "puct")  # PUCT's prior needs the steps' log-probs
    root = search.root
    visits: dict[int, int] = {}  # N
    total: dict[int, float] = {}  # W
    kids: dict[int, list[Node]] = {}  # the expanded nodes' children (a rollout is none: selection never enters it)
    tree: list[Node] = []  # every node selection may reach (rollouts excluded)
    rollouts: list[Node] = []
    waiting = LivePrefixes(search.tree)  # the open nodes not expanded yet: the search may expand them (KV stays live)

    async def expand(node: Node) -> list[Node]:  # step 0 and 3
        waiting.discard(node)  # being expanded: its prefix is counted as the request's own
        (children,) = await search.expand([node], p.expand, live=waiting)
        if children:  # none: the budget ended inside the step (the search stops)
            kids[node.id] = children
            tree.extend(children)
            for child in children:
                if not child.terminal:
                    waiting.add(child)
        return children

    def select(s: Node) -> Node:  # step 1, one level
        children, n_s = kids[s.id], visits.get(s.id, 0)
        prior = softmax([a.logprob or 0.0 for a in children])
        best, best_key = children[0], (-math.inf, -math.inf)
        for a, prior_a in zip(children, prior, strict=True):
            n_a = visits.get(a.id, 0)
            q = total[a.id] / n_a if n_a else 0.0
            if p.selection == "puct":
                key = (q + p.c_puct * prior_a * math.sqrt(n_s) / (1 + n_a), prior_a)
            else:
                key = (q + p.c_puct * math.sqrt(math.log(n_s) / n_a) if n_a else math.inf, 0.0)
            if key > best_key:  # strictly: among equals the earlier sampled child stays
                best, best_key = a, key
        return best

    async def evaluate(leaf: Node) -> float | None:  # step 2; None: the budget ended before the rollout
        end = leaf
        if p.evaluation == "rollout" and not leaf.terminal:
            held = leaf in waiting
            waiting.discard(leaf)
            (ends,) = await search.expand([leaf], 1, live=waiting, to_end=True)
            if held:
                waiting.add(leaf)  # still to be expanded (step 3)
            if not ends:
                return None
            end = ends[0]
            rollouts.append(end)
        (value,) = await search.score([end])
        return value

    simulations = settled = 0
    first = await expand(root)
    while first and search.can_expand and (p.simulations is None or simulations < p.simulations):
        path = [root]
        while path[-1].id in kids:
            path.append(select(path[-1]))
        leaf = path[-1]
        revisit = leaf.id in visits  # only a finished leaf is met twice: an open one was expanded at its first visit
        value = await evaluate(leaf)
        if value is None:
            break
        for node in path:  # step 4
            visits[node.id] = visits.get(node.id, 0) + 1
            total[node.id] = total.get(node.id, 0.0) + value
        simulations += 1
        if not leaf.terminal and not await expand(leaf):
            break  # the budget ended inside the step
        settled = settled + 1 if revisit else 0
        if p.simulations is None and settled >= SETTLED:
            break

    end = root  # the most-visited path's last visited node
    while visited := [a for a in kids.get(end.id, []) if a.id in visits]:
        end = max(visited, key=lambda a: (visits[a.id], total[a.id] / visits[a.id]))
    finished = [node for node in search.tree.nodes if node.terminal]
    if p.final == "vote":
        pool = finished or tree
    elif end.terminal:
        pool = [end]
    else:
        below = [node for node in finished if end in node.ancestors()]
        pool = below or ([end] if end is not root else tree)
    info: dict[str, Any] = {
        "simulations": simulations,
        "settled": settled >= SETTLED,
        "nodes": len(tree),
        "expanded": len(kids),
        "rollouts": len(rollouts),
        "max_depth": max((node.depth for node in tree), default=0),
        "root_visits": [visits.get(a.id, 0) for a in first],
        "root_values": [round(total[a.id] / visits[a.id], 6) if a.id in visits else None for a in first],
        "terminal_nodes": len(finished),
        "answer_depth": end.depth,
        "answer_visits": visits.get(end.id, 0),
        "selection": p.selection,
        "evaluation": p.evaluation,
        "final": p.final,
    }
    return await search.answer(pool, info=info)
