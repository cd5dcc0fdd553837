"""Coverage law of "Large Language Monkeys: Scaling Inference Compute with Repeated Sampling"
(Brown et al., arXiv 2407.21787).

Symbols: k samples per problem; coverage(k) the fraction of problems solved by at least one of k
samples (pass@k); the law

    coverage(k) = exp(a · k^b),   a < 0, b < 0

is fitted by least squares on log coverage (where it is linear in a), as in the paper. The other
linearisation in use, log(−log c) = log(−a) + b·log k (a straight line in log k, fitted where
0 < c < 1), is fitted beside it; both are scored on the coverage scale and the result says which
fits better (`details["forms"]`, `details["better"]`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.special import gammaln

from ttscale.scaling._profile import Profile
from ttscale.scaling._resample import FitInputError, observations
from ttscale.scaling.result import Fit, ProfileLaw, fit_profile_law, goodness

FORMULA = "coverage(k) = exp(a·k^b)"


def coverage_curve(k: Any, *, a: float, b: float) -> np.ndarray:
    """The law at k."""
    return np.exp(a * np.asarray(k, dtype=float) ** b)


def pass_at_k_array(*, n: Any, correct: Any, k: Any) -> np.ndarray:
    """Unbiased pass@k of each problem from n samples of which `correct` were right: (problems, len(k)), as floats
    (one problem's, exactly: `ttscale.stats.metrics.pass_at_k`).

    1 − C(n−c, k) / C(n, k) (Chen et al. 2021); NaN where k > n (not estimable from n samples).
    """
    ns = np.asarray(n, dtype=float).reshape(-1, 1)
    cs = np.asarray(correct, dtype=float).reshape(-1, 1)
    ks = np.asarray(k, dtype=float).reshape(1, -1)
    if ns.shape != cs.shape:
        raise FitInputError(f"n and correct need one entry per problem, got {ns.size} and {cs.size}")
    if np.any(cs < 0) or np.any(cs > ns) or np.any(ns < 1) or np.any(ks < 1):
        raise FitInputError("need n ≥ 1, 0 ≤ correct ≤ n and k ≥ 1")
    wrong = ns - cs
    with np.errstate(invalid="ignore"):
        log_ratio = gammaln(wrong + 1) - gammaln(wrong - ks + 1) - gammaln(ns + 1) + gammaln(ns - ks + 1)
    all_wrong = np.where(wrong >= ks, np.exp(np.where(wrong >= ks, log_ratio, 0.0)), 0.0)
    return np.where(ks <= ns, 1.0 - all_wrong, np.nan)


def _curve(x: np.ndarray, params: np.ndarray) -> np.ndarray:
    return np.exp(params[:, 0:1] * x[None, :] ** params[:, 1:2])


LAW = ProfileLaw(
    name="coverage",
    formula=FORMULA,
    names=("a", "b"),
    # log c = a·k^b: linear in a; b = −e^u searched over [−10, −1e-3].
    profile=Profile(
        linear="scale", basis=lambda x, u: x ** (-np.exp(u)), u_range=(math.log(1e-3), math.log(10.0))
    ),
    to_params=lambda u, beta, _x0: np.column_stack([beta[:, 0], -np.exp(u)]),
    curve=_curve,
    transform=np.log,
)


def fit_coverage(
    *,
    k: Any,
    coverage: Any,
    problem: Any = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> Fit:
    """Fit coverage(k) = exp(a·k^b).

    k, coverage: long form (one value per row, `problem` ids optional) or k of length K with
    coverage a (problems × K) matrix of per-problem pass@k. The bootstrap resamples problems
    (rows when no problem ids are given). Points where the mean coverage is 0 carry no
    information on the log scale and are left out.
    """
    obs = observations(x=k, y=coverage, unit=problem, name_x="k", name_y="coverage")
    if np.any(obs.x < 1):
        raise FitInputError(f"k must be ≥ 1, got {obs.x.min():g}")
    mean = obs.mean()
    if np.any(mean < 0) or np.any(mean > 1 + 1e-9):
        raise FitInputError("coverage values must lie in [0, 1]")
    fit = fit_profile_law(LAW, obs, n_boot=n_boot, level=level, seed=seed)
    scored = mean > 0  # the points the log-c fit uses; both forms are scored on them, on the coverage scale
    forms = {"log": _scored(fit.params["a"], fit.params["b"], obs.x[scored], mean[scored])}
    loglog = _loglog_params(obs.x, mean)
    if loglog is not None:
        forms["loglog"] = _scored(*loglog, obs.x[scored], mean[scored])
    better = min(forms, key=lambda name: (_finite_or_inf(forms[name]["rmse"]), name != "log"))
    return replace(fit, details={**fit.details, "forms": forms, "better": better})


def _loglog_params(k: np.ndarray, coverage: np.ndarray) -> tuple[float, float] | None:
    """(a, b) by ordinary least squares of log(−log c) on log k over the points with 0 < c < 1; None with
    fewer than two such points."""
    inside = (coverage > 0) & (coverage < 1)
    if np.count_nonzero(inside) < 2 or np.ptp(k[inside]) == 0:
        return None
    b, intercept = np.polyfit(np.log(k[inside]), np.log(-np.log(coverage[inside])), 1)
    return -math.exp(intercept), float(b)


def _scored(a: float, b: float, k: np.ndarray, coverage: np.ndarray) -> dict[str, float]:
    r2, rmse = goodness(coverage, coverage_curve(k, a=a, b=b))
    return {"a": float(a), "b": float(b), "r2": r2, "rmse": rmse}


def _finite_or_inf(value: float) -> float:
    return value if math.isfinite(value) else math.inf


def fit_coverage_from_samples(
    *,
    n: Any,
    correct: Any,
    k: Any = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> Fit:
    """Fit the law to problems with n samples, `correct` of them right (pass@k at k = 1, 2, 4, ... ≤ n)."""
    ns = np.asarray(n, dtype=float).reshape(-1)
    if k is None:
        top = int(ns.max()) if ns.size else 1
        k = [2**i for i in range(int(math.log2(max(top, 1))) + 1)]
    ks = np.asarray(k, dtype=float)
    return fit_coverage(
        k=ks, coverage=pass_at_k_array(n=ns, correct=correct, k=ks), n_boot=n_boot, level=level, seed=seed
    )


def __getattr__(name: str) -> object:
    # Names that moved out of this module (ttscale.FORMER_NAMES: `pass_at_k` is ttscale.stats.metrics') still import
    # from here, with a DeprecationWarning naming the new home.
    from ttscale.version import former_name

    return former_name(__name__, name)
