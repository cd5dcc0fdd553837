"""Edges of the paired comparison that the statistics tests in test_compare.py do not reach: each test here is
named for the one-line change to ttscale/stats/paired.py it catches (issue 34's surviving mutants)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ttscale.stats.paired import compare_pair, pair_records
from ttscale.stats.proportions import tango_interval


def _record(problem: str, *, correct: bool, tokens: float) -> dict[str, Any]:
    return {"id": problem, "correct": correct, "ledger": {"generated_tokens": tokens}}


def _arm(correct: list[bool], tokens: list[float], *, seeds: range = range(1)) -> dict[tuple[str, int], Any]:
    return {(f"p{p}", s): _record(f"p{p}", correct=c, tokens=t)
            for p, (c, t) in enumerate(zip(correct, tokens, strict=True)) for s in seeds}


def test_records_present_only_in_b_count_as_unpaired() -> None:
    a = _arm([True] * 3, [10.0] * 3)
    b = _arm([True] * 5, [10.0] * 5)  # p3 and p4 ran in B only
    b[("p0", 7)] = _record("p0", correct=True, tokens=10.0)  # a repeat A never ran
    _, _, counts = pair_records(a, b)
    assert counts["unpaired"] == 3
    result = compare_pair("A", a, "B", b)
    assert (result.pairs, result.unpaired) == (3, 3)


def test_the_confidence_argument_sets_the_interval_width() -> None:
    rng = np.random.default_rng(5)
    n = 30
    a = _arm(list(rng.random(n) < 0.6), list(rng.uniform(50, 150, n)))
    b = _arm(list(rng.random(n) < 0.4), list(rng.uniform(50, 150, n)))
    widths = {}
    for confidence in (0.5, 0.95, 0.99):
        effect = compare_pair("A", a, "B", b, confidence=confidence).effects["accuracy"]
        assert effect.low is not None and effect.high is not None and effect.value is not None
        assert effect.low <= effect.value <= effect.high
        widths[confidence] = effect.high - effect.low
    assert widths[0.5] < widths[0.95] < widths[0.99]


def test_two_problems_are_enough_for_an_interval_and_one_is_not() -> None:
    two = compare_pair("A", _arm([True, False], [10.0, 30.0]), "B", _arm([False, False], [20.0, 20.0]))
    accuracy, tokens = two.effects["accuracy"], two.effects["generated_tokens"]
    assert accuracy.low is not None and accuracy.high is not None and accuracy.note is None
    # Binary accuracy takes Tango's score interval (one discordant pair of two), not the bootstrap's [0, 100]
    # (two problems resample to Δ = 100, 50 or 0 only).
    low, high = tango_interval(1, 0, 2)
    assert (accuracy.low, accuracy.high) == (pytest.approx(100 * low), pytest.approx(100 * high))
    assert accuracy.low < 0 < 50 < accuracy.high < 100 and accuracy.interval == "Tango score"
    assert tokens.low is not None and tokens.high is not None and tokens.low < 1 < tokens.high  # 0.5 .. 1.5
    one = compare_pair("A", _arm([True], [10.0]), "B", _arm([False], [20.0]))
    assert one.effects["accuracy"].low is None and one.effects["accuracy"].note == "one problem: no interval"
