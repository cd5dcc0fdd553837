"""A comparison that may stop when its claim is decided: group-sequential boundaries by alpha spending.

Problems are added in batches up to a cap N; after each batch (a look) the claim is read off the verdict's own
statistic, Tango's score statistic T with the repeats' design effect (`ttscale.stats.power.decided`), against a
critical value c_k in place of z = 1.96. Looking after every batch at 1.96 would reject a true null far more often
than α (each look is another chance); the c_k keep the chance of any false verdict over all looks at α.

The c_k are Lan and DeMets' (1983, "Discrete sequential boundaries for clinical trials", Biometrika 70:659-663):
a spending function α*(τ) says how much of the error may be spent by information fraction τ = n_k / N, and each
c_k spends exactly α*(τ_k) − α*(τ_{k−1}) given that no earlier look stopped. Under the null the standardised
statistics behave as Z_k = B(τ_k)/√τ_k of a Brownian motion B (the score statistic's canonical joint distribution,
Jennison and Turnbull 2000, "Group Sequential Methods with Applications to Clinical Trials", ch. 3), so each c_k is
found by integrating the density of B over the region not yet stopped (Armitage, McPherson and Rowe 1969; Jennison
and Turnbull ch. 19) on a grid, one normal convolution per look. The default spending is O'Brien-Fleming-like,
α*(τ) = 2 − 2Φ(z_{1−α'/2}/√τ) (α' the side's share): early looks stop only on overwhelming evidence, so the last
look's c_K is close to the fixed-size 1.96 and the cap costs little power, while clear differences stop early.

Two-sided, as the verdicts are: each claim has a "reproduced" and a "not reproduced" side, and each side spends
α/2 (upper boundaries computed one side at a time, which ignores paths crossing both: conservative, and by a
negligible amount for these boundaries).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ttscale.stats.power import ALPHA, Accuracy, Claim, problem_types, tables, tango_score

Spending = Literal["obrien_fleming", "pocock"]
SPENDINGS: tuple[str, ...] = ("obrien_fleming", "pocock")
_NORMAL = statistics.NormalDist()


def spent(tau: float, alpha: float, kind: Spending = "obrien_fleming") -> float:
    """α*(τ): the one-sided error that may be spent by information fraction τ ∈ (0, 1]."""
    if kind == "obrien_fleming":
        return 2 - 2 * _NORMAL.cdf(_NORMAL.inv_cdf(1 - alpha / 2) / math.sqrt(tau))
    return alpha * math.log(1 + (math.e - 1) * tau)  # Lan-DeMets' Pocock-like spending


def boundaries(fractions: Sequence[float], *, alpha: float = ALPHA / 2, kind: Spending = "obrien_fleming",
               step: float = 0.005, spend_rest: bool = False) -> np.ndarray:
    """One-sided critical values c_k for looks at information fractions 0 < τ_1 < ... < τ_K = 1 that spend
    α*(τ) (`spent`) in all: P(Z_k ≥ c_k for some k) = α under the null. `spend_rest`: the last look spends all the
    error the others left, α − α*(τ_{K−1}), whatever its τ_K (a final look that came before τ = 1: the task ran
    out), as Lan and DeMets' spending does at a final analysis with less information than planned."""
    taus = [float(t) for t in fractions]
    if not taus or any(b <= a for a, b in itertools.pairwise(taus)) or taus[0] <= 0 or taus[-1] > 1:
        raise ValueError(f"information fractions must increase in (0, 1], got {taus}")
    if kind not in SPENDINGS:
        raise ValueError(f"spending must be one of {', '.join(SPENDINGS)}, got {kind!r}")
    from scipy.optimize import brentq
    from scipy.stats import norm

    grid = np.arange(-12.0, 12.0 + step / 2, step)  # values of B(τ), whose variance is at most 1
    out, used = [], 0.0
    density = None
    previous = 0.0
    for position, tau in enumerate(taus):
        final = spend_rest and position == len(taus) - 1
        budget = (alpha if final else spent(tau, alpha, kind)) - used
        delta = tau - previous
        if density is None:
            c = float(_NORMAL.inv_cdf(1 - budget)) if budget > 0 else math.inf
            density = norm.pdf(grid, scale=math.sqrt(tau))
        else:
            alive = density * step  # the mass of B at τ_{k−1} on paths not yet stopped

            def crossing(c: float, alive: np.ndarray = alive, delta: float = delta, tau: float = tau,
                         budget: float = budget) -> float:
                return float(np.sum(alive * norm.sf((c * math.sqrt(tau) - grid) / math.sqrt(delta)))) - budget

            c = float(brentq(crossing, -10.0, 40.0)) if budget > 1e-15 else math.inf
            half = math.ceil(9 * math.sqrt(delta) / step)
            kernel = norm.pdf(np.arange(-half, half + 1) * step, scale=math.sqrt(delta)) * step
            density = np.convolve(density, kernel, mode="same")
        density = np.where(grid < c * math.sqrt(tau), density, 0.0)
        out.append(c)
        used, previous = spent(tau, alpha, kind), tau
    return np.array(out)


