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
2. W = REBASE allocation of N_left over the open frontier (softmax of R / T_b);
3. keep the frontier nodes chosen by the ILP of ttscale.search.ets_ilp:
   max Σ O_i x_i − λ_c·(KV cost share of the kept paths) + (λ_s / K)·(clusters covered),
   so a node is kept when its allocation outweighs the KV its own unshared path would hold,
   or when it is the only kept voice of a semantically different cluster;
4. re-allocate all N_left children over the kept nodes only (REBASE again) and expand; go to 1.
The same number of children is sampled as REBASE would, from fewer distinct prefixes: the KV the
search holds (the tree's unique KV tokens) shrinks while diverse steps survive.

Defaults and their source (the reference code): T_b = 0.2 (`softmax_temperature`); λ_c = 1.0
(`lambdac`, every width); λ_s = 1.5 (`lambdas` at width 16; 1.4 at 64 and 1.45 at 256); cluster
cut 0.05 cosine distance (`fcluster(Z, 0.05, criterion='distance')`); KV costs normalised by the
union's total so that keeping everything costs λ_c and O sums to 1 (the reference code's
1/(M+N) per node). Ours differ in three stated ways: t_j are tokens (the reference used a uniform
cost and named tokens the better choice; `kv_cost=nodes` restores it); the prompt (root) is left
out of the union, as no selection changes it; the encoder is the offline all-MiniLM-L6-v2
(ttscale.verifiers.embeddings) instead of a math-tuned BERT, so the same threshold may cluster
differently. Clusters are computed only when λ_s > 0 and the frontier holds two different steps.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from ttscale.context import Context
from ttscale.params import check_positive, check_range, strategy
from ttscale.search import Node, Search, SearchParams, allocate
from ttscale.search.ets_ilp import Selection, select_nodes
from ttscale.types import Answer, Problem


@dataclass(frozen=True, kw_only=True)
class ETSParams(SearchParams):
    """Efficient tree search: REBASE allocation, then KV- and diversity-aware node selection."""

    n: int | None = None
    """N: the search width (solutions to finish); None = B / max_tokens."""
    temperature_b: float = 0.2
    """T_b: softmax temperature of the REBASE allocation over verifier values in [0, 1]."""
    lambda_c: float = 1.0
    """λ_c: weight of the retained KV (share of the frontier's tokens); 0 = no pruning (REBASE)."""
    lambda_s: float = 1.5
    """λ_s: weight of semantic coverage, split over the K clusters; 0 = no embeddings computed."""
    threshold: float = 0.05
    """Cosine distance below which steps are merged into one cluster (average linkage)."""
    kv_cost: Literal["tokens", "nodes"] = "tokens"
    """KV cost of a tree node: its tokens, or 1 per node (the reference code's uniform cost)."""
    embedder: str = "embedded"
    """Sentence encoder of the steps: `embedded` (all-MiniLM-L6-v2, offline) or a sentence-transformers model."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("n", self.n, allow_none=True)
        check_range("temperature_b", self.temperature_b, 0, 100, low_open=True)
        check_range("lambda_c", self.lambda_c, 0, 1000)
        check_range("lambda_s", self.lambda_s, 0, 1000)
        check_range("threshold", self.threshold, 0, 2)
        if self.kv_cost not in ("tokens", "nodes"):
            raise ValueError(f"kv_cost must be tokens or nodes, got {self.kv_cost!r}")
        if not self.embedder:
            raise ValueError("embedder must name an encoder, got ''")


@strategy(ETSParams)
async def ets(problem: Problem, ctx: Context, p: ETSParams) -> Answer:
    search = Search(ctx, p)
    n = p.n if p.n is not None else search.width_from_budget()
    info = {"n": n, "lambda_c": p.lambda_c, "lambda_s": p.lambda_s, "threshold": p.threshold}
    if n < 1:
        return await search.answer([], info={**info, "n": 0})
    rounds = considered = kept_total = clusters = 0
    (frontier,) = await search.expand([search.root], n)
    ended: list[Node] = []
    while frontier:
        values = await search.score(frontier)
        ended += [node for node in frontier if node.terminal]
        open_ = [(node, value) for node, value in zip(frontier, values, strict=True) if not node.terminal]
        left = n - len(ended)
        if left <= 0 or not open_ or not search.can_expand:
            frontier = [node for node, _ in open_]
            break
        nodes = [node for node, _ in open_]
        allocation = allocate([value for _, value in open_], left, temperature=p.temperature_b)
        selection = await _select(nodes, [w / left for w in allocation], p)
        kept = [(node, value) for (node, value), k in zip(open_, selection.keep, strict=True) if k]
        rounds, considered, kept_total = rounds + 1, considered + len(nodes), kept_total + len(kept)
        clusters += selection.clusters
        counts = allocate([value for _, value in kept], left, temperature=p.temperature_b)
        groups = await search.expand([node for node, _ in kept], counts)
        children = [child for group in groups for child in group]
        if not children:  # the budget ended inside the step: the open nodes are all we have
            frontier = nodes
            break
        frontier = children
    info |= {"ilp_rounds": rounds, "ilp_considered": considered, "ilp_kept": kept_total, "ilp_clusters": clusters}
    return await search.answer(ended + frontier, info=info)


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
    clusters = None
    if p.lambda_s > 0 and len(distinct) > 1:
        from ttscale.verifiers.embeddings import cluster, embed_async

        labels = cluster(await embed_async(distinct, model=p.embedder), threshold=p.threshold)
        label_of = dict(zip(distinct, labels, strict=True))
        clusters = [label_of[text] for text in texts]
    # HiGHS takes milliseconds per frontier; off the loop, so the engine's streaming never waits on it.
    return await asyncio.to_thread(
        select_nodes,
        paths=paths,
        costs=costs,
        outcome=outcome,
        clusters=clusters,
        lambda_c=p.lambda_c,
        lambda_s=p.lambda_s,
    )
