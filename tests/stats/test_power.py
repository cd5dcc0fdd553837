"""ttscale.stats.power: the planned sizes reach their power when experiments are read through the verdict's own
interval (drawn by benchmarks/power.py, apart from the planner's own simulation), and sizes scale as they should."""

from __future__ import annotations

import importlib
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from ttscale.stats.power import (
    Accuracy,
    Claim,
    Ratio,
    accuracy_detectable,
    accuracy_power,
    accuracy_problems,
    decided,
    ratio_detectable,
    ratio_power,
    ratio_problems,
    simulate_ratio_power,
)
from ttscale.stats.proportions import paired_proportions

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
try:
    bench = importlib.import_module("power")
finally:
    sys.path.remove(str(BENCHMARKS))

#: Experiments per check here (benchmarks/power.py runs 1,000): its Monte-Carlo SE at 80% is 2 points, and the
#: tolerance is 3 SE, so a planner whose power is off by 6 points or more fails.
EXPERIMENTS = 400
TOLERANCE = 3 * math.sqrt(0.8 * 0.2 / EXPERIMENTS)
ACC = Accuracy(difference=0.15, discordance=0.35, repeats=2, design_effect=1.4)
NULL = Accuracy(difference=0.0, discordance=0.2, repeats=2, design_effect=1.4)


@pytest.mark.parametrize(("claim", "acc"), [(Claim(kind="better", value=0.0), ACC),
                                            (Claim(kind="equal", value=0.1), NULL),
                                            (Claim(kind="not_worse", value=0.06), NULL)],
                         ids=["better", "equal", "not_worse"])
