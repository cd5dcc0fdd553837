"""ttscale.stats.paired: behaviour that the mutation run (tools/mutation) found unchecked. Hand-computed values."""

from __future__ import annotations

import math

import pytest

from ttscale.stats.paired import METRICS, Effect, Metric, compare_pair, pair_records

TOKENS = [m for m in METRICS if m.name == "generated_tokens"]
ACCURACY = [m for m in METRICS if m.name == "accuracy"]
SCORE = [Metric(name="score", label="score", kind="difference", source="record.score",
                read=lambda r: r.get("score"))]


def rec(tokens: float | None = None, *, correct: bool = False, error: str | None = None, **extra: object) -> dict:
    out: dict = {"correct": correct, **extra}
    if tokens is not None:
        out["ledger"] = {"generated_tokens": tokens}
    if error:
        out["error"] = error
    return out


# -- pairing ---------------------------------------------------------------------------------------


def test_pair_records_by_problem_and_seed() -> None:
    a = {("p1", 0): rec(1), ("p1", 1): rec(2), ("p2", 0): rec(3, error="boom"), ("p0", 0): rec(4),
         ("p3", 0): rec(5)}
    b = {("p1", 0): rec(6), ("p1", 1): rec(7), ("p2", 0): rec(8), ("p0", 0): rec(9, error="x"),
         ("p4", 0): rec(10), ("p4", 1): rec(11)}
    paired, how, counts = pair_records(a, b)
    assert how == "problem and run seed"
    assert list(paired) == ["p1"]
    assert paired["p1"] == [(a[("p1", 0)], b[("p1", 0)]), (a[("p1", 1)], b[("p1", 1)])]
    # errored: p2 (A errored) and p0 (B errored); unpaired: p3 in A, p4 twice in B
    assert counts == {"errored": 2, "errored_problems": 2, "unpaired": 3}


def test_pair_records_by_repeat_order_when_seeds_differ() -> None:
    a = {("q", 0): rec(1), ("q", 1): rec(2), ("p", 0): rec(3)}
    b = {("q", 5): rec(4), ("q", 7): rec(5), ("q", 9): rec(6), ("p", 5): rec(7)}
    paired, how, counts = pair_records(a, b)
    assert how == ("problem and repeat order (run seeds differ: 0,1 vs 5,7,9; the r-th smallest of each "
                   "is paired)")
    assert list(paired) == ["p", "q"]  # sorted problem ids
    assert paired["q"] == [(a[("q", 0)], b[("q", 5)]), (a[("q", 1)], b[("q", 7)])]
    assert counts == {"errored": 0, "errored_problems": 0, "unpaired": 1}  # ("q", 9)


def test_errored_problems_count_problems_not_pairs() -> None:
    a = {("p", 0): rec(1, error="e"), ("p", 1): rec(1, error="e"), ("q", 0): rec(1)}
    b = {("p", 0): rec(1), ("p", 1): rec(1), ("q", 0): rec(1)}
    _, _, counts = pair_records(a, b)
    assert counts == {"errored": 2, "errored_problems": 1, "unpaired": 0}


