"""Sleep-time measurements (ttscale/scaling/sleeptime.py) on synthetic runs where the answer is known: a saving
where sleep-time compute helps, none where it does not, and the amortised cost per query by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ttscale.scaling.sleeptime import (
    TEST_WEIGHT,
    accuracy_difference,
    amortised,
    frontier,
    grid,
    paired_saving,
    tokens_for,
)

BUDGETS = (50, 100, 200, 400)


def _runs(accuracy: dict[int, float], tokens: dict[int, float], *, problems: int = 60, seeds: int = 2,
          sleep: int = 0, queries: int = 5, seed: int = 0) -> dict[int, list[list[dict[str, object]]]]:
    """Records per budget and seed; right with the budget's probability (nested: right at b ⇒ right at 2b)."""
    rng = np.random.default_rng(seed)
    u = rng.random((problems, seeds))
    out: dict[int, list[list[dict[str, object]]]] = {}
    for b in BUDGETS:
        out[b] = [[{"id": f"p{i:03d}", "correct": bool(u[i, j] < accuracy[b]),
                    "ledger": {"generated_tokens": tokens[b]},
                    "info": {"sleep_tokens": sleep, "context_id": f"c{i // queries}"}} for i in range(problems)]
                  for j in range(seeds)]
    return out


BASE = {50: 0.2, 100: 0.35, 200: 0.5, 400: 0.6}
SPENT = {50: 40.0, 100: 80.0, 200: 160.0, 400: 320.0}


def test_a_saving_where_sleep_time_reaches_the_baselines_top_accuracy_at_its_smallest_budget() -> None:
    base = grid(_runs(BASE, SPENT))
    sleep = grid(_runs({50: 0.5, 100: 0.55, 200: 0.6, 400: 0.62}, SPENT, sleep=100))
    # Sleep-time at 40 tokens is as right as the baseline at 160: a 4x saving, clearly above 1.
    result = paired_saving(base, sleep, budget=50, resamples=400)
    assert result.ratio == pytest.approx(4.0)
    assert result.interval is not None and result.interval[0] > 1.5


def test_no_saving_where_the_notes_change_nothing() -> None:
    base, same = grid(_runs(BASE, SPENT)), grid(_runs(BASE, SPENT, sleep=100))
    result = paired_saving(base, same, budget=100, resamples=400)
    assert result.ratio == pytest.approx(1.0)
    assert result.interval is not None and result.interval[0] <= 1.0 <= result.interval[1]  # "not reproduced"
    delta, (low, high) = accuracy_difference(base, same, budget=100, resamples=400)
    assert delta == 0 and low == high == 0


def test_the_accuracy_difference_is_paired_by_problem() -> None:
    base = grid(_runs(BASE, SPENT))
    better = grid(_runs({b: a + 0.2 for b, a in BASE.items()}, SPENT, sleep=100))
    delta, (low, high) = accuracy_difference(base, better, budget=50, resamples=400)
    # The same uniform draws on both sides: a query right at 20% is right at 40% too, so every pair moves one way.
    assert delta == pytest.approx(float((better.correct - base.correct)[:, :, 0].mean())) and 0 < low <= delta <= high


def test_a_saving_past_the_baselines_range_is_undefined_not_invented() -> None:
    base = grid(_runs(BASE, SPENT))
    better = grid(_runs({b: 0.95 for b in BUDGETS}, SPENT, sleep=100))
    result = paired_saving(base, better, budget=50, resamples=200)
    assert math.isinf(result.ratio) and result.interval is None and result.above > 0.9


def test_fewer_tokens_at_lower_accuracy_is_no_saving() -> None:
    # Sleep-time spends half the tokens but is less accurate than the baseline's cheapest point: how few tokens
    # the baseline would need for that accuracy was never measured, so no saving is read (not 2x).
    base = grid(_runs(BASE, SPENT))
    worse = grid(_runs({b: 0.1 for b in BUDGETS}, {b: t / 2 for b, t in SPENT.items()}, sleep=100))
    result = paired_saving(base, worse, budget=50, resamples=200)
    assert math.isnan(result.ratio) and result.interval is None and result.below > 0.9
    assert "not measurable" in result.text()