Outcome = Literal["reproduced", "not reproduced", "continue", "inconclusive"]


@dataclass(frozen=True, kw_only=True)
class SequentialPlan:
    """Looks after every `batch` problems up to `max_problems`, for one accuracy claim."""

    claim: Claim
    """An accuracy claim (better, equal, not_worse)."""
    max_problems: int
    """N: the cap; the last look is at N."""
    batch: int
    """Problems added between looks."""
    alpha: float = ALPHA
    """The chance of any false verdict, both sides together, over every look."""
    spending: Spending = "obrien_fleming"
    """How the error is spent over the looks."""

    def __post_init__(self) -> None:
        if self.claim.kind == "ratio":
            raise ValueError("a sequential plan tests an accuracy claim (better, equal, not_worse), got a ratio")
        for name in ("max_problems", "batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 2:
                raise ValueError(f"{name} must be a whole number ≥ 2, got {value!r}")
        if self.batch > self.max_problems:
            raise ValueError(f"batch must be ≤ max_problems ({self.max_problems}), got {self.batch}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.spending not in SPENDINGS:
            raise ValueError(f"spending must be one of {', '.join(SPENDINGS)}, got {self.spending!r}")

    @property
    def looks(self) -> list[int]:
        """The problems at each look: B, 2B, ..., and N."""
        sizes = list(range(self.batch, self.max_problems, self.batch))
        return [*sizes, self.max_problems]

    def critical_values(self) -> np.ndarray:
        return boundaries([n / self.max_problems for n in self.looks], alpha=self.alpha / 2, kind=self.spending)

    def critical_at_end(self, look: int, problems: int) -> float:
        """The boundary of look `look` (0-based) made the last by the task running out at `problems` (fewer than
        the cap): the earlier looks' boundaries as planned, and this one spending all the error they left."""
        taken = [n / self.max_problems for n in self.looks[:look] if n < problems]
        fractions = [*taken, problems / self.max_problems]
        return float(boundaries(fractions, alpha=self.alpha / 2, kind=self.spending, spend_rest=True)[-1])

    def decide(self, look: int, b: np.ndarray, c: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """The outcome at look `look` (0-based) of (b, c, pairs) already divided by the design effect: arrays of
        "reproduced", "not reproduced", and "continue" ("inconclusive" at the last look)."""
        z = float(self.critical_values()[look])
        return outcome(self.claim, b, c, pairs, z, last=look == len(self.looks) - 1)


def outcome(claim: Claim, b: np.ndarray, c: np.ndarray, pairs: np.ndarray, z: float, *, last: bool) -> np.ndarray:
    """The verdict rules with critical value `z` (benchmarks/verdicts.py's above, equivalent, not_worse)."""
    if claim.kind == "better":
        t = tango_score(b, c, pairs, claim.value)
        yes, no = t > z, t < -z
    else:
        low = tango_score(b, c, pairs, -claim.value)
        if claim.kind == "not_worse":
            yes, no = low >= z, low < -z
        else:
            high = tango_score(b, c, pairs, claim.value)
            yes, no = (low >= z) & (high <= -z), (high > z) | (low < -z)
    rest = "inconclusive" if last else "continue"
    return np.where(yes, "reproduced", np.where(no, "not reproduced", rest))


def simulate(plan: SequentialPlan, acc: Accuracy, *, sims: int = 2000, seed: int = 0,
             critical: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`sims` sequential comparisons under `acc`: each one's outcome and the problems it used. Each batch adds its
    problems to the counts (by problem type, as `ttscale.stats.power.simulate_counts` draws them), and every
    look reads them with `plan`'s critical values (or `critical`: e.g. 1.96 at every look, to see what peeking
    costs)."""
    weights = problem_types(acc)[2]
    rng = np.random.default_rng(seed)
    z = plan.critical_values() if critical is None else np.asarray(critical, dtype=float)
    counts = np.zeros((sims, weights.size))
    result = np.full(sims, "continue", dtype=object)
    used = np.full(sims, plan.max_problems)
    before = 0
    for k, n in enumerate(plan.looks):
        counts += rng.multinomial(n - before, weights, size=sims)
        before = n
        b, c, pairs = tables(acc, counts)
        now = outcome(plan.claim, b, c, pairs, float(z[k]), last=k == len(plan.looks) - 1)
        fresh = (result == "continue") & (now != "continue")
        result[fresh], used[fresh] = now[fresh], n
    return result.astype(str), used


__all__ = ["SPENDINGS", "SequentialPlan", "boundaries", "outcome", "simulate", "spent"]
