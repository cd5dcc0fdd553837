"""ttscale.stats.bootstrap: behaviour that the mutation run (tools/mutation) found unchecked. Hand-computed values."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from ttscale.stats.bootstrap import percentile_interval, resample_counts, resample_indices


def test_percentile_interval_of_finite_values() -> None:
    values = [float(v) for v in range(101)]  # 0 .. 100: the q-quantile is 100 q
    assert percentile_interval(values, confidence=0.9) == (pytest.approx(5.0), pytest.approx(95.0))
    assert percentile_interval(values, confidence=0.5) == (pytest.approx(25.0), pytest.approx(75.0))
    assert percentile_interval([3.0], confidence=0.9) == (3.0, 3.0)
    assert percentile_interval([Fraction(1, 2), Fraction(3, 2)], confidence=0.5) == (0.75, 1.25)


def test_percentile_interval_with_infinities_takes_order_statistics_outward() -> None:
    values = [1.0, 2.0, 3.0, 4.0, math.inf]
    # positions 0.25 · 4 = 1 and 0.75 · 4 = 3: exactly order statistics 2 and 4
    assert percentile_interval(values, confidence=0.5) == (2.0, 4.0)
    # positions 0.8 and 3.2: outward to order statistics 0 (1.0) and 4 (inf), no NaN
    assert percentile_interval(values, confidence=0.6) == (1.0, math.inf)
    assert percentile_interval([-math.inf, 1.0, 2.0, 3.0, 4.0], confidence=0.6) == (-math.inf, 4.0)


@pytest.mark.parametrize(
    ("values", "confidence", "words"),
    [
        ([1.0], 0.0, "confidence must be in (0, 1), got 0.0"),
        ([1.0], 1.0, "confidence must be in (0, 1), got 1.0"),
        ([1.0], 1.5, "confidence must be in (0, 1), got 1.5"),
        ([], 0.9, "percentile_interval needs a non-empty set of values without NaN"),
        ([1.0, math.nan], 0.9, "percentile_interval needs a non-empty set of values without NaN"),
    ],
)
def test_percentile_interval_refuses(values: list[float], confidence: float, words: str) -> None:
    with pytest.raises(ValueError) as info:
        percentile_interval(values, confidence=confidence)
    assert str(info.value) == words


def test_resample_indices_chunks() -> None:
    chunks = list(resample_indices(3, 7, np.random.default_rng(0), chunk_entries=10))
    assert [c.shape for c in chunks] == [(3, 3), (3, 3), (1, 3)]  # 10 // 3 = 3 rows at a time
    assert all(c.dtype == np.int64 and c.min() >= 0 and c.max() < 3 for c in chunks)
    chunks = list(resample_indices(3, 3, np.random.default_rng(0), chunk_entries=2))
    assert [c.shape for c in chunks] == [(1, 3)] * 3  # never fewer than one row
    assert [c.shape for c in resample_indices(5, 4, np.random.default_rng(0))] == [(4, 5)]


def test_resample_indices_of_one_unit() -> None:
    (only,) = resample_indices(1, 4, np.random.default_rng(0))
    assert only.tolist() == [[0], [0], [0], [0]]
    with pytest.raises(ValueError) as info:
        list(resample_indices(0, 4, np.random.default_rng(0)))
    assert str(info.value) == "n_units must be ≥ 1, got 0"


def test_resample_counts_are_the_indices_counted() -> None:
    counts = list(resample_counts(4, 5, np.random.default_rng(7), chunk_entries=8))
    assert [c.shape for c in counts] == [(2, 4), (2, 4), (1, 4)]
    picks = np.concatenate(list(resample_indices(4, 5, np.random.default_rng(7), chunk_entries=8)))
    stacked = np.concatenate(counts)
    assert stacked.dtype == float
    assert (stacked.sum(axis=1) == 4).all()
    for row, drawn in zip(stacked, picks, strict=True):
        assert row.tolist() == np.bincount(drawn, minlength=4).tolist()
