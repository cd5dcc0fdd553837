"""ttscale.stats.designs: a design's schedule, words and stored form by hand, and `recommend`'s cap and effects
against the simulations it summarises, each re-run here (issue 60)."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from ttscale.stats.designs import (
    EFFECTS,
    MAX_INFLATION,
    Characteristics,
    Design,
    Recommendation,
    characteristics,
    design_of,
    line_of,
    parse_design,
    recommend,
)
from ttscale.stats.power import Accuracy, Claim
from ttscale.stats.sequential import simulate

BETTER = Claim(kind="better", value=0.0)
SIMS = 300


@pytest.mark.parametrize(("design", "cap", "looks"), [
    (Design(first=None, looks=10), 200, tuple(range(20, 201, 20))),
    (Design(first=None, looks=10), 15, (2, 4, 6, 8, 10, 12, 14, 15)),  # ⌈15/10⌉ = 2 problems a look
    (Design(first=None, looks=4), 10, (3, 6, 9, 10)),
    (Design(first=10, looks=4), 40, (10, 20, 30, 40)),
    (Design(first=10, looks=3), 50, (10, 30, 50)),
    (Design(first=10, looks=20), 15, (10, 11, 12, 13, 14, 15)),
    (Design(first=10, looks=4), 10, (10,)),
    (Design(first=10, looks=1), 100, (100,)),
    (Design(first=None, looks=1), 100, (100,)),
    (Design(first=None, looks=30), 20, tuple(range(2, 21, 2))),  # at least two problems a look
])
def test_the_schedule_by_hand(design: Design, cap: int, looks: tuple[int, ...]) -> None:
    assert design.schedule(cap) == looks
    assert design.plan(BETTER, cap).looks == list(looks)


def test_a_plan_takes_the_design_s_spending_floor_and_schedule_or_a_batch() -> None:
    design = Design(spending="pocock", looks=4, first=10, first_spend=0.002)
    plan = design.plan(Claim(kind="equal", value=0.05), 40, alpha=0.1)
    assert (plan.spending, plan.floor, plan.alpha, plan.looks, plan.batch) == ("pocock", 0.002, 0.1, [10, 20, 30, 40],
                                                                                None)
    batched = design.plan(BETTER, 40, batch=15)
    assert batched.looks == [15, 30, 40] and batched.schedule is None and batched.spending == "pocock"


@pytest.mark.parametrize(("design", "text", "spec"), [
    (Design(), "Hwang-Shih-DeCani γ = -1 alpha spending, 20 looks, the first at 10 problems spending at least 0.1% "
               "per side", "hsd:-1,looks=20,first=10,first_spend=0.001"),
    (Design(spending="obrien_fleming", looks=10, first=None, first_spend=0.0),
     "O'Brien-Fleming-like alpha spending, 10 looks, equally spaced",
     "obrien_fleming,looks=10,first=none,first_spend=0"),
    (Design(spending="pocock", looks=5, first=12, first_spend=0.0025),
     "Pocock-like alpha spending, 5 looks, the first at 12 problems spending at least 0.25% per side",
     "pocock,looks=5,first=12,first_spend=0.0025"),
])
def test_a_design_s_words_and_spec(design: Design, text: str, spec: str) -> None:
    assert design.text() == text
    assert design.spec() == spec
    assert parse_design(spec) == design
    assert design_of(design.to_dict()) == design
    assert design.to_dict() == {"spending": design.spending, "looks": design.looks, "first": design.first,
                                "first_spend": design.first_spend}


def test_a_design_is_parsed_past_spaces_and_in_any_case_of_none() -> None:
    assert parse_design(" pocock , looks = 4 , first = NONE ") == Design(spending="pocock", looks=4, first=None)
    assert parse_design("hsd:2,first_spend=0.002") == Design(spending="hsd:2", first_spend=0.002)
    assert design_of({"spending": "pocock", "looks": "4", "first": "12", "first_spend": "0"}) == Design(
        spending="pocock", looks=4, first=12, first_spend=0.0)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"looks": True}, "looks must be a whole number ≥ 1, got True"),
    ({"looks": 2.0}, "looks must be a whole number ≥ 1, got 2.0"),
    ({"first": 1}, "first must be a whole number ≥ 2, got 1"),
    ({"first_spend": -0.001}, "first_spend must be in [0, 0.025) (the error of one side), got -0.001"),
    ({"first_spend": 0.025}, "first_spend must be in [0, 0.025)"),
    ({"spending": "hsd:41"}, "got 'hsd:41'"),
])
def test_a_bad_design_is_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Design(**kwargs)


def test_the_smallest_designs_are_allowed() -> None:
    assert Design(looks=1, first=2, first_spend=0.0).schedule(5) == (5,)


@pytest.mark.parametrize(("claim", "line"), [(Claim(kind="better", value=0.05), 0.05),
                                             (Claim(kind="not_worse", value=0.05), -0.05),
                                             (Claim(kind="equal", value=0.05), 0.05)])
def test_the_claim_s_line_is_where_it_is_just_false(claim: Claim, line: float) -> None:
    assert line_of(claim) == line


@pytest.mark.parametrize("difference", [0.15, -0.15])
def test_characteristics_summarise_the_simulation(difference: float) -> None:
    plan = Design(first=10, looks=4).plan(BETTER, 40)
    acc = Accuracy(difference=difference, discordance=0.3)
    result, used = simulate(plan, acc, sims=SIMS, seed=4)
    found = characteristics(plan, acc, sims=SIMS, seed=4)
    assert found == Characteristics(difference=difference, expected_problems=float(used.mean()),
                                    reproduced=float(np.mean(result == "reproduced")),
                                    not_reproduced=float(np.mean(result == "not reproduced")))
    assert (found.reproduced if difference > 0 else found.not_reproduced) > 0.2  # each verdict is reached


def test_the_false_verdicts_are_both_verdicts_at_the_line() -> None:
    at = {"line": Characteristics(difference=0.0, expected_problems=30.0, reproduced=0.02, not_reproduced=0.01)}
    rec = Recommendation(design=Design(), fixed_problems=20, max_problems=25, power=0.81, at=at)
    assert rec.false_verdicts() == pytest.approx(0.03)
    assert Recommendation(design=Design(), fixed_problems=20, max_problems=25, power=0.81, at={}).false_verdicts() \
        is None
    saved = rec.to_dict()
    assert saved["false_verdicts"] == 0.03 and saved["power"] == 0.81 and saved["spec"] == Design().spec()
    assert saved["expected_problems"] == {"line": 30.0} and saved["max_problems"] == 25
    assert saved["at"]["line"] == {"difference": 0.0, "expected_problems": 30.0, "reproduced": 0.02,
                                   "not_reproduced": 0.01}


def test_the_cap_recommended_is_the_smallest_with_the_fixed_design_s_power() -> None:
    design = Design(first=10, looks=5)
    acc = Accuracy(difference=0.15, discordance=0.3)
    rec = recommend(BETTER, acc, design=design, sims=SIMS, seed=2, fixed=60)
    assert rec is not None and rec.fixed_problems == 60

    def power(cap: int) -> float:
        return characteristics(design.plan(BETTER, cap), acc, sims=SIMS, seed=2).reproduced

    cap = rec.max_problems
    assert 60 <= cap <= math.ceil(MAX_INFLATION * 60)
    assert power(cap) >= 0.8 and rec.power == power(cap)
    if cap > 60:
        assert power(cap - 1) < 0.8
    # Each effect's difference: the line, half, the planned and twice the planned distance from it.
    for name, factor in EFFECTS:
        if name in rec.at:
            assert rec.at[name].difference == pytest.approx(factor * 0.15)
            assert rec.at[name] == characteristics(design.plan(BETTER, cap),
                                                   Accuracy(difference=factor * 0.15, discordance=0.3), sims=SIMS,
                                                   seed=2)
    assert set(rec.at) == {"line", "half", "planned", "twice"}


def test_a_fixed_size_that_already_has_the_power_is_the_cap() -> None:
    acc = Accuracy(difference=0.3, discordance=0.3)
    rec = recommend(BETTER, acc, design=Design(first=10, looks=3), sims=SIMS, fixed=200)
    assert rec is not None and rec.max_problems == 200
    assert set(rec.at) == {"line", "half", "planned"}  # twice 30 points is beyond a discordance of 0.3


def test_a_cap_that_never_reaches_the_power_stops_at_twice_the_fixed_size() -> None:
    acc = Accuracy(difference=0.05, discordance=0.3)
    rec = recommend(BETTER, acc, design=Design(first=10, looks=3), sims=SIMS, fixed=10)
    assert rec is not None and rec.max_problems == 20 and rec.power < 0.8


def test_an_unreachable_claim_has_no_recommendation() -> None:
    assert recommend(Claim(kind="better", value=0.1), Accuracy(difference=0.05, discordance=0.3), sims=SIMS) is None


def test_a_recommendation_is_stored_at_its_documented_precision() -> None:
    at = {"line": Characteristics(difference=0.0, expected_problems=31.23456, reproduced=0.0123456,
                                  not_reproduced=0.0098765),
          "planned": Characteristics(difference=0.1, expected_problems=20.98765, reproduced=0.8123456,
                                     not_reproduced=0.0012345)}
    rec = Recommendation(design=Design(), fixed_problems=24, max_problems=28, power=0.8123456, at=at)
    assert rec.to_dict() == {
        "design": Design().to_dict(), "spec": Design().spec(), "fixed_problems": 24, "max_problems": 28,
        "power": 0.8123, "false_verdicts": round(0.0123456 + 0.0098765, 4),
        "expected_problems": {"line": 31.2, "planned": 21.0},
        "at": {"line": {"difference": 0.0, "expected_problems": 31.23, "reproduced": 0.0123, "not_reproduced": 0.0099},
               "planned": {"difference": 0.1, "expected_problems": 20.99, "reproduced": 0.8123,
                           "not_reproduced": 0.0012}}}
    assert Recommendation(design=Design(), fixed_problems=24, max_problems=28, power=0.8,
                          at={}).to_dict()["false_verdicts"] is None


def test_an_option_s_value_is_everything_after_its_first_equals_sign() -> None:
    with pytest.raises(ValueError, match=re.escape("design option looks must be a number, got '4=5'")):
        parse_design("pocock,looks=4=5")


def test_a_first_look_may_spend_up_to_one_side_s_error() -> None:
    assert Design(first_spend=0.02).first_spend == 0.02
    assert Design(first_spend=0.0249).first_spend == 0.0249


def test_recommend_sizes_the_fixed_design_itself_with_its_own_simulations() -> None:
    from ttscale.stats.power import accuracy_problems

    acc = Accuracy(difference=0.3, discordance=0.3)
    design = Design(first=5, looks=3)
    # A seed whose fixed size differs from seed 0's: recommend sizes it with its own seed.
    seed = next(s for s in range(1, 30) if accuracy_problems(BETTER, acc, 0.8, sims=100, seed=s)
                != accuracy_problems(BETTER, acc, 0.8, sims=100, seed=0))
    rec = recommend(BETTER, acc, design=design, sims=100, seed=seed)
    assert rec is not None and rec.fixed_problems == accuracy_problems(BETTER, acc, 0.8, sims=100, seed=seed)


def test_a_cap_whose_power_is_exactly_the_target_has_it() -> None:
    # With 10 sequences a power is a multiple of 0.1: find caps whose simulated power is exactly 0.8 (the fixed
    # design's target), which has the power ("reaches"), so recommend stops there.
    design = Design(first=4, looks=3)
    acc = Accuracy(difference=0.25, discordance=0.4)

    def power(cap: int, seed: int) -> float:
        return characteristics(design.plan(BETTER, cap), acc, sims=10, seed=seed).reproduced

    at_fixed = at_high = 0
    for seed in range(40):
        if at_fixed and at_high:
            break
        for fixed in range(6, 30, 3):
            if power(fixed, seed) == pytest.approx(0.8) and not at_fixed:
                rec = recommend(BETTER, acc, design=design, sims=10, seed=seed, fixed=fixed)
                assert rec is not None and rec.max_problems == fixed
                at_fixed += 1
            elif (power(fixed, seed) < 0.8 and power(2 * fixed, seed) == pytest.approx(0.8) and not at_high
                  and any(power(c, seed) >= 0.8 for c in range(fixed + 1, 2 * fixed))):
                rec = recommend(BETTER, acc, design=design, sims=10, seed=seed, fixed=fixed)
                assert rec is not None and rec.max_problems < 2 * fixed  # the search goes on below twice
                at_high += 1
    assert at_fixed and at_high
