"""ttscale.stats.sequential's verdict rules, plan checks and end-of-task boundary (issue 60), against Tango's score
statistic written out here and against boundaries whose values are known in closed form: one look that spends the
whole one-sided error is the fixed-size test, z_{1−α/2}. The rules are benchmarks/verdicts.py's as the module states
them: `better:t` is reproduced when T(t) > c and not reproduced when T(t) < −c; `not_worse:m` when T(−m) ≥ c / < −c;
`equal:m` when T(−m) ≥ c and T(m) ≤ −c / T(m) > c or T(−m) < −c."""

from __future__ import annotations

import math
import re
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest

from ttscale.stats.power import Accuracy, Claim
from ttscale.stats.sequential import SequentialPlan, boundaries, check_spending, outcome, simulate, spent

Z = NormalDist().inv_cdf(0.975)
BETTER = Claim(kind="better", value=0.0)


def tango(b: float, c: float, n: float, delta: float) -> float:
    """Tango's (1998) T(δ) = (b − c − nδ) / √(n (2q̂ + δ(1 − δ))), q̂ the root of 2n q² + B q + C = 0, B = −(b + c) +
    (2n − b + c) δ, C = −c δ (1 − δ) (Stat. Med. 17:891, eqs. 24-26)."""
    big_b = -(b + c) + (2 * n - b + c) * delta
    q = (math.sqrt(big_b * big_b + 8 * n * c * delta * (1 - delta)) - big_b) / (4 * n)
    return (b - c - n * delta) / math.sqrt(n * (2 * q + delta * (1 - delta)))


def one(claim: Claim, b: float, c: float, n: float, z: float, *, last: bool = False) -> str:
    return str(outcome(claim, np.array([b]), np.array([c]), np.array([n]), z, last=last)[0])


# -- not_worse: every verdict, from its own statistic T(−m) --------------------------------------------------

@pytest.mark.parametrize(("b", "c"), [(30.0, 10.0), (10.0, 30.0), (15.0, 14.0), (5.0, 30.0), (20.0, 20.0)])
def test_not_worse_is_read_off_t_at_minus_the_margin(b: float, c: float) -> None:
    claim, n, z = Claim(kind="not_worse", value=0.05), 200.0, 2.2
    t = tango(b, c, n, -0.05)
    expected = "reproduced" if t >= z else "not reproduced" if t < -z else "continue"
    assert one(claim, b, c, n, z) == expected
    assert one(claim, b, c, n, z, last=True) == ("inconclusive" if expected == "continue" else expected)


def test_not_worse_reaches_each_verdict() -> None:
    claim, n, z = Claim(kind="not_worse", value=0.05), 200.0, 2.2
    assert one(claim, 30, 10, n, z) == "reproduced"  # T(−5 pts) = 4.6
    assert one(claim, 5, 40, n, z) == "not reproduced"  # T(−5 pts) = −2.3
    assert one(claim, 10, 20, n, z) == "continue"


def test_not_worse_differs_from_equal_where_a_is_far_better() -> None:
    # A far better than B: not worse (reproduced), but not equal within 5 points (not reproduced).
    assert one(Claim(kind="not_worse", value=0.05), 60, 5, 200, Z) == "reproduced"
    assert one(Claim(kind="equal", value=0.05), 60, 5, 200, Z) == "not reproduced"


# -- where the statistic sits exactly on the boundary -------------------------------------------------------

def test_better_needs_t_strictly_beyond_the_boundary_either_way() -> None:
    t = tango(30, 10, 200, 0.0)
    assert one(BETTER, 30, 10, 200, t) == "continue"  # T = c: not above it
    assert one(BETTER, 30, 10, 200, t - 1e-9) == "reproduced"
    t = tango(10, 30, 200, 0.0)
    assert one(BETTER, 10, 30, 200, -t) == "continue"  # T = −c: not below it
    assert one(BETTER, 10, 30, 200, -t - 1e-9) == "not reproduced"


def test_not_worse_is_reproduced_at_the_boundary_and_not_reproduced_only_below_it() -> None:
    claim = Claim(kind="not_worse", value=0.05)
    t = tango(30, 10, 200, -0.05)
    assert one(claim, 30, 10, 200, t) == "reproduced"  # T(−m) = c counts (CI low ≥ −m)
    assert one(claim, 30, 10, 200, t + 1e-9) == "continue"
    t = tango(5, 40, 200, -0.05)
    assert t < 0
    assert one(claim, 5, 40, 200, -t) == "continue"  # T(−m) = −c: not below it
    assert one(claim, 5, 40, 200, -t - 1e-9) == "not reproduced"


