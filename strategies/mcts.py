"""MCTS: Monte Carlo tree search over reasoning steps.

Kocsis, Szepesvári, "Bandit based Monte-Carlo Planning", ECML 2006 (UCT); Silver et al., "Mastering the game of Go
without human knowledge", Nature 2017 (PUCT); over an LLM's reasoning steps as in RAP (Hao et al., "Reasoning with
Language Model is Planning with World Model", arXiv:2305.14992, code maitrix-org/llm-reasoners), OpenR (Wang et al.,
arXiv:2410.09671) and rStar (Qi et al., arXiv:2408.06195). Our own code; the natural baseline of beam, REBASE, ETS, A*.

Symbols: s a node (the prompt and the steps so far), a a child step of s; N(s) its visits, W(s) the sum of the values
backed up through it, Q(s, a) = W(a) / N(a) the mean value; v ∈ [0, 1] a leaf's value; k children per expansion
(`expand`); c the exploration constant (`c_puct`; unset, the rule's reference value); P(s, a) the prior: the
siblings' exp(mean token log-prob), normalised (OpenR's; uniform when the engine gives no log-probs); r(a) a child's
value from its expansion (OpenR's PRM value, llm-reasoners' fast reward: the verifier's value of its path, all k
children scored in one call as they are sampled).
0. expand the root: k first steps (one engine request, n = k).
Each simulation, until `simulations` have run or the budget is spent:
1. select: from the root, while the node is expanded, go to the child a of highest
     OpenR (`selection=openr`, default; openreasoner/openr reason/guided_search/tree.py, `_ucb_score`)
        Q(s, a) + (ln((N(s) + c_base + 1) / c_base) + c)·P(s, a)·sqrt(N(s)) / (1 + N(s, a)), c = 1.25,
        c_base = 19652, Q = r(a) while a is unvisited; ties: the earlier sampled child. As OpenR's evaluated
        search, `vanila_mcts` (tree.py:330-409, run by `reason/evaluation/evaluate.py --method vanila_mcts`), every
        open leaf the walk reaches is expanded at once and the walk goes on into its children, so that each
        simulation ends at a finished solution, valued by its r (its mean once visited);
     OpenR's `_simulate` (`selection=openr_simulate`; the same score, AlphaZero's expansion, which nothing in
        OpenR calls): a leaf is expanded at its second visit (its first is valued by r), and the walk goes on into
        its children;
     llm-reasoners (`selection=llm_reasoners`; maitrix-org/llm-reasoners reasoners/algorithm/mcts.py, `_uct`)
        Q(s, a) + c·sqrt(ln N(s) / max(1, N(s, a))), c = 1, Q = r(a) while unvisited (`uct_with_fast_reward`);
        ties: the earlier child; at N(s) = 0 (only our root, which the reference visits once before its children)
        the term is 0;
     UCT (`selection=uct`, ours before)   Q(s, a) + c·sqrt(ln N(s) / N(s, a)), c = 1; an unvisited child first, in
                                          sampled order;
     PUCT (`selection=puct`, ours before) Q(s, a) + c·P(s, a)·sqrt(N(s)) / (1 + N(s, a)), c = 1, Q = 0 unvisited
                                          (AlphaZero's); ties: the likelier step;
   the walk ends at a leaf ℓ: a node not visited yet, or a finished solution (terminal: never expanded).
2. evaluate ℓ (`evaluation`): `verifier` (default): v = the verifier's value of ℓ's path (its step scores aggregated by
   `aggregate`, as beam and REBASE score; under the OpenR rules and llm_reasoners that is r(ℓ), not scored twice;
   under openr ℓ is always finished); `rollout`:
   v = the verifier's value of ℓ's solution sampled to its end (one request, n = 1; RAP's and rStar's simulation); a
   finished ℓ is its own outcome.
3. expand ℓ when it is open (openr: as the walk reaches it, openr_simulate: at its second visit, both in step 1): k
   next steps, one request of n = k; they wait, unvisited, for a later selection.
4. back up: N += 1 and W += v for every node on the path from the root to ℓ (so Σ_a N(root, a) = simulations).
With `simulations` unset the search runs until the budget is spent, or until SETTLED simulations in a row end at a
solution already visited: the selection has settled on finished paths, and such simulations spend nothing.
The answer (`final`): `most_visited` (default): from the root, follow the most-visited child (ties: higher Q) to the
last visited node; its solution when it is finished, else (the budget ended first) the solutions finished below it
compete under `select`, or its partial solution stands alone. `vote`: every finished solution the search found (tree
nodes and rollouts) votes under `select` (the verifier-value-weighted vote by default). `best_reward` (llm-reasoners'
`output_strategy='max_reward'`, `_dfs_max_reward`): of the finished nodes reached through visited nodes, the path of
the highest sum of its nodes' values (a visited node's value is its verifier value; with aggregate=last, its step's
score, the reference's step reward); none visited yet, the most-visited rule answers (the reference answers None).
Differences from the references, and why: OpenR's root Dirichlet noise (for self-play) is not added, and identical
sibling steps stay two children (our tree's identity, as beam's); llm-reasoners backs up the sum of the step rewards
from each node to the leaf and simulates greedily by fast reward to the end, where ours backs up the leaf's value
(Q stays in [0, 1], the scale of the r(a) it is compared with) and simulates only with `evaluation=rollout`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from ttscale.blocks.verified import ChecksVerifier
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range, strategy
from ttscale.schema import Answer, Problem
from ttscale.search import LivePrefixes, Node, Search, SearchParams, softmax
from ttscale.verifiers.loading import load_verifier

SETTLED = 16
"""Simulations in a row that end at an already visited solution, after which an until-budget search stops."""

Selection = Literal["openr", "openr_simulate", "llm_reasoners", "uct", "puct"]
SELECTIONS: tuple[str, ...] = ("openr", "openr_simulate", "llm_reasoners", "uct", "puct")
REFERENCE_C: dict[str, float] = {"openr": 1.25, "openr_simulate": 1.25, "llm_reasoners": 1.0, "uct": 1.0, "puct": 1.0}
"""Each rule's exploration constant where `c_puct` is unset: OpenR's pb_c_init, llm-reasoners' w_exp, ours 1."""
OPENR = ("openr", "openr_simulate")
"""The rules with OpenR's `_ucb_score` (its PUCT): its evaluated `vanila_mcts`, and its `_simulate`."""
FIRST_VALUED = ("openr", "openr_simulate", "llm_reasoners")
"""The rules whose unvisited child starts at its value from the expansion (every child is scored as it is sampled)."""


