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


# -- the rows' own functions: their guards, their margins, the text they show --------------------------------


def test_accuracy_difference_needs_two_tables_of_one_shape() -> None:
    with pytest.raises(ValueError, match=r"^a and b must both be \(problems × repeats\), got \(3, 2\) and \(3, 1\)$"):
        v.accuracy_difference(np.ones((3, 2)), np.ones((3, 1)))
    with pytest.raises(ValueError, match=r"^a and b must both be \(problems × repeats\), got \(3,\) and \(3,\)$"):
        v.accuracy_difference(np.ones(3), np.ones(3))
    est, low, high = v.accuracy_difference(np.array([[1, 1], [0, 0]]), np.array([[1, 0], [0, 0]]))
    assert est == 0.25 and low < 0.25 < high
    _, narrow_low, narrow_high = v.accuracy_difference(np.array([[1, 1], [0, 0]]), np.array([[1, 0], [0, 0]]),
                                                       confidence=0.5)
    assert low < narrow_low < 0.25 < narrow_high < high  # the confidence asked for reaches the interval


def test_intervals_are_seeded_with_0_by_default() -> None:
    values = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 0.3, 0.2, 0.7])
    assert v.mean_interval(values, n_boot=60) == v.mean_interval(values, n_boot=60, seed=0)
    assert v.mean_interval(values, n_boot=60) != v.mean_interval(values, n_boot=60, seed=1)


def test_equal_accuracy_at_a_wider_margin_is_read_and_shown_at_it() -> None:
    kv, accuracy = (2.0, 1.5, 2.5), (0.0, -0.015, 0.015)
    found = v.kv_at_equal_accuracy(kv, accuracy, paper=2.25, margin=0.02)
    assert found.verdict == R
    assert "REBASE/ETS reference KV 2.00x [1.50, 2.50] (paper 2.25x; reproduced needs CI ≥ 1.50x: reproduced)" in (
        found.measured)
    assert "ETS − REBASE accuracy +0.0 pts [-1.5, +1.5] (equal within ±2 pt: reproduced)" in found.measured
    assert v.kv_at_equal_accuracy(kv, accuracy, paper=2.25).verdict == INC  # ±1.5 points is not within ±1


def test_not_worse_at_a_wider_margin_is_read_and_shown_at_it() -> None:
    tokens, accuracy = (3.0, 2.0, 4.0), (0.0, -0.015, 0.02)
    found = v.fewer_tokens_at_matching_accuracy(tokens, accuracy, paper=4.0, margin=0.02, names=("SC", "DC"))
    assert found.verdict == R
    assert "SC/DC tokens 3.00x [2.00, 4.00] (paper 4x; reproduced needs CI ≥ 2.00x: reproduced)" in found.measured
    assert "DC − SC accuracy +0.0 pts [-1.5, +2.0] (at most 2 pt lower: reproduced)" in found.measured
    assert v.fewer_tokens_at_matching_accuracy(tokens, accuracy, paper=4.0).verdict == INC


KS = [1, 2, 4, 8, 16, 32]


def test_the_plateau_compares_the_largest_k_with_a_quarter_of_it_at_its_margin() -> None:
    # 12 problems: maj@k 0.5 from k = 8 on (0.2, 0.3, 0.4 below), coverage rising 0.5 → 0.9 between k = 8 and 32.
    majority = np.tile([0.2, 0.3, 0.4, 0.5, 0.505, 0.515], (12, 1))
    coverage = np.tile([0.2, 0.3, 0.4, 0.5, 0.7, 0.9], (12, 1))
    found = v.plateau(majority, coverage, KS, margin=0.02, n_boot=50)
    assert found.verdict == R  # maj@32 − maj@8 = +1.5 pts, within ±2
    assert found.measured == ("maj@32 − maj@8 +1.5 pts [+1.5, +1.5] (plateau: CI within ±2 pt), maj@8 50.0% [50.0, "
                              "50.0], coverage@32 − coverage@8 +40.0 pts [+40.0, +40.0]; votes grouped by equivalence")
    assert v.plateau(majority, coverage, KS, n_boot=50).verdict == N  # outside ±1
    # With k up to 2 a quarter of the largest is below 1: the comparison is with k = 1.
    assert v.plateau(majority[:, :2], coverage[:, :2], [1, 2], n_boot=50).measured.startswith("maj@2 − maj@1 ")


def test_the_saturation_row_names_the_last_doubling_and_its_margin() -> None:
    # Coverage flat at 0.6 from k = 4 on: the last doubling gains nothing.
    coverage = np.tile([0.3, 0.5, 0.6, 0.6, 0.6, 0.6], (10, 1))
    found = v.saturation(coverage, KS, margin=0.02, n_boot=50)
    assert "samples (measured up to 32)" in found.measured
    assert found.measured.endswith("coverage@32 − coverage@16 +0.0 pts [+0.0, +0.0] (still rising: CI > +2)")
    rising = np.tile([0.1, 0.2, 0.3, 0.4, 0.5, 0.515], (10, 1))
    assert v.saturation(rising, KS, margin=0.02, n_boot=50).verdict != N  # a 1.5-point gain is within 2
    assert v.saturation(rising, KS, n_boot=50).verdict == N  # but not within 1


