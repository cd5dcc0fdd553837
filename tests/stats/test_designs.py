"""ttscale.stats.designs: the sequential designs offered, their false-verdict rates, and the recommended design's
expected sizes against issue 63's goals (2,000 simulated sequences of ttscale's own verdict each, seeded)."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from ttscale.stats.designs import LEGACY, RECOMMENDED, Design, design_of, parse_design, recommend
from ttscale.stats.power import Accuracy, Claim
from ttscale.stats.sequential import boundaries, simulate

SEQUENCES = 2000
#: α plus three Monte-Carlo standard errors of a rate of α over SEQUENCES.
LIMIT = 0.05 + 3 * math.sqrt(0.05 * 0.95 / SEQUENCES)
BETTER = Claim(kind="better", value=0.0)
#: The pilot-like setting of the benchmark (benchmarks/sequential.py): 10 points at 30% discordance, two repeats.
PLANNED = Accuracy(difference=0.10, discordance=0.3, repeats=2, design_effect=1.4)
OFFERED = ["obrien_fleming", "pocock", "hsd:-4", "hsd:-2", "hsd:-1", "hsd:0", "hsd:1"]


def test_a_design_is_read_from_its_spec_and_written_back() -> None:
    assert parse_design("pocock") == Design(spending="pocock")
    design = parse_design("hsd:-2, looks=8, first=none, first_spend=0")
    assert design == Design(spending="hsd:-2", looks=8, first=None, first_spend=0.0)
    assert parse_design(design.spec()) == design and parse_design(RECOMMENDED.spec()) == RECOMMENDED
    assert design_of(RECOMMENDED.to_dict()) == RECOMMENDED and design_of(LEGACY.to_dict()) == LEGACY


@pytest.mark.parametrize(("text", "message"), [
    ("", "a design is SPENDING[,looks=K][,first=N][,first_spend=A], got ''"),
    ("linear", "spending must be one of obrien_fleming, pocock, hsd:GAMMA (GAMMA a number in [-40, 40]), got "
               "'linear'"),
    ("hsd:x", "got 'hsd:x'"),
    ("hsd:-50", "got 'hsd:-50'"),
    ("pocock,width=3", "design option 'width=3': give one of looks=, first=, first_spend="),
    ("pocock,looks", "design option 'looks': give one of"),
    ("pocock,looks=2,looks=3", "design option looks given twice"),
    ("pocock,looks=many", "design option looks must be a number, got 'many'"),
    ("pocock,looks=0", "looks must be a whole number ≥ 1, got 0"),
    ("pocock,first=1", "first must be a whole number ≥ 2, got 1"),
    ("pocock,first_spend=0.03", "first_spend must be in [0, 0.025) (the error of one side), got 0.03"),
])
def test_a_bad_design_is_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        parse_design(text)
    assert "\n" not in str(caught.value)


def test_the_schedule_starts_at_the_first_look_and_ends_at_the_cap() -> None:
    looks = RECOMMENDED.schedule(177)
    assert looks[0] == 10 and looks[-1] == 177 and len(looks) == 20
    assert all(b > a for a, b in itertools.pairwise(looks))
    gaps = np.diff(looks[1:])
    assert gaps.max() - gaps.min() <= 1  # equally spaced after the first, to rounding
    assert RECOMMENDED.schedule(25) == tuple(range(10, 26))  # fewer problems than looks: a look at every one
    assert RECOMMENDED.schedule(8) == (8,)  # a cap below the first look: one look, at the cap
    assert LEGACY.schedule(200) == tuple(range(20, 201, 20))  # the looks before designs: every N/10
    assert LEGACY.schedule(45) == (5, 10, 15, 20, 25, 30, 35, 40, 45)


def test_the_first_looks_floor_caps_its_boundary_and_spends_no_more_in_all() -> None:
    fractions = [10 / 200, *np.linspace(10 / 200, 1, 20)[1:]]
    plain = boundaries(fractions, kind="hsd:-1")
    floored = boundaries(fractions, kind="hsd:-1", floor=0.001)
    # Without the floor, ten pairs all one way (T = √10) would not cross the first look at a cap of 200.
    assert plain[0] > math.sqrt(10) > floored[0] and floored[0] == pytest.approx(3.0902, abs=1e-3)  # z of 0.1%
    assert floored[-1] >= plain[-1]  # the error spent early is not spent again at the end


@pytest.mark.parametrize("spending", OFFERED)
def test_every_design_offered_keeps_false_verdicts_at_alpha(spending: str) -> None:
    plan = Design(spending=spending).plan(BETTER, 200)
    null = Accuracy(difference=0.0, discordance=0.3, repeats=2, design_effect=1.4)
    result, _ = simulate(plan, null, sims=SEQUENCES, seed=11)
    false = float(np.mean(result != "inconclusive"))  # Δ = 0: both verdicts are false
    assert false <= LIMIT, (spending, false)


def test_an_equality_claim_at_its_margin_is_rarely_reproduced_under_the_recommended_design() -> None:
    plan = RECOMMENDED.plan(Claim(kind="equal", value=0.05), 1500)
    at_margin = Accuracy(difference=0.05, discordance=0.3, repeats=2, design_effect=1.4)
    result, _ = simulate(plan, at_margin, sims=SEQUENCES, seed=3)
    assert float(np.mean(result == "reproduced")) <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / SEQUENCES)


def test_the_recommended_design_against_the_goals() -> None:
    found = recommend(BETTER, PLANNED, sims=SEQUENCES)
    legacy = recommend(BETTER, PLANNED, design=LEGACY, sims=SEQUENCES)
    assert found is not None and legacy is not None
    fixed = found.fixed_problems
    assert fixed == legacy.fixed_problems and found.power >= 0.8
    assert found.max_problems <= 1.25 * fixed  # goal: the cap within 1.25x the fixed design
    assert found.at["twice"].expected_problems <= 0.35 * fixed  # goal: ≤ 35% at twice the effect
    assert found.false_verdicts() is not None and found.false_verdicts() <= LIMIT  # type: ignore[operator]
    # The goal of 70% at the planned effect is not reached (the designs module says why): 76% was measured; it
    # must stay well under the design before this one, which ran 80% there and 46% at twice the effect.
    planned = found.at["planned"].expected_problems
    assert planned <= 0.80 * fixed and planned < legacy.at["planned"].expected_problems
    assert found.at["twice"].expected_problems < 0.8 * legacy.at["twice"].expected_problems


def test_a_hundred_point_difference_stops_at_the_first_look_whatever_the_cap() -> None:
    always = Accuracy(difference=1.0, discordance=1.0, repeats=2, design_effect=2.0)  # A always right, B never
    for cap in (50, 200, 2000):
        result, used = simulate(RECOMMENDED.plan(BETTER, cap), always, sims=200, seed=0)
        assert set(result) == {"reproduced"} and set(used.tolist()) == {10}, cap
    result, used = simulate(LEGACY.plan(BETTER, 200), always, sims=200, seed=0)
    assert set(used.tolist()) == {40}  # the design before: O'Brien-Fleming-like looks every 20 problems
