"""Observations grouped by problem, and the problem bootstrap, vectorised.

A law is fitted to a curve y(x): the mean over problems of each problem's value at x. Resampling
problems with replacement gives a new curve; with the per-problem sums held in a sparse matrix
S (problems × distinct x), the curves of a whole batch of resamples are one product: C @ S, where
C (resamples × problems) counts how often each problem was drawn.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ttscale.stats.bootstrap import CHUNK_ENTRIES, resample_counts

#: Count matrices are built in chunks of about this many entries (memory: 8 bytes each).
_CHUNK_ENTRIES = CHUNK_ENTRIES


class FitInputError(ValueError):
    """Data a law cannot be fitted to; the message says what is wrong and what is expected."""


@dataclass(frozen=True)
class Observations:
    """Values y observed at x, grouped by unit (problem), pivoted on the distinct x."""

    x: np.ndarray
    """(X,) the distinct x values, increasing."""
    sums: sp.csr_matrix
    """(U, X) per unit, the sum of its y at each x."""
    counts: sp.csr_matrix
    """(U, X) per unit, how many values it has at each x."""
    n_obs: int
    """Number of (x, y) values."""
    by_problem: bool
    """True when units are problems; False when each value is its own unit (points resampled)."""

    @property
    def n_units(self) -> int:
        return int(self.sums.shape[0])

    def mean(self) -> np.ndarray:
        """(X,) the curve: mean of all values at each x."""
        total = np.asarray(self.sums.sum(axis=0)).ravel()
        count = np.asarray(self.counts.sum(axis=0)).ravel()
        return total / count

    def resampled(self, draws: np.ndarray) -> np.ndarray:
        """(B, X) curves of B resamples (`draws`, B × U, counts each unit); NaN where x lost all values."""
        total = np.asarray((self.sums.T @ draws.T).T)
        count = np.asarray((self.counts.T @ draws.T).T)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1e-300), np.nan)


def observations(*, x: Any, y: Any, unit: Any = None, name_x: str = "x", name_y: str = "y") -> Observations:
    """Group values for fitting.

    Long form: x, y (and unit) of equal length n. Wide form: x of length X and y of shape
    (problems, X), one row per problem. Without units, each value is resampled on its own.
    """
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if ys.ndim == 2:
        if xs.ndim != 1 or ys.shape[1] != xs.size:
            raise FitInputError(
                f"{name_y} given as a (problems × {name_x}) matrix needs one column per {name_x}: "
                f"got {ys.shape} for {xs.size} {name_x} values"
            )
        if unit is not None:
            raise FitInputError(f"give problem ids only with the long form (one {name_y} per row)")
        n_rows = ys.shape[0]
        unit_index = np.repeat(np.arange(n_rows), xs.size)
        xs, ys = np.tile(xs, n_rows), ys.ravel()
        keep = np.isfinite(ys)
        xs, ys, unit_index = xs[keep], ys[keep], unit_index[keep]
        by_problem = True
    else:
        if xs.shape != ys.shape or xs.ndim != 1:
            raise FitInputError(
                f"{name_x} and {name_y} must be 1-D of equal length, got {xs.shape} and {ys.shape}"
            )
        if unit is None:
            unit_index, by_problem = np.arange(xs.size), False
        else:
            units = np.asarray(unit)
            if units.shape != xs.shape:
                raise FitInputError(f"problem ids must have one entry per row: {units.shape} for {xs.shape}")
            # Number units by first appearance, so that resamples do not depend on how ids sort.
            _, first, inverse = np.unique(units, return_index=True, return_inverse=True)
            rank = np.empty(first.size, dtype=np.int64)
            rank[np.argsort(first)] = np.arange(first.size)
            unit_index = rank[inverse.ravel()]
            by_problem = True
    if xs.size == 0:
        raise FitInputError("no data to fit")
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
        raise FitInputError(f"{name_x} and {name_y} must be finite numbers")
    distinct, column = np.unique(xs, return_inverse=True)
    shape = (int(unit_index.max()) + 1, distinct.size)
    sums = sp.csr_matrix((ys, (unit_index, column.ravel())), shape=shape)
    counts = sp.csr_matrix((np.ones_like(ys), (unit_index, column.ravel())), shape=shape)
    sums.sum_duplicates()
    counts.sum_duplicates()
    return Observations(x=distinct, sums=sums, counts=counts, n_obs=int(xs.size), by_problem=by_problem)


def bootstrap_draws(n_units: int, n_boot: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Yield (chunk, n_units) matrices of counts: each row resamples the units with replacement."""
    return resample_counts(n_units, n_boot, rng, chunk_entries=_CHUNK_ENTRIES)


def rng_from(seed: int | np.random.Generator | None) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def check_options(*, n_boot: int, level: float) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 0:
        raise FitInputError(f"n_boot must be an integer ≥ 0, got {n_boot!r}")
    if not (isinstance(level, float | int) and 0 < level < 1):
        raise FitInputError(f"level must be in (0, 1), got {level!r}")
