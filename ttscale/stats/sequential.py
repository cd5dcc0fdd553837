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
look's c_K is close to the fixed-size 1.96 and the cap costs little power. Pocock-like spending, α log(1 + (e − 1)τ),
spends evenly; Hwang, Shih and DeCani's (1990, Statistics in Medicine 9:1439-1445) family
α (1 − e^{−γτ}) / (1 − e^{−γ}) runs between them (γ = −4 is near O'Brien-Fleming, γ = 1 near Pocock; γ = 0 spends
α τ). A `floor` makes the first look spend at least that much (Haybittle and Peto's idea of one early boundary any
overwhelming difference crosses): still a spending function, so the error over all looks stays α. Which design
ttscale recommends, and why, is ttscale.stats.designs's.

Two-sided, as the verdicts are: each claim has a "reproduced" and a "not reproduced" side, and each side spends
α/2 (upper boundaries computed one side at a time, which ignores paths crossing both: conservative, and by a
negligible amount for these boundaries).
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ttscale.stats.power import ALPHA, Accuracy, Claim, problem_types, tables, tango_score

#: A spending function's name: "obrien_fleming", "pocock", or "hsd:γ" (Hwang-Shih-DeCani with parameter γ).
Spending = str
SPENDINGS: tuple[str, ...] = ("obrien_fleming", "pocock", "hsd:GAMMA")
_NORMAL = statistics.NormalDist()


def check_spending(kind: str) -> str:
    """`kind` if it names a spending function (`SPENDINGS`; γ of hsd in [-40, 40]), else ValueError in one line."""
    if kind in ("obrien_fleming", "pocock"):
        return kind
    if isinstance(kind, str) and kind.startswith("hsd:"):
        try:
            gamma = float(kind.removeprefix("hsd:"))
        except ValueError:
            gamma = math.nan
        if -40 <= gamma <= 40:
            return kind
    raise ValueError(f"spending must be one of obrien_fleming, pocock, hsd:GAMMA (GAMMA a number in [-40, 40]), "
                     f"got {kind!r}")


def spent(tau: float, alpha: float, kind: Spending = "obrien_fleming") -> float:
    """α*(τ): the one-sided error that may be spent by information fraction τ ∈ (0, 1]."""
    if kind == "obrien_fleming":
        return 2 - 2 * _NORMAL.cdf(_NORMAL.inv_cdf(1 - alpha / 2) / math.sqrt(tau))
    if kind == "pocock":
        return alpha * math.log(1 + (math.e - 1) * tau)  # Lan-DeMets' Pocock-like spending
    gamma = float(check_spending(kind).removeprefix("hsd:"))
    if abs(gamma) < 1e-9:
        return alpha * tau
    return alpha * math.expm1(-gamma * tau) / math.expm1(-gamma)


def boundaries(fractions: Sequence[float], *, alpha: float = ALPHA / 2, kind: Spending = "obrien_fleming",
               step: float = 0.005, spend_rest: bool = False, floor: float = 0.0) -> np.ndarray:
    """One-sided critical values c_k for looks at information fractions 0 < τ_1 < ... < τ_K = 1 that spend
    α*(τ) (`spent`) in all: P(Z_k ≥ c_k for some k) = α under the null. `spend_rest`: the last look spends all the
    error the others left, α − α*(τ_{K−1}), whatever its τ_K (a final look that came before τ = 1: the task ran
    out), as Lan and DeMets' spending does at a final analysis with less information than planned. `floor`: every
    look has spent at least min(floor, α) by its τ (the first look's boundary is then at most z_{1−floor})."""
    taus = [float(t) for t in fractions]
    if not taus or any(b <= a for a, b in itertools.pairwise(taus)) or taus[0] <= 0 or taus[-1] > 1:
        raise ValueError(f"information fractions must increase in (0, 1], got {taus}")
    check_spending(kind)
    if not 0 <= floor < 1:
        raise ValueError(f"floor must be in [0, 1), got {floor}")
    from scipy.optimize import brentq
    from scipy.special import ndtr

    def allowed(tau: float) -> float:
        return min(alpha, max(spent(tau, alpha, kind), floor))

    grid = np.arange(-12.0, 12.0 + step / 2, step)  # values of B(τ), whose variance is at most 1
    out, used = [], 0.0
    density = None
    previous = 0.0
    for position, tau in enumerate(taus):
        final = spend_rest and position == len(taus) - 1
        budget = (alpha if final else allowed(tau)) - used
        delta = tau - previous
        if density is None:
            c = float(_NORMAL.inv_cdf(1 - budget)) if budget > 0 else math.inf
            density = np.exp(-grid ** 2 / (2 * tau)) / math.sqrt(2 * math.pi * tau)
        else:
            live = density > 1e-300
            alive, points = density[live] * step, grid[live]  # the mass of B at τ_{k−1} on paths not stopped

            def crossing(c: float, alive: np.ndarray = alive, points: np.ndarray = points, delta: float = delta,
                         tau: float = tau, budget: float = budget) -> float:
                return float(alive @ ndtr((points - c * math.sqrt(tau)) / math.sqrt(delta))) - budget

            c = float(brentq(crossing, -10.0, 40.0, xtol=1e-6)) if budget > 1e-15 else math.inf
            half = math.ceil(9 * math.sqrt(delta) / step)
            offsets = np.arange(-half, half + 1) * step
            kernel = np.exp(-offsets ** 2 / (2 * delta)) / math.sqrt(2 * math.pi * delta) * step
            density = np.convolve(density, kernel, mode="same")
        density = np.where(grid < c * math.sqrt(tau), density, 0.0)
        out.append(c)
        used, previous = allowed(tau), tau
    return np.array(out)


