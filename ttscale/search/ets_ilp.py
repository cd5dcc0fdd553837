"""ETS's node selection: an integer linear program over the search frontier (pure; no engine, no model).

Hooper, Kim, Moon, Dilmen, Maheswaran, Lee, Mahoney, Shao, Keutzer, Gholami, "ETS: Efficient Tree
Search for Inference-Time Scaling", arXiv:2502.13575 (2025), §4; reference code SqueezeAILab/ETS
(`rebase.py`, `select_softmax_costmodel`).

Symbols. Candidates i = 1..N (the open frontier), each with the path of nodes from the first step
below the root down to itself; j ranges over the union U of those path nodes (the root, whose KV
— the prompt — is held whatever is chosen, is not part of U). O_i ≥ 0 the candidate's outcome
weight (ETS: its REBASE allocation W_i / Σ W, rounded with the reference's greedy ceilings of
ttscale.search.allocate, so a tail candidate may have O_i = 0); t_j ≥ 0 the KV cost of node j
(its own tokens, or 1 per node as in the reference code) and c_j = t_j / Σ_{j∈U} t_j its share,
so keeping everything costs exactly λ_c; clusters k = 1..K of the candidates (semantic clusters
of their last steps).

Binary variables: x_i (candidate i is kept), y_j (node j's KV is retained), z_k (cluster k is covered).

    maximise   Σ_i O_i x_i − λ_c Σ_j c_j y_j + (λ_s / K) Σ_k z_k
    subject to y_j ≥ x_i                    for every candidate i and every node j on its path
               y_j ≤ Σ_{i : j on path(i)} x_i    (no KV retained for a branch with nothing kept)
               z_k ≤ Σ_{i in cluster k} x_i      (a cluster counts only when one of its members is kept)
               Σ_i x_i ≥ 1                      (never prune everything)

The reference code puts the candidates' own cost on x_i and the ancestors' on y_j; here every path
node (the candidate's own node included) has a y, which is the same program when no candidate lies
on another's path and stays correct when one does. Among optimal selections the one keeping the most
candidates is returned (a second solve; objectives within `TIE_TOLERANCE` count as equal), so
pruning happens only where it strictly pays: with λ_c = 0 every candidate is kept and ETS is REBASE,
as in the reference code (whose λ_c = 0 guard turns the cost into a tiny reward for keeping).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)
"""A tree node's key (any hashable id)."""

#: Selections within this of the optimum's objective count as ties (HiGHS's own feasibility tolerance).
TIE_TOLERANCE = 1e-7


@dataclass(frozen=True)
class Selection:
    """The ILP's answer for one frontier."""

    keep: tuple[bool, ...]
    """Per candidate, in the order given: kept (expanded further) or pruned."""
    objective: float
    """The objective's value at `keep` (recomputed exactly from the selection)."""
    kv_share: float
    """Σ c_j y_j: the share of the union's KV tokens that the kept candidates' paths hold."""
    covered: int
    """Clusters with at least one kept candidate."""
    clusters: int
    """K, the number of clusters (0 when no clustering was given)."""


def objective(
    keep: Sequence[bool],
    *,
    paths: Sequence[Sequence[K]],
    costs: Mapping[K, float],
    outcome: Sequence[float],
    clusters: Sequence[int] | None = None,
    lambda_c: float,
    lambda_s: float,
) -> tuple[float, float, int]:
    """The objective of any selection `keep`: (value, KV share held, clusters covered)."""
    shares = _cost_shares(paths, costs)
    held: set[K] = {node for path, kept in zip(paths, keep, strict=True) if kept for node in path}
    kv_share = sum(shares[node] for node in held)
    value = sum(o for o, kept in zip(outcome, keep, strict=True) if kept) - lambda_c * kv_share
    covered, k = 0, 0
    if clusters is not None:
        k = len(set(clusters))
        covered = len({label for label, kept in zip(clusters, keep, strict=True) if kept})
        if k:
            value += lambda_s / k * covered
    return value, kv_share, covered


