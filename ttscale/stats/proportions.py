"""Paired binary outcomes: the difference of two paired proportions with Tango's score interval.

`ttscale.stats.paired` uses it for accuracy differences (each pair right or wrong on each side), where a bootstrap
over few discordant pairs is too narrow and over none collapses to the point 0; the findings benchmark uses it
for its equal-accuracy verdicts.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


def wilson_interval(successes: int, total: int, *, z: float = 1.959963984540054) -> tuple[float, float]:
    """95% Wilson score interval for a binomial proportion (well-behaved at 0 and 1, small n)."""
    if total <= 0:
        return (0.0, 1.0)
    p = successes / total
    denom = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denom
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True, kw_only=True)
class PairedProportions:
    """The difference p_A − p_B of paired binary outcomes with its score interval (proportions, not points)."""

    estimate: float
    """(only A right − only B right) / pairs."""
    low: float
    high: float
    only_a: int
    """Discordant pairs where A is right and B wrong (Tango's b)."""
    only_b: int
    """Discordant pairs where B is right and A wrong (Tango's c)."""
    pairs: int
    problems: int
    design_effect: float
    """What the counts were divided by before the interval: 1 with one pair per problem."""


def paired_proportions(
    pairs_by_problem: Sequence[Sequence[tuple[float, float]]], *, confidence: float = 0.95
) -> PairedProportions:
    """p_A − p_B from pairs of binary outcomes (x_A, x_B) ∈ {0, 1}², grouped by problem (a problem's repeats).

    The interval is `tango_interval` on b / D, c / D and K / D (b, c the discordant pairs, K the pairs), where
    D is the design effect of the repeats (Rao and Scott 1992, J. Am. Stat. Assoc. 87:366, who divide cluster
    counts by it before a method for independent data): the cluster-robust variance of the mean difference
    over the variance it would have if the K pairs were independent, estimated from the per-problem sums of
    x_A − x_B, and kept in [1, Σ m_p² / K] (m_p the pairs of problem p; the upper end is the design effect of
    repeats that are copies of each other). With one pair per problem D = 1. When the differences do not vary
    (no discordant pair, or every pair discordant the same way) D cannot be estimated and is taken at its
    upper end: nothing then says the repeats are not copies.
    """
    sizes = [len(pairs) for pairs in pairs_by_problem]
    if not sizes or min(sizes) < 1:
        raise ValueError("paired_proportions needs at least one pair for every problem")
    flat = [pair for pairs in pairs_by_problem for pair in pairs]
    if any(x not in (0.0, 1.0) or y not in (0.0, 1.0) for x, y in flat):
        raise ValueError("paired_proportions needs binary outcomes (0 or 1) on both sides")
    only_a = sum(1 for x, y in flat if x > y)
    only_b = sum(1 for x, y in flat if y > x)
    k, problems = len(flat), len(sizes)
    design = 1.0
    if max(sizes) > 1:
        most = sum(m * m for m in sizes) / k
        mean = (only_a - only_b) / k
        within = sum((x - y - mean) ** 2 for x, y in flat)
        if within == 0 or problems < 2:
            design = most
        else:
            sums = [sum(x - y for x, y in pairs) for pairs in pairs_by_problem]
            clustered = problems / (problems - 1) * sum((s - mean * m) ** 2 for s, m in zip(sums, sizes, strict=True))
            independent = within * k / (k - 1)  # both scaled by 1 / K²
            design = min(max(clustered / independent, 1.0), most)
    low, high = tango_interval(only_a / design, only_b / design, k / design, confidence=confidence)
    return PairedProportions(estimate=(only_a - only_b) / k, low=low, high=high, only_a=only_a, only_b=only_b,
                             pairs=k, problems=problems, design_effect=design)


def tango_interval(only_a: float, only_b: float, pairs: float, *, confidence: float = 0.95) -> tuple[float, float]:
    """Tango's score interval for p_A − p_B from `pairs` paired binary outcomes, `only_a` of them right on A only
    and `only_b` right on B only (the pairs right or wrong on both sides enter only through `pairs`).

    Tango (1998), "Equivalence test and confidence interval for the difference in proportions for the
    paired-sample design", Statistics in Medicine 17:891-908, eqs. (24)-(26): the limits are the δ where the
    score statistic T(δ) = (b − c − nδ) / √(n (2q + δ(1 − δ))) equals ∓z, q the maximum-likelihood estimate of
    P(only B right) under p_A − p_B = δ (the root of 2n q² + B q + C = 0, B = −(b + c) + (2n − b + c) δ,
    C = −c δ (1 − δ)). It stays inside [−1, 1] and has width with no discordant pair (b = c = 0 gives
    ±z² / (n + z²)), where the Wald and bootstrap intervals collapse to 0. Counts may be fractional
    (divided by a design effect, see `paired_proportions`). Checked against the paper's worked example in
    tests/test_verdicts.py.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    if pairs <= 0 or only_a < 0 or only_b < 0 or only_a + only_b > pairs * (1 + 1e-12):
        raise ValueError(f"not a paired table: only_a={only_a}, only_b={only_b}, pairs={pairs}")
    from scipy.optimize import brentq  # scipy is imported only where an interval is computed

    z = statistics.NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    b, c, n = float(only_a), float(only_b), float(pairs)
    centre = (b - c) / n

    def score(delta: float) -> float:
        if delta == centre:
            return 0.0  # the numerator's zero (0/0 when b = c = 0, whose limit is 0 from both sides)
        linear = -(b + c) + (2 * n - b + c) * delta
        q = (math.sqrt(max(linear * linear + 8 * n * c * delta * (1 - delta), 0.0)) - linear) / (4 * n)
        variance = n * (2 * q + delta * (1 - delta))
        numerator = b - c - n * delta
        return numerator / math.sqrt(variance) if variance > 0 else math.copysign(math.inf, numerator)

    edge = 1e-12  # T diverges at ±1 whenever the estimate is inside: the roots are bracketed just inside
    low = -1.0 if centre <= -1 + edge else float(brentq(lambda d: score(d) - z, -1 + edge, centre, xtol=1e-12))
    high = 1.0 if centre >= 1 - edge else float(brentq(lambda d: score(d) + z, centre, 1 - edge, xtol=1e-12))
    return low, high


__all__ = ["PairedProportions", "paired_proportions", "tango_interval"]
