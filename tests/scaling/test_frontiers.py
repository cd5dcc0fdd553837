"""Kinetics frontier and GenRM compute-optimal allocation: simulated truths and the paper's data."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttscale.scaling import (
    FitInputError,
    fit_genrm,
    fit_kinetics,
    optimal_allocation,
    owner_ranges,
    pareto_frontier,
)

SHARED = Path(__file__).parents[2].parent / "shared" / "data" / "kinetics"
SIZES = ["0-6b", "1-7b", "4b", "8b", "14b", "32b"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 20), st.integers(0, 20)), min_size=1, max_size=25))
def test_pareto_frontier_is_the_non_dominated_set(points: list[tuple[int, int]]) -> None:
    cost = np.array([c for c, _ in points], dtype=float)
    acc = np.array([a for _, a in points], dtype=float)
    chosen = pareto_frontier(cost=cost, accuracy=acc)
    for i in range(len(points)):
        dominated = any(
            cost[j] <= cost[i] and acc[j] >= acc[i] and (cost[j], acc[j]) != (cost[i], acc[i])
            for j in range(len(points))
        )
        if dominated:
            assert i not in chosen
    # Exactly one point per distinct non-dominated (cost, accuracy), cheapest first, accuracy rising.
    assert np.all(np.diff(cost[chosen]) > 0) and np.all(np.diff(acc[chosen]) > 0)
    best = {
        (c, a)
        for c, a in zip(cost, acc, strict=True)
        if not any(c2 <= c and a2 >= a and (c2, a2) != (c, a) for c2, a2 in zip(cost, acc, strict=True))
    }
    assert {(cost[i], acc[i]) for i in chosen} == best


def test_owner_ranges_merge_runs_and_leave_the_last_open() -> None:
    ranges = owner_ranges(costs=np.array([1.0, 2, 3, 4, 5]), owners=[None, "a", "a", "b", "a"])
    assert ranges == [
        {"low": 2.0, "high": 4.0, "model": "a"},
        {"low": 4.0, "high": 5.0, "model": "b"},
        {"low": 5.0, "high": None, "model": "a"},
    ]


def tangent_models(rng: np.random.Generator, a: float, b: float, alpha: float, queries: int):
    """Models whose accuracy touches the true frontier A − B·C^(−α) at one cost each and falls away
    fast in log cost: the Pareto set is exactly the touching points."""
    rows = []
    for m, centre in enumerate(np.geomspace(1e3, 1e6, 10)):
        for step in (-1, 0, 1, 2) if m else (0, 1, 2):  # nothing cheaper than the first tangent point
            cost = centre * 2.0**step
            mean = a - b * cost**-alpha - 0.3 * step**2
            per_query = mean + 0.1 * rng.normal(size=queries)
            costs = cost * (0.8 + 0.4 * rng.random(queries))
            per_query += mean - per_query.mean()  # dataset-level points sit on the curve exactly,
            costs *= cost / costs.mean()  # the resamples around it
            rows += [(f"m{m}", step, q, costs[q], per_query[q]) for q in range(queries)]
    return rows


def test_dataset_frontier_recovers_a_known_curve_with_covering_intervals() -> None:
    truth = (0.9, 3.0, 0.3)
    hits, repetitions = np.zeros(3), 30
    for rep in range(repetitions):
        rng = np.random.default_rng(rep)
        rows = tangent_models(rng, *truth, queries=60)
        model, config, query, cost, acc = (list(col) for col in zip(*rows, strict=True))
        fit = fit_kinetics(
            model=model,
            cost=cost,
            accuracy=acc,
            query=query,
            config=config,
            scope="dataset",
            n_boot=200,
            seed=rep,
        )
        assert [r["model"] for r in fit.details["owners"]] == [f"m{m}" for m in range(10)]
        for j, (name, true) in enumerate(zip(fit.names, truth, strict=True)):
            assert abs(fit.estimate[j] / true - 1) < 0.05, f"{name}: {fit.estimate[j]:.4g} vs {true}"
            hits[j] += fit.ci[name][0] <= true <= fit.ci[name][1]
    assert np.all(hits / repetitions >= 0.9), hits / repetitions


def test_query_frontier_gives_cheap_costs_to_the_small_model() -> None:
    # Small model: cheap, right on easy queries only. Large: expensive, right on all.
    rows = []
    for q in range(20):
        easy = q < 12
        for n in (1, 2, 4, 8):
            rows.append(("small", n, q, 10.0 * n, (0.6 if easy else 0.05) * min(1, 0.5 + n / 8)))
            rows.append(("large", n, q, 100.0 * n, 0.9 if easy else 0.7))
    model, _, query, cost, acc = (list(col) for col in zip(*rows, strict=True))
    fit = fit_kinetics(model=model, cost=cost, accuracy=acc, query=query, n_boot=50)
    owners = fit.details["owners"]
    assert owners[0]["model"] == "small" and owners[0]["low"] == 10.0
    assert owners[-1]["model"] == "large" and owners[-1]["high"] is None
    lows = [r["low"] for r in owners]
    assert lows == sorted(lows)
    frontier = [p["accuracy"] for p in fit.details["frontier"]]
    assert frontier == sorted(frontier)


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"Kinetics reference tables not found at {SHARED}")
@pytest.mark.parametrize("scope", ["query", "dataset"])
def test_paper_data_larger_models_own_the_high_costs(scope: Literal["query", "dataset"]) -> None:
    rows = []
    for size in SIZES:
        with (SHARED / f"aime24_qwen3-{size}_dense.csv").open(newline="", encoding="utf-8") as handle:
            rows += [
                (size, r["trial"], r["query_id"], float(r["total_cost"]), float(r["coverage"]))
                for r in csv.DictReader(handle)
            ]
    model, config, query, cost, acc = (list(col) for col in zip(*rows, strict=True))
    fit = fit_kinetics(
        model=model, cost=cost, accuracy=acc, query=query, config=config, scope=scope, n_boot=100
    )
    owners = fit.details["owners"]
    rank = {size: i for i, size in enumerate(SIZES)}
    assert owners[-1]["model"] == "32b" and owners[-1]["high"] is None
    assert rank[owners[0]["model"]] < rank["32b"]
    # Above the median cost of the table, every range belongs to one of the two largest models.
    median = float(np.median(cost))
    assert all(rank[r["model"]] >= rank["14b"] for r in owners if r["low"] >= median)


def genrm_grid(a: float, lam: float, s0: float = 0.6):
    """Accuracy rises with C = S(1 + λV) and falls off the ridge S = s0·C^a; along the ridge
    V = (C/S − 1)/λ, so the truth for b is the slope of log V on log C over the budgets used."""
    s = np.unique(np.round(2 ** (np.arange(0, 28) / 3)))
    v = np.unique(np.round(2 ** (np.arange(0, 25) / 3)))
    grid_s, grid_v = (g.ravel() for g in np.meshgrid(s, v, indexing="ij"))
    cost = grid_s * (1 + lam * grid_v)
    acc = 0.95 - 0.6 * cost**-0.35 - 0.08 * (np.log(grid_s) - np.log(s0 * cost**a)) ** 2
    return grid_s, grid_v, acc


def true_b(a: float, lam: float, budgets: np.ndarray, s0: float = 0.6) -> float:
    c = np.geomspace(budgets.min(), budgets.max(), 200)
    return float(np.polyfit(np.log(c), np.log((c / (s0 * c**a) - 1) / lam), 1)[0])


@pytest.mark.parametrize(("a", "lam"), [(0.57, 1.0), (0.45, 0.5)])
def test_genrm_recovers_the_exponents(a: float, lam: float) -> None:
    s, v, acc = genrm_grid(a, lam)
    rng = np.random.default_rng(0)
    problems = 300
    per_problem = acc + 0.05 * rng.normal(size=(problems, acc.size))
    fit = fit_genrm(
        s=np.tile(s, problems),
        v=np.tile(v, problems),
        accuracy=per_problem.ravel(),
        lam=lam,
        problem=np.repeat(np.arange(problems), acc.size),
        n_boot=200,
    )
    budgets = np.array([o["budget"] for o in fit.details["optimal"]])
    assert abs(fit.params["a"] / a - 1) < 0.05
    assert abs(fit.params["b"] / true_b(a, lam, budgets) - 1) < 0.05
    assert fit.ci["a"][0] <= fit.params["a"] <= fit.ci["a"][1]
    accs = [o["accuracy"] for o in fit.details["optimal"]]
    assert np.all(np.diff(budgets) > 0) and np.all(np.diff(accs) > 0)
    allocation = optimal_allocation(fit, budget=[100.0, 1000.0])
    s_opt, low, high = allocation["S"]
    assert np.all(low <= s_opt) and np.all(s_opt <= high)
    assert np.allclose(s_opt, fit.params["k_S"] * np.array([100.0, 1000.0]) ** fit.params["a"])


def test_genrm_exponent_intervals_cover_the_truth() -> None:
    a, lam = 0.57, 1.0
    s, v, acc = genrm_grid(a, lam)
    hits, repetitions = np.zeros(2), 25
    for rep in range(repetitions):
        rng = np.random.default_rng(100 + rep)
        # Problem effects of mean zero plus noise on a grid of configurations.
        per_problem = acc + 0.05 * rng.normal(size=(200, 1)) + 0.05 * rng.normal(size=(200, acc.size))
        fit = fit_genrm(
            s=np.tile(s, 200),
            v=np.tile(v, 200),
            accuracy=per_problem.ravel(),
            lam=lam,
            problem=np.repeat(np.arange(200), acc.size),
            n_boot=150,
            seed=rep,
        )
        b = true_b(a, lam, np.array([o["budget"] for o in fit.details["optimal"]]))
        hits += [fit.ci["a"][0] <= a <= fit.ci["a"][1], fit.ci["b"][0] <= b <= fit.ci["b"][1]]
    assert np.all(hits / repetitions >= 0.9), hits / repetitions


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lam": 0}, "lambda must be a number > 0"),
        ({"v": [0, 0, 0, 0]}, "no configuration has V ≥ 1"),
        ({"accuracy": [0.9, 0.1, 0.1, 0.1]}, "need ≥ 2"),
        ({"s": [0, 1, 2, 3]}, "need S ≥ 1 and V ≥ 0"),
    ],
)
def test_genrm_bad_input(kwargs: dict, message: str) -> None:
    args = {"s": [1, 2, 4, 8], "v": [1, 1, 2, 2], "accuracy": [0.1, 0.2, 0.3, 0.4], "lam": 1.0, **kwargs}
    with pytest.raises(FitInputError, match=message):
        fit_genrm(**args)


def test_kinetics_bad_input() -> None:
    with pytest.raises(FitInputError, match="the query scope needs per-query rows"):
        fit_kinetics(model=["a"], cost=[1.0], accuracy=[0.5], scope="query")
    with pytest.raises(FitInputError, match="costs must be finite and > 0"):
        fit_kinetics(model=["a", "b"], cost=[1.0, -1.0], accuracy=[0.5, 0.6])
    with pytest.raises(FitInputError, match="needs ≥ 4"):
        fit_kinetics(model=list("abc"), cost=[1.0, 2.0, 3.0], accuracy=[0.1, 0.2, 0.3])
    with pytest.raises(FitInputError, match="needs config labels"):
        fit_kinetics(model=["a"] * 2, cost=[1.0, 2.0], accuracy=[0.1, 0.2], query=[0, 1], scope="dataset")


def test_dataset_frontier_from_points_resamples_points() -> None:
    cost = np.geomspace(10, 1e4, 12)
    acc = 0.8 - 2.0 * cost**-0.5
    labels = [f"m{i // 3}" for i in range(12)]
    fit = fit_kinetics(model=[*labels, "worse"], cost=[*cost, 500.0], accuracy=[*acc, 0.1], n_boot=100)
    assert fit.resampled == "points" and fit.n_points == 12
    for name, true in zip(fit.names, (0.8, 2.0, 0.5), strict=True):
        assert math.isclose(fit.params[name], true, rel_tol=1e-6)
    assert [r["model"] for r in fit.details["owners"]] == [f"m{i}" for i in range(4)]


def test_query_curves_equal_a_brute_force_best_affordable_mean() -> None:
    from ttscale.scaling.kinetics import _steps

    rng = np.random.default_rng(8)
    rows = 300
    models = rng.choice(["a", "b", "c"], size=rows)
    queries = rng.integers(0, 12, size=rows)
    costs = rng.choice([1.0, 2.0, 3.0, 5.0, 8.0, 13.0], size=rows)  # ties in cost on purpose
    accs = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=rows)
    names = ["a", "b", "c"]
    grid = np.array([0.5, 1.0, 2.5, 3.0, 7.0, 13.0, 20.0])
    curves = _steps(names, models, queries, costs, accs).curves(grid)
    for m, name in enumerate(names):
        for g, budget in enumerate(grid):
            best = [
                max(
                    (
                        a
                        for mm, q, c, a in zip(models, queries, costs, accs, strict=True)
                        if mm == name and q == query and c <= budget
                    ),
                    default=0.0,
                )
                for query in np.unique(queries)
            ]
            assert math.isclose(curves[m, g], np.mean(best), abs_tol=1e-12)
