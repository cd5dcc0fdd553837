"""ttscale.scaling.sleeptime: behaviour the mutation run (tools/mutation) found unchecked, on hand-made grids whose
frontier, saving, amortised cost and refusals are worked out by hand."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ttscale.scaling.sleeptime import (
    Saving,
    accuracy_difference,
    amortised,
    frontier,
    grid,
    paired_saving,
    saving,
    tokens_for,
)


def rec(pid: str, correct: bool, tokens: float, *, sleep: float = 0, context: str | None = None,
        **extra: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"sleep_tokens": sleep}
    if context is not None:
        info["context_id"] = context
    return {"id": pid, "correct": correct, "ledger": {"generated_tokens": tokens}, "info": info, **extra}


# -- tokens_for ---------------------------------------------------------------------------------------------------


def test_tokens_for_interpolates_from_the_best_point_below_not_a_worse_later_one() -> None:
    # Points by tokens: (10, 0.2), (20, 0.1), (40, 0.5). For 0.4 the best point below is (10, 0.2): the dip at 20
    # tokens is not a better start. log-linear: 10 · 4^(2/3) = 25.198...; from (20, 0.1) it would be 20 · 2^0.75.
    curve = [(3, 0.5, 40.0), (1, 0.2, 10.0), (2, 0.1, 20.0)]  # listed out of token order on purpose
    assert tokens_for(curve, 0.4) == pytest.approx(10 * 4 ** (2 / 3), rel=1e-12)
    # A later point that rises above the best so far becomes the start: (10, 0.2), (20, 0.3), (40, 0.5) for 0.4 is
    # halfway in log between 20 and 40.
    assert tokens_for([(1, 0.2, 10.0), (2, 0.3, 20.0), (3, 0.5, 40.0)], 0.4) == pytest.approx(20 * 2 ** 0.5)
    # An equal later point does not move the start: (10, 0.2), (20, 0.2), (40, 0.6) for 0.4 is from 10 (10 · 2).
    assert tokens_for([(1, 0.2, 10.0), (2, 0.2, 20.0), (3, 0.6, 40.0)], 0.4) == pytest.approx(20.0)


def test_tokens_for_at_a_points_exact_accuracy_is_that_point_with_no_rounding() -> None:
    # exp(log 10 + 1 · (log 120 − log 10)) is 119.99999999999997 in floats: the exact point is returned instead.
    assert tokens_for([(1, 0.2, 10.0), (2, 0.6, 120.0)], 0.6) == 120.0
    # The first point already as accurate as asked (equal, not only above) is only a bound: NaN.
    assert math.isnan(tokens_for([(1, 0.2, 10.0), (2, 0.6, 120.0)], 0.2))
    assert tokens_for([(1, 0.2, 10.0), (2, 0.6, 120.0)], 0.2 + 1e-9) == pytest.approx(10.0, rel=1e-6)


# -- grid -----------------------------------------------------------------------------------------------------------


def test_grid_reads_tokens_sleep_and_contexts_with_their_defaults() -> None:
    cells = {
        8: [[rec("b", True, 6, sleep=30, context="c1"), rec("a", False, 5, sleep=30, context="c1"),
             {"id": "z", "correct": True}]],  # z is in one budget only: left out
        16: [[rec("a", True, 12, sleep=30, context="c1"), {"id": "b", "correct": False}]],
    }
    g = grid(cells)
    assert g.ids == ("a", "b") and g.budgets == (8, 16)
    assert g.correct[:, 0, :].tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert g.tokens[:, 0, :].tolist() == [[5.0, 12.0], [6.0, 0.0]]  # no ledger: 0 tokens
    # Sleep tokens are read per problem and seed; the last budget read wins (b at 16 has no info: 0).
    assert g.sleep_tokens.tolist() == [[30.0], [0.0]]
    # Context ids come from the largest budget's first run; a record without one is its own context.
    assert g.context_ids == ("c1", "b")


def test_grid_refusals_name_what_is_missing() -> None:
    with pytest.raises(ValueError, match=r"^a grid needs at least one budget with at least one run$"):
        grid({})
    with pytest.raises(ValueError, match=r"^a grid needs at least one budget with at least one run$"):
        grid({8: [[rec("a", True, 1)]], 16: []})
    with pytest.raises(ValueError, match=r"^the runs share no problem$"):
        grid({8: [[rec("a", True, 1)]], 16: [[rec("b", True, 1)]]})
    with pytest.raises(ValueError, match=r"^every budget needs the same number of seeds, got \[1, 2\]$"):
        grid({8: [[rec("a", True, 1)]], 16: [[rec("a", True, 1)], [rec("a", True, 1)]]})


def test_pass_at_k_counts_only_samples_graded_true() -> None:
    samples = [{"correct": 1}, "right", {"correct": "yes"}, None]  # none of them is a sample graded True
    g = grid({4: [[rec("a", True, 4, samples=samples), rec("b", False, 4, samples=[{"correct": True}]),
                   rec("c", True, 4)]]}, score="pass@k")
    assert g.correct[:, 0, 0].tolist() == [0.0, 1.0, 0.0]


def test_frontier_over_chosen_rows_and_seeds() -> None:
    cells = {8: [[rec("a", True, 4), rec("b", False, 8)], [rec("a", False, 6), rec("b", False, 10)]]}
    g = grid(cells)
    assert frontier(g) == [(8, 0.25, 7.0)]
    # Rows a, a, b over both seeds: right 1, 0, 1, 0, 0, 0; tokens 4, 6, 4, 6, 8, 10.
    assert frontier(g, np.array([0, 0, 1])) == [(8, pytest.approx(1 / 3), pytest.approx(19 / 3))]


# -- saving ---------------------------------------------------------------------------------------------------------


def _pair(base_acc: tuple[bool, bool], sleep_acc: tuple[bool, bool], *, spent: float = 10.0) -> tuple[Any, Any]:
    """Two budgets, two problems alike (every resample sees the same accuracies)."""
    base = grid({8: [[rec("a", base_acc[0], 10), rec("b", base_acc[0], 10)]],
                 16: [[rec("a", base_acc[1], 40), rec("b", base_acc[1], 40)]]})
    sleep = grid({8: [[rec("a", sleep_acc[0], spent, sleep=5), rec("b", sleep_acc[0], spent, sleep=5)]],
                  16: [[rec("a", sleep_acc[1], 2 * spent, sleep=5), rec("b", sleep_acc[1], 2 * spent, sleep=5)]]})
    return base, sleep


def test_saving_is_nan_where_sleep_time_is_never_right_or_spends_nothing() -> None:
    base, never = _pair((False, True), (False, True))
    assert math.isnan(saving(base, never, budget=8))  # 0% right at 8: no accuracy to match
    assert saving(base, never, budget=16) == pytest.approx(2.0)  # 100% at 20 tokens; the baseline needs 40
    _, free = _pair((False, True), (True, True), spent=0.0)
    assert math.isnan(saving(base, free, budget=8))
    _, cheap = _pair((False, True), (True, True), spent=0.5)  # half a token per query is still a cost: 40 / 0.5
    assert saving(base, cheap, budget=8) == pytest.approx(80.0)


def test_paired_saving_on_alike_problems_is_the_same_in_every_resample() -> None:
    base, sleep = _pair((False, True), (True, True))  # sleep-time right at 10 tokens; the baseline at 40
    result = paired_saving(base, sleep, budget=8, resamples=10, confidence=0.5)
    assert result == Saving(budget=8, ratio=4.0, interval=(4.0, 4.0), above=0.0, below=0.0)
    # The baseline never right: every resample is +inf (above), none a number, so there is no interval.
    never, _ = _pair((False, False), (True, True))
    above = paired_saving(never, sleep, budget=8, resamples=10)
    assert math.isinf(above.ratio) and above.interval is None and (above.above, above.below) == (1.0, 0.0)
    # The baseline right at its smallest budget already: every resample NaN (below).
    same, _ = _pair((True, True), (True, True))
    below = paired_saving(same, sleep, budget=8, resamples=10)
    assert math.isnan(below.ratio) and below.interval is None and (below.above, below.below) == (0.0, 1.0)


def test_an_interval_needs_half_the_resamples_to_be_numbers() -> None:
    # Problem a: the baseline is right only at 40 tokens, sleep-time at 10; problem b: both right at 10. A resample
    # of b alone is NaN (the baseline is as accurate at its first point); any resample holding a reads 40 / 10 = 4.
    base = grid({8: [[rec("a", False, 10), rec("b", True, 10)]], 16: [[rec("a", True, 40), rec("b", True, 40)]]})
    sleep = grid({8: [[rec("a", True, 10), rec("b", True, 10)]], 16: [[rec("a", True, 20), rec("b", True, 20)]]})
    many = paired_saving(base, sleep, budget=8, resamples=2000, seed=3)
    assert many.ratio == 4.0 and many.interval == (4.0, 4.0) and many.above == 0
    assert many.below == pytest.approx(0.25, abs=0.03)  # both rows b: 1/2 · 1/2
    # Two resamples, one of them NaN (seed 0): half are numbers, enough for an interval.
    half = paired_saving(base, sleep, budget=8, resamples=2, seed=0)
    assert (half.below, half.interval) == (0.5, (4.0, 4.0))
    # Three resamples, two of them NaN (seed 10): one number is fewer than half, no interval.
    third = paired_saving(base, sleep, budget=8, resamples=3, seed=10)
    assert third.below == pytest.approx(2 / 3) and third.interval is None and third.ratio == 4.0
    with pytest.raises(ValueError, match=r"^the baseline and sleep-time runs must cover the same problems$"):
        paired_saving(base, grid({8: [[rec("a", True, 1)]]}), budget=8)


def test_saving_text_by_hand() -> None:
    assert Saving(budget=8, ratio=4.0, interval=(1.5, 6.25), above=0.1, below=0.05).text() == (
        "4.00x [1.50, 6.25] (resamples: 10% baseline never reaches it, 5% not measurable)")
    assert Saving(budget=8, ratio=math.inf, interval=None, above=0.75, below=0.0).text() == (
        "baseline never reaches it no interval (resamples: 75% baseline never reaches it, 0% not measurable)")
    assert Saving(budget=8, ratio=math.nan, interval=None, above=0.0, below=1.0).text().startswith(
        "not measurable no interval (")


# -- accuracy_difference and amortised ------------------------------------------------------------------------------


def test_accuracy_difference_by_hand_and_its_refusals() -> None:
    base = grid({8: [[rec("a", False, 1), rec("b", True, 1)], [rec("a", False, 1), rec("b", False, 1)]]})
    sleep = grid({8: [[rec("a", True, 1), rec("b", True, 1)], [rec("a", True, 1), rec("b", True, 1)]]})
    # Per problem over the two seeds: a +1, b +0.5; the mean 0.75. Every resample is a mean of those two values.
    delta, (low, high) = accuracy_difference(base, sleep, budget=8, resamples=200)
    assert delta == 0.75 and 0.5 <= low < high <= 1.0
    narrow = accuracy_difference(base, sleep, budget=8, resamples=200, confidence=0.2)[1]
    assert low < narrow[0] <= narrow[1] < high
    message = "^the baseline and sleep-time runs must cover the same problems and the budget$"
    other = grid({16: [[rec("a", True, 1), rec("b", True, 1)], [rec("a", True, 1), rec("b", True, 1)]]})
    with pytest.raises(ValueError, match=message):
        accuracy_difference(base, sleep, budget=16)
    with pytest.raises(ValueError, match=message):
        accuracy_difference(other, sleep, budget=8)
    with pytest.raises(ValueError, match=message):
        accuracy_difference(base, grid({8: [[rec("a", True, 1)], [rec("a", True, 1)]]}), budget=8)


def test_amortised_by_hand_with_uneven_contexts_and_seeds() -> None:
    # Context c1 has three queries, c2 one. Sleep tokens per context: c1 100 on seed 0 and 50 on seed 1 (mean 75),
    # c2 40. At q = 2: c1's first two queries and c2's one are asked, 3 queries: sleep (75 + 40) / 3; test tokens
    # the mean over those rows and both seeds.
    def seed(s: int) -> list[dict[str, Any]]:
        c1 = 100 if s == 0 else 50
        return [rec("p1", True, 10, sleep=c1, context="c1"), rec("p2", False, 20, sleep=c1, context="c1"),
                rec("p3", True, 30, sleep=c1, context="c1"), rec("p4", True, 40 + s, sleep=40, context="c2")]

    g = grid({8: [seed(0), seed(1)]})
    rows = amortised(g, queries=[0, 2, 3, 7], budget=8, test_weight=1)
    assert [r[0] for r in rows] == [2, 3, 7]  # q = 0 asks nothing: no row
    q2, q3, q7 = rows
    assert q2 == (2, pytest.approx(2 / 3), pytest.approx(70.5 / 3), pytest.approx(70.5 / 3 + 115 / 3))
    assert q3 == (3, 0.75, pytest.approx(100.5 / 4), pytest.approx(100.5 / 4 + 115 / 4))
    assert q7[1:] == q3[1:]  # more queries than a context has: all of them, counted as many as there are
    weighted = amortised(g, queries=[3], budget=8, test_weight=2.5)[0]
    assert weighted[3] == pytest.approx(2.5 * 100.5 / 4 + 115 / 4)
    for bad in (0, -1, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"^test_weight must be > 0, got "):
            amortised(g, queries=[1], budget=8, test_weight=bad)


def test_the_intervals_default_to_2000_resamples_seeded_0() -> None:
    # Reproducible by default: the same numbers on every call, those of the documented defaults. Problems whose
    # per-problem differences (two seeds) spread over -1 to 1, so the resampled values move with the draws.
    def grids(problems: int) -> tuple[Any, Any]:
        ids = [f"p{i:02d}" for i in range(problems)]

        def runs(right: int) -> list[list[dict[str, Any]]]:
            return [[rec(p, (i * 7 + s * 3) % 5 < right, 10 + i) for i, p in enumerate(ids)] for s in (0, 1)]

        base = grid({8: runs(2), 16: [[rec(p, True, 400) for p in ids]] * 2})  # 40% right at 8, all at 16
        sleep = grid({8: runs(3), 16: [[rec(p, True, 200) for p in ids]] * 2})  # 60% right at 8
        return base, sleep

    base, sleep = grids(10)
    saved = paired_saving(base, sleep, budget=8)
    assert math.isfinite(saved.ratio) and saved == paired_saving(base, sleep, budget=8, resamples=2000, seed=0)
    for other in ({"resamples": 2001, "seed": 0}, {"resamples": 2000, "seed": 1}):
        assert saved != paired_saving(base, sleep, budget=8, **other)
    # The difference's interval moves in steps of 1/60 over 30 problems: 2001 resamples draw the same ends as 2000,
    # another seed does not.
    base, sleep = grids(30)
    delta = accuracy_difference(base, sleep, budget=8)
    assert delta == accuracy_difference(base, sleep, budget=8, resamples=2000, seed=0)
    assert delta != accuracy_difference(base, sleep, budget=8, seed=1)