def test_accuracy_claims_reach_their_power_at_the_planned_size(claim: Claim, acc: Accuracy) -> None:
    n = accuracy_problems(claim, acc, 0.8)
    assert n is not None
    got = bench.accuracy_experiments(claim, acc, n, experiments=EXPERIMENTS, seed=3)
    assert abs(got - 0.8) <= TOLERANCE, (n, got)
    # A fifth fewer problems falls short: the size is the smallest, not merely a sufficient one.
    assert accuracy_power(claim, acc, max(2, n - n // 5)) < 0.8


def test_a_ratio_claim_reaches_its_power_at_the_planned_size() -> None:
    claim, rho = Claim(kind="ratio", value=1.34), 1.6
    cost = Ratio(ratio=rho, spread=bench.population_spread(rho))
    n = ratio_problems(claim, cost, 0.8)
    assert n is not None and 10 < n < 200
    a, b = bench.ratio_costs(rho, problems=n, experiments=EXPERIMENTS, seed=5)
    got = simulate_ratio_power(claim, a, b, resamples=500, seed=5)
    assert abs(got - 0.8) <= TOLERANCE, (n, got)
    # The other direction (A the cheaper: ρ ≤ 1/1.34) is the same test on 1/ρ.
    mirrored = ratio_problems(Claim(kind="ratio", value=1 / 1.34), Ratio(ratio=1 / rho, spread=cost.spread), 0.8)
    assert mirrored == n


def test_halving_the_effect_about_quadruples_the_size() -> None:
    better = Claim(kind="better", value=0.0)
    big = accuracy_problems(better, Accuracy(difference=0.10, discordance=0.3, repeats=2, design_effect=1.4), 0.8)
    small = accuracy_problems(better, Accuracy(difference=0.05, discordance=0.3, repeats=2, design_effect=1.4), 0.8)
    assert big is not None and small is not None and 3.6 <= small / big <= 4.6  # 4·(q − Δ²) ratio: 4.1
    # Equal within ±m at Δ = 0: the distance to the margin halved.
    wide, narrow = (accuracy_problems(Claim(kind="equal", value=m), NULL, 0.8) for m in (0.10, 0.05))
    assert wide is not None and narrow is not None and 3.5 <= narrow / wide <= 4.5
    ratio = Claim(kind="ratio", value=1.2)
    far, near = (ratio_problems(ratio, Ratio(ratio=1.2 * math.exp(x), spread=0.4), 0.8) for x in (0.2, 0.1))
    assert far is not None and near is not None and 3.8 <= near / far <= 4.2


def test_the_score_decision_is_the_intervals() -> None:
    """`decided` reads T at the threshold; it must say what the interval (and its design effect) says."""
    rng = np.random.default_rng(1)
    claims = [Claim(kind="better", value=0.0), Claim(kind="better", value=0.05), Claim(kind="equal", value=0.2),
              Claim(kind="not_worse", value=0.05)]
    checked = {True: 0, False: 0}
    for trial in range(200):
        n, r = int(rng.integers(2, 40)), int(rng.integers(1, 4))
        probs = [0.15, 0.15, 0.7] if trial % 2 else [0.3, 0.1, 0.6]
        outcome = rng.choice([1, -1, 0], size=(n, r), p=probs)
        if trial % 3 == 0:
            outcome[:] = outcome[:, :1]  # copies: the design effect at its most
        found = paired_proportions([[bench._PAIR[x] for x in row] for row in outcome.tolist()])
        d = found.design_effect
        for claim in claims:
            want = bench.reproduced(claim, found.low, found.high)
            got = bool(decided(claim, np.array([found.only_a / d]), np.array([found.only_b / d]),
                               np.array([found.pairs / d]))[0])
            assert got == want, (claim, found)
            checked[want] += 1
    assert min(checked.values()) > 50  # both outcomes were exercised


def test_unreachable_claims_have_no_size_and_detectable_effects_invert_the_sizes() -> None:
    assert accuracy_problems(Claim(kind="better", value=0.0), NULL, 0.8) is None
    assert accuracy_problems(Claim(kind="equal", value=0.05), ACC, 0.8) is None
    assert ratio_problems(Claim(kind="ratio", value=1.5), Ratio(ratio=1.4, spread=0.3), 0.8) is None
    claim = Claim(kind="better", value=0.0)
    n = accuracy_problems(claim, ACC, 0.8)
    assert n is not None
    # At the planned size, the smallest Δ detectable with 80% is the assumed one (within the search's grain).
    detect = accuracy_detectable(claim, ACC, n)
    assert detect is not None and abs(detect - ACC.difference) < 0.01
    margin = accuracy_detectable(Claim(kind="equal", value=0.1), NULL, 100)
    assert margin is not None and accuracy_power(Claim(kind="equal", value=margin), NULL, 100) >= 0.8
    cost = Ratio(ratio=1.6, spread=0.4)
    m = ratio_problems(Claim(kind="ratio", value=1.34), cost, 0.8)
    assert m is not None
    assert ratio_detectable(Claim(kind="ratio", value=1.34), 0.4, m) == pytest.approx(1.6, rel=0.01)
    assert ratio_power(Claim(kind="ratio", value=1.34), cost, m) >= 0.8 > ratio_power(
        Claim(kind="ratio", value=1.34), cost, m - 1)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Claim(kind="worse", value=0.1), "claim must be one of better, equal, not_worse, ratio, got 'worse'"),  # type: ignore[arg-type]
    (lambda: Claim(kind="equal", value=0.0), "equal's margin must be in (0, 1)"),
    (lambda: Claim(kind="ratio", value=1.0), "ratio's h must be > 0 and ≠ 1"),
    (lambda: Accuracy(difference=0.2, discordance=0.1), "discordance must be in [|difference|, 1] = [0.2, 1]"),
    (lambda: Accuracy(difference=0.0, discordance=0.1, repeats=2, design_effect=3.0),
     "design_effect must be in [1, repeats] = [1, 2], got 3.0"),
    (lambda: Accuracy(difference=0.0, discordance=0.1, repeats=0), "repeats must be a whole number ≥ 1, got 0"),
    (lambda: Ratio(ratio=1.2, spread=0.0), "spread must be > 0, got 0.0"),
])
def test_parameters_are_checked_at_construction(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        make()  # type: ignore[operator]
