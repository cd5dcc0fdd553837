"""The search plumbing a tree strategy calls: expand nodes, score them, pick the answer.

A strategy holds one `Search` per problem and reads like its paper's pseudocode:

    search = Search(ctx, p, verifier=load_verifier(p.verifier))   # the strategy loads its verifier
    frontier = [search.root]
    while frontier and search.can_expand:
        children = await search.expand(frontier, n=p.width)     # every node's request at once
        values = await search.score(children)                     # one verifier call
        frontier = ...                                            # the strategy's own rule
    return await search.answer(candidates)

What lives here, so that no strategy repeats it: the engine requests (one per distinct node,
`n` children each, all sent together with `asyncio.gather` so vLLM batches them and serves
the shared prefixes from its cache), step ends and path limits, the ledger's view of the
budget, the verifier call and score aggregation, the tree statistics in the ledger
(`ledger.views["tree"]`, computed when the record is written), and answer selection over the candidates.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ttscale.evals.base import extraction_of
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range
from ttscale.kit.selection import best_scored, majority_vote, weighted_vote
from ttscale.schema import Answer, Sample, SamplingParams
from ttscale.search.score import AGGREGATES, Aggregate, aggregate
from ttscale.search.specs import parse_verifier_spec
from ttscale.search.steps import DEFAULT_DELIMITER, Finish, step_end, unescape
from ttscale.search.tree import LivePrefixes, Node, Tree

Select = Literal["best", "majority", "weighted"]
SELECTS = ("best", "majority", "weighted")


@dataclass(frozen=True, kw_only=True)
class SearchParams:
    """What every step-level tree search shares (strategies add their own fields by subclassing)."""

    verifier: str = "arithmetic"
    """Process verifier: a name in VERIFIERS, optionally with options (`noisy_oracle:noise=0.3,seed=1`). Its form
    is checked here; its name by each strategy's parameters (`ttscale.blocks.verified.ChecksVerifier`: the
    registry sits above search), and the strategy hands `Search` the verifier it loads."""
    aggregate: Aggregate = "last"
    """How a path's step scores become one value: last, min, prod or mean."""
    select: Select = "weighted"
    """How the answer is chosen among candidates: best (highest value), majority, weighted (Σ value per answer)."""
    max_tokens: int = 256
    """Generated tokens per solution path at most (also sets the default width: B / max_tokens, as best-of-N)."""
    step_tokens: int = 96
    """Tokens per step at most: the token-count fallback for steps that never write the delimiter."""
    max_steps: int = 8
    """Steps per solution path at most (search depth)."""
    delimiter: str = DEFAULT_DELIMITER
    r"""The text that ends a step (`\n\n` may be written with backslashes on the command line)."""
    temperature: float = 0.8
    """Sampling temperature of the policy's steps (> 0: siblings must be able to differ)."""
    top_p: float = 1.0
    """Nucleus sampling mass of the policy's steps."""
    seed: int = 0
    """Seed of the strategy's own random choices (resampling, ties), combined with the problem id."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "delimiter", unescape(self.delimiter))
        if not self.delimiter:
            raise ValueError("delimiter must be a non-empty string")
        parse_verifier_spec(self.verifier)
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {self.aggregate!r}")
        if self.select not in SELECTS:
            raise ValueError(f"select must be one of {', '.join(SELECTS)}, got {self.select!r}")
        check_positive("max_tokens", self.max_tokens)
        check_positive("step_tokens", self.step_tokens)
        check_positive("max_steps", self.max_steps)
        check_range("temperature", self.temperature, 0, 10, low_open=True)
        check_range("top_p", self.top_p, 0, 1, low_open=True)


class Search:
    """One problem's search: its tree, its verifier, and the metered door to the engine."""

    def __init__(self, ctx: Context, p: SearchParams, *, verifier: Any, logprobs: bool = False) -> None:
        self.ctx = ctx
        self.p = p
        self.logprobs = logprobs
        """Ask the engine for the sampled tokens' log-probabilities; each step's mean goes to `Node.logprob`."""
        self.verifier = verifier
        """What scores the steps (`score_steps`): the caller's, loaded from `p.verifier`
        (`ttscale.verifiers.loading.load_verifier`) or built by hand."""
        self.tree = Tree(ctx.prompt())
        self.rng = random.Random(f"{p.seed}:{ctx.problem.id}")
        """The strategy's random source: seeded per problem, so results do not depend on problem order."""
        self.counters = {
            "verifier_calls": 0,
            "verifier_candidates": 0,
            "expansion_requests": 0,
            "expansion_prompt_tokens": 0,
            "expansion_cached_prompt_tokens": 0,
        }
        # The tree's statistics go into the record when it is written (a strategy error still leaves them).
        ctx.ledger.views["tree"] = lambda: {**self.tree.stats(), **self.counters}

    @property
    def root(self) -> Node:
        return self.tree.root

    # -- budget -----------------------------------------------------------------------------------
    @property
    def can_expand(self) -> bool:
        """False once the budget cannot pay for one more generated token."""
        return not self.ctx.ledger.exhausted

    def width_from_budget(self, *, multiple_of: int = 1) -> int:
        """N = B / max_tokens (the paths the budget pays for in the worst case), rounded down to a multiple.

        The same rule as best-of-N's pool size, so strategies compared at one budget start from
        the same N. Returns at least `multiple_of` when the budget pays for that many, else
        whatever it pays for (possibly 0).
        """
        affordable = self.ctx.ledger.affordable_samples(self.p.max_tokens)
        if affordable < multiple_of:
            return affordable
        return affordable - affordable % multiple_of

    def selection_round(self, candidates: Sequence[Node]) -> None:
        """Record a selection over `candidates` (the open frontier): the reference KV of the ETS paper.

        Called by a strategy each time it chooses among open nodes, where the reference code calls
        `get_kv_size`; the sum over rounds is what the ETS paper reports (`Tree.reference_kv`).
        """
        self.tree.reference_kv(candidates)

    # -- expansion --------------------------------------------------------------------------------
    async def expand(
        self,
        parents: Sequence[Node],
        n: int | Sequence[int] = 1,
        *,
        live: Sequence[Node] | LivePrefixes = (),
        to_end: bool = False,
    ) -> list[list[Node]]:
        """`n` one-step children for each parent (n may differ per parent), all requested at once.

        With `to_end`, each child runs to the end of its solution (EOS or the path's token limit) as
        one last node: search-and-learn's final iteration, which completes every surviving beam.

        A node listed twice gets one request with the counts added (its KV is computed once).
        Terminal parents get none. The ledger may lower a request's n or max_tokens, or refuse
        it when the budget is spent: parents then get fewer children (possibly none).

        Each call is one step of the unique-KV record: the union of the prefixes of the new
        children, of the parents that were expanded, and of `live`: nodes the search keeps to
        expand later (A*'s open list; a `LivePrefixes` where that list is most of the tree, as MCTS's).
        A parent given 0 children is pruned and not counted; finished solutions need no KV to go on and are not live.
        """
        counts = [n] * len(parents) if isinstance(n, int) else list(n)
        if len(counts) != len(parents):
            raise ValueError(f"expand got {len(parents)} parents but {len(counts)} counts")
        wanted: dict[int, int] = {}
        by_id: dict[int, Node] = {}
        for node, k in zip(parents, counts, strict=True):
            if k < 0:
                raise ValueError(f"child counts must be ≥ 0, got {k}")
            if k and not node.terminal and self._room(node) > 0:
                wanted[node.id] = wanted.get(node.id, 0) + k
                by_id[node.id] = node
        nodes = [by_id[i] for i in wanted]
        generations = await asyncio.gather(*(self._request(node, wanted[node.id], to_end=to_end) for node in nodes))
        made: dict[int, list[Node]] = {node.id: children for node, children in zip(nodes, generations, strict=True)}
        # Hand the children of a merged request back in the order the parents were listed.
        out: list[list[Node]] = []
        for node, k in zip(parents, counts, strict=True):
            pool = made.get(node.id, [])
            out.append(pool[:k])
            made[node.id] = pool[k:]
        children = [child for group in out for child in group]
        if nodes:
            if isinstance(live, LivePrefixes):
                self.tree.observe([*children, *nodes], held=live)
            else:
                self.tree.observe([*children, *nodes, *live])
        return out

    async def _request(self, node: Node, n: int, *, to_end: bool = False) -> list[Node]:
        params = SamplingParams(
            n=n,
            temperature=self.p.temperature,
            top_p=self.p.top_p,
            max_tokens=self._room(node) if to_end else min(self.p.step_tokens, self._room(node)),
            stop=() if to_end else (self.p.delimiter,),
            logprobs=0 if self.logprobs else None,
        )
        generation = await self.ctx.generate(self.tree.path_ids(node), params)
        if not generation.completions:  # refused by the ledger: it never reached the engine
            return []
        self.counters["expansion_requests"] += 1
        self.counters["expansion_prompt_tokens"] += generation.prompt_tokens
        self.counters["expansion_cached_prompt_tokens"] += generation.cached_prompt_tokens
        children = []
        for completion in generation.completions:
            if not completion.token_ids:  # nothing generated: no node (it would repeat its parent)
                continue
            finish: Finish
            if to_end:  # no stop string was set: "stop" is the end of the solution, anything else a limit
                separator, finish = "", ("stop" if completion.finish_reason == "stop" else "length")
            else:
                separator, finish = step_end(
                    completion, delimiter=self.p.delimiter, decode=self.ctx.engine.detokenize
                )
            child = self.tree.add(node, completion.token_ids, text=completion.text, separator=separator, finish=finish,
                                  split_at=self.p.delimiter if to_end else None)
            child.logprob = completion.mean_logprob
            if child.finish == "open" and (self._room(child) <= 0 or child.depth >= self.p.max_steps):
                child.finish = "length"  # a path limit, not the policy, ended it
            children.append(child)
        return children

    def _room(self, node: Node) -> int:
        """Tokens the path of `node` may still generate."""
        return self.p.max_tokens - node.generated

    # -- scoring ----------------------------------------------------------------------------------
    async def score(self, nodes: Sequence[Node]) -> list[float]:
        """Each node's aggregated value; the nodes not scored yet go to the verifier in one call."""
        todo: dict[int, Node] = {}
        for node in nodes:
            if node.step_scores is None and node.parent is not None:
                todo.setdefault(node.id, node)
        if todo:
            batch = list(todo.values())
            paths = [node.steps() for node in batch]
            scores = await self.verifier.score_steps(self.ctx, paths)
            self.counters["verifier_calls"] += 1
            self.counters["verifier_candidates"] += len(batch)
            self.ctx.ledger.tally("reward_evaluations", len(batch))  # the unit best-of-N's scoring counts too
            if len(scores) != len(batch):
                raise ValueError(f"verifier returned {len(scores)} score lists for {len(batch)} candidates")
            for node, steps, step_scores in zip(batch, paths, scores, strict=True):
                if len(step_scores) != len(steps) or not all(0.0 <= s <= 1.0 for s in step_scores):
                    raise ValueError(
                        f"verifier must return {len(steps)} scores in [0, 1] for a {len(steps)}-step path, "
                        f"got {list(step_scores)!r}"
                    )
                node.step_scores = tuple(float(s) for s in step_scores)
                node.value = aggregate(node.step_scores, self.p.aggregate)
        return [node.value if node.value is not None else 0.0 for node in nodes]

    def top(self, nodes: Sequence[Node], k: int) -> list[Node]:
        """The k nodes of highest value, best first (unscored count as 0).

        Ties are broken by the search's seeded RNG: a coarse verifier (0 / ½ / 1) ties often,
        and breaking ties by position would always favour the first parent's children.
        """
        keyed = sorted((-(node.value or 0.0), self.rng.random(), i) for i, node in enumerate(nodes))
        return [nodes[i] for _, _, i in keyed[:k]]

    @staticmethod
    def distinct(nodes: Sequence[Node]) -> list[Node]:
        """The nodes whose path text (the solution so far, the last step's delimiter included) no earlier
        node in `nodes` has: the first of each text, in order.

        Text, not token ids: two samples that write the same words are one beam to a search
        (search-and-learn's `filter_duplicates` compares `current_text`), however they were tokenised.
        """
        seen: set[str] = set()
        out: list[Node] = []
        for node in nodes:
            text = node.solution() + node.separator
            if text not in seen:
                seen.add(text)
                out.append(node)
        return out

    # -- the answer -------------------------------------------------------------------------------
    async def answer(self, candidates: Sequence[Node], *, info: dict[str, Any] | None = None) -> Answer:
        """Select the answer among `candidates` (complete ones preferred) and report every one as a sample.

        When no candidate is complete (the budget or the depth ran out first), the open and cut
        paths compete instead: an answer stated in a partial solution is still an answer.
        """
        nodes = [node for node in candidates if node.parent is not None]
        complete = [node for node in nodes if node.complete]
        pool = complete or nodes
        await self.score(pool)
        exhausted = not self.can_expand
        samples = [self._sample(node, exhausted=exhausted) for node in pool]
        # Off the loop: a symbolic merge of the votes waits on grader processes (ttscale.kit.selection).
        prediction, votes = await asyncio.to_thread(self._select, samples)
        details: dict[str, Any] = {
            "verifier": self.p.verifier,
            "select": self.p.select,
            "candidates": len(samples),
            "complete_candidates": len(complete),
            "votes": votes,
        }
        return Answer(prediction=prediction, samples=tuple(samples), info={**details, **(info or {})})

    def _sample(self, node: Node, *, exhausted: bool) -> Sample:
        text = node.solution()
        if node.complete:
            reason: Literal["stop", "length", "budget"] = "stop"
        else:
            reason = "budget" if exhausted and not node.terminal else "length"
        answer, rule = extraction_of(self.ctx.task, text)
        return Sample(
            text=text,
            answer=answer,
            num_tokens=node.generated,
            score=node.value,
            finish_reason=reason,
            extraction=rule,
        )

    def _select(self, samples: Sequence[Sample]) -> tuple[str | None, dict[str, Any]]:
        if self.p.select == "majority":
            prediction, counts = majority_vote(samples)
            return prediction, dict(counts)
        if self.p.select == "weighted":
            prediction, totals = weighted_vote(samples)
            return prediction, {k: round(v, 6) for k, v in totals.items()}
        best = best_scored(samples)
        return (best.answer if best else None), {}
