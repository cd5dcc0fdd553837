"""DeepConf's confidence measures on hand examples (ttscale.engine.confidence)."""

from __future__ import annotations

import math

import pytest

from ttscale.engine.confidence import GroupWatch, group_confidences, keep_top, percentile, token_confidence, trace_score


def test_token_confidence_is_minus_the_mean_of_the_returned_log_probs() -> None:
    # Top-3 candidates at one position: log-probs −0.1, −2.3, −4.6 → C = (0.1 + 2.3 + 4.6) / 3 = 2.333...
    assert token_confidence([-0.1, -2.3, -4.6]) == pytest.approx(7.0 / 3)
    # A peaked distribution (the model sure of its token) has the larger confidence than a flat one.
    peaked = token_confidence([math.log(0.98), math.log(0.01), math.log(0.01)])
    flat = token_confidence([math.log(0.34), math.log(0.33), math.log(0.33)])
    assert peaked > flat
    assert token_confidence([-1.0, -math.inf]) == 1.0  # a candidate of probability 0 says nothing
    with pytest.raises(ValueError, match="at least one"):
        token_confidence([])


def test_group_confidences_slide_one_window_per_position() -> None:
    confidences = [4.0, 2.0, 0.0, 6.0, 1.0]
    # Windows of 2: (4+2)/2, (2+0)/2, (0+6)/2, (6+1)/2.
    assert group_confidences(confidences, window=2) == [3.0, 1.0, 3.0, 3.5]
    assert group_confidences(confidences, window=3) == [2.0, pytest.approx(8 / 3), pytest.approx(7 / 3)]
    assert group_confidences(confidences, window=5) == [2.6]  # the whole trace: one group
    assert group_confidences(confidences, window=9) == [2.6]  # shorter than the window: its mean
    assert group_confidences([], window=2) == []
    with pytest.raises(ValueError, match="window must be ≥ 1, got 0"):
        group_confidences(confidences, window=0)


def test_trace_scores_on_a_short_trace() -> None:
    confidences = [4.0, 2.0, 0.0, 6.0, 1.0]
    assert trace_score(confidences, score="mean") == pytest.approx(2.6)
    assert trace_score(confidences, score="lowest_group", window=2) == 1.0  # C_least: the (2, 0) window
    # bottom_10 of 4 groups: max(1, int(0.4)) = 1 group, the lowest.
    assert trace_score(confidences, score="bottom_10", window=2) == 1.0
    # 20 groups of one token: the bottom 10% is the 2 lowest, 0 and 1.
    assert trace_score(list(range(20)), score="bottom_10", window=1) == 0.5
    assert trace_score(confidences, score="tail", tail=2) == 3.5  # the last two tokens
    assert trace_score([], score="mean") is None


def test_the_running_group_watch_equals_the_sliding_means() -> None:
    confidences = [4.0, 2.0, 0.0, 6.0, 1.0, 5.0]
    watch = GroupWatch(window=3)
    seen = [watch.add(c) for c in confidences]
    assert seen[:2] == [None, None]  # no full window yet: a trace is never stopped before it has one
    assert seen[2:] == pytest.approx(group_confidences(confidences, window=3))
    assert watch.lowest == pytest.approx(min(group_confidences(confidences, window=3)))


def test_percentile_is_numpys_linear_one() -> None:
    numpy = pytest.importorskip("numpy")
    values = [3.0, 1.0, 7.5, 2.0, 9.0, 4.0]
    for q in (0, 10, 33.3, 50, 90, 100):
        assert percentile(values, q) == pytest.approx(float(numpy.percentile(values, q)))


def test_keep_top_at_eta_10_and_90_percent() -> None:
    scores = [float(s) for s in range(1, 11)]  # 1..10
    # η = 10%: ≥ the 90th percentile (9.1): only the best trace.
    assert keep_top(scores, eta=0.1) == [9]
    # η = 90%: ≥ the 10th percentile (1.9): all but the worst.
    assert keep_top(scores, eta=0.9) == list(range(1, 10))
    assert keep_top(scores, eta=1.0) == list(range(10))
    # Ties at the threshold are all kept; traces without a score never are.
    assert keep_top([5.0, 5.0, 1.0, None], eta=0.5) == [0, 1]
    with pytest.raises(ValueError, match="eta must be in"):
        keep_top(scores, eta=0.0)
