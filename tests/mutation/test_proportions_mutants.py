"""ttscale.stats.proportions: behaviour that the mutation run (tools/mutation) found unchecked. Hand-computed values."""

from __future__ import annotations

import statistics

import pytest

from ttscale.stats.proportions import paired_proportions, tango_interval

Z = statistics.NormalDist().inv_cdf(0.975)


def test_no_discordant_pair_gives_plus_minus_z2_over_n_plus_z2() -> None:
    for n, confidence in ((60, 0.95), (10, 0.95), (25, 0.8)):
        z2 = statistics.NormalDist().inv_cdf(1 - (1 - confidence) / 2) ** 2
        low, high = tango_interval(0, 0, n, confidence=confidence)
        assert low == pytest.approx(-z2 / (n + z2), abs=1e-9)
        assert high == pytest.approx(z2 / (n + z2), abs=1e-9)


def test_the_interval_holds_mcnemars_statistic_at_zero() -> None:
    # At δ = 0 the score statistic is McNemar's (b − c) / √(b + c): 0 is the lower limit at that z.
    b, c, n = 9, 2, 50
    z = (b - c) / (b + c) ** 0.5
    low, high = tango_interval(b, c, n, confidence=2 * statistics.NormalDist().cdf(z) - 1)
    assert low == pytest.approx(0.0, abs=1e-9)
    assert high > (b - c) / n
    # and the mirror image
    low, high = tango_interval(c, b, n, confidence=2 * statistics.NormalDist().cdf(z) - 1)
    assert high == pytest.approx(0.0, abs=1e-9)


def test_the_papers_worked_example() -> None:
    # Tango (1998) section 6.1: 44 pairs, b = 0, c = 1; the 90% interval's lower limit is −0.096.
    low, high = tango_interval(0, 1, 44, confidence=0.90)
    assert round(low, 3) == -0.096
    assert 0 < high < 0.1


def test_an_estimate_at_the_edge_keeps_the_edge() -> None:
    low, high = tango_interval(10, 0, 10)
    assert high == 1.0 and 0 < low < 1
    low, high = tango_interval(0, 10, 10)
    assert low == -1.0 and -1 < high < 0


def test_the_interval_is_symmetric_in_a_and_b() -> None:
    low, high = tango_interval(7, 3, 40)
    mirror_low, mirror_high = tango_interval(3, 7, 40)
    assert (mirror_low, mirror_high) == (pytest.approx(-high, abs=1e-9), pytest.approx(-low, abs=1e-9))
    assert low < 0.1 < high  # the estimate (7 − 3) / 40 inside


@pytest.mark.parametrize(
    ("args", "confidence", "words"),
    [
        ((1, 1, 10), 0.0, "confidence must be in (0, 1), got 0.0"),
        ((1, 1, 10), 1.0, "confidence must be in (0, 1), got 1.0"),
        ((1, 1, 0), 0.95, "not a paired table: only_a=1, only_b=1, pairs=0"),
        ((-1, 1, 10), 0.95, "not a paired table: only_a=-1, only_b=1, pairs=10"),
        ((1, -1, 10), 0.95, "not a paired table: only_a=1, only_b=-1, pairs=10"),
        ((6, 5, 10), 0.95, "not a paired table: only_a=6, only_b=5, pairs=10"),
    ],
)
def test_tango_interval_refuses(args: tuple[int, int, int], confidence: float, words: str) -> None:
    with pytest.raises(ValueError) as info:
        tango_interval(*args, confidence=confidence)
    assert str(info.value) == words


def test_a_table_of_only_discordant_pairs_is_allowed() -> None:
    low, high = tango_interval(5, 5, 10)
    assert low == pytest.approx(-high) and 0 < high < 1
    half_low, half_high = tango_interval(2.5, 2.5, 5.0)  # fractional counts (a design effect of 2)
    assert half_low == pytest.approx(-half_high) and high < half_high < 1  # half the pairs: wider


# -- paired_proportions ------------------------------------------------------------------------------


def test_one_pair_per_problem_is_the_plain_interval() -> None:
    pairs = [[(1.0, 0.0)]] * 6 + [[(0.0, 1.0)]] * 2 + [[(1.0, 1.0)]] * 12
    found = paired_proportions(pairs)
    assert (found.only_a, found.only_b, found.pairs, found.problems) == (6, 2, 20, 20)
    assert found.estimate == pytest.approx(0.2)
    assert found.design_effect == 1.0
    assert (found.low, found.high) == tango_interval(6, 2, 20)
    found90 = paired_proportions(pairs, confidence=0.9)
    assert (found90.low, found90.high) == tango_interval(6, 2, 20, confidence=0.9)


def test_repeats_that_copy_each_other_count_once() -> None:
    # 3 problems × 2 identical repeats: sums of x_A − x_B per problem 2, 0, 0; mean difference 1/3;
    # within = 2·(2/3)² + 4·(1/3)² = 4/3, independent = 4/3 · 6/5 = 1.6;
    # clustered = 3/2 · ((2 − 2/3)² + 2·(2/3)²) = 4; 4 / 1.6 = 2.5, capped at Σ m² / K = 12 / 6 = 2.
    pairs = [[(1.0, 0.0), (1.0, 0.0)], [(0.0, 0.0), (0.0, 0.0)], [(1.0, 1.0), (1.0, 1.0)]]
    found = paired_proportions(pairs)
    assert found.design_effect == 2.0
    assert (found.only_a, found.only_b, found.pairs, found.problems) == (2, 0, 6, 3)
    assert found.estimate == pytest.approx(1 / 3)
    low, high = tango_interval(1, 0, 3)  # the counts halved
    assert (found.low, found.high) == (pytest.approx(low), pytest.approx(high))


