"""The problem bootstrap: one resampling routine for the whole package.

A bootstrap over problems draws the n units (problems; or clusters, a problem with all its repeats)
with replacement, B times, from a seeded generator. `resample_indices` yields the draws as index
matrices (rows × n), in chunks whose size bounds memory; `resample_counts` yields the same draws as
count matrices C (rows × n, how often each unit was drawn), with which any statistic built from
per-unit sums is resampled in one product: the means of B resamples are (C @ sums) / (C @ counts).

Users: `evals.metrics.bootstrap_mean` (a mean), the scaling fits (`ttscale.scaling._resample`, counts
against sparse per-problem sums), the P4 ratio (`ttscale.routing.savings`, one index row per refit) and paired
comparisons (`ttscale.stats.paired`, a cluster bootstrap of differences and ratios of means).

scipy.stats.bootstrap resamples the same way, but needs the whole (B × n) draw of a vectorised
statistic at once or calls a Python statistic per resample; the scaling fits need count matrices
against sparse sums and the P4 ratio censored (±∞) resamples, so the package keeps this one routine.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

#: Draws are made in chunks of about this many entries (8 bytes each): 64 MB at most at a time.
CHUNK_ENTRIES = 8_000_000


def resample_indices(
    n_units: int, n_boot: int, rng: np.random.Generator, *, chunk_entries: int = CHUNK_ENTRIES
) -> Iterator[np.ndarray]:
    """Yield (rows, n_units) int64 matrices, `n_boot` rows in all: each row draws n_units units with replacement."""
    if n_units < 1:
        raise ValueError(f"n_units must be ≥ 1, got {n_units}")
    chunk = max(1, min(n_boot, chunk_entries // n_units))
    done = 0
    while done < n_boot:
        rows = min(chunk, n_boot - done)
        yield rng.integers(0, n_units, size=(rows, n_units), dtype=np.int64)
        done += rows


def resample_counts(
    n_units: int, n_boot: int, rng: np.random.Generator, *, chunk_entries: int = CHUNK_ENTRIES
) -> Iterator[np.ndarray]:
    """The draws of `resample_indices` as (rows, n_units) float matrices of counts (each row sums to n_units)."""
    for picks in resample_indices(n_units, n_boot, rng, chunk_entries=chunk_entries):
        rows = picks.shape[0]
        flat = picks + (np.arange(rows, dtype=np.int64) * n_units)[:, None]
        yield np.bincount(flat.ravel(), minlength=rows * n_units).reshape(rows, n_units).astype(float)


def percentile_interval(values: Sequence[float] | np.ndarray, *, confidence: float) -> tuple[float, float]:
    """The percentile interval of bootstrap values at `confidence` (0.95: the 2.5th and 97.5th percentiles).

    Linear interpolation between order statistics when every value is finite; with ±∞ among them
    (a ratio whose denominator resampled to zero) the nearest order statistics outward, because
    interpolating next to an infinity gives NaN.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    data = np.asarray(values, dtype=float)
    if data.size == 0 or np.isnan(data).any():
        raise ValueError("percentile_interval needs a non-empty set of values without NaN")
    alpha = (1 - confidence) / 2
    if np.isfinite(data).all():
        low, high = np.quantile(data, [alpha, 1 - alpha])
    else:
        low, high = np.quantile(data, alpha, method="lower"), np.quantile(data, 1 - alpha, method="higher")
    return float(low), float(high)


__all__ = ["CHUNK_ENTRIES", "percentile_interval", "resample_counts", "resample_indices"]
