"""benchmarks/verdicts.py: the verdict rules at their edges and the numbers a row shows, on hand intervals
(what the mutation run, tools/mutation, found unchecked). No engine runs."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _verdicts() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))  # the benchmark scripts import their sibling modules top-level
    try:
        import verdicts
    finally:
        sys.path.remove(str(BENCHMARKS))
    return verdicts


v = _verdicts()
R, N, INC = v.REPRODUCED, v.NOT_REPRODUCED, v.INCONCLUSIVE


def test_the_words_and_constants() -> None:
    assert (R, N, INC) == ("reproduced", "not reproduced", "inconclusive")
    assert v.DIRECTION_ONLY == "direction reproduced, magnitude not"
    assert v.DIRECTION_MAGNITUDE_OPEN == "direction reproduced, magnitude inconclusive"
    assert (v.MARGIN, v.PAPER_KV_FACTOR, v.PAPER_TOKEN_FACTOR, v.BOOT) == (0.01, 1.8, 3.0, 2000)
    assert pytest.approx(1 / 0.471) == v.PAPER_DEEPCONF_FACTOR


def test_the_numbers_a_row_shows() -> None:
    assert v.pts((0.0123, -0.004, 0.0251)) == "+1.2 pts [-0.4, +2.5]"
    assert v.percent((0.5, 0.42, 0.581)) == "50.0% [42.0, 58.1]"
    assert v.times((1.8, 1.234, 2.0)) == "1.80x [1.23, 2.00]"


@pytest.mark.parametrize(("ci", "word"), [((0, 0.5, 0.9), R), ((0, 0.2, 0.39), N), ((0, 0.3, 0.5), INC),
                                          ((0, 0.4, 0.4), INC), ((0, 0.41, 0.5), R)])
def test_above_at_its_edges(ci: tuple[float, float, float], word: str) -> None:
    # Threshold 0.4: the low end above it reproduces, the high end below it refutes; an interval that touches
    # 0.4 at either end does neither.
    assert v.above(ci, 0.4) == word


@pytest.mark.parametrize(("ci", "word"), [
    ((0, -0.01, 0.01), R), ((0, -0.0100001, 0.01), INC), ((0, 0.0100001, 0.03), N), ((0, 0.01, 0.03), INC),
    ((0, -0.03, -0.0100001), N), ((0, -0.03, -0.01), INC),
])
def test_equivalent_at_the_margin(ci: tuple[float, float, float], word: str) -> None:
    assert v.equivalent(ci) == word


@pytest.mark.parametrize(("ci", "word"), [
    ((0, -0.01, 0.2), R), ((0, -0.0100001, 0.2), INC), ((0, -0.05, -0.0100001), N), ((0, -0.05, -0.01), INC),
])
def test_not_worse_at_the_margin(ci: tuple[float, float, float], word: str) -> None:
    assert v.not_worse(ci) == word


@pytest.mark.parametrize(("ci", "word"), [
    ((2.0, 1.5, 2.5), R),  # √2.25 = 1.5: the low end reaches it
    ((1.4, 1.1, 1.49), v.DIRECTION_ONLY), ((1.0, 1.0, 1.49), N), ((1.0, 0.8, 1.2), N),
    ((1.6, 1.1, 1.5), v.DIRECTION_MAGNITUDE_OPEN), ((1.2, 1.0, 1.6), INC),
])
def test_magnitude_against_half_the_papers_factor(ci: tuple[float, float, float], word: str) -> None:
    assert v.magnitude(ci, 2.25) == word
    assert v.magnitude_rule(2.25) == "paper 2.25x; reproduced needs CI ≥ 1.50x"


@pytest.mark.parametrize(("ci", "word"), [((0, 0.0100001, 0.1), R), ((0, 0.01, 0.1), INC), ((0, -0.1, -0.0100001), N),
                                          ((0, -0.1, -0.01), INC)])
def test_the_law_rule_at_the_margin(ci: tuple[float, float, float], word: str) -> None:
    assert v.law_rule(ci) == word


def test_the_weaker_word_wins() -> None:
    assert v.weakest(R, R) == R and v.weakest(v.DIRECTION_ONLY, R) == v.DIRECTION_ONLY
    assert v.weakest(R, N) == N and v.weakest(N, INC) == N and v.weakest(INC, R) == INC and v.weakest(R, INC) == INC


@pytest.mark.parametrize(("n_star", "gain", "word"), [
    ((8, 4, 16), (0, -0.01, 0.01), R), ((8, 4, 32), (0, -0.01, 0.01), R), ((8, 4, 33), (0, -0.01, 0.01), INC),
    ((40, 33, 50), (0, -0.01, 0.01), N), ((40, 32, 50), (0, -0.01, 0.01), INC),
    ((8, 4, 16), (0, 0.0100001, 0.05), N), ((8, 4, 16), (0, 0.01, 0.0100001), INC),
])
def test_saturation_inside_the_range_and_no_longer_rising(n_star: tuple[float, float, float],
                                                          gain: tuple[float, float, float], word: str) -> None:
    assert v.saturation_rule(n_star, gain, 32) == word


@pytest.mark.parametrize(("gain", "cover", "level", "word"), [
    ((0, -0.005, 0.005), (0.3, 0.2, 0.4), (0.5, 0.4, 0.6), R),
    ((0, -0.005, 0.005), (0.3, 0.01, 0.4), (0.5, 0.4, 0.6), INC),  # coverage gain not above the margin
    ((0, -0.005, 0.005), (0.3, 0.2, 0.4), (0.5, 0.01, 0.6), INC),  # the vote's level not above it
    ((0, -0.005, 0.005), (0.3, 0.0100001, 0.4), (0.5, 0.0100001, 0.6), R),
    ((0.05, 0.02, 0.08), (0.3, 0.2, 0.4), (0.5, 0.4, 0.6), N),
])
def test_the_plateau_rule(gain: tuple[float, float, float], cover: tuple[float, float, float],
                          level: tuple[float, float, float], word: str) -> None:
    assert v.plateau_rule(gain, cover, level) == word


def test_a_mean_interval_of_identical_problems_is_a_point() -> None:
    assert v.mean_interval(np.full(10, 0.25), n_boot=50) == (0.25, 0.25, 0.25)
    assert v.mean_difference(np.full(6, 0.75), np.full(6, 0.5), n_boot=50) == (0.25, 0.25, 0.25)
    est, low, high = v.ratio_of_means(np.full(5, 3.0), np.full(5, 2.0), n_boot=50)
    assert (est, low, high) == (1.5, 1.5, 1.5)