def test_repeats_that_vary_within_problems_count_as_independent() -> None:
    # each problem sums to 1 over its 2 pairs: clustered variance 0, so the design effect is its floor, 1
    pairs = [[(1.0, 0.0), (0.0, 0.0)], [(0.0, 0.0), (1.0, 0.0)], [(1.0, 0.0), (1.0, 1.0)]]
    found = paired_proportions(pairs)
    assert found.design_effect == 1.0
    assert (found.low, found.high) == tango_interval(3, 0, 6)


def test_an_intermediate_design_effect() -> None:
    # sums 2, 1, 0, 0 over 2 pairs each (K = 8): mean 3/8; within = Σ (d − 3/8)² over d = 1,1,1,0,0,0,0,0
    # = 3·(5/8)² + 5·(3/8)² = 120/64 = 15/8; independent = 15/8 · 8/7 = 15/7;
    # clustered = 4/3 · ((2 − 3/4)² + (1 − 3/4)² + 2·(3/4)²) = 4/3 · (25 + 1 + 18)/16 = 11/3;
    # D = (11/3) / (15/7) = 77/45 ≈ 1.711, inside [1, Σ m² / K = 2].
    pairs = [[(1.0, 0.0), (1.0, 0.0)], [(1.0, 0.0), (0.0, 0.0)], [(0.0, 0.0), (0.0, 0.0)], [(1.0, 1.0), (1.0, 1.0)]]
    found = paired_proportions(pairs)
    assert found.design_effect == pytest.approx(77 / 45)
    d = 77 / 45
    assert (found.low, found.high) == (pytest.approx(tango_interval(3 / d, 0, 8 / d)[0]),
                                       pytest.approx(tango_interval(3 / d, 0, 8 / d)[1]))


def test_no_discordant_pair_with_repeats_takes_the_largest_design_effect() -> None:
    # sizes 3 and 1: Σ m² / K = (9 + 1) / 4 = 2.5
    found = paired_proportions([[(1.0, 1.0)] * 3, [(0.0, 0.0)]])
    assert found.design_effect == 2.5
    assert (found.low, found.high) == (pytest.approx(tango_interval(0, 0, 4 / 2.5)[0]),
                                       pytest.approx(tango_interval(0, 0, 4 / 2.5)[1]))


def test_one_problem_with_repeats_takes_the_largest_design_effect() -> None:
    found = paired_proportions([[(1.0, 0.0), (0.0, 0.0)]])
    assert found.design_effect == 2.0  # 4 / 2
    assert found.problems == 1 and found.estimate == 0.5


@pytest.mark.parametrize(
    ("pairs", "words"),
    [
        ([], "paired_proportions needs at least one pair for every problem"),
        ([[(1.0, 0.0)], []], "paired_proportions needs at least one pair for every problem"),
        ([[(1.0, 0.5)]], "paired_proportions needs binary outcomes (0 or 1) on both sides"),
        ([[(2.0, 0.0)]], "paired_proportions needs binary outcomes (0 or 1) on both sides"),
    ],
)
def test_paired_proportions_refuses(pairs: list, words: str) -> None:
    with pytest.raises(ValueError) as info:
        paired_proportions(pairs)
    assert str(info.value) == words


def test_b_only_pairs_are_scaled_by_the_design_effect_too() -> None:
    # the mirror image of the copies above: only B right, design effect 2, counts halved
    pairs = [[(0.0, 1.0), (0.0, 1.0)], [(0.0, 0.0), (0.0, 0.0)], [(1.0, 1.0), (1.0, 1.0)]]
    found = paired_proportions(pairs)
    assert found.design_effect == 2.0 and found.estimate == pytest.approx(-1 / 3)
    low, high = tango_interval(0, 1, 3)
    assert (found.low, found.high) == (pytest.approx(low), pytest.approx(high))
    # and the intermediate case mirrored: the same design effect 77/45, the interval mirrored
    mirrored = [[(0.0, 1.0), (0.0, 1.0)], [(0.0, 1.0), (0.0, 0.0)], [(0.0, 0.0), (0.0, 0.0)],
                [(1.0, 1.0), (1.0, 1.0)]]
    found = paired_proportions(mirrored)
    assert found.design_effect == pytest.approx(77 / 45)


def test_two_problems_are_enough_to_estimate_the_design_effect() -> None:
    # sizes 3, 3 (Σ m² / K = 3); differences 1,1,0 and 1,0,0: mean 1/2, within 6 · 1/4 = 3/2,
    # independent 3/2 · 6/5 = 9/5; sums 2 and 1: clustered 2/1 · (1/4 + 1/4) = 1; 1 / (9/5) < 1 → floor 1
    found = paired_proportions([[(1.0, 0.0), (1.0, 0.0), (0.0, 0.0)], [(1.0, 0.0), (0.0, 0.0), (0.0, 0.0)]])
    assert found.design_effect == 1.0
    assert (found.low, found.high) == tango_interval(3, 0, 6)


def test_an_empty_table_is_refused() -> None:
    with pytest.raises(ValueError) as info:
        tango_interval(0, 0, 0)
    assert str(info.value) == "not a paired table: only_a=0, only_b=0, pairs=0"
