"""Compute-optimal solving vs verifying, from "When To Solve, When To Verify: Compute-Optimal Problem
Solving and Generative Verification for LLM Reasoning" (Singhi et al., arXiv 2504.01005).

Symbols: S solutions per problem; V generative verifications per solution; λ the ratio of a
verification's tokens to a solution's; the budget in solution-equivalents

    C = S · (1 + λ·V).

Over a grid of (S, V) with accuracies, the compute-optimal configurations are the Pareto set
(no cheaper configuration is at least as accurate). Along it the paper finds power laws

    S_opt ∝ C^a,   V_opt ∝ C^b     (reported a ≈ 0.57, b ≈ 0.39),

fitted here by least squares of log S and log V on log C over the Pareto configurations with
V ≥ 1 (the GenRM regime; V = 0 is plain self-consistency and has no log).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ttscale.scaling._resample import FitInputError, bootstrap_draws, check_options, observations, rng_from
from ttscale.scaling.result import Fit, goodness, percentile_bands

FORMULA = "S_opt = k_S·C^a, V_opt = k_V·C^b, C = S·(1 + lambda·V)"


def genrm_budget(*, s: Any, v: Any, lam: float) -> np.ndarray:
    """C = S·(1 + λ·V)."""
    return np.asarray(s, dtype=float) * (1.0 + lam * np.asarray(v, dtype=float))


def fit_genrm(
    *,
    s: Any,
    v: Any,
    accuracy: Any,
    lam: float,
    problem: Any = None,
    min_v: int = 1,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> Fit:
    """Exponents a, b (and prefactors k_S, k_V) of the compute-optimal S and V against C.

    One row per (S, V[, problem]) with its accuracy; with problem ids the bootstrap resamples
    problems, else the grid's rows. `details["optimal"]` lists the compute-optimal configurations.
    """
    check_options(n_boot=n_boot, level=level)
    if not (isinstance(lam, int | float) and math.isfinite(lam) and lam > 0):
        raise FitInputError(f"lambda must be a number > 0, got {lam!r}")
    ss, vs = np.asarray(s, dtype=float).ravel(), np.asarray(v, dtype=float).ravel()
    accs = np.asarray(accuracy, dtype=float).ravel()
    if not (ss.shape == vs.shape == accs.shape) or ss.size == 0:
        raise FitInputError("S, V and accuracy need one entry per row")
    if np.any(ss < 1) or np.any(vs < 0):
        raise FitInputError("need S ≥ 1 and V ≥ 0")
    keep = vs >= min_v
    if problem is not None:
        problem = np.asarray(problem)[keep]
    ss, vs, accs = ss[keep], vs[keep], accs[keep]
    if ss.size == 0:
        raise FitInputError(f"no configuration has V ≥ {min_v}")
    configs, column = np.unique(np.column_stack([ss, vs]), axis=0, return_inverse=True)
    obs = observations(
        x=column.ravel().astype(float), y=accs, unit=problem, name_x="config", name_y="accuracy"
    )
    grid_s, grid_v = configs[obs.x.astype(int), 0], configs[obs.x.astype(int), 1]
    cost = genrm_budget(s=grid_s, v=grid_v, lam=lam)
    log_c, log_s, log_v = np.log(cost), np.log(grid_s), np.log(grid_v)
    mean = obs.mean()
    mask = _pareto_masks(cost, mean[None, :])
    frontier = np.flatnonzero(mask[0])
    frontier = frontier[np.argsort(cost[frontier], kind="stable")]
    estimate = _slopes(log_c, log_s, log_v, mask)[0]
    if not np.all(np.isfinite(estimate)):
        raise FitInputError(
            f"the compute-optimal set has {frontier.size} configuration(s) with distinct budgets; need ≥ 2"
        )
    rng = rng_from(seed)
    boots = []
    for draws in bootstrap_draws(obs.n_units, n_boot, rng) if n_boot else ():
        curves = obs.resampled(draws)
        boots.append(_slopes(log_c, log_s, log_v, _pareto_masks(cost, curves)))
    boot = np.vstack(boots) if boots else np.empty((0, 4))
    r2_s, rmse_s = goodness(log_s[frontier], estimate[2] + estimate[0] * log_c[frontier])
    r2_v, _ = goodness(log_v[frontier], estimate[3] + estimate[1] * log_c[frontier])
    a, b, log_ks, log_kv = estimate
    params = np.array([a, b, math.exp(log_ks), math.exp(log_kv)])
    boot_params = (
        np.column_stack([boot[:, 0], boot[:, 1], np.exp(boot[:, 2]), np.exp(boot[:, 3])])
        if boot.size
        else np.empty((0, 4))
    )
    details = {
        "lambda": lam,
        "min_v": min_v,
        "r2_V": r2_v,
        "optimal": [
            {
                "budget": float(cost[i]),
                "S": float(grid_s[i]),
                "V": float(grid_v[i]),
                "accuracy": float(mean[i]),
            }
            for i in frontier
        ],
    }
    return Fit(
        law="genrm",
        formula=FORMULA,
        names=("a", "b", "k_S", "k_V"),
        estimate=params,
        boot=boot_params,
        level=level,
        r2=r2_s,
        rmse=rmse_s,
        n_points=int(frontier.size),
        n_obs=obs.n_obs,
        n_units=obs.n_units,
        resampled="problems" if obs.by_problem else "points",
        curve=_s_opt,
        details=details,
        warnings=() if frontier.size >= 4 else (f"only {frontier.size} compute-optimal configurations",),
        observed=(cost[frontier], grid_s[frontier]),
    )


def optimal_allocation(fit: Fit, *, budget: Any) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """S_opt and V_opt at the given budgets: {"S": (estimate, low, high), "V": (...)} from the bootstrap."""
    c = np.atleast_1d(np.asarray(budget, dtype=float))
    out: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    good = fit.boot[np.all(np.isfinite(fit.boot), axis=1)]
    for name, exponent, factor in (("S", 0, 2), ("V", 1, 3)):
        est = fit.estimate[factor] * c ** fit.estimate[exponent]
        draws = good[:, factor : factor + 1] * c[None, :] ** good[:, exponent : exponent + 1]
        low, high = (
            percentile_bands(draws, level=fit.level)
            if good.shape[0] >= 2
            else (est * np.nan, est * np.nan)
        )
        out[name] = (est, low, high)
    return out


def _s_opt(x: np.ndarray, params: np.ndarray) -> np.ndarray:
    return params[:, 2:3] * x[None, :] ** params[:, 0:1]


def _pareto_masks(cost: np.ndarray, curves: np.ndarray) -> np.ndarray:
    """(B, J): 1 where a configuration is compute-optimal in that resample (NaN accuracy: absent)."""
    order = np.argsort(cost, kind="stable")
    sorted_cost = cost[order]
    acc = np.where(np.isfinite(curves[:, order]), curves[:, order], -np.inf)
    starts = np.flatnonzero(np.r_[True, sorted_cost[1:] != sorted_cost[:-1]])
    group = np.cumsum(np.r_[True, sorted_cost[1:] != sorted_cost[:-1]]) - 1
    group_best = np.maximum.reduceat(acc, starts, axis=1)  # (B, groups): best at each distinct cost
    before = np.maximum.accumulate(group_best, axis=1)
    cheaper_best = np.concatenate([np.full((acc.shape[0], 1), -np.inf), before[:, :-1]], axis=1)
    optimal = (acc == group_best[:, group]) & (acc > cheaper_best[:, group]) & np.isfinite(acc)
    mask = np.zeros_like(acc)
    mask[:, order] = optimal
    return mask


def _slopes(log_c: np.ndarray, log_s: np.ndarray, log_v: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(B, 4): slope and intercept of log S and of log V on log C over each row's masked points."""
    n = mask.sum(axis=1)
    sx, sxx = mask @ log_c, mask @ (log_c * log_c)
    out = np.full((mask.shape[0], 4), np.nan)
    denominator = n * sxx - sx * sx
    ok = (n >= 2) & (denominator > 1e-12 * np.maximum(n * sxx, 1e-300))
    for column, target in ((0, log_s), (1, log_v)):
        sy, sxy = mask @ target, mask @ (log_c * target)
        with np.errstate(invalid="ignore", divide="ignore"):
            slope = (n * sxy - sx * sy) / denominator
            intercept = (sy - slope * sx) / n
        out[:, column] = np.where(ok, slope, np.nan)
        out[:, column + 2] = np.where(ok, intercept, np.nan)
    return out
