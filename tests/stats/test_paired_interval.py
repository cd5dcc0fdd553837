"""`ttscale compare`'s accuracy interval: Tango's score interval for paired proportions, never a zero-width point.

With no pair where the arms disagree, the cluster bootstrap resampled to Δ = 0 every time and printed
"accuracy +0.0 pts [+0.0, +0.0]", which read as equality; 60 such pairs still leave about ±6 points.
"""

from __future__ import annotations

from typing import Any

import pytest

from ttscale.comparisons.paired import Arm, CompareOptions, Comparison, markdown
from ttscale.stats.paired import Metric, compare_pair
from ttscale.stats.proportions import tango_interval


def _arm(correct: list[bool], *, seeds: range = range(1), tokens: float = 100.0) -> dict[tuple[str, int], Any]:
    return {(f"p{p}", s): {"id": f"p{p}", "correct": c, "ledger": {"generated_tokens": tokens + p}}
            for p, c in enumerate(correct) for s in seeds}


def test_no_discordant_pair_gives_an_interval_not_equality() -> None:
    right = [p % 3 != 0 for p in range(60)]  # 40 of 60 right, in both arms, problem by problem
    result = compare_pair("A", _arm(right), "B", _arm(right, tokens=150.0))
    accuracy = result.effects["accuracy"]
    assert accuracy.value == 0.0 and accuracy.low is not None and accuracy.high is not None
    assert accuracy.high - accuracy.low > 10  # points: about ±6 either way, not [+0.0, +0.0]
    low, high = tango_interval(0, 0, 60)
    assert (accuracy.low, accuracy.high) == (pytest.approx(100 * low), pytest.approx(100 * high))
    assert not accuracy.detectable and accuracy.interval == "Tango score" and accuracy.design_effect == 1.0
    text = accuracy.text()
    assert text == "accuracy +0.0 pts [-6.0, +6.0] (no detectable difference)"
    assert "equal" not in result.verdict and "[+0.0, +0.0]" not in result.verdict
    assert result.to_dict()["effects"]["accuracy"]["interval"] == "Tango score"


def test_repeats_that_never_disagree_count_as_copies() -> None:
    right = [p % 2 == 0 for p in range(20)]
    accuracy = compare_pair("A", _arm(right, seeds=range(3)), "B", _arm(right, seeds=range(3))).effects["accuracy"]
    # 60 pairs, but from 20 problems whose repeats may be copies of each other: the interval of 20 pairs.
    assert accuracy.design_effect == 3.0 and accuracy.high == pytest.approx(100 * tango_interval(0, 0, 20)[1])


def test_a_planted_accuracy_difference_is_detected() -> None:
    a = [True] * 45 + [False] * 15
    b = [True] * 25 + [False] * 35
    accuracy = compare_pair("A", _arm(a), "B", _arm(b)).effects["accuracy"]
    assert accuracy.value == pytest.approx(100 * 20 / 60) and accuracy.detectable
    assert accuracy.low is not None and 15 < accuracy.low < 100 * 20 / 60 < (accuracy.high or 0) < 50


def test_a_zero_width_bootstrap_difference_is_no_interval() -> None:
    # A difference that is not binary (a score in [0, 1]) keeps the bootstrap; where every resample gives the
    # same difference, no interval is reported rather than a point.
    score = Metric(name="score", label="score", kind="difference", source="record.score",
                   read=lambda r: float(r["score"]))
    a = {(f"p{p}", 0): {"id": f"p{p}", "score": 0.25 + p / 100} for p in range(10)}
    effect = compare_pair("A", a, "B", dict(a), metrics=[score]).effects["score"]
    assert effect.value == 0.0 and effect.low is None and effect.high is None
    assert effect.interval == "cluster bootstrap" and "no interval" in effect.text()


def test_the_printed_method_names_the_score_interval() -> None:
    right = [p % 3 != 0 for p in range(60)]
    a, b = Arm(label="A", records=_arm(right)), Arm(label="B", records=_arm(right))
    data = Comparison((a, b), (compare_pair("A", a.records, "B", b.records),), CompareOptions()).to_dict()
    assert "Tango" in data["method"]["binary_difference"]
    text = markdown(data)
    assert "Tango score interval for paired proportions" in text and '"No detectable difference" is not equality' \
        in text
    assert "| accuracy (difference) | 66.7% | 66.7% | +0.0 pts [-6.0, +6.0] | no detectable difference |" in text
    # A compare.json written before the score interval still renders with its own (bootstrap) description.
    old = {**data, "method": {k: x for k, x in data["method"].items() if k != "binary_difference"}}
    assert markdown(old).splitlines()[2].startswith("Cluster bootstrap over problems (2000 resamples, seed 0)")


