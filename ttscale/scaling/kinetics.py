"""The cost-accuracy frontier of "Kinetics: Rethinking Test-Time Scaling Laws" (Sadhukhan et al.,
arXiv 2506.05333): accuracy (or coverage) against eFLOPs across (model, strategy, budget)
configurations, and which model owns which cost range.

Two scopes, as in the paper:
- `query`: for each model m and budget C, each query takes the best of m's configurations it can
  afford at C (cost on that query ≤ C; nothing affordable counts 0); curve_m(C) is the mean over
  queries. The frontier is the upper envelope over models; the owner of C is the model on top.
- `dataset`: one configuration for all queries; each (model, config) is a point (mean cost, mean
  accuracy) and the frontier is the Pareto set (no cheaper point is at least as accurate).
The frontier is fitted with the saturating power law acc(C) = A − B·C^(−α); the bootstrap resamples
queries (or, with no query ids, the points).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ttscale.scaling._resample import FitInputError, bootstrap_draws, check_options, rng_from
from ttscale.scaling.result import Batch, Fit, fit_profile_curves
from ttscale.scaling.saturation import POWER

Scope = Literal["query", "dataset"]


def pareto_frontier(*, cost: Any, accuracy: Any) -> np.ndarray:
    """Indices of the Pareto points, by increasing cost: no cheaper-or-equal point is as accurate."""
    c, a = np.asarray(cost, dtype=float), np.asarray(accuracy, dtype=float)
    order = np.lexsort((-a, c))  # by cost, the most accurate first among equal costs
    ranked = a[order]
    before = np.r_[-np.inf, np.maximum.accumulate(ranked)[:-1]] if ranked.size else ranked
    return order[ranked > before].astype(int)


def owner_ranges(*, costs: np.ndarray, owners: list[str | None]) -> list[dict[str, Any]]:
    """Merge runs of one owner over increasing costs into [low, high) ranges (the last is open)."""
    ranges: list[dict[str, Any]] = []
    for i, owner in enumerate(owners):
        if owner is None:
            continue
        if ranges and ranges[-1]["model"] == owner and ranges[-1]["_end"] == i:
            ranges[-1]["_end"] = i + 1
            continue
        ranges.append({"low": float(costs[i]), "model": owner, "_end": i + 1})
    for r in ranges:
        end = r.pop("_end")
        r["high"] = float(costs[end]) if end < len(costs) else None
    return [{"low": r["low"], "high": r["high"], "model": r["model"]} for r in ranges]


def fit_kinetics(
    *,
    model: Any,
    cost: Any,
    accuracy: Any,
    query: Any = None,
    config: Any = None,
    scope: Scope | None = None,
    grid_points: int = 128,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> Fit:
    """The frontier of accuracy against cost, its owners and a fitted A − B·C^(−α).

    One row per (model, configuration[, query]): `model` labels, `cost` (e.g. eFLOPs) and
    `accuracy`; `query` ids give per-query costs and enable the `query` scope (the default when
    given) and the query bootstrap; `config` labels the configurations (needed for the `dataset`
    scope with query ids). `details` holds the owner table ("owners": [{low, high, model}]).
    """
    check_options(n_boot=n_boot, level=level)
    models = np.asarray(model).astype(str)
    costs, accs = np.asarray(cost, dtype=float), np.asarray(accuracy, dtype=float)
    if not (models.shape == costs.shape == accs.shape) or costs.ndim != 1 or costs.size == 0:
        raise FitInputError("model, cost and accuracy need one entry per row")
    if not (np.all(np.isfinite(costs)) and np.all(np.isfinite(accs))) or np.any(costs <= 0):
        raise FitInputError("costs must be finite and > 0, accuracies finite")
    scope = scope or ("query" if query is not None else "dataset")
    if scope not in ("query", "dataset"):
        raise FitInputError(f"scope must be 'query' or 'dataset', got {scope!r}")
    if scope == "query" and query is None:
        raise FitInputError("the query scope needs per-query rows: give query ids")
    names = list(dict.fromkeys(models.tolist()))  # first-appearance order breaks ties
    rng = rng_from(seed)
    if scope == "query":
        return _query_scope(names, models, costs, accs, np.asarray(query), grid_points, n_boot, level, rng)
    return _dataset_scope(names, models, costs, accs, query, config, n_boot, level, rng)


# -- query scope --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Steps:
    """Each (model, query)'s best affordable accuracy as a step function of the budget C: it rises
    by `rise` at `cost` (rows where a configuration beats every cheaper one of its model on its query)."""

    model: np.ndarray
    query: np.ndarray
    cost: np.ndarray
    rise: np.ndarray
    n_models: int
    n_queries: int

    def curves(self, grid: np.ndarray) -> np.ndarray:
        """(models, grid): the mean over queries of the best affordable accuracy at each C."""
        out = np.zeros((self.n_models, grid.size + 1))
        np.add.at(out, (self.model, np.searchsorted(grid, self.cost, side="left")), self.rise)
        return np.cumsum(out, axis=1)[:, :-1] / self.n_queries

    def per_query(self, grid: np.ndarray) -> np.ndarray:
        """(queries, models · grid): each query's best affordable accuracy, for the bootstrap."""
        out = np.zeros((self.n_queries, self.n_models, grid.size + 1))
        np.add.at(out, (self.query, self.model, np.searchsorted(grid, self.cost, side="left")), self.rise)
        return np.cumsum(out, axis=2)[:, :, :-1].reshape(self.n_queries, -1)


