"""ETS: Efficient Tree Search.

Hooper, Kim, Moon, Dilmen, Maheswaran, Lee, Mahoney, Shao, Keutzer, Gholami, "ETS: Efficient Tree
Search for Inference-Time Scaling", arXiv:2502.13575 (2025), §4; reference code SqueezeAILab/ETS
(`rebase.py`, select method `softmax_costmodel`; hyper-parameters in `hype-parameters/*.yaml`).

Symbols: N the search width (`n`); R_i the verifier value of open frontier node i; T_b the
balance temperature; W_i the REBASE allocation and O_i = W_i / Σ W its outcome weight; t_j the
KV cost of tree node j; λ_c the KV cost weight; λ_s the semantic coverage weight; K the number
of clusters of the frontier's last steps (average linkage on sentence-embedding cosine distance,
merged below the distance `threshold`). Each round, as REBASE (ttscale.strategies.rebase) up to 3:
1. score the new nodes; ended solutions leave the frontier; N_left = N − (ended so far);
2. W = REBASE allocation of N_left over the open frontier (softmax of R / T_b, greedy ceilings from the
   best node down as the reference rounds it, ttscale.search.allocate: the tail may get W_i = O_i = 0);
3. keep the frontier nodes chosen by the ILP of ttscale.search.ets_ilp:
   max Σ O_i x_i − λ_c·(KV cost share of the kept paths) + (λ_s / K)·(clusters covered),
   so a node is kept when its allocation outweighs the KV its own unshared path would hold,
   or when it is the only kept voice of a semantically different cluster;
4. re-allocate all N_left children over the kept nodes only (REBASE again) and expand; go to 1.
Equal values are served in the reference's two orders: the earlier node first for O (its outcome loop sorts
with `reverse=True`), the later node first for the children (its final loop sorts, then reverses).
The same number of children is sampled as REBASE would, from fewer distinct prefixes: the KV the
search holds (the tree's unique KV tokens) shrinks while diverse steps survive.

Defaults and their source (the reference code): T_b = 0.2 (`softmax_temperature`); λ_c = 1.0
(`lambdac`, every width); λ_s = 1.5 (`lambdas` at width 16; 1.4 at 64 and 1.45 at 256); KV costs
normalised by the union's total so that keeping everything costs λ_c and O sums to 1 (the reference
code's 1/(M+N) per node). Ours differ in four stated ways: t_j are tokens (the reference used a
uniform cost and named tokens the better choice; `kv_cost=nodes` restores it); the prompt (root) is
left out of the union, as no selection changes it; the encoder is the offline all-MiniLM-L6-v2
(ttscale.verifiers.embeddings) instead of a math-tuned BERT; and so the cut is 0.15, not the
reference's 0.05 (`fcluster(Z, 0.05, criterion='distance')`), calibrated for our encoder by
benchmarks/ets_threshold.py on the embedded model's sibling steps: pairs stating the same numbers in
other words (paraphrases) vs other numbers (distinct). 0.15 is the largest cut merging ≤ 5% of distinct
pairs on both tasks measured (arithmetic 2-3: 3.1% distinct, 33% paraphrase merged; at 0.05: 0.3%, 28%;
GSM8K: 0.3% distinct, 6% paraphrase; at 0.05: 0%, 0%). Clusters are computed only when λ_s > 0 and
the frontier holds two different steps.

`preset=paper` is the reference's MATH-500 configuration (`hype-parameters/ets_{16,64,256}_math500.yaml`
and `rebase.py`): temperature 1.0, 256-token steps, 1,024-token solutions, at most 25 steps, T_b = 0.2,
λ_c = 1.0, uniform node costs, cut 0.05, and λ_s by width (1.5 / 1.4 / 1.45 at 16 / 64 / 256; the nearest
listed width on a log scale otherwise). The preset's values replace whatever else was given for them.

Each round's selection is recorded in `info["rounds"]`: candidates N, kept after the ILP, clusters K and
the reference's KV of the round (`Search.selection_round`); the tree statistics carry the reference KV summed
over rounds (`reference_kv_tokens`), the metric the paper reports, beside our exact unique-KV count.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from ttscale.blocks.verified import open_search
from ttscale.kit.context import Context
from ttscale.kit.params import check_range, strategy
from ttscale.schema import Answer, Problem
from ttscale.search import Node, allocate
from ttscale.search.ets_ilp import Selection, select_nodes
from ttscale.search.rounds import Scored, reward_balanced
from ttscale.strategies.rebase import RewardBalancedParams

#: The reference's MATH-500 settings (hype-parameters/*.yaml, rebase.py); λ_s depends on the width.
PAPER: dict[str, Any] = {
    "temperature": 1.0, "step_tokens": 256, "max_tokens": 1024, "max_steps": 25,
    "temperature_b": 0.2, "lambda_c": 1.0, "kv_cost": "nodes", "threshold": 0.05,
}
PAPER_LAMBDA_S = {16: 1.5, 64: 1.4, 256: 1.45}


def paper_lambda_s(n: int) -> float:
    """λ_s of the reference's configuration for width `n` (the nearest listed width on a log scale)."""
    nearest = min(PAPER_LAMBDA_S, key=lambda width: abs(math.log(width) - math.log(max(n, 1))))
    return PAPER_LAMBDA_S[nearest]


