"""Metrics over graded samples: accuracy with confidence intervals, pass@k, coverage, majority@k.

The sample-pool metrics follow "generate once, evaluate every k ≤ n": from n samples of a
problem, pass@k and majority@k are the *expected* values over all size-k subsets of the pool
(drawn without replacement), not the value of one arbitrary subset. That is what lets a single
run of n samples trace a whole scaling curve without extra generation, with lower variance
than re-sampling.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from ttscale.stats.bootstrap import percentile_interval, resample_indices
from ttscale.stats.proportions import wilson_interval  # noqa: F401  (its home is stats; named here as before)
from ttscale.stats.subsample import SubsampleOptions, majority_expectation

# -- pass@k and coverage -----------------------------------------------------------------------


def pass_at_k(*, n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct (Chen et al. 2021, arXiv:2107.03374).

    pass@k = 1 - C(n-c, k) / C(n, k): the probability that a random size-k subset of the samples
    holds at least one correct one. Computed in exact integer arithmetic and rounded once (Python's
    int division is correctly rounded), so it is exact to the last bit for any n (10,000 takes
    about a millisecond) and never cancels catastrophically near 0 or 1.
    """
    _check_counts(n=n, c=c, k=k)
    if n - c < k:
        return 1.0
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def mean_pass_at_k(results: Sequence[Sequence[bool]], *, k: int) -> float:
    """pass@k averaged over problems; `results[i]` is the correctness of problem i's samples."""
    if not results:
        raise ValueError("results is empty")
    return sum(pass_at_k(n=len(r), c=sum(map(bool, r)), k=k) for r in results) / len(results)


def coverage(results: Sequence[Sequence[bool]], *, k: int | None = None) -> float:
    """Fraction of problems solved by at least one sample (of any k, in expectation, when given).

    Coverage is pass@n of the whole pool; `coverage(results, k=k)` is the expected coverage with
    k samples per problem, i.e. `mean_pass_at_k`.
    """
    if not results:
        raise ValueError("results is empty")
    if k is not None:
        return mean_pass_at_k(results, k=k)
    return sum(any(r) for r in results) / len(results)


def _check_counts(*, n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an integer, got {value!r}")
    if n < 1:
        raise ValueError(f"n must be ≥ 1, got {n}")
    if not 0 <= c <= n:
        raise ValueError(f"c must be in [0, n={n}], got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, n={n}], got {k}")


# -- majority@k ----------------------------------------------------------------------------------


def majority_at_k(
    *,
    answers: Sequence[Hashable | None],
    correct: Sequence[bool],
    k: int,
    options: SubsampleOptions | None = None,
) -> float:
    """Expected accuracy of a majority vote over k samples drawn from a pool (self-consistency).

    `answers[i]` is sample i's answer as a vote key (equal keys are the same vote; None abstains),
    `correct[i]` whether it is right (equal keys must agree). The vote is correct when a correct
    answer has strictly the most votes; a tie counts as the fraction of tied answers that are
    correct (a uniform random tie-break). Expectation over all C(n, k) subsets: exact when
    feasible (a dynamic programme over answer classes), Monte Carlo with `options.seed` otherwise.
    """
    return majority_expectation(answers=answers, correct=correct, weights=None, k=k, options=options)


def weighted_majority_at_k(
    *,
    answers: Sequence[Hashable | None],
    correct: Sequence[bool],
    weights: Sequence[float],
    k: int,
    options: SubsampleOptions | None = None,
) -> float:
    """`majority_at_k` where each sample votes with its weight (a verifier score, a probability).

    Exact over all subsets when C(n, k) ≤ `options.max_exact_subsets`, else Monte Carlo.
    """
    return majority_expectation(answers=answers, correct=correct, weights=weights, k=k, options=options)


# -- accuracy with bootstrap confidence intervals ------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Estimate:
    """A mean and its confidence interval."""

    value: float
    low: float
    high: float
    confidence: float
    n: int
    """Number of items averaged (problems)."""


def bootstrap_mean(
    values: Sequence[float], *, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> Estimate:
    """Mean of per-problem values with a percentile-bootstrap confidence interval (seeded).

    Works for any per-problem score: 0/1 correctness, pass@k, majority@k, a reward.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if not isinstance(resamples, int) or resamples < 100:
        raise ValueError(f"resamples must be an integer ≥ 100, got {resamples!r}")
    data = np.asarray(values, dtype=float)
    if data.ndim != 1 or data.size == 0:
        raise ValueError("values must be a non-empty sequence of numbers")
    if not np.isfinite(data).all():
        raise ValueError("values must be finite")
    rng = np.random.default_rng(seed)
    n = data.size
    # Resample in chunks so memory stays near a few MB even for 100k problems.
    means = np.concatenate(
        [data[picks].mean(axis=1) for picks in resample_indices(n, resamples, rng, chunk_entries=2_000_000)]
    )
    low, high = percentile_interval(means, confidence=confidence)
    return Estimate(value=float(data.mean()), low=low, high=high, confidence=confidence, n=n)


def accuracy(correct: Sequence[bool], *, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0) -> Estimate:
    """Fraction correct with a percentile-bootstrap confidence interval (see `wilson_interval` too)."""
    return bootstrap_mean([float(bool(c)) for c in correct], confidence=confidence, resamples=resamples, seed=seed)