def test_tokens_for_interpolates_in_log_tokens() -> None:
    curve = [(50, 0.2, 40.0), (100, 0.4, 160.0)]
    assert math.isnan(tokens_for(curve, 0.1))  # the curve is there at its first point already: only a bound
    assert tokens_for(curve, 0.3) == pytest.approx(80.0)  # halfway in log between 40 and 160
    assert math.isinf(tokens_for(curve, 0.5))


def test_frontier_and_amortisation_by_hand() -> None:
    runs = _runs(BASE, SPENT, problems=10, seeds=1, sleep=100, queries=5)
    g = grid(runs)
    assert [t for _, _, t in frontier(g)] == [40.0, 80.0, 160.0, 320.0]
    rows = amortised(g, queries=[1, 2, 5], budget=50, test_weight=1)
    # Two contexts of 100 sleep tokens each: asked once each, 200 / 2 = 100 per query; five times, 200 / 10 = 20.
    assert [(q, c) for q, _, _, c in rows] == [(1, 140.0), (2, 90.0), (5, 60.0)]


def test_amortised_cost_weights_a_test_time_token_as_the_paper_does() -> None:
    # The paper's §5.3: a test-time token costs t = 10 sleep-time tokens. 40 test tokens per query and two contexts
    # of 100 sleep tokens: 10 × 40 + 200 / 2 = 500 asked once per context, 10 × 40 + 200 / 10 = 420 five times; the
    # baseline (no sleep tokens) pays 10 × 40 = 400 whatever q is. The default is the paper's t.
    g = grid(_runs(BASE, SPENT, problems=10, seeds=1, sleep=100, queries=5))
    assert [(q, c) for q, _, _, c in amortised(g, queries=[1, 2, 5], budget=50)] == [(1, 500.0), (2, 450.0),
                                                                                      (5, 420.0)]
    assert TEST_WEIGHT == 10
    base = grid(_runs(BASE, SPENT, problems=10, seeds=1, sleep=0, queries=5))
    assert [c for *_, c in amortised(base, queries=[1, 5], budget=50)] == [400.0, 400.0]
    assert [c for *_, c in amortised(g, queries=[1], budget=50, test_weight=2.5)] == [200.0]
    with pytest.raises(ValueError, match="test_weight must be > 0, got 0"):
        amortised(g, queries=[1], budget=50, test_weight=0)


def test_pass_at_k_counts_a_query_right_when_any_sample_is() -> None:
    # The paper's parallel baseline: pass@k needs an oracle, read from the graded samples a pass_at_k run stores.
    # q1: the vote is wrong but one of two samples right (pass@2 right); q2: none right; q3: the first right.
    def record(pid: str, correct: bool, samples: list[bool | None]) -> dict[str, object]:
        return {"id": pid, "correct": correct, "ledger": {"generated_tokens": 20 * len(samples)},
                "samples": [{"correct": c} for c in samples], "info": {"sleep_tokens": 0, "context_id": pid}}

    runs = {1: [[record("q1", False, [False]), record("q2", False, [False]), record("q3", True, [True])]],
            2: [[record("q1", False, [False, True]), record("q2", False, [None, False]),
                 record("q3", True, [True, False])]]}
    assert [round(a, 3) for _, a, _ in frontier(grid(runs))] == [0.333, 0.333]  # the records' own answers
    assert [round(a, 3) for _, a, _ in frontier(grid(runs, score="pass@k"))] == [0.333, 0.667]
    with pytest.raises(ValueError, match="score must be one of answer, pass@k, got 'best'"):
        grid(runs, score="best")  # type: ignore[arg-type]


def test_mismatched_runs_are_refused() -> None:
    base = grid(_runs(BASE, SPENT, problems=10))
    other = grid(_runs(BASE, SPENT, problems=12))
    with pytest.raises(ValueError, match="same problems"):
        paired_saving(base, other, budget=50)
    with pytest.raises(ValueError, match="same number of seeds"):
        grid({50: [[{"id": "a", "correct": True}]], 100: [[{"id": "a"}], [{"id": "a"}]]})