def _steps(
    names: list[str], models: np.ndarray, queries: np.ndarray, costs: np.ndarray, accs: np.ndarray
) -> _Steps:
    """Vectorised running maximum per (model, query) over increasing cost (nothing affordable: 0)."""
    position = {name: i for i, name in enumerate(names)}
    m_index = np.array([position[m] for m in models.tolist()], dtype=np.int64)
    q_index = np.unique(queries, return_inverse=True)[1].ravel().astype(np.int64)
    n_queries = int(q_index.max()) + 1
    group = m_index * n_queries + q_index
    order = np.lexsort((-accs, costs, group))  # by group, then cost, the best first among equal costs
    values, rank = np.unique(accs, return_inverse=True)
    # A running maximum within groups in one pass: integer keys group·R + rank never decrease across groups.
    key = group[order] * values.size + rank.ravel()[order]
    running = values[np.maximum.accumulate(key) - group[order] * values.size]
    starts = np.r_[True, group[order][1:] != group[order][:-1]]
    previous = np.where(starts, 0.0, np.r_[0.0, running[:-1]])
    rise = running - previous
    keep = rise != 0
    rows = order[keep]
    return _Steps(model=m_index[rows], query=q_index[rows], cost=costs[rows], rise=rise[keep],
                  n_models=len(names), n_queries=n_queries)  # fmt: skip


def _owners(curves: np.ndarray, names: list[str]) -> list[str | None]:
    """Model on top at each grid point; ties keep the previous owner, else the first model listed."""
    top = np.max(curves, axis=0)
    tied = curves >= top - 1e-12
    owner = np.argmax(tied, axis=0)
    for g in np.flatnonzero(tied.sum(axis=0) > 1):  # only ties need the previous owner
        if g > 0 and tied[owner[g - 1], g]:
            owner[g] = owner[g - 1]
    return [names[int(o)] if t > 0 else None for o, t in zip(owner, top, strict=True)]


def _query_scope(
    names: list[str],
    models: np.ndarray,
    costs: np.ndarray,
    accs: np.ndarray,
    queries: np.ndarray,
    grid_points: int,
    n_boot: int,
    level: float,
    rng: np.random.Generator,
) -> Fit:
    if queries.shape != costs.shape:
        raise FitInputError("query ids need one entry per row")
    steps = _steps(names, models, queries, costs, accs)
    n_queries = steps.n_queries
    # The curves change only at the data's costs: evaluated there, the owner table is exact.
    exact = np.unique(costs)
    curves = steps.curves(exact)
    owners = owner_ranges(costs=exact, owners=_owners(curves, names))
    # Fit where every query can afford some configuration: below, the curve counts missing queries as 0.
    cheapest_per_query = np.full(n_queries, np.inf)
    np.minimum.at(cheapest_per_query, np.unique(queries, return_inverse=True)[1].ravel(), costs)
    cheapest = float(cheapest_per_query.max())
    if cheapest >= exact[-1]:
        raise FitInputError("no budget lets every query afford a configuration: nothing to fit")
    grid = np.geomspace(cheapest, exact[-1], grid_points)
    flat = steps.per_query(grid)  # (Q, M·G): a batch of resamples is one product
    envelope = steps.curves(grid).max(axis=0)

    def batches() -> Iterator[Batch]:
        for draws in bootstrap_draws(n_queries, n_boot, rng) if n_boot else ():
            per_model = (draws @ flat / n_queries).reshape(draws.shape[0], len(names), grid.size)
            yield grid, per_model.max(axis=1), None

    fit = fit_profile_curves(
        POWER,
        x=grid,
        y=envelope,
        batches=batches(),
        level=level,
        n_obs=int(costs.size),
        n_units=n_queries,
        resampled="problems",
    )
    frontier_at = np.flatnonzero(np.r_[True, np.diff(curves.max(axis=0)) > 0])
    details = {
        "scope": "query",
        "owners": owners,
        "frontier": [
            {"cost": float(exact[i]), "accuracy": float(curves[:, i].max()), "model": _name(owners, exact[i])}
            for i in frontier_at
            if curves[:, i].max() > 0
        ],
        "models": names,
        "fit_range": [float(grid[0]), float(grid[-1])],
    }
    return replace(fit, law="kinetics", details=details)