@dataclass(frozen=True, kw_only=True)
class MCTSParams(ChecksVerifier, SearchParams):
    """Monte Carlo tree search over steps."""

    expand: int = 4
    """k: children sampled per expansion (one engine request of n = k)."""
    selection: Selection = "openr"
    """openr: OpenR's evaluated `vanila_mcts` (its PUCT, unvisited children at their verifier value, every leaf the
    walk reaches expanded at once, each simulation walked to a finished solution); openr_simulate: OpenR's
    `_simulate` (a leaf expanded at its second visit, a walk ending at an unvisited leaf); llm_reasoners:
    llm-reasoners' UCT, unvisited children at their fast reward; uct: ours before, unvisited children first; puct:
    ours before, Q = 0 unvisited (see the module docstring for each formula)."""
    c_puct: float | None = None
    """c: the exploration constant of the selection rule; None = the rule's reference value (openr and
    openr_simulate 1.25, the others 1); 0 = greedy on Q."""
    c_base: float = 19652.0
    """OpenR's pb_c_base: c grows as ln((N(s) + c_base + 1) / c_base) with the parent's visits (OpenR's rules)."""
    evaluation: Literal["verifier", "rollout"] = "verifier"
    """verifier: a leaf's value is the verifier's value of its path; rollout: of its solution sampled to the end."""
    final: Literal["most_visited", "vote", "best_reward"] = "most_visited"
    """most_visited: the end of the most-visited path answers; vote: every finished solution found votes (`select`);
    best_reward: the visited finished path of the highest sum of node values (llm-reasoners' max_reward)."""
    simulations: int | None = None
    """Simulations at most; None = until the budget is spent (or the search settles on finished solutions)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("expand", self.expand)
        if self.c_puct is not None:
            check_range("c_puct", self.c_puct, 0, 100)
        check_range("c_base", self.c_base, 1, 1e9)
        check_positive("simulations", self.simulations, allow_none=True)
        for name, allowed in (("selection", SELECTIONS), ("evaluation", ("verifier", "rollout")),
                              ("final", ("most_visited", "vote", "best_reward"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be {', '.join(allowed[:-1])} or {allowed[-1]}, "
                                 f"got {getattr(self, name)!r}")

    @property
    def c(self) -> float:
        """The exploration constant in use: `c_puct`, or the selection rule's reference value."""
        return REFERENCE_C[self.selection] if self.c_puct is None else self.c_puct


def selection_score(
    rule: str, *, q: float | None, prior: float, parent_visits: int, visits: int, c: float, c_base: float = 19652.0
) -> float:
    """The score by which `rule` ranks a child: q its mean value (None: unvisited and not valued, counted 0 by PUCT),
    prior its P(s, a), parent_visits N(s), visits N(s, a). UCT's unvisited child is +inf (it goes first)."""
    value = 0.0 if q is None else q
    if rule in OPENR:
        weight = math.log((parent_visits + c_base + 1) / c_base) + c
        return value + weight * prior * math.sqrt(parent_visits) / (visits + 1)
    if rule == "puct":
        return value + c * prior * math.sqrt(parent_visits) / (1 + visits)
    if rule == "llm_reasoners":  # ln N(s) at N(s) = 0: the root before its first visit, no exploration yet
        return value + c * math.sqrt(math.log(max(parent_visits, 1)) / max(1, visits))
    if visits == 0:
        return math.inf
    return value + c * math.sqrt(math.log(parent_visits) / visits)


