"""Least squares for laws with one nonlinear parameter θ, vectorised over many curves at once.

Every law here is linear in its other parameters once θ is fixed (variable projection):
    scale:   y ≈ β·φ(x; θ)             (coverage: log c = a·k^b;  TTSPM: F·(1 − (1−p)^N))
    affine:  y ≈ β₀ + β₁·φ(x; θ)       (saturating power law: A − B·C^(−α))
A scale law may bound β (`Profile.beta_bounds`; TTSPM's F_max lies in [0, 1]): the best β is then clipped.
For fixed θ the best β and the residual sum of squares RSS(θ) are closed-form weighted sums, so a
whole batch of bootstrap curves is profiled on a grid of θ with a few matrix products; each curve's
minimum is then narrowed by a vectorised golden-section search. The full-data fit is polished
with scipy's bounded scalar minimiser on the same profile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import minimize_scalar

_GRID = 192
_GOLDEN_STEPS = 48
_INV_PHI = (np.sqrt(5.0) - 1.0) / 2.0


@dataclass(frozen=True)
class Profile:
    """How a law depends on its nonlinear parameter, searched over u in `u_range`."""

    linear: Literal["scale", "affine"]
    """The linear part: β·φ, or β₀ + β₁·φ."""
    basis: Callable[[np.ndarray, np.ndarray], np.ndarray]
    """φ(x, u), broadcasting x (..., X) against u (..., 1)."""
    u_range: tuple[float, float]
    """Where the search looks (u is θ on a scale where the profile is well behaved: log α, logit p)."""
    beta_bounds: tuple[float, float] | None = None
    """Scale laws only: bounds on β (TTSPM's F_max is a probability). For fixed u, RSS is a convex quadratic
    in β, so the bounded best β is the unbounded one clipped into the bounds, and the profile stays exact."""


@dataclass(frozen=True)
class Solution:
    """Best u, linear coefficients and RSS of each curve (NaN where a curve has too few points)."""

    u: np.ndarray
    """(B,)"""
    beta: np.ndarray
    """(B, 1) for scale, (B, 2) for affine."""
    rss: np.ndarray
    """(B,)"""
    at_bound: np.ndarray
    """(B,) True where the minimum sits at the edge of `u_range` (the estimate is a bound)."""


def solve(profile: Profile, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> Solution:
    """Fit every row of y (B, X) with weights w (B, X) (0 = missing); x is (X,) or (B, X)."""
    y = np.where(w > 0, y, 0.0)
    lo, hi = profile.u_range
    grid = np.linspace(lo, hi, _GRID)
    rss_grid = _rss_on_grid(profile, x, y, w, grid)  # (B, G)
    rss_grid = np.where(np.isfinite(rss_grid), rss_grid, np.inf)
    best = np.argmin(rss_grid, axis=1)
    a = grid[np.maximum(best - 1, 0)]
    b = grid[np.minimum(best + 1, _GRID - 1)]
    u = _golden(profile, x, y, w, a, b)
    beta, rss = _at(profile, x, y, w, u)
    ok = np.isfinite(rss) & (np.count_nonzero(w > 0, axis=1) > (1 if profile.linear == "scale" else 2))
    ok &= np.isfinite(rss_grid[np.arange(best.size), best])
    u = np.where(ok, u, np.nan)
    beta = np.where(ok[:, None], beta, np.nan)
    rss = np.where(ok, rss, np.nan)
    span = (hi - lo) / (_GRID - 1)
    at_bound = ok & ((u <= lo + 1e-3 * span) | (u >= hi - 1e-3 * span))
    return Solution(u=u, beta=beta, rss=rss, at_bound=at_bound)


def polish(profile: Profile, x: np.ndarray, y: np.ndarray, w: np.ndarray, start: float) -> float:
    """Refine one curve's u with scipy (bounded Brent) within a grid step of `start`."""
    lo, hi = profile.u_range
    step = (hi - lo) / (_GRID - 1)
    bounds = (max(lo, start - step), min(hi, start + step))
    y2, w2 = np.where(w > 0, y, 0.0)[None, :], w[None, :]

    def objective(u: float) -> float:
        rss = _at(profile, x, y2, w2, np.array([u]))[1][0]
        return float(rss) if np.isfinite(rss) else np.inf

    found = minimize_scalar(objective, bounds=bounds, method="bounded", options={"xatol": 1e-10})
    return float(found.x) if objective(float(found.x)) <= objective(start) else start


def coefficients(
    profile: Profile, x: np.ndarray, y: np.ndarray, w: np.ndarray, u: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """β (B, k) and RSS (B,) of each row at its own u (B,)."""
    return _at(profile, x, np.where(w > 0, y, 0.0), w, u)


# -- internals --------------------------------------------------------------------------------
def _stats(
    profile: Profile, phi: np.ndarray, y: np.ndarray, w: np.ndarray, shared: bool
) -> tuple[np.ndarray, np.ndarray]:
    """β and RSS from weighted sums; phi is (G, X) when `shared` (all rows, each grid u), else (B, ..., X)."""
    wy = w * y
    y2 = np.sum(wy * y, axis=1)
    if shared:  # rows × grid by matrix products
        s1, s2, t1 = w @ phi.T, w @ (phi * phi).T, wy @ phi.T
        s0, t0, y2 = np.sum(w, axis=1)[:, None], np.sum(wy, axis=1)[:, None], y2[:, None]
    else:
        extra = phi.ndim - 2  # grid axes between the row axis and x
        wx = w.reshape(w.shape[0], *([1] * extra), w.shape[1])
        wyx = wy.reshape(wx.shape)
        s1, s2, t1 = np.sum(wx * phi, -1), np.sum(wx * phi * phi, -1), np.sum(wyx * phi, -1)
        s0 = np.sum(w, axis=1).reshape(-1, *([1] * extra))
        t0 = np.sum(wy, axis=1).reshape(s0.shape)
        y2 = y2.reshape(s0.shape)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if profile.linear == "scale":
            beta1 = t1 / s2
            if profile.beta_bounds is None:
                rss = y2 - beta1 * t1
            else:
                beta1 = np.clip(beta1, *profile.beta_bounds)
                rss = y2 - 2.0 * beta1 * t1 + beta1 * beta1 * s2
            beta = beta1[..., None]
        else:
            det = s0 * s2 - s1 * s1
            beta1 = (s0 * t1 - s1 * t0) / det
            beta0 = (t0 - beta1 * s1) / s0
            rss = y2 - beta0 * t0 - beta1 * t1
            # A flat basis (det ≈ 0) cannot separate β₀ from β₁: no fit there.
            rss = np.where(det > 1e-12 * np.maximum(s0 * s2, 1e-300), rss, np.nan)
            beta = np.stack(np.broadcast_arrays(beta0, beta1), axis=-1)
    return beta, np.maximum(rss, 0.0)


def _rss_on_grid(
    profile: Profile, x: np.ndarray, y: np.ndarray, w: np.ndarray, grid: np.ndarray
) -> np.ndarray:
    if x.ndim == 1:
        with np.errstate(all="ignore"):
            phi = profile.basis(x[None, :], grid[:, None])  # (G, X)
        phi = np.where(np.isfinite(phi), phi, np.nan)
        return _stats(profile, phi, y, w, shared=True)[1]
    out = np.empty((y.shape[0], grid.size))
    step = max(1, 4_000_000 // max(1, grid.size * x.shape[1]))  # bound the (rows, G, X) temporaries
    for start in range(0, y.shape[0], step):
        rows = slice(start, start + step)
        with np.errstate(all="ignore"):
            phi = profile.basis(x[rows][:, None, :], grid[None, :, None])  # (b, G, X)
        out[rows] = _stats(profile, phi, y[rows], w[rows], shared=False)[1]
    return out


def _at(
    profile: Profile, x: np.ndarray, y: np.ndarray, w: np.ndarray, u: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    xs = x if x.ndim == 2 else np.broadcast_to(x, y.shape)
    with np.errstate(all="ignore"):
        phi = profile.basis(xs, np.where(np.isfinite(u), u, 0.0)[:, None])  # (B, X)
    beta, rss = _stats(profile, phi, y, w, shared=False)
    return beta, np.where(np.isfinite(u), rss, np.nan)


def _golden(
    profile: Profile, x: np.ndarray, y: np.ndarray, w: np.ndarray, a: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """Per-row golden-section search for the minimum of RSS(u) on [a, b]."""
    c = b - _INV_PHI * (b - a)
    d = a + _INV_PHI * (b - a)
    fc, fd = _at(profile, x, y, w, c)[1], _at(profile, x, y, w, d)[1]
    for _ in range(_GOLDEN_STEPS):
        left = ~(fc > fd)  # minimum in [a, d] (NaN compares False: keep the left side)
        b = np.where(left, d, b)
        a = np.where(left, a, c)
        d_new = np.where(left, c, a + _INV_PHI * (b - a))
        c_new = np.where(left, b - _INV_PHI * (b - a), d)
        f_moved = np.where(left, fc, fd)
        f_new = _at(profile, x, y, w, np.where(left, c_new, d_new))[1]
        fc, fd = np.where(left, f_new, f_moved), np.where(left, f_moved, f_new)
        c, d = c_new, d_new
    return (a + b) / 2.0