def test_coverage_law_needs_enough_ks_and_problems() -> None:
    # The law is fitted on k ≤ pool / 4 (at least 3 of them: 1, 2, 4) and tested on the larger k: a pool of 8
    # leaves two to fit, 16 is the least that runs.
    n, c = np.full(5, 16.0), np.full(5, 4.0)
    assert v.coverage_law(n, c, 8, n_boot=20) == v.Verdict(
        INC, "needs a pool of ≥ 16 samples and ≥ 2 problems (pool 8, 5 problems)")
    assert v.coverage_law(n[:1], c[:1], 16, n_boot=20) == v.Verdict(
        INC, "needs a pool of ≥ 16 samples and ≥ 2 problems (pool 16, 1 problems)")
    assert v.coverage_law(n[:2], c[:2], 16, n_boot=20).measured.startswith("fitted on k=1,2,4, held-out k=8,16: ")
    assert v.coverage_law(np.full(3, 16.0), np.zeros(3), 16, n_boot=20) == v.Verdict(
        INC, "coverage is 0 at every fitted k: neither curve can be fitted")


def test_coverage_laws_text_shows_the_held_out_errors_of_the_curves_it_names() -> None:
    # One right answer in 32 for every problem: coverage k/32 exactly. The RMSEs shown are those of the curves
    # shown (their parameters as printed) against the held-out coverage 16/32 and 32/32.
    import re

    found = v.coverage_law(np.full(6, 32.0), np.full(6, 1.0), 32, n_boot=30, margin=0.02)
    m = re.fullmatch(r"fitted on k=1,2,4,8, held-out k=16,32: RMSE exp\(a·k\^b\) (\S+) pts \(a=(\S+), b=(\S+)\), "
                     r"ceiling s·\(1−\(1−p\)\^k\) (\S+) pts \(s=(\S+), p=(\S+)\); ceiling − law (\S+) pts "
                     r"\[(\S+), (\S+)\], reproduced needs CI > \+2, not reproduced CI < −2", found.measured)
    assert m is not None, found.measured
    law, a, b, ceiling, s, p = (float(m[i]) for i in range(1, 7))
    held = np.array([0.5, 1.0])
    ks = np.array([16.0, 32.0])
    law_rmse = 100 * np.sqrt(np.mean((np.exp(a * ks**b) - held) ** 2))
    ceiling_rmse = 100 * np.sqrt(np.mean((s * (1 - (1 - p) ** ks) - held) ** 2))
    assert law == pytest.approx(law_rmse, abs=0.5) and ceiling == pytest.approx(ceiling_rmse, abs=0.5)
    assert float(m[7]) == pytest.approx(ceiling - law, abs=0.15) and m[7] == m[8] == m[9]  # identical problems


def test_differences_of_right_or_wrong_flags_are_means_of_numbers() -> None:
    # Flags (bools) are numbers to the interval: 3 of 4 right against 1 of 4 is a difference of one half.
    est, _, _ = v.mean_difference(np.array([True, True, True, False]), np.array([True, False, False, False]),
                                  n_boot=20)
    assert est == 0.5


def test_the_seed_and_resamples_asked_for_reach_the_interval() -> None:
    a = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 0.3, 0.2, 0.7])
    b = np.array([0.2, 0.0, 0.4, 0.5, 0.9, 0.1, 0.3, 0.2])
    assert v.mean_difference(a, b, n_boot=60, seed=1) == v.mean_interval(a - b, n_boot=60, seed=1)
    assert v.mean_difference(a, b, n_boot=60, seed=1) != v.mean_difference(a, b, n_boot=60)
    assert tuple(v.ratio_of_means(a + 1, b + 1, n_boot=60, seed=1)) != tuple(v.ratio_of_means(a + 1, b + 1, n_boot=60))


def test_the_plateau_text_shows_the_intervals_of_the_resamples_asked_for() -> None:
    rng = np.random.default_rng(3)
    majority = rng.uniform(0.3, 0.7, size=(15, 6))
    coverage = rng.uniform(0.5, 0.9, size=(15, 6))
    found = v.plateau(majority, coverage, KS, n_boot=40)
    assert v.pts(v.mean_difference(majority[:, 5], majority[:, 3], n_boot=40)) in found.measured
    assert v.pts(v.mean_difference(coverage[:, 5], coverage[:, 3], n_boot=40)) in found.measured
    assert v.percent(v.mean_interval(majority[:, 3], n_boot=40)) in found.measured