# -- Effect text and record -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("effect", "text"),
    [
        (Effect(metric="kv", label="KV", kind="ratio", mean_a=1, mean_b=2, value=0.5, low=0.4, high=0.8,
                detectable=True), "KV 2.00x fewer [1.25, 2.50]"),
        (Effect(metric="kv", label="KV", kind="ratio", mean_a=1, mean_b=2, value=0.5, low=0.0, high=0.8,
                detectable=True), "KV 2.00x fewer [1.25, inf]"),
        (Effect(metric="kv", label="KV", kind="ratio", mean_a=3, mean_b=2, value=1.5, low=0.9, high=2.0),
         "KV 1.50x more [0.90, 2.00] (no detectable difference)"),
        (Effect(metric="t", label="wall time", kind="ratio", mean_a=1, mean_b=4, value=0.25, low=0.2, high=0.5,
                detectable=True, fewer="less"), "wall time 4.00x less [2.00, 5.00]"),
        (Effect(metric="kv", label="KV", kind="ratio", mean_a=1, mean_b=1, value=1.0, low=0.5, high=2.0),
         "KV 1.00x more [0.50, 2.00] (no detectable difference)"),
        (Effect(metric="kv", label="KV", kind="ratio", mean_a=2, mean_b=1, value=2.0, note="one problem: no interval"),
         "KV 2.00x more (one problem: no interval)"),
        (Effect(metric="acc", label="accuracy", kind="difference", mean_a=0.5, mean_b=0.6, value=-0.8, low=-3.1,
                high=1.5), "accuracy -0.8 pts [-3.1, +1.5] (no detectable difference)"),
        (Effect(metric="acc", label="accuracy", kind="difference", mean_a=0.5, mean_b=0.6, value=4.0, low=1.0,
                high=7.0, detectable=True), "accuracy +4.0 pts [+1.0, +7.0]"),
        (Effect(metric="acc", label="accuracy", kind="difference", mean_a=0.5, mean_b=0.6, value=2.0),
         "accuracy +2.0 pts (no interval)"),
        (Effect(metric="kv", label="KV", kind="ratio", mean_a=None, mean_b=None, value=None, note="zero in both"),
         "KV n/a (zero in both)"),
    ],
)
def test_effect_text(effect: Effect, text: str) -> None:
    assert effect.text() == text


def test_effect_to_dict() -> None:
    effect = Effect(metric="kv", label="KV", kind="ratio", mean_a=1 / 3, mean_b=2.0, value=1 / 6, low=0.1,
                    high=math.inf, detectable=False, undefined_resamples=3, design_effect=1.23456789)
    assert effect.to_dict() == {
        "metric": "kv", "label": "KV", "kind": "ratio", "mean_a": 0.333333, "mean_b": 2.0, "value": 0.166667,
        "ci": [0.1, None], "detectable": False, "note": None, "undefined_resamples": 3,
        "interval": "cluster bootstrap", "design_effect": 1.234568, "evidence": None, "text": effect.text(),
    }


# -- compare_pair ----------------------------------------------------------------------------------


def test_a_metric_one_arm_does_not_record() -> None:
    a = {("p", 0): rec(10), ("q", 0): rec(20)}
    b = {("p", 0): rec(None), ("q", 0): rec(5)}
    result = compare_pair("A", a, "B", b, metrics=TOKENS)
    assert result.effects["generated_tokens"].note == "not recorded by B (1 of 2 pairs)"
    assert result.effects["generated_tokens"].value is None
    none_b = {("p", 0): rec(None), ("q", 0): rec(None)}
    result = compare_pair("A", a, "B", none_b, metrics=TOKENS)
    assert result.effects["generated_tokens"].note == "not recorded by B"
    result = compare_pair("A", none_b, "B", b, metrics=TOKENS)
    assert result.effects["generated_tokens"].note == "not recorded by A, B (1 of 2 pairs)"
    # neither records it: not part of the comparison
    assert compare_pair("A", none_b, "B", none_b, metrics=TOKENS).effects == {}


@pytest.mark.parametrize(
    ("tokens_a", "tokens_b", "note"),
    [((0, 0), (0, 0), "zero in both: no ratio"), ((0, 0), (1, 2), "zero in A: no ratio"),
     ((1, 2), (0, 0), "zero in B: no ratio")],
)
def test_a_ratio_of_zeros(tokens_a: tuple[int, int], tokens_b: tuple[int, int], note: str) -> None:
    a = {("p", 0): rec(tokens_a[0]), ("q", 0): rec(tokens_a[1])}
    b = {("p", 0): rec(tokens_b[0]), ("q", 0): rec(tokens_b[1])}
    effect = compare_pair("A", a, "B", b, metrics=TOKENS).effects["generated_tokens"]
    assert (effect.value, effect.note) == (None, note)
    assert effect.mean_a == sum(tokens_a) / 2 and effect.mean_b == sum(tokens_b) / 2