# -- dataset scope ------------------------------------------------------------------------------
def _dataset_scope(
    names: list[str],
    models: np.ndarray,
    costs: np.ndarray,
    accs: np.ndarray,
    query: Any,
    config: Any,
    n_boot: int,
    level: float,
    rng: np.random.Generator,
) -> Fit:
    if query is None:  # the rows are the configurations; the bootstrap resamples them
        point_model, point_cost, point_acc = models, costs, accs
        cost_rows = acc_rows = None
        units, resampled = costs.size, "points"
    else:
        if config is None:
            raise FitInputError(
                "the dataset scope with query ids needs config labels (which rows are one config)"
            )
        pairs = list(zip(models.tolist(), np.asarray(config).astype(str).tolist(), strict=True))
        key_ids = list(dict.fromkeys(pairs))
        k_index = _index_of(pairs, key_ids)
        query_ids, q_index = np.unique(np.asarray(query), return_inverse=True)
        cost_rows = np.full((query_ids.size, len(key_ids)), np.nan)
        acc_rows = np.full_like(cost_rows, np.nan)
        cost_rows[q_index, k_index], acc_rows[q_index, k_index] = costs, accs
        if np.isnan(cost_rows).any():
            raise FitInputError("the dataset scope needs every configuration on every query")
        point_model = np.array([m for m, _ in key_ids])
        point_cost, point_acc = cost_rows.mean(axis=0), acc_rows.mean(axis=0)
        units, resampled = query_ids.size, "problems"
    frontier = pareto_frontier(cost=point_cost, accuracy=point_acc)
    if frontier.size < 4:
        raise FitInputError(f"the frontier has {frontier.size} points; fitting A − B·C^(−alpha) needs ≥ 4")
    owners = owner_ranges(costs=point_cost[frontier], owners=[str(point_model[i]) for i in frontier])
    on_frontier = np.zeros(point_cost.size)
    on_frontier[frontier] = 1.0

    def batches() -> Iterator[Batch]:
        for draws in bootstrap_draws(int(units), n_boot, rng) if n_boot else ():
            if cost_rows is None or acc_rows is None:
                present = draws > 0  # an undrawn configuration is absent from this resample
                bc = np.broadcast_to(point_cost, draws.shape)
                ba = np.broadcast_to(point_acc, draws.shape)
            else:
                total = draws.sum(axis=1, keepdims=True)
                bc, ba = draws @ cost_rows / total, draws @ acc_rows / total
                present = np.ones(bc.shape, dtype=bool)
            mask = np.zeros(bc.shape)
            for row in range(bc.shape[0]):
                live = np.flatnonzero(present[row])
                mask[row, live[pareto_frontier(cost=bc[row, live], accuracy=ba[row, live])]] = 1.0
            yield bc, ba, mask

    fit = fit_profile_curves(
        POWER,
        x=point_cost,
        y=point_acc,
        batches=batches(),
        level=level,
        n_obs=int(costs.size),
        n_units=int(units),
        resampled=resampled,
        weights=on_frontier,
    )
    details = {
        "scope": "dataset",
        "owners": owners,
        "frontier": [
            {"cost": float(point_cost[i]), "accuracy": float(point_acc[i]), "model": str(point_model[i])}
            for i in frontier
        ],
        "models": names,
        "n_configs": int(point_cost.size),
    }
    return replace(fit, law="kinetics", details=details)


def _index_of(pairs: list[tuple[str, str]], keys: list[tuple[str, str]]) -> np.ndarray:
    position = {key: i for i, key in enumerate(keys)}
    return np.array([position[p] for p in pairs])


def _name(owners: list[dict[str, Any]], cost: float) -> str | None:
    for r in owners:
        if r["low"] <= cost and (r["high"] is None or cost < r["high"]):
            return str(r["model"])
    return None