@strategy(MCTSParams)
async def mcts(problem: Problem, ctx: Context, p: MCTSParams) -> Answer:
    # The priors need the steps' log-probs (OpenR's and our PUCT); UCT's rules never read them.
    search = Search(ctx, p, verifier=load_verifier(p.verifier), logprobs=p.selection in (*OPENR, "puct"))
    root = search.root
    visits: dict[int, int] = {}  # N
    total: dict[int, float] = {}  # W
    kids: dict[int, list[Node]] = {}  # the expanded nodes' children (a rollout is none: selection never enters it)
    tree: list[Node] = []  # every node selection may reach (rollouts excluded)
    rollouts: list[Node] = []
    waiting = LivePrefixes(search.tree)  # the open nodes not expanded yet: the search may expand them (KV stays live)
    valued = p.selection in FIRST_VALUED  # children scored as they are sampled: their value is their first Q
    lazy = p.selection == "openr_simulate"  # OpenR's _simulate expands a leaf when the walk comes back to it
    eager = p.selection == "openr"  # OpenR's vanila_mcts expands every leaf the walk reaches and walks on below

    async def expand(node: Node) -> list[Node]:  # step 0 and 3
        waiting.discard(node)  # being expanded: its prefix is counted as the request's own
        (children,) = await search.expand([node], p.expand, live=waiting)
        if children:  # none: the budget ended inside the step (the search stops)
            kids[node.id] = children
            tree.extend(children)
            for child in children:
                if not child.terminal:
                    waiting.add(child)
            if valued:
                await search.score(children)
        return children

    def select(s: Node) -> Node:  # step 1, one level
        children, n_s = kids[s.id], visits.get(s.id, 0)
        prior = softmax([a.logprob or 0.0 for a in children])
        best, best_key = children[0], (-math.inf, -math.inf)
        for a, prior_a in zip(children, prior, strict=True):
            n_a = visits.get(a.id, 0)
            q = total[a.id] / n_a if n_a else (a.value if valued else None)
            score = selection_score(p.selection, q=q, prior=prior_a, parent_visits=n_s, visits=n_a, c=p.c,
                                    c_base=p.c_base)
            key = (score, prior_a if p.selection == "puct" else 0.0)  # our PUCT: ties go to the likelier step
            if key > best_key:  # strictly: among equals the earlier sampled child stays (as both references)
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
    stopped = False
    while first and search.can_expand and (p.simulations is None or simulations < p.simulations):
        path = [root]
        while True:
            node = path[-1]
            second_visit = lazy and node.id not in kids and node.id in visits and not node.terminal
            reached = eager and node.id not in kids and not node.terminal
            if (second_visit or reached) and not await expand(node):  # expand now, and the walk goes on below
                stopped = True  # the budget ended inside the step
                break
            if node.id not in kids:
                break
            path.append(select(node))
        if stopped:
            break
        leaf = path[-1]
        revisit = leaf.id in visits  # only a finished leaf is met twice: an open one is expanded by then
        value = await evaluate(leaf)
        if value is None:
            break
        for node in path:  # step 4
            visits[node.id] = visits.get(node.id, 0) + 1
            total[node.id] = total.get(node.id, 0.0) + value
        simulations += 1
        if not lazy and not leaf.terminal and not await expand(leaf):
            break  # the budget ended inside the step
        settled = settled + 1 if revisit else 0
        if p.simulations is None and settled >= SETTLED:
            break

    end = root  # the most-visited path's last visited node
    while visited := [a for a in kids.get(end.id, []) if a.id in visits]:
        end = max(visited, key=lambda a: (visits[a.id], total[a.id] / visits[a.id]))
    finished = [node for node in search.tree.nodes if node.terminal]
    best = best_reward(finished, visits) if p.final == "best_reward" else None
    if p.final == "vote":
        pool = finished or tree
    elif best is not None:
        pool = [best]
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
        "answer_depth": (best or end).depth,
        "answer_visits": visits.get((best or end).id, 0),
        "selection": p.selection,
        "evaluation": p.evaluation,
        "final": p.final,
    }
    return await search.answer(pool, info=info)


def best_reward(finished: list[Node], visits: dict[int, int]) -> Node | None:
    """The visited finished node whose path (root excluded) has the highest sum of node values; None if none was
    visited. Every node of such a path was visited, so each holds its verifier value. Ties: the earlier node."""
    best, best_sum = None, -math.inf
    for node in finished:
        if node.id not in visits:
            continue
        path_sum = sum(a.value or 0.0 for a in node.path() if a.parent is not None)
        if path_sum > best_sum:
            best, best_sum = node, path_sum
    return best
