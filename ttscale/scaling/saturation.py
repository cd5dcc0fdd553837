"""Saturation of test-time scaling.

TTSPM, from "Scaling over Scaling: Exploring Test-Time Scaling Plateau in Large Reasoning Models"
(Wang et al., arXiv 2505.20522). Symbols: N the scaling budget (parallel samples, or sequential
rethinking rounds); p the chance that one sample (or one round) is right (p_sample / p_rethink);
F_max the ceiling. Both paradigms share the form

    P(N) = F_max · (1 − (1 − p)^N)

The marginal gain of one more unit, P(N+1) − P(N) = F_max·p·(1 − p)^N, falls below ε at the
saturation point N* = ⌈ln(ε / (F_max·p)) / ln(1 − p)⌉ (1 when even the first step gains < ε).
F_max is the share of problems that unlimited samples would solve, a probability: the fit keeps it in
(0, 1] (0 only when no accuracy is positive). An N* past the largest N measured is the law's
extrapolation, not an observed plateau: the fit says so (`details["N_star_extrapolated"]`).

The saturating power law over a continuous budget C (tokens, FLOPs, eFLOPs),

    acc(C) = A − B · C^(−α),

saturates where doubling the budget gains less than ε: B·C^(−α)·(1 − 2^(−α)) < ε, i.e.
C* = (B·(1 − 2^(−α)) / ε)^(1/α).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from scipy.special import expit

from ttscale.scaling._profile import Profile
from ttscale.scaling._resample import FitInputError, observations
from ttscale.scaling.result import Fit, ProfileLaw, derived, fit_profile_law

TTSPM_FORMULA = "P(N) = F_max·(1 − (1 − p)^N)"
POWER_FORMULA = "acc(C) = A − B·C^(−alpha)"

Form = Literal["ttspm", "power"]
Mode = Literal["parallel", "sequential"]


def ttspm_curve(n: Any, *, f_max: float, p: float) -> np.ndarray:
    return f_max * -np.expm1(np.asarray(n, dtype=float) * math.log1p(-p))


def ttspm_saturation(*, f_max: Any, p: Any, epsilon: float) -> np.ndarray:
    """N*: the smallest N ≥ 1 at which one more step gains less than ε (NaN where undefined)."""
    f, q = np.asarray(f_max, dtype=float), np.asarray(p, dtype=float)
    with np.errstate(all="ignore"):
        raw = np.log(epsilon / (f * q)) / np.log1p(-q)
        n_star = np.where(f * q < epsilon, 1.0, np.maximum(1.0, np.ceil(raw)))
    return np.where((f > 0) & (q > 0) & (q < 1), n_star, np.nan)


def power_curve(c: Any, *, a: float, b: float, alpha: float) -> np.ndarray:
    return a - b * np.asarray(c, dtype=float) ** (-alpha)


def power_saturation(*, b: Any, alpha: Any, epsilon: float) -> np.ndarray:
    """C*: the budget past which doubling it gains less than ε (NaN for a non-increasing curve)."""
    bb, al = np.asarray(b, dtype=float), np.asarray(alpha, dtype=float)
    with np.errstate(all="ignore"):
        c_star = (bb * -np.expm1(-al * math.log(2.0)) / epsilon) ** (1.0 / al)
    return np.where((bb > 0) & (al > 0), c_star, np.nan)


TTSPM = ProfileLaw(
    name="ttspm",
    formula=TTSPM_FORMULA,
    names=("F_max", "p"),
    # 1 − (1−p)^N with log(1 − p) = −log(1 + e^u) for p = sigmoid(u): stable for p near 0 and 1.
    profile=Profile(
        linear="scale",
        basis=lambda x, u: -np.expm1(-x * np.logaddexp(0.0, u)),
        u_range=(math.log(1e-6), 21.0),
        beta_bounds=(0.0, 1.0),  # F_max is a probability
    ),
    to_params=lambda u, beta, _x0: np.column_stack([beta[:, 0], expit(u)]),
    curve=lambda x, params: params[:, 0:1] * -np.expm1(x[None, :] * np.log1p(-params[:, 1:2])),
)

POWER = ProfileLaw(
    name="power",
    formula=POWER_FORMULA,
    names=("A", "B", "alpha"),
    # acc = β₀ + β₁·(−(C/C₀)^(−α)) with C₀ the geometric mean of the budgets: A = β₀, B = β₁·C₀^α.
    profile=Profile(
        linear="affine", basis=lambda x, u: -(x ** (-np.exp(u))), u_range=(math.log(1e-3), math.log(10.0))
    ),
    to_params=lambda u, beta, x0: np.column_stack([beta[:, 0], beta[:, 1] * x0 ** np.exp(u), np.exp(u)]),
    curve=lambda x, params: params[:, 0:1] - params[:, 1:2] * x[None, :] ** (-params[:, 2:3]),
    scale_x=True,
)


def fit_ttspm(
    *,
    budget: Any,
    accuracy: Any,
    problem: Any = None,
    mode: Mode = "parallel",
    epsilon: float = 0.01,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> Fit:
    """Fit P(N) = F_max·(1 − (1 − p)^N) and its saturation point N* (`derived["N_star"]`).

    budget: N (samples for `parallel`, rounds for `sequential`), ≥ 1. accuracy: long form with
    optional `problem` ids, or a (problems × len(budget)) matrix. The bootstrap resamples problems.

    F_max is bounded to (0, 1] (it is the share of problems solvable at all); an estimate at 1 comes
    with a warning (the unbounded least-squares ceiling would be ≥ 1). `details["N_star_extrapolated"]`
    is True when N* lies past the largest measured N (`details["largest_N"]`): the curve was never seen
    to flatten there, so N* is where the law projects a plateau, not a finding of one.
    """
    if mode not in ("parallel", "sequential"):
        raise FitInputError(f"mode must be 'parallel' or 'sequential', got {mode!r}")
    _check_epsilon(epsilon)
    obs = observations(x=budget, y=accuracy, unit=problem, name_x="budget", name_y="accuracy")
    if np.any(obs.x < 1):
        raise FitInputError(f"the TTSPM budget N counts samples or rounds: need N ≥ 1, got {obs.x.min():g}")
    fit = fit_profile_law(TTSPM, obs, n_boot=n_boot, level=level, seed=seed)
    f_max, p = fit.estimate
    star = ttspm_saturation(f_max=f_max, p=p, epsilon=epsilon)
    draws = (
        ttspm_saturation(f_max=fit.boot[:, 0], p=fit.boot[:, 1], epsilon=epsilon)
        if fit.boot.size
        else fit.boot
    )
    largest = float(obs.x.max())
    extrapolated = bool(np.isfinite(star) and star > largest)
    at_ceiling = "the F_max estimate sits at its bound 1 (a ceiling is a probability; unbounded, it would be ≥ 1)"
    return _with(
        fit,
        derived={"N_star": derived(float(star), draws=draws, level=level)},
        details={
            "mode": mode,
            "epsilon": epsilon,
            "p_name": "p_sample" if mode == "parallel" else "p_rethink",
            "largest_N": largest,
            "N_star_extrapolated": extrapolated,
        },
        warnings=(at_ceiling,) if f_max >= 1.0 else (),
    )


def fit_power(
    *,
    budget: Any,
    accuracy: Any,
    problem: Any = None,
    epsilon: float = 0.01,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> Fit:
    """Fit acc(C) = A − B·C^(−α) over budgets C > 0 and its saturation budget C* (`derived["C_star"]`)."""
    _check_epsilon(epsilon)
    obs = observations(x=budget, y=accuracy, unit=problem, name_x="budget", name_y="accuracy")
    if np.any(obs.x <= 0):
        raise FitInputError(f"budgets must be > 0 for a power law, got {obs.x.min():g}")
    if obs.x.size < 4:
        raise FitInputError(f"the power law has 3 parameters: need ≥ 4 distinct budgets, got {obs.x.size}")
    fit = fit_profile_law(POWER, obs, n_boot=n_boot, level=level, seed=seed)
    _, b, alpha = fit.estimate
    star = power_saturation(b=b, alpha=alpha, epsilon=epsilon)
    draws = (
        power_saturation(b=fit.boot[:, 1], alpha=fit.boot[:, 2], epsilon=epsilon)
        if fit.boot.size
        else fit.boot
    )
    return _with(
        fit,
        derived={"C_star": derived(float(star), draws=draws, level=level)},
        details={"epsilon": epsilon, "saturation": "budget past which doubling gains < epsilon"},
    )


def fit_saturation(*, form: Form = "ttspm", **kwargs: Any) -> Fit:
    """`fit_ttspm` or `fit_power`, by name."""
    if form == "ttspm":
        return fit_ttspm(**kwargs)
    if form == "power":
        kwargs.pop("mode", None)
        return fit_power(**kwargs)
    raise FitInputError(f"form must be 'ttspm' or 'power', got {form!r}")


def _check_epsilon(epsilon: float) -> None:
    if not (isinstance(epsilon, int | float) and math.isfinite(epsilon) and epsilon > 0):
        raise FitInputError(f"epsilon must be a number > 0, got {epsilon!r}")


def _with(
    fit: Fit,
    *,
    derived: dict[str, tuple[float, float, float]],
    details: dict[str, Any],
    warnings: tuple[str, ...] = (),
) -> Fit:
    from dataclasses import replace

    return replace(
        fit,
        derived={**fit.derived, **derived},
        details={**fit.details, **details},
        warnings=(*fit.warnings, *warnings),
    )