def test_equal_is_reproduced_at_both_boundaries_and_not_reproduced_only_beyond_one() -> None:
    claim, b, c, n = Claim(kind="equal", value=0.1), 15.0, 14.0, 200.0
    low, high = tango(b, c, n, -0.1), tango(b, c, n, 0.1)
    assert low > 0 > high
    edge = min(low, -high)  # the binding side: at c = that, one side sits exactly on its boundary
    assert one(claim, b, c, n, edge) == "reproduced"
    assert one(claim, b, c, n, edge + 1e-9) == "continue"
    # Not reproduced: T(m) > c (A far better) or T(−m) < −c (A far worse), strictly.
    b, c = 60.0, 5.0
    high = tango(b, c, n, 0.1)
    assert high > 0
    assert one(claim, b, c, n, high) == "continue"
    assert one(claim, b, c, n, high - 1e-9) == "not reproduced"
    b, c = 5.0, 60.0
    low = tango(b, c, n, -0.1)
    assert low < 0
    assert one(claim, b, c, n, -low) == "continue"
    assert one(claim, b, c, n, -low - 1e-9) == "not reproduced"


def test_a_plan_decides_each_look_with_its_own_boundary_and_the_last_is_inconclusive() -> None:
    plan = SequentialPlan(claim=BETTER, max_problems=40, batch=10)
    critical = plan.critical_values()
    b, c, n = np.array([8.0, 30.0, 2.0]), np.array([2.0, 2.0, 30.0]), np.array([40.0, 40.0, 40.0])
    for look in range(4):
        t = [tango(x, y, 40.0, 0.0) for x, y in zip(b, c, strict=True)]
        rest = "inconclusive" if look == 3 else "continue"
        expected = ["reproduced" if x > critical[look] else "not reproduced" if x < -critical[look] else rest
                    for x in t]
        assert plan.decide(look, b, c, n).tolist() == expected
    # 8 to 2 of 40 pairs: T = 6/√10 = 1.90, inside every boundary (c_4 ≈ 2.01): inconclusive at the last look only.
    assert plan.decide(2, b, c, n).tolist()[0] == "continue"
    assert plan.decide(3, b, c, n).tolist()[0] == "inconclusive"


# -- the plan's checks ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("kwargs", "message"), [
    ({"batch": 1}, "batch must be a whole number ≥ 2, got 1"),
    ({"batch": 2.5}, "batch must be a whole number ≥ 2, got 2.5"),
    ({"batch": True}, "batch must be a whole number ≥ 2, got True"),
    ({"max_problems": 2.5}, "max_problems must be a whole number ≥ 2, got 2.5"),
    ({"batch": None}, "give batch or schedule (the problems at each look), not both or neither"),
    ({"schedule": (5, 10)}, "give batch or schedule (the problems at each look), not both or neither"),
    ({"batch": None, "schedule": ()}, "schedule must be whole numbers of problems increasing from ≥ 1 to "
                                      "max_problems (10), got []"),
    ({"batch": None, "schedule": (2.5, 5, 10)}, "schedule must be whole numbers"),
    ({"batch": None, "schedule": (True, 5, 10)}, "schedule must be whole numbers"),
    ({"batch": None, "schedule": (0, 5, 10)}, "schedule must be whole numbers"),
    ({"batch": None, "schedule": (5, 3, 10)}, "schedule must be whole numbers"),
    ({"batch": None, "schedule": (5, 5, 10)}, "schedule must be whole numbers"),
    ({"batch": None, "schedule": (3, 5, 9)}, "schedule must be whole numbers"),
    ({"claim": Claim(kind="ratio", value=1.3)},
     "a sequential plan tests an accuracy claim (better, equal, not_worse), got a ratio"),
    ({"alpha": 0.0}, "alpha must be in (0, 1), got 0.0"),
    ({"alpha": 1.0}, "alpha must be in (0, 1), got 1.0"),
    ({"floor": 0.025}, "floor must be in [0, alpha/2 = 0.025), got 0.025"),
    ({"floor": -0.001}, "floor must be in [0, alpha/2 = 0.025), got -0.001"),
])
def test_a_bad_plan_is_refused_with_its_reason(kwargs: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"claim": BETTER, "max_problems": 10, "batch": 5, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        SequentialPlan(**settings)


def test_the_smallest_plans_are_allowed() -> None:
    assert SequentialPlan(claim=BETTER, max_problems=2, batch=2).looks == [2]
    assert SequentialPlan(claim=BETTER, max_problems=10, batch=10).looks == [10]
    assert SequentialPlan(claim=BETTER, max_problems=10, batch=3).looks == [3, 6, 9, 10]
    assert SequentialPlan(claim=BETTER, max_problems=10, schedule=(1, 10)).looks == [1, 10]


# -- the end of a task, the spending functions --------------------------------------------------------------

def test_a_task_that_runs_out_at_the_first_look_spends_the_whole_error_there() -> None:
    # One look that spends all of α/2 is the fixed-size test: its boundary is z_{1−α/2}, whatever the spending.
    for spending in ("obrien_fleming", "pocock", "hsd:-1"):
        plan = SequentialPlan(claim=BETTER, max_problems=100, batch=10, spending=spending)
        assert plan.critical_at_end(0, 5) == pytest.approx(Z, abs=1e-6)
        # Look 2 (0-based 1) where the task has exactly the first look's 10 problems: no earlier look came before.
        assert plan.critical_at_end(1, 10) == pytest.approx(Z, abs=1e-6)
    plan = SequentialPlan(claim=BETTER, max_problems=100, batch=10, alpha=0.1)
    assert plan.critical_at_end(0, 5) == pytest.approx(NormalDist().inv_cdf(0.95), abs=1e-6)


def test_a_task_that_runs_out_later_spends_what_the_earlier_looks_left() -> None:
    plan = SequentialPlan(claim=BETTER, max_problems=100, batch=10)
    expected = boundaries([0.1, 0.2, 0.25], alpha=0.025, spend_rest=True)[-1]
    assert plan.critical_at_end(2, 25) == pytest.approx(expected)
    # All the error left is more than the plan's own share at τ = 0.25: a lower boundary than an unplanned look's.
    assert plan.critical_at_end(2, 25) < boundaries([0.1, 0.2, 0.25], alpha=0.025)[-1]


@pytest.mark.parametrize(("tau", "kind", "expected"), [
    (0.5, "obrien_fleming", 2 - 2 * NormalDist().cdf(NormalDist().inv_cdf(1 - 0.0125) / math.sqrt(0.5))),
    (0.5, "pocock", 0.025 * math.log(1 + (math.e - 1) * 0.5)),
    (0.5, "hsd:0", 0.025 * 0.5),
    (0.5, "hsd:-4", 0.025 * (1 - math.exp(4 * 0.5)) / (1 - math.exp(4))),
    (0.3, "hsd:1", 0.025 * (1 - math.exp(-0.3)) / (1 - math.exp(-1))),
])
def test_the_spending_functions_are_their_formulas(tau: float, kind: str, expected: float) -> None:
    assert spent(tau, 0.025, kind) == pytest.approx(expected, rel=1e-12)
    assert spent(1.0, 0.025, kind) == pytest.approx(0.025, rel=1e-12)


@pytest.mark.parametrize("kind", ["hsd:-40", "hsd:40", "hsd:0", "hsd:2.5", "pocock", "obrien_fleming"])
def test_spendings_in_range_are_accepted(kind: str) -> None:
    assert check_spending(kind) == kind


@pytest.mark.parametrize("kind", ["hsd:-40.5", "hsd:41", "hsd:", "hsd:nan", "HSD:1", "hsd-1", "Pocock", ""])
def test_spendings_out_of_range_or_misspelt_are_refused(kind: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"GAMMA a number in [-40, 40]), got {kind!r}")):
        check_spending(kind)


