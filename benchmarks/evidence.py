"""What a finding's size could detect, and what would decide it: the planner (ttscale.stats.power) on the
per-problem values an interval of benchmarks/verdicts.py was computed from. verdicts.py calls these with its
rules' words; they print nothing of their own.
"""

from __future__ import annotations

import math

import numpy as np

from ttscale.stats.power import (
    Accuracy,
    Claim,
    Ratio,
    accuracy_detectable,
    accuracy_power,
    accuracy_problems,
    pilot_accuracy,
    ratio_detectable,
    ratio_power,
    ratio_problems,
)
from ttscale.stats.proportions import paired_proportions

Interval = tuple[float, float, float]


class Measured(tuple):  # type: ignore[type-arg]
    """An Interval (estimate, low, high) that keeps the per-problem values it was computed from, so that a rule
    can say what its size could detect (`accuracy_evidence`, `cost_evidence`) without another argument."""

    a: np.ndarray
    b: np.ndarray

    def __new__(cls, ci: Interval, a: np.ndarray, b: np.ndarray) -> Measured:
        made = super().__new__(cls, ci)
        made.a, made.b = a, b
        return made


def accuracy_evidence(ci: Interval, claim: Claim, *, paper: float | None = None, undecided: bool) -> str:
    """An accuracy row's size, the smallest effect it detects with 80% power, its power at the paper's Δ (`paper`;
    None: the paper gives no number) and, when its rule is `undecided`, the problems that would decide it (at the
    paper's Δ, else the measured one). `ci` must be `accuracy_difference`'s (it keeps the outcomes)."""
    if not isinstance(ci, Measured):
        return ""
    found = paired_proportions([list(zip(ra, rb, strict=True)) for ra, rb in zip(ci.a.tolist(), ci.b.tolist(),
                                                                                 strict=True)])
    measured = pilot_accuracy(only_a=found.only_a, only_b=found.only_b, pairs=found.pairs, problems=found.problems,
                              design_effect=found.design_effect)
    n, r = found.problems, measured.repeats
    at = measured if paper is None else Accuracy(difference=paper, discordance=max(measured.discordance, abs(paper)),
                                                 repeats=r, design_effect=measured.design_effect)
    # The margin an equal or not-worse claim could show is the one at the paper's Δ (the claim's own world).
    smallest = accuracy_detectable(claim, at, n)
    what = {"better": "Δ ≥ +", "equal": "a margin of ±", "not_worse": "a margin of "}[claim.kind]
    parts = [f"size {n} × {r}", "detects nothing at 80%" if smallest is None else
             f"detects {what}{100 * smallest:.1f} pts at 80%"]
    parts.append("the paper gives no Δ to compute power at" if paper is None else
                 f"power at the paper's Δ {100 * paper:+.0f} pts {accuracy_power(claim, at, n):.0%}")
    if undecided:
        needed = accuracy_problems(claim, at, 0.8)
        whose = "the paper's" if paper is not None else "the measured"
        parts.append(f"deciding it needs {needed} × {r} problems (80% at {whose} Δ)" if needed is not None
                     else f"no size decides it at {whose} Δ {100 * at.difference:+.1f} pts")
    return "; ".join(parts)


def cost_evidence(ci: Interval, paper: float, *, undecided: bool) -> str:
    """A cost row's size, the smallest ratio it shows beyond √paper with 80% power, its power at the paper's
    factor and, when the magnitude is `undecided`, the problems that would decide it at the measured ratio."""
    if not isinstance(ci, Measured):
        return ""
    a, b = ci.a, ci.b
    n = a.size
    deviations = a / a.mean() - b / b.mean()
    spread = max(float(np.std(deviations, ddof=1)), 1e-6)
    claim = Claim(kind="ratio", value=math.sqrt(paper))
    at = Ratio(ratio=paper, spread=spread)
    shown = ratio_detectable(claim, spread, n)
    parts = [f"size {n}", f"shows ≥ {claim.value:.2f}x at 80% if the ratio is {shown:.2f}x",
             f"power at the paper's {paper:.3g}x {ratio_power(claim, at, n):.0%}"]
    if undecided:
        # Deciding is showing the ratio on either side of √paper: at the measured ratio, mirrored on the log scale
        # when it is below (the one-sided test's power depends only on the distance).
        distance = abs(math.log(ci[0]) - math.log(claim.value)) if ci[0] > 0 else 0.0
        needed = ratio_problems(claim, Ratio(ratio=claim.value * math.exp(distance), spread=spread), 0.8)
        parts.append(f"deciding it needs {needed} problems (80% at the measured {ci[0]:.2f}x)" if needed is not None
                     else "no size decides it at the measured ratio")
    return "; ".join(parts)


if __name__ == "__main__":
    # Not a benchmark: a part of the verdict rules (benchmarks/verdicts.py). Run as a script it prints what it does.
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print(__doc__)