def test_the_verdict_line_says_what_its_size_detects_and_what_deciding_would_need() -> None:
    from ttscale.stats.power import Claim, accuracy_power, accuracy_problems, pilot_accuracy

    # 30 problems × 2 repeats; A right on 4 problems B misses (both repeats), B on 2 A misses (one repeat).
    a = {(f"p{p}", s): {"id": f"p{p}", "correct": p < 14, "ledger": {"generated_tokens": 100.0}}
         for p in range(30) for s in range(2)}
    b = {(f"p{p}", s): {"id": f"p{p}", "correct": p < 10 or (p in (20, 21) and s == 0),
                        "ledger": {"generated_tokens": 100.0}} for p in range(30) for s in range(2)}
    result = compare_pair("A", a, "B", b)
    accuracy = result.effects["accuracy"]
    assert not accuracy.detectable and accuracy.evidence is not None
    assert f"{accuracy.text()} — 30 × 2 problems detect |Δ| ≥ " in result.verdict
    measured = pilot_accuracy(only_a=8, only_b=2, pairs=60, problems=30, design_effect=accuracy.design_effect or 1)
    needed = accuracy_problems(Claim(kind="better", value=0.0), measured, 0.8)
    assert needed is not None and needed > 30
    # ... and its compute: 100 generated tokens a side per pair.
    assert accuracy.evidence.endswith(f"; the measured Δ needs {needed} × 2 problems (about "
                                      f"{needed * 2 * 200:.3g} generated tokens, both arms)")
    assert accuracy_power(Claim(kind="better", value=0.0), measured, needed) >= 0.8
    smallest = float(accuracy.evidence.split("|Δ| ≥ ")[1].split(" pts")[0])
    assert 10 < smallest < 50  # the measured 10 points are below it
    # Identical arms: nothing any size could detect.
    same = compare_pair("A", a, "B", dict(a)).effects["accuracy"]
    assert same.evidence is not None and same.evidence.endswith("; no size detects the measured Δ (0)")


def test_a_cost_ratio_says_what_its_problems_tell_from_1() -> None:
    import math

    import numpy as np

    rng = np.random.default_rng(0)
    base = rng.lognormal(5.0, 0.5, 30)
    near = base * rng.lognormal(0.02, 0.2, 30)  # about 2% more, with a fifth of noise per problem
    a = {(f"p{p}", 0): {"id": f"p{p}", "correct": True, "ledger": {"generated_tokens": float(near[p])}}
         for p in range(30)}
    b = {(f"p{p}", 0): {"id": f"p{p}", "correct": True, "ledger": {"generated_tokens": float(base[p])}}
         for p in range(30)}
    tokens = compare_pair("A", a, "B", b).effects["generated_tokens"]
    assert not tokens.detectable and tokens.evidence is not None
    shown = float(tokens.evidence.split("tell ≥ ")[1].split("x")[0])
    spread = float(np.std(near / near.mean() - base / base.mean(), ddof=1))
    assert shown == pytest.approx(math.exp(2.8016 * spread / math.sqrt(30)), rel=0.01)  # (z.975 + z.8)·σ/√n
    distance = abs(math.log(near.sum() / base.sum()))
    needed = math.ceil((2.8016 * spread / distance) ** 2)  # the z-test's n for the measured ratio against 1
    assert needed > 30 and tokens.evidence.endswith(f"; the measured ratio needs {needed} "
                                                                           "problems")
    assert f"{tokens.text()} — {tokens.evidence}" in compare_pair("A", a, "B", b).verdict
    far = {k: {**r, "ledger": {"generated_tokens": 2 * r["ledger"]["generated_tokens"]}} for k, r in a.items()}
    doubled = compare_pair("A", far, "B", b).effects["generated_tokens"]
    assert doubled.detectable and doubled.evidence is not None and "needs" not in doubled.evidence