def test_one_problem_has_no_interval() -> None:
    a = {("p", 0): rec(30, correct=True), ("p", 1): rec(10, correct=True)}
    b = {("p", 0): rec(10, correct=False), ("p", 1): rec(10, correct=True)}
    result = compare_pair("A", a, "B", b)
    tokens, accuracy = result.effects["generated_tokens"], result.effects["accuracy"]
    assert (tokens.value, tokens.note, tokens.low) == (2.0, "one problem: no interval", None)
    assert (tokens.mean_a, tokens.mean_b) == (20.0, 10.0)
    assert (accuracy.value, accuracy.note, accuracy.interval) == (50.0, "one problem: no interval", "Tango score")
    assert (accuracy.mean_a, accuracy.mean_b) == (1.0, 0.5)
    assert result.problems == 1 and result.pairs == 2
    assert list(result.effects) == ["accuracy", "generated_tokens"]  # in METRICS order


def test_a_ratio_whose_resamples_can_be_zero_over_zero() -> None:
    a = {("p", 0): rec(0), ("q", 0): rec(2)}
    b = {("p", 0): rec(0), ("q", 0): rec(1)}
    effect = compare_pair("A", a, "B", b, metrics=TOKENS, resamples=2000).effects["generated_tokens"]
    # a resample drawing p twice (probability 1/4) is 0/0; every other one is 2/1
    assert effect.value == 2.0
    assert 400 <= effect.undefined_resamples <= 600
    assert (effect.low, effect.high, effect.detectable) == (2.0, 2.0, True)
    assert effect.text() == "generated tokens 2.00x more [2.00, 2.00]"
    assert effect.interval == "cluster bootstrap"


def test_a_bootstrapped_difference() -> None:
    a = {("p", 0): rec(score=3.0), ("q", 0): rec(score=1.0)}
    b = {("p", 0): rec(score=1.0), ("q", 0): rec(score=1.0)}
    effect = compare_pair("A", a, "B", b, metrics=SCORE).effects["score"]
    # Δ = 100 · (2 + 0) / 2; resamples give 200 (p twice), 100 or 0 (q twice, probability 1/4)
    assert (effect.value, effect.mean_a, effect.mean_b) == (100.0, 2.0, 1.0)
    assert (effect.low, effect.high, effect.detectable) == (0.0, 200.0, False)
    assert effect.text() == "score +100.0 pts [+0.0, +200.0] (no detectable difference)"


def test_a_difference_every_resample_agrees_on_has_no_interval() -> None:
    a = {("p", 0): rec(score=2.0), ("q", 0): rec(score=3.0)}
    b = {("p", 0): rec(score=1.0), ("q", 0): rec(score=2.0)}
    effect = compare_pair("A", a, "B", b, metrics=SCORE).effects["score"]
    assert effect.value == 100.0
    assert effect.note == "every resample gave the same difference: no interval"
    assert effect.low is None


def test_binary_accuracy_uses_the_score_interval() -> None:
    a = {(f"p{i}", 0): rec(correct=i < 8) for i in range(10)}
    b = {(f"p{i}", 0): rec(correct=i < 2) for i in range(10)}
    result = compare_pair("A", a, "B", b, metrics=ACCURACY)
    effect = result.effects["accuracy"]
    assert effect.interval == "Tango score" and effect.design_effect == 1.0
    assert effect.value == pytest.approx(60.0)
    assert effect.low is not None and effect.high is not None
    assert 0 < effect.low < 60 < effect.high <= 100 and effect.detectable
    # The line carries what its size could detect (detected here: no size asked of the measured Δ).
    assert effect.evidence == "10 problems detect |Δ| ≥ 48.7 pts with 80% power"
    assert result.verdict == f"A vs B: {effect.text()} — {effect.evidence}"
    record = result.to_dict()
    assert record["excluded"] == {"errored_pairs": 0, "errored_problems": 0, "unpaired": 0}
    assert (record["a"], record["b"], record["paired_by"], record["problems"], record["pairs"]) == (
        "A", "B", "problem and run seed", 10, 10)
    assert record["verdict"] == result.verdict and set(record["effects"]) == {"accuracy"}


def test_no_pairs() -> None:
    result = compare_pair("A", {("p", 0): rec(1)}, "B", {("q", 0): rec(1)})
    assert result.verdict == "A vs B: no paired problems"
    assert result.effects == {} and result.unpaired == 2 and result.pairs == 0