def select_nodes(
    *,
    paths: Sequence[Sequence[K]],
    costs: Mapping[K, float],
    outcome: Sequence[float],
    clusters: Sequence[int] | None = None,
    lambda_c: float,
    lambda_s: float,
) -> Selection:
    """Solve the program of the module docstring with `scipy.optimize.milp` (HiGHS), exactly.

    `paths[i]` lists candidate i's nodes (keys into `costs`) from the first step down to i itself;
    `outcome[i]` is O_i; `clusters[i]` is candidate i's cluster label (None: no coverage term).
    """
    n = len(paths)
    _check(paths, costs, outcome, clusters, lambda_c=lambda_c, lambda_s=lambda_s)
    if n == 0:
        return Selection(keep=(), objective=0.0, kv_share=0.0, covered=0, clusters=0)
    from scipy.optimize import Bounds, LinearConstraint, milp

    shares = _cost_shares(paths, costs)
    nodes = list(shares)
    index = {node: n + j for j, node in enumerate(nodes)}
    labels = sorted(set(clusters)) if clusters is not None else []
    k = len(labels)
    z_at = {label: n + len(nodes) + c for c, label in enumerate(labels)}
    size = n + len(nodes) + k

    gain = np.zeros(size)  # the objective as a vector to maximise
    gain[:n] = outcome
    for node, j in index.items():
        gain[j] = -lambda_c * shares[node]
    for label in labels:
        gain[z_at[label]] = lambda_s / k

    # The constraint matrix as sparse triplets: each row touches a handful of columns, and a dense matrix of
    # (paths × steps)² entries was most of the solve's time at width 64 (benchmarks/harness.py --ilp).
    rows: list[int] = []
    columns: list[int] = []
    values: list[float] = []
    lower: list[float] = []
    upper: list[float] = []

    def add(at: list[int], coefficients: list[float], lo: float, hi: float) -> None:
        rows.extend([len(lower)] * len(at))
        columns.extend(at)
        values.extend(coefficients)
        lower.append(lo)
        upper.append(hi)

    def constraints() -> Any:
        from scipy.sparse import csr_array

        matrix = csr_array((values, (rows, columns)), shape=(len(lower), size))
        return LinearConstraint(matrix, lower, upper)

    under: dict[K, list[int]] = {node: [] for node in nodes}
    for i, path in enumerate(paths):
        for node in dict.fromkeys(path):  # a node listed twice in one path is one constraint
            under[node].append(i)
            add([index[node], i], [1.0, -1.0], 0.0, np.inf)  # y_j ≥ x_i
    for node, members in under.items():
        add([index[node], *members], [1.0] + [-1.0] * len(members), -np.inf, 0.0)  # y_j ≤ Σ x_i
    for label in labels:
        members = [i for i, c in enumerate(clusters or ()) if c == label]
        add([z_at[label], *members], [1.0] + [-1.0] * len(members), -np.inf, 0.0)  # z_k ≤ Σ x_i
    add(list(range(n)), [1.0] * n, 1.0, np.inf)  # Σ x_i ≥ 1

    integrality = np.ones(size)
    bounds = Bounds(np.zeros(size), np.ones(size))
    options = {"mip_rel_gap": 0.0, "presolve": True}
    first = milp(-gain, constraints=constraints(), integrality=integrality, bounds=bounds, options=options)
    if first.x is None:  # pragma: no cover - the program is always feasible (keep everything)
        raise RuntimeError(f"ETS node selection failed: {first.message}")
    second = None
    if round(float(first.x[:n].sum())) < n:  # keeping every candidate cannot be beaten on the count
        # Second solve: among the optimal selections, the one that keeps the most candidates.
        best = float(gain @ np.round(first.x))
        nonzero = [j for j, g in enumerate(gain) if g != 0.0]
        add(nonzero, [float(gain[j]) for j in nonzero], best - TIE_TOLERANCE * max(1.0, abs(best)), np.inf)
        count = np.zeros(size)
        count[:n] = 1.0
        second = milp(-count, constraints=constraints(), integrality=integrality, bounds=bounds, options=options)
    solution = second.x if second is not None and second.x is not None else first.x
    keep = tuple(bool(round(v)) for v in solution[:n])
    value, kv_share, covered = objective(
        keep, paths=paths, costs=costs, outcome=outcome, clusters=clusters, lambda_c=lambda_c, lambda_s=lambda_s
    )
    return Selection(keep=keep, objective=value, kv_share=kv_share, covered=covered, clusters=k)


def _cost_shares(paths: Sequence[Sequence[K]], costs: Mapping[K, float]) -> dict[K, float]:
    """c_j = t_j / Σ t over the union of the paths (all 0 when the union costs nothing)."""
    union = dict.fromkeys(node for path in paths for node in path)
    total = float(sum(costs[node] for node in union))
    return {node: (costs[node] / total if total > 0 else 0.0) for node in union}


def _check(
    paths: Sequence[Sequence[K]],
    costs: Mapping[K, float],
    outcome: Sequence[float],
    clusters: Sequence[int] | None,
    *,
    lambda_c: float,
    lambda_s: float,
) -> None:
    if len(outcome) != len(paths):
        raise ValueError(f"outcome needs one weight per candidate ({len(paths)}), got {len(outcome)}")
    if clusters is not None and len(clusters) != len(paths):
        raise ValueError(f"clusters needs one label per candidate ({len(paths)}), got {len(clusters)}")
    if any(not path for path in paths):
        raise ValueError("every candidate's path must hold at least the candidate itself")
    missing = {node for path in paths for node in path} - set(costs)
    if missing:
        raise ValueError(f"costs has no entry for nodes {sorted(map(str, missing))[:5]}")
    if any(not np.isfinite(costs[node]) or costs[node] < 0 for path in paths for node in path):
        raise ValueError("node costs must be finite and ≥ 0")
    if any(not np.isfinite(o) or o < 0 for o in outcome):
        raise ValueError("outcome weights must be finite and ≥ 0")
    for name, value in (("lambda_c", lambda_c), ("lambda_s", lambda_s)):
        if not np.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be ≥ 0, got {value!r}")