# -- the simulation ------------------------------------------------------------------------------------------

def test_a_simulation_is_seeded_and_runs_2000_sequences_by_default() -> None:
    plan = SequentialPlan(claim=BETTER, max_problems=40, batch=10)
    acc = Accuracy(difference=0.1, discordance=0.3)
    result, used = simulate(plan, acc)
    assert result.shape == used.shape == (2000,)
    again = simulate(plan, acc, seed=0)
    assert np.array_equal(result, again[0]) and np.array_equal(used, again[1])
    other = simulate(plan, acc, seed=1)
    assert not np.array_equal(used, other[1])
    # A sequence stops at a look's size; one that never crosses runs to the cap and reads inconclusive there.
    assert set(used.tolist()) <= {10, 20, 30, 40}
    assert set(result[used < 40].tolist()) <= {"reproduced", "not reproduced"}
    assert np.all(used[result == "inconclusive"] == 40)


@pytest.mark.parametrize("fractions", [[0.5, 0.5, 1.0], [0.0, 0.5, 1.0], [0.5, 1.5], [0.5, 0.4, 1.0], []])
def test_fractions_that_do_not_increase_within_0_1_are_refused(fractions: list[float]) -> None:
    with pytest.raises(ValueError, match=re.escape(f"information fractions must increase in (0, 1], got {fractions}")):
        boundaries(fractions)


@pytest.mark.parametrize("floor", [1.0, 1.5, -0.1])
def test_a_floor_outside_0_1_is_refused(floor: float) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(f"floor must be in [0, 1), got {floor}") + "$"):
        boundaries([0.5, 1.0], floor=floor)


def test_a_spending_that_is_not_text_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="spending must be one of"):
        check_spending(None)  # type: ignore[arg-type]


def test_a_plan_s_floor_may_be_up_to_one_side_s_error() -> None:
    assert SequentialPlan(claim=BETTER, max_problems=10, batch=5, floor=0.02).floor == 0.02


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"batch": None}, "give batch or schedule (the problems at each look), not both or neither"),
    ({"claim": Claim(kind="ratio", value=1.3)},
     "a sequential plan tests an accuracy claim (better, equal, not_worse), got a ratio"),
])
def test_a_plan_s_refusals_in_full(kwargs: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"claim": BETTER, "max_problems": 10, "batch": 5, **kwargs}
    with pytest.raises(ValueError) as caught:
        SequentialPlan(**settings)
    assert str(caught.value) == message
