"""What would decide F1, F2, F7 and F8 (benchmarks/deciding.py): the size read off a bootstrap interval's spread
must give the nominal power when experiments of that size are simulated and bootstrapped as the rules do, and
halving the distance to the line must about quadruple it. Seeded and small: seconds."""

from __future__ import annotations

import importlib
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def deciding() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module("deciding")
    finally:
        sys.path.remove(str(BENCHMARKS))


def percentile_ci(samples: np.ndarray, rng: np.random.Generator, boot: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """The 95% percentile bootstrap of the mean of each row of `samples` (experiments × problems)."""
    e, n = samples.shape
    picks = rng.integers(0, n, size=(e, boot, n))
    means = np.take_along_axis(samples[:, None, :].repeat(boot, axis=1), picks, axis=2).mean(axis=2)
    return np.percentile(means, 2.5, axis=1), np.percentile(means, 97.5, axis=1)


def pilot(deciding: ModuleType, mean: float, sd: float, n: int) -> tuple[float, float, float]:
    half = deciding.Z * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def test_the_size_to_clear_a_line_has_its_power(deciding: ModuleType) -> None:
    # A gain of 5 pts (sd 15 pts per problem) against F8's 1-point line: at the size named, 80% of experiments'
    # bootstrap intervals clear the line (±5 points of Monte-Carlo and approximation error).
    rng = np.random.default_rng(0)
    size = deciding.problems_to_clear(pilot(deciding, 0.05, 0.15, 30), 30, 0.01)
    assert 60 < size < 200
    samples = rng.normal(0.05, 0.15, size=(1000, size))
    low, _ = percentile_ci(samples, rng)
    assert abs(np.mean(low > 0.01) - 0.8) <= 0.05
    # At a third of the size the same experiments clear it far less often: the size is not merely "large".
    low_small, _ = percentile_ci(samples[:, : size // 3], rng)
    assert np.mean(low_small > 0.01) < 0.55


def test_the_size_to_come_inside_a_margin_has_its_power(deciding: ModuleType) -> None:
    # F2's plateau: a true gain of 0 with sd 4 pts, inside ±1 pt on both sides at once (power 80%).
    rng = np.random.default_rng(1)
    size = deciding.problems_to_be_within(pilot(deciding, 0.0, 0.04, 30), 30, 0.01)
    samples = rng.normal(0.0, 0.04, size=(1000, size))
    low, high = percentile_ci(samples, rng)
    assert abs(np.mean((low >= -0.01) & (high <= 0.01)) - 0.8) <= 0.05
    assert deciding.problems_to_be_within(pilot(deciding, 0.02, 0.04, 30), 30, 0.01) is None  # outside: never


def test_halving_the_distance_quadruples_the_size(deciding: ModuleType) -> None:
    ci = pilot(deciding, 0.05, 0.15, 30)
    far = deciding.problems_to_clear(ci, 30, 0.01)
    near = deciding.problems_to_clear(ci, 30, 0.03)
    assert 3.8 <= near / far <= 4.2
    assert deciding.problems_to_clear(ci, 30, 0.05) is None  # on the line: no size


def test_each_finding_names_its_deciding_verdict(deciding: ModuleType) -> None:
    # F1: the ceiling predicting 13 pts worse is decided as "reproduced" by some size; within ±1 pt by none.
    assert deciding.law_decider((0.129, 0.031, 0.143), 30)["verdict"] == "reproduced"
    open_ = deciding.law_decider((0.004, -0.05, 0.06), 30)
    assert open_["problems_80"] is None and "no number of problems decides it" in open_["why"]
    # F2: a vote still gaining 7 pts reads "not reproduced" at the size named; near 0, "reproduced" at a larger one.
    rising = deciding.plateau_decider((0.069, 0.029, 0.116), 30)
    flat = deciding.plateau_decider((0.002, -0.03, 0.035), 30)
    assert rising["verdict"] == "not reproduced" and flat["verdict"] == "reproduced"
    assert flat["problems_80"] > rising["problems_80"] > 2
    # F8: a gain of 8 pts at the last doubling decides "not reproduced" whatever N* says.
    still = deciding.saturation_decider((12.0, 8.0, 16.0), (0.08, 0.03, 0.13), 30, 32.0)
    assert still["verdict"] == "not reproduced" and still["problems_80"] < 60
    flat8 = deciding.saturation_decider((12.0, 8.0, 40.0), (0.002, -0.01, 0.02), 30, 32.0)
    assert flat8["verdict"] == "reproduced" and flat8["problems_80"] > 30
    # F7: an upper end past the largest budget ("> max") scales by the lower half, on the log scale.
    f7 = deciding.adaptive_decider((2.43, 0.40, math.inf), 30)
    assert f7["verdict"] == "reproduced" and f7["problems_80"] > 30
    with pytest.raises(ValueError, match="power must be in"):
        deciding.problems_to_clear((0.05, 0.0, 0.1), 30, 0.0, power=0.3)


def test_the_pool_that_flattens_a_rising_curve_is_beyond_it(deciding: ModuleType) -> None:
    # Coverage that still gains ~8 pts a doubling at 32 samples: the fitted curves flatten only past 32.
    ks = [1, 2, 4, 8, 16, 32]
    rng = np.random.default_rng(2)
    levels = np.array([0.05, 0.09, 0.15, 0.23, 0.31, 0.39])
    coverage = np.clip(levels[None, :] + rng.normal(0, 0.02, size=(30, len(ks))), 0, 1)
    coverage = np.maximum.accumulate(coverage, axis=1)
    found = deciding.pool_to_flatten(coverage, ks)
    assert found["law"] is not None and found["law"] > 32
    assert found["ttspm"] is None or found["ttspm"] > 32
