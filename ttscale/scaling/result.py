"""What a fit returns, and the generic fit of a one-nonlinear-parameter law with a problem bootstrap."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ttscale.scaling._profile import Profile, coefficients, polish, solve
from ttscale.scaling._resample import FitInputError, Observations, bootstrap_draws, check_options, rng_from

Curve = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""f(x (X,), params (M, P)) → (M, X): the law's prediction for M parameter vectors."""


@dataclass(frozen=True, kw_only=True, eq=False)
class Fit:
    """A fitted law: estimates, bootstrap confidence intervals, goodness of fit, prediction."""

    law: str
    """Name of the law (`coverage`, `ttspm`, `power`, `kinetics`, `genrm`)."""
    formula: str
    """The law, written out."""
    names: tuple[str, ...]
    """Parameter names, in the order of `estimate`."""
    estimate: np.ndarray
    """(P,) the estimates from all the data."""
    boot: np.ndarray
    """(n_boot, P) estimates on resampled data (NaN rows: a resample that could not be fitted)."""
    level: float
    """Confidence level of the intervals (0.95: 2.5th to 97.5th percentile of `boot`)."""
    r2: float
    """R² of the fitted curve against the observed mean curve."""
    rmse: float
    """Root mean squared error of that curve."""
    n_points: int
    """Points of the curve fitted (distinct x values)."""
    n_obs: int
    """Observations behind them."""
    n_units: int
    """Units resampled by the bootstrap (problems, or points when no problem ids were given)."""
    resampled: str
    """`problems` or `points`: what the bootstrap draws with replacement."""
    curve: Curve | None = None
    """The law as a function, for `predict`; None when the result is not a curve in x."""
    derived: Mapping[str, tuple[float, float, float]] = field(default_factory=dict)
    """Quantities computed from the parameters (saturation point, ...): (estimate, low, high)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Law-specific results (frontier tables, optimal allocations, ...), JSON-serialisable."""
    warnings: tuple[str, ...] = ()
    """Things to know before trusting the numbers."""
    observed: tuple[np.ndarray, np.ndarray] | None = None
    """The (x, y) the law was fitted to (the mean curve, the frontier, ...), for plots."""

    @property
    def params(self) -> dict[str, float]:
        return {name: float(v) for name, v in zip(self.names, self.estimate, strict=True)}

    @property
    def ci(self) -> dict[str, tuple[float, float]]:
        lows, highs = percentile_bands(self.boot, level=self.level)
        return {name: (float(lo), float(hi)) for name, lo, hi in zip(self.names, lows, highs, strict=True)}

    @property
    def n_failed(self) -> int:
        """Resamples that could not be fitted (left out of the intervals)."""
        return int(np.count_nonzero(~np.all(np.isfinite(self.boot), axis=1))) if self.boot.size else 0

    def predict(
        self, x: Any, *, interval: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The law at x; with `interval`, also the pointwise bootstrap band (low, high) at `level`."""
        if self.curve is None:
            raise ValueError(f"the {self.law} result has no curve to predict from")
        xs = np.atleast_1d(np.asarray(x, dtype=float))
        mean = self.curve(xs, self.estimate[None, :])[0]
        if not interval:
            return mean
        good = self.boot[np.all(np.isfinite(self.boot), axis=1)]
        if good.shape[0] < 2:
            nan = np.full_like(mean, np.nan)
            return mean, nan, nan
        draws = self.curve(xs, good)
        low, high = percentile_bands(draws, level=self.level)
        return mean, low, high

    def to_dict(self) -> dict[str, Any]:
        """Parameters with their intervals, goodness of fit and details, ready for JSON."""
        ci = self.ci
        return {
            "law": self.law,
            "formula": self.formula,
            "level": self.level,
            "params": {
                name: {"estimate": _num(v), "ci": [_num(ci[name][0]), _num(ci[name][1])]}
                for name, v in self.params.items()
            },
            "derived": {
                name: {"estimate": _num(e), "ci": [_num(lo), _num(hi)]}
                for name, (e, lo, hi) in self.derived.items()
            },
            "r2": _num(self.r2),
            "rmse": _num(self.rmse),
            "n_points": self.n_points,
            "n_obs": self.n_obs,
            "n_units": self.n_units,
            "resampled": self.resampled,
            "n_boot": int(self.boot.shape[0]),
            "n_failed": self.n_failed,
            "details": dict(self.details),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class ProfileLaw:
    """A law linear in all parameters but one (see `ttscale.scaling._profile`)."""

    name: str
    """Name of the law, as `Fit.law` reports it."""
    formula: str
    """The law, written out."""
    names: tuple[str, ...]
    """Parameter names; the nonlinear one last."""
    profile: Profile
    """How the law depends on its nonlinear parameter."""
    to_params: Callable[[np.ndarray, np.ndarray, float], np.ndarray]
    """(u (B,), β (B, k), x scale) → parameters (B, P)."""
    curve: Curve
    """The law as a function of x and parameters."""
    transform: Callable[[np.ndarray], np.ndarray] = np.asarray
    """Applied to mean curves before fitting (log for coverage); non-finite results are left out."""
    scale_x: bool = False
    """Divide x by its geometric mean while fitting (power laws over FLOPs need it)."""


def fit_profile_law(
    law: ProfileLaw, obs: Observations, *, n_boot: int, level: float, seed: int | np.random.Generator | None
) -> Fit:
    """Fit `law` to the mean curve of `obs` and bootstrap it over units (problems, or points)."""
    check_options(n_boot=n_boot, level=level)
    rng = rng_from(seed)
    batches = (
        (obs.x, obs.resampled(draws), None)
        for draws in (bootstrap_draws(obs.n_units, n_boot, rng) if n_boot else ())
    )
    return fit_profile_curves(
        law,
        x=obs.x,
        y=obs.mean(),
        batches=batches,
        level=level,
        n_obs=obs.n_obs,
        n_units=obs.n_units,
        resampled="problems" if obs.by_problem else "points",
    )


Batch = tuple[np.ndarray, np.ndarray, np.ndarray | None]
"""(x (X,) or (b, X), curves (b, X), weights (b, X) or None): a batch of resampled curves."""


def fit_profile_curves(
    law: ProfileLaw,
    *,
    x: np.ndarray,
    y: np.ndarray,
    batches: Iterable[Batch],
    level: float,
    n_obs: int,
    n_units: int,
    resampled: str,
    weights: np.ndarray | None = None,
) -> Fit:
    """Fit `law` to the curve y(x) (weights: 0 leaves a point out) and to each resampled curve."""
    ys, w = _prepared(law, y[None, :], None if weights is None else weights[None, :])
    keep = w[0] > 0  # finite after the law's transform, and not weighted out
    x0 = float(np.exp(np.mean(np.log(x[keep])))) if law.scale_x and np.any(keep) else 1.0
    first = solve(law.profile, x / x0, ys, w)
    if not np.isfinite(first.u[0]):
        raise FitInputError(f"cannot fit the {law.name} law: too few usable points ({int(np.sum(w > 0))})")
    u0 = polish(law.profile, x / x0, ys[0], w[0], float(first.u[0]))
    beta, _ = coefficients(law.profile, x / x0, ys, w, np.array([u0]))
    estimate = law.to_params(np.array([u0]), beta, x0)[0]
    warnings: list[str] = []
    if first.at_bound[0]:
        warnings.append(f"the {law.names[-1]} estimate sits at the edge of its search range")
    boots: list[np.ndarray] = []
    for xb, curves, wb in batches:
        yb, wb2 = _prepared(law, curves, wb)
        sol = solve(law.profile, xb / x0, yb, wb2)
        boots.append(law.to_params(sol.u, sol.beta, x0))
    boot = np.vstack(boots) if boots else np.empty((0, len(law.names)))
    pred = law.curve(x, estimate[None, :])[0]
    r2, rmse = goodness(np.where(keep, y, np.nan), pred)
    return Fit(
        law=law.name,
        formula=law.formula,
        names=law.names,
        estimate=estimate,
        boot=boot,
        level=level,
        r2=r2,
        rmse=rmse,
        n_points=int(np.count_nonzero(keep)),
        n_obs=n_obs,
        n_units=n_units,
        resampled=resampled,
        curve=law.curve,
        warnings=tuple(warnings),
        observed=(x[keep], y[keep]),
    )


def percentile_bands(values: np.ndarray, *, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Columnwise percentile interval of the finite values (NaN where fewer than two): one band a column (one
    interval of one set of values: `ttscale.stats.bootstrap.percentile_interval`)."""
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    tail = (1.0 - level) / 2.0 * 100.0
    lows, highs = np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    for j in range(values.shape[1]):
        column = values[:, j][np.isfinite(values[:, j])]
        if column.size >= 2:
            lows[j], highs[j] = np.percentile(column, [tail, 100.0 - tail])
    return lows, highs


def derived(estimate: float, *, draws: np.ndarray, level: float) -> tuple[float, float, float]:
    """(estimate, low, high) of a quantity computed from the parameters of each resample."""
    low, high = percentile_bands(draws, level=level)
    return float(estimate), float(low[0]), float(high[0])


def goodness(observed: np.ndarray, predicted: np.ndarray) -> tuple[float, float]:
    """(R², RMSE) of a prediction of the observed curve (finite points only)."""
    keep = np.isfinite(observed) & np.isfinite(predicted)
    if not np.any(keep):
        return math.nan, math.nan
    residual = observed[keep] - predicted[keep]
    total = float(np.sum((observed[keep] - observed[keep].mean()) ** 2))
    rss = float(np.sum(residual**2))
    r2 = 1.0 - rss / total if total > 0 else (1.0 if rss == 0 else math.nan)
    return r2, math.sqrt(rss / residual.size)


def _prepared(
    law: ProfileLaw, curves: np.ndarray, weights: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        y = law.transform(curves)
    w = np.isfinite(y).astype(float)
    if weights is not None:
        w = w * weights
    return np.where(w > 0, y, 0.0), w


def _num(value: float) -> float | None:
    """JSON has no NaN: write null."""
    return float(value) if math.isfinite(value) else None