@dataclass(frozen=True, kw_only=True)
class ETSParams(RewardBalancedParams):
    """Efficient tree search: REBASE allocation, then KV- and diversity-aware node selection."""

    DEPRECATED_ALIASES: ClassVar[dict[str, str]] = {
        "width": "ETS's search width N is n; width is beam's and DVTS's M, children per kept prefix"}
    """Old spellings that still read (scripts, sweep and compare commands), with a warning naming the new one."""

    lambda_c: float = 1.0
    """λ_c: weight of the retained KV (share of the frontier's tokens); 0 = no pruning (REBASE)."""
    lambda_s: float = 1.5
    """λ_s: weight of semantic coverage, split over the K clusters; 0 = no embeddings computed."""
    threshold: float = 0.15
    """Cosine distance below which steps are merged into one cluster (average linkage); 0.15 is calibrated for
    the shipped encoder (benchmarks/ets_threshold.py), the reference's 0.05 is `preset=paper`'s."""
    kv_cost: Literal["tokens", "nodes"] = "tokens"
    """KV cost of a tree node: its tokens, or 1 per node (the reference code's uniform cost)."""
    embedder: str = "embedded"
    """Sentence encoder of the steps: `embedded` (all-MiniLM-L6-v2, offline) or a sentence-transformers model."""
    preset: Literal["none", "paper"] = "none"
    """`paper`: the reference code's MATH-500 settings (they replace the values given for those fields)."""

    def __post_init__(self) -> None:
        if self.preset not in ("none", "paper"):
            raise ValueError(f"preset must be none or paper, got {self.preset!r}")
        if self.preset == "paper":
            for name, value in PAPER.items():
                object.__setattr__(self, name, value)
            if self.n is not None:
                object.__setattr__(self, "lambda_s", paper_lambda_s(self.n))
        super().__post_init__()
        check_range("lambda_c", self.lambda_c, 0, 1000)
        check_range("lambda_s", self.lambda_s, 0, 1000)
        check_range("threshold", self.threshold, 0, 2)
        if self.kv_cost not in ("tokens", "nodes"):
            raise ValueError(f"kv_cost must be tokens or nodes, got {self.kv_cost!r}")
        if not self.embedder:
            raise ValueError("embedder must name an encoder, got ''")


@strategy(ETSParams)
async def ets(problem: Problem, ctx: Context, p: ETSParams) -> Answer:
    search, n = open_search(ctx, p, n=p.n)
    if p.preset == "paper" and p.n is None:  # the width came from the budget: λ_s follows it
        p = replace(p, lambda_s=paper_lambda_s(n))
    info: dict[str, Any] = {"n": n, "lambda_c": p.lambda_c, "lambda_s": p.lambda_s, "threshold": p.threshold}
    if n < 1:
        return await search.answer([], info={**info, "n": 0})
    rounds: list[dict[str, Any]] = []

    async def keep(open_: Scored, left: int) -> Scored:
        """Steps 2-3: REBASE's allocation as outcome weights, then the ILP's choice of nodes to keep."""
        nodes = [node for node, _ in open_]
        # `select_softmax_costmodel`'s outcome loop: the same ceilings, equal values served earlier-first.
        allocation = allocate([value for _, value in open_], left, temperature=p.temperature_b, ties="earlier")
        selection = await _select(nodes, [w / left for w in allocation], p)
        kept = [(node, value) for (node, value), k in zip(open_, selection.keep, strict=True) if k]
        rounds.append({"candidates": len(nodes), "kept": len(kept), "clusters": selection.clusters,
                       "reference_kv": search.tree.reference_kv_per_round[-1]})
        return kept

    candidates = await reward_balanced(search, n, temperature=p.temperature_b, keep=keep)  # step 4: REBASE
    info |= {
        "rounds": rounds,
        "ilp_rounds": len(rounds),
        "ilp_considered": sum(r["candidates"] for r in rounds),
        "ilp_kept": sum(r["kept"] for r in rounds),
        "ilp_clusters": sum(r["clusters"] for r in rounds),
    }
    return await search.answer(candidates, info=info)


async def _select(nodes: list[Node], outcome: list[float], p: ETSParams) -> Selection:
    """The ILP's choice over the open frontier (clusters of the last steps when λ_s > 0)."""
    if len(nodes) == 1:  # Σ x ≥ 1 leaves no choice: no embedding, no solver
        return Selection(keep=(True,), objective=outcome[0] - p.lambda_c, kv_share=1.0, covered=0, clusters=0)
    costs: dict[int, float] = {}
    paths: list[list[int]] = []
    for node in nodes:
        path = node.path()
        paths.append([step.id for step in path])
        for step in path:
            costs[step.id] = float(len(step.token_ids)) if p.kv_cost == "tokens" else 1.0
    texts = [node.text for node in nodes]
    distinct = list(dict.fromkeys(texts))  # siblings often write the same step: encode each text once
    vectors = None
    if p.lambda_s > 0 and len(distinct) > 1:
        from ttscale.verifiers.embeddings import embed_async

        vectors = await embed_async(distinct, model=p.embedder)
    # Clustering and HiGHS take milliseconds per frontier: off the loop, so the engine's streaming never waits.
    return await asyncio.to_thread(_solve, texts, distinct, vectors, paths=paths, costs=costs, outcome=outcome, p=p)


def _solve(texts: list[str], distinct: list[str], vectors: Any, *, paths: list[list[int]], costs: dict[int, float],
           outcome: list[float], p: ETSParams) -> Selection:
    clusters = None
    if vectors is not None:
        from ttscale.verifiers.embeddings import cluster

        label_of = dict(zip(distinct, cluster(vectors, threshold=p.threshold), strict=True))
        clusters = [label_of[text] for text in texts]
    return select_nodes(paths=paths, costs=costs, outcome=outcome, clusters=clusters,
                        lambda_c=p.lambda_c, lambda_s=p.lambda_s)