@functools.lru_cache(maxsize=256)
def _boundaries(fractions: tuple[float, ...], alpha: float, kind: str, floor: float, spend_rest: bool) -> np.ndarray:
    """`boundaries`, kept: a plan's looks read them again at every look and in every simulation."""
    values = boundaries(fractions, alpha=alpha, kind=kind, floor=floor, spend_rest=spend_rest)
    values.flags.writeable = False
    return values


Outcome = Literal["reproduced", "not reproduced", "continue", "inconclusive"]


@dataclass(frozen=True, kw_only=True)
class SequentialPlan:
    """Looks at `schedule` (or after every `batch` problems) up to `max_problems`, for one accuracy claim."""

    claim: Claim
    """An accuracy claim (better, equal, not_worse)."""
    max_problems: int
    """N: the cap; the last look is at N."""
    batch: int | None = None
    """Problems added between looks (B, 2B, ..., N); give this or `schedule`."""
    schedule: tuple[int, ...] | None = None
    """The problems at each look, increasing, the last N (ttscale.stats.designs.Design.schedule makes them)."""
    alpha: float = ALPHA
    """The chance of any false verdict, both sides together, over every look."""
    spending: Spending = "obrien_fleming"
    """How the error is spent over the looks (`SPENDINGS`)."""
    floor: float = 0.0
    """The least error each side spends at the first look (0: the spending function's own)."""

    def __post_init__(self) -> None:
        if self.claim.kind == "ratio":
            raise ValueError("a sequential plan tests an accuracy claim (better, equal, not_worse), got a ratio")
        for name in ("max_problems", "batch"):
            value = getattr(self, name)
            if value is None and name == "batch":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 2:
                raise ValueError(f"{name} must be a whole number ≥ 2, got {value!r}")
        if (self.batch is None) == (self.schedule is None):
            raise ValueError("give batch or schedule (the problems at each look), not both or neither")
        if self.batch is not None and self.batch > self.max_problems:
            raise ValueError(f"batch must be ≤ max_problems ({self.max_problems}), got {self.batch}")
        if self.schedule is not None:
            looks = list(self.schedule)
            if (not looks or any(isinstance(n, bool) or not isinstance(n, int) for n in looks) or looks[0] < 1
                    or any(b <= a for a, b in itertools.pairwise(looks)) or looks[-1] != self.max_problems):
                raise ValueError(f"schedule must be whole numbers of problems increasing from ≥ 1 to max_problems "
                                 f"({self.max_problems}), got {looks}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha}")
        check_spending(self.spending)
        if not 0 <= self.floor < self.alpha / 2:
            raise ValueError(f"floor must be in [0, alpha/2 = {self.alpha / 2:g}), got {self.floor}")

    @property
    def looks(self) -> list[int]:
        """The problems at each look: the schedule, or B, 2B, ..., and N."""
        if self.schedule is not None:
            return list(self.schedule)
        assert self.batch is not None
        sizes = list(range(self.batch, self.max_problems, self.batch))
        return [*sizes, self.max_problems]

    def critical_values(self) -> np.ndarray:
        return _boundaries(tuple(n / self.max_problems for n in self.looks), self.alpha / 2, self.spending,
                           self.floor, False)

    def critical_at_end(self, look: int, problems: int) -> float:
        """The boundary of look `look` (0-based) made the last by the task running out at `problems` (fewer than
        the cap): the earlier looks' boundaries as planned, and this one spending all the error they left."""
        taken = [n / self.max_problems for n in self.looks[:look] if n < problems]
        fractions = (*taken, problems / self.max_problems)
        return float(_boundaries(fractions, self.alpha / 2, self.spending, self.floor, True)[-1])

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


__all__ = ["SPENDINGS", "SequentialPlan", "boundaries", "check_spending", "outcome", "simulate", "spent"]
