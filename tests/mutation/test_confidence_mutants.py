"""ttscale.engine.confidence: behaviour the mutation run (tools/mutation) found unchecked, on hand examples."""

from __future__ import annotations

import math

import pytest

from ttscale.engine.confidence import GroupWatch, keep_top, percentile, token_confidence, trace_score


def test_a_position_with_no_finite_candidate_has_confidence_0() -> None:
    assert token_confidence([-math.inf, -math.inf]) == 0.0
    with pytest.raises(ValueError, match=r"^a token's confidence needs at least one log-probability$"):
        token_confidence([])


def test_keep_top_takes_the_share_it_is_asked_for() -> None:
    scores = [float(s) for s in range(101)]  # 0..100
    assert keep_top(scores, eta=0.01) == [99, 100]  # ≥ the 99th percentile, 99
    assert keep_top(scores, eta=0.5) == list(range(50, 101))
    for eta in (0.0, 1.5, 2.0, -0.1):
        with pytest.raises(ValueError, match=rf"^eta must be in \(0, 1\], got {eta}$"):
            keep_top(scores, eta=eta)
    assert keep_top([None, None], eta=0.5) == []


def test_ties_with_an_interpolated_threshold_a_few_ulps_above_are_kept() -> None:
    # η = 0.7: the 30th percentile of 11 scores sits at position 10 × 30.000000000000004 / 100, a hair past the
    # fourth score: interpolated towards 35,000 it lands 1.1e-11 (six ulps) above the tied 10,000s, which must
    # all be kept (0.7 of 11 is 7.7: ties at the threshold keep more, never fewer).
    scores = [1e4] * 4 + [3.5e4] * 7
    assert percentile(scores, (1 - 0.7) * 100) > 1e4
    assert keep_top(scores, eta=0.7) == list(range(11))


def test_percentile_refuses_what_it_cannot_give() -> None:
    with pytest.raises(ValueError, match=r"^a percentile of no values$"):
        percentile([], 50)
    for q in (100.5, 101, -1):
        with pytest.raises(ValueError, match=rf"^q must be in \[0, 100\], got {q}$"):
            percentile([1.0, 2.0], q)
    assert percentile([1.0, 3.0], 100) == 3.0 and percentile([1.0, 3.0], 0) == 1.0


def test_an_unknown_trace_score_is_named() -> None:
    with pytest.raises(ValueError, match=r"^score must be one of mean, lowest_group, bottom_10, tail, got 'max'$"):
        trace_score([1.0], score="max")  # type: ignore[arg-type]


def test_a_group_watch_of_one_token_reports_every_token() -> None:
    watch = GroupWatch(window=1)
    assert [watch.add(c) for c in (3.0, 1.0, 2.0)] == [3.0, 1.0, 2.0] and watch.lowest == 1.0
    with pytest.raises(ValueError, match=r"^window must be ≥ 1, got 0$"):
        GroupWatch(window=0)
