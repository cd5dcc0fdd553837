"""ttscale.comparisons.planning (issue 60): a plan's sizes are the power module's for the assumptions it states
(each recomputed here), its checks refuse bad input in one line, the pilot's repeats' correlation carries to another
number of repeats as 1 + (R − 1)ρ, and its words (the table, the compute, the detectable effect) are the numbers it
holds. Stated assumptions only: no pilot runs here (test_planning.py reads pilots)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ttscale.comparisons.planning import DEFAULT_CLAIMS, MAX_REPEATS, MAX_SIMS, ClaimPlan, Compute, plan, read_pilot
from ttscale.stats.designs import Design
from ttscale.stats.power import Accuracy, Claim, Ratio, accuracy_power, accuracy_problems, ratio_problems

SIMS = 500


def test_a_stated_plan_s_sizes_are_the_power_module_s() -> None:
    acc = Accuracy(difference=0.1, discordance=0.3, repeats=2, design_effect=1.4)
    result = plan(difference=0.1, discordance=0.3, repeats=2, design_effect=1.4, claims=["better:0", "not-worse:2"],
                  sims=SIMS, size=50, seed=3)
    assert result.accuracy == acc and result.source == "stated assumptions" and result.ratio is None
    for row, claim in zip(result.claims, (Claim(kind="better", value=0.0), Claim(kind="not_worse", value=0.02)),
                          strict=True):
        assert row.claim == claim and row.metric == "accuracy" and row.repeats == 2 and row.size == 50
        assert row.problems == {p: accuracy_problems(claim, acc, p, sims=SIMS, seed=3) for p in (0.8, 0.9)}
        assert row.power_now == accuracy_power(claim, acc, 50, sims=SIMS, seed=3)
        assert row.note is None and row.sequential is not None
        assert row.sequential.fixed_problems == row.problems[0.8]
        assert row.compute == {0.8: None, 0.9: None}  # no pilot: no compute to scale


def test_an_unreachable_claim_is_noted_and_has_no_sequential_design() -> None:
    result = plan(difference=0.02, discordance=0.3, claims=["better:5", "equal:1", "not-worse:1"], sims=SIMS)
    notes = [row.note for row in result.claims]
    assert notes == ["the assumed Δ +2.0 pts is not above +5 pts: no size reproduces it",
                     "the assumed Δ +2.0 pts is not inside ±1 pts: no size reproduces it",
                     None]
    assert [row.sequential is None for row in result.claims] == [True, True, False]
    below = plan(difference=-0.02, discordance=0.3, claims=["not-worse:1"], sims=SIMS).claims[0]
    assert below.note == "the assumed Δ -2.0 pts is not above -1 pts: no size reproduces it"
    assert below.problems == {0.8: None, 0.9: None}


def test_a_ratio_plan_is_the_z_test_s_and_says_when_no_size_reaches_it() -> None:
    result = plan(ratio=1.6, ratio_spread=0.4, claims=["ratio:1.34"], size=30)
    row = result.claims[0]
    assert result.ratio == Ratio(ratio=1.6, spread=0.4) and row.metric == "generated_tokens"
    assert row.problems == {p: ratio_problems(Claim(kind="ratio", value=1.34), Ratio(ratio=1.6, spread=0.4), p)
                            for p in (0.8, 0.9)}
    assert row.sequential is None and row.note is None
    short = plan(ratio=1.2, ratio_spread=0.4, claims=["ratio:1.34"]).claims[0]
    assert short.note == "the assumed ratio 1.2x is not beyond 1.34x" and short.problems[0.8] is None
    assert short.power_now is None and short.detectable is None  # no size to say them for


def test_the_default_cost_claim_points_the_way_the_ratio_does() -> None:
    cheaper = plan(difference=0.1, discordance=0.3, ratio=0.7, ratio_spread=0.3, sims=SIMS)
    assert [row.claim for row in cheaper.claims][-1] == Claim(kind="ratio", value=1 / 1.1)
    dearer = plan(difference=0.1, discordance=0.3, ratio=1.3, ratio_spread=0.3, sims=SIMS)
    assert [row.claim for row in dearer.claims][-1] == Claim(kind="ratio", value=1.1)
    assert [c.kind for c in (row.claim for row in dearer.claims)] == ["better", "equal", "not_worse", "ratio"]
    assert DEFAULT_CLAIMS == ("better:0", "equal:1", "not-worse:1", "ratio:1.1")
    # Named claims are kept as given, whatever the ratio.
    named = plan(ratio=0.7, ratio_spread=0.3, claims=["ratio:1.1"]).claims[0]
    assert named.claim == Claim(kind="ratio", value=1.1) and named.note == "the assumed ratio 0.7x is not beyond 1.1x"


def test_accuracies_give_the_difference_and_independent_outcomes_discordance() -> None:
    result = plan(accuracy_a=0.7, accuracy_b=0.4, claims=["better:0"], sims=SIMS)
    assert result.accuracy is not None
    assert result.accuracy.difference == pytest.approx(0.3)
    assert result.accuracy.discordance == pytest.approx(0.7 * 0.6 + 0.4 * 0.3)
    assert (result.accuracy.repeats, result.accuracy.design_effect) == (1, 1.0)
    told = plan(accuracy_a=0.7, accuracy_b=0.4, discordance=0.35, claims=["better:0"], sims=SIMS)
    assert told.accuracy is not None and told.accuracy.discordance == 0.35


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"claims": []}, "give at least one claim"),
    ({"metric": "accuracy"}, "metric must be one of"),
    ({"sims": 99}, f"sims must be a whole number in [100, {MAX_SIMS:,}], got 99"),
    ({"sims": MAX_SIMS + 1}, f"sims must be a whole number in [100, {MAX_SIMS:,}], got {MAX_SIMS + 1}"),
    ({"sims": True}, "sims must be a whole number"),
    ({"seed": -1}, "seed must be a whole number ≥ 0, got -1"),
    ({"seed": True}, "seed must be a whole number ≥ 0, got True"),
    ({"repeats": 0}, f"repeats must be a whole number in [1, {MAX_REPEATS:,}], got 0"),
    ({"repeats": MAX_REPEATS + 1}, f"repeats must be a whole number in [1, {MAX_REPEATS:,}]"),
    ({"repeats": True}, "repeats must be a whole number"),
    ({"size": 1}, "size must be a whole number ≥ 2, got 1"),
    ({"size": True}, "size must be a whole number ≥ 2, got True"),
    ({"accuracy_a": 0.5}, "give both accuracy_a and accuracy_b, or difference, not a mix"),
    ({"accuracy_a": 0.5, "accuracy_b": 0.4, "difference": 0.1}, "give both accuracy_a and accuracy_b, or difference"),
    ({"accuracy_a": 1.5, "accuracy_b": 0.4, "difference": None},
     "accuracy_a must be in [0, 1] (a proportion), got 1.5"),
    ({"accuracy_a": 0.5, "accuracy_b": -0.1, "difference": None},
     "accuracy_b must be in [0, 1] (a proportion), got -0.1"),
    ({"claims": ["ratio:1.2"]}, "claim ratio ≥ 1.2x: give ratio and ratio_spread, or a pilot that records "
                                "generated_tokens"),
    ({"claims": ["better:0"], "difference": None}, "claim better by more than 0 pts: give difference (or accuracy_a "
                                                   "and accuracy_b) and discordance, or a pilot"),
    ({"design": "linear"}, "spending must be one of"),
])
def test_bad_input_is_refused_in_one_line(kwargs: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"difference": 0.1, "discordance": 0.3, "claims": ["better:0"], "sims": SIMS, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        plan(**settings)
    assert "\n" not in str(caught.value)


def test_the_smallest_settings_are_accepted() -> None:
    result = plan(difference=0.3, discordance=0.3, claims=["better:0"], sims=100, seed=0, repeats=1, size=2)
    assert result.claims[0].size == 2
    # The most repeats a plan sizes for is computed (issue 59's bound of 10,000 still overflowed from R ≈ 1,030).
    assert plan(difference=0.3, discordance=0.3, claims=["better:0"], sims=100, repeats=MAX_REPEATS,
                design_effect=1.0).accuracy.repeats == MAX_REPEATS  # type: ignore[union-attr]


def test_a_design_given_is_the_one_planned() -> None:
    design = Design(spending="pocock", looks=4, first=10)
    for given in (design, design.spec()):
        row = plan(difference=0.2, discordance=0.3, claims=["better:0"], sims=SIMS, design=given).claims[0]
        assert row.sequential is not None and row.sequential.design == design


def test_stated_repeats_without_a_design_effect_are_taken_as_copies() -> None:
    acc = plan(difference=0.1, discordance=0.3, repeats=3, claims=["better:0"], sims=SIMS).accuracy
    assert acc is not None and acc.design_effect == 3.0


# -- the words ----------------------------------------------------------------------------------------------

def test_compute_scales_and_reads_in_the_unit_that_fits() -> None:
    one = Compute(generated_tokens=100.0, eflops=2.0, wall_seconds=0.5)
    assert one.times(30) == Compute(generated_tokens=3000.0, eflops=60.0, wall_seconds=15.0)
    assert one.times(30).text() == "3e+03 tokens, 60 eFLOPs, 15 s"
    assert one.times(480).text() == "4.8e+04 tokens, 960 eFLOPs, 4 min"  # 240 s
    assert one.times(28800).text() == "2.88e+06 tokens, 5.76e+04 eFLOPs, 4 h"  # 14,400 s
    assert one.times(238).text().endswith(", 119 s")  # under 120 s: seconds
    bare = Compute(generated_tokens=10.0, eflops=None, wall_seconds=None)
    assert bare.times(3) == bare.times(3) and bare.times(3).text() == "30 tokens"


@pytest.mark.parametrize(("claim", "detectable", "text"), [
    (Claim(kind="better", value=0.0), 0.0734, "Δ +7.3 pts"),
    (Claim(kind="equal", value=0.01), 0.0456, "margin 4.6 pts"),
    (Claim(kind="not_worse", value=0.01), 0.021, "margin 2.1 pts"),
    (Claim(kind="ratio", value=1.1), 1.2345, "ratio 1.23x"),
    (Claim(kind="better", value=0.0), None, "none in range"),
])
def test_the_detectable_effect_in_words(claim: Claim, detectable: float | None, text: str) -> None:
    row = ClaimPlan(claim=claim, metric="accuracy", repeats=1, problems={0.8: 10, 0.9: None}, size=20, power_now=0.5,
                    detectable=detectable)
    assert row.detectable_text() == text
    saved = row.to_dict()
    assert saved["detectable_text"] == text and saved["problems"] == {"0.8": 10, "0.9": None}
    assert saved["claim"] == claim.kind and saved["value"] == claim.value and saved["text"] == claim.text()
    assert saved["sequential"] is None and saved["compute"] == {} and row.sequential_row() is None


def test_the_markdown_table_holds_the_plan_s_numbers() -> None:
    result = plan(difference=0.1, discordance=0.3, repeats=2, design_effect=1.4, claims=["better:0"], sims=SIMS,
                  size=40)
    row = result.claims[0]
    text = result.to_markdown()
    assert text.startswith("## Plan (stated assumptions)")
    assert "Assumed: accuracy Δ +10.0 pts, discordance 30.0%, 2 repeats, design effect 1.40." in text
    assert (f"| accuracy: better by more than 0 pts | {row.problems[0.8]} × 2 | {row.problems[0.9]} × 2 | — | "
            f"{100 * row.power_now:.0f}% at 40 | {row.detectable_text()} |  |") in text  # type: ignore[operator]
    rec = row.sequential
    assert rec is not None
    assert (f"    ttscale compare --until-decided better:0 --max-problems {rec.max_problems} --design "
            f"{rec.design.spec()} ...") in text
    sequential_row = row.sequential_row()
    assert sequential_row is not None and sequential_row in text
    fixed = rec.fixed_problems
    planned = rec.at["planned"].expected_problems
    assert sequential_row.startswith(f"| better by more than 0 pts | {fixed} | {rec.max_problems} "
                                     f"({rec.max_problems / fixed:.2f}x) | ")
    assert f"| {planned:.1f} ({planned / fixed:.0%}) |" in sequential_row
    assert sequential_row.endswith(f"| {100 * rec.power:.0f}% | {100 * rec.false_verdicts():.1f}% |")  # type: ignore
    one = plan(difference=0.1, discordance=0.3, claims=["better:0"], sims=SIMS).to_markdown()
    assert "1 repeat, design effect 1.00." in one
    ratio = plan(ratio=1.6, ratio_spread=0.4, claims=["ratio:1.34"]).to_markdown()
    assert "Assumed: ratio 1.6x, spread σ 0.4." in ratio and "Sequential" not in ratio


def test_the_plan_as_json() -> None:
    result = plan(difference=0.1, discordance=0.3, ratio=1.6, ratio_spread=0.4, claims=["better:0", "ratio:1.34"],
                  sims=SIMS)
    saved = result.to_dict()
    assert saved["format"] == "ttscale.plan" and saved["alpha"] == 0.05 and saved["source"] == "stated assumptions"
    assert saved["accuracy"] == {"difference": 0.1, "discordance": 0.3, "repeats": 1, "design_effect": 1.0}
    assert saved["ratio"] == {"ratio": 1.6, "spread": 0.4}
    assert [c["claim"] for c in saved["claims"]] == ["better", "ratio"]


def test_a_pilot_that_is_not_there_is_refused(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=re.escape(f"pilot: {str(tmp_path / 'none')!r} does not exist")):
        read_pilot(tmp_path / "none")
    with pytest.raises(ValueError, match="pilot: give a compare directory or two run directories"):
        read_pilot([])
