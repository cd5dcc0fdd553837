"""ttscale.stats.sequential: alpha-spending boundaries, and sequences of looks that keep the false-verdict rate at
α under the null while stopping early under the alternative (2,000 simulated sequences each, seeded)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from ttscale.stats.power import Accuracy, Claim, accuracy_problems
from ttscale.stats.sequential import SequentialPlan, boundaries, simulate, spent

SEQUENCES = 2000
#: α plus three Monte-Carlo standard errors of a rate of α over SEQUENCES.
LIMIT = 0.05 + 3 * math.sqrt(0.05 * 0.95 / SEQUENCES)
NULL = Accuracy(difference=0.0, discordance=0.3, repeats=2, design_effect=1.4)
BETTER = Claim(kind="better", value=0.0)


def test_boundaries_are_lan_demets_published_values() -> None:
    # Five equally spaced looks, one-sided 2.5%: O'Brien-Fleming-like and Pocock-like spending (Lan and DeMets
    # 1983), as gsDesign's sfLDOF and sfLDPocock give them.
    fractions = [0.2, 0.4, 0.6, 0.8, 1.0]
    assert boundaries(fractions) == pytest.approx([4.877, 3.357, 2.680, 2.290, 2.031], abs=0.003)
    assert boundaries(fractions, kind="pocock") == pytest.approx([2.438, 2.427, 2.410, 2.397, 2.386], abs=0.003)
    assert boundaries([1.0]) == pytest.approx([1.96], abs=1e-3)  # one look: the fixed-size test
    assert spent(1.0, 0.025) == pytest.approx(0.025) and spent(1.0, 0.025, "pocock") == pytest.approx(0.025)


def test_under_the_null_looking_after_every_batch_keeps_false_verdicts_at_alpha() -> None:
    plan = SequentialPlan(claim=BETTER, max_problems=200, batch=10)
    result, used = simulate(plan, NULL, sims=SEQUENCES, seed=0)
    false = float(np.mean(result != "inconclusive"))  # Δ = 0: "better" and "worse" are both false verdicts
    assert false <= LIMIT, false
    assert (used[result == "inconclusive"] == 200).all()
    # The same looks at the fixed-size 1.96 every time: about five times α, which is why the boundaries exist.
    naive, _ = simulate(plan, NULL, sims=SEQUENCES, seed=0, critical=[1.96] * len(plan.looks))
    assert float(np.mean(naive != "inconclusive")) > 3 * LIMIT


def test_an_equality_claim_at_its_margin_is_rarely_reproduced() -> None:
    plan = SequentialPlan(claim=Claim(kind="equal", value=0.05), max_problems=1500, batch=100)
    at_margin = Accuracy(difference=0.05, discordance=0.3, repeats=2, design_effect=1.4)
    result, _ = simulate(plan, at_margin, sims=SEQUENCES, seed=3)
    assert float(np.mean(result == "reproduced")) <= 0.025 + 3 * math.sqrt(0.025 * 0.975 / SEQUENCES)


def test_under_the_alternative_it_stops_earlier_than_the_fixed_size_plan() -> None:
    alternative = Accuracy(difference=0.15, discordance=0.35, repeats=2, design_effect=1.4)
    fixed = accuracy_problems(BETTER, alternative, 0.8)
    assert fixed is not None
    plan = SequentialPlan(claim=BETTER, max_problems=fixed, batch=math.ceil(fixed / 10))
    result, used = simulate(plan, alternative, sims=SEQUENCES, seed=2)
    power = float(np.mean(result == "reproduced"))
    saving = 1 - float(used.mean()) / fixed
    assert power >= 0.8 - 0.05, power  # the cap at the fixed size costs a little power, not much
    assert saving > 0.1, (used.mean(), fixed)  # on average a tenth or more of the problems never run
    assert float(np.mean(result == "not reproduced")) < 0.01


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_problems": 1}, "max_problems must be a whole number ≥ 2, got 1"),
    ({"batch": 500}, "batch must be ≤ max_problems (100), got 500"),
    ({"claim": Claim(kind="ratio", value=1.3)}, "a sequential plan tests an accuracy claim"),
    ({"spending": "linear"}, "spending must be one of obrien_fleming, pocock, hsd:GAMMA (GAMMA a number in "
                            "[-40, 40]), got 'linear'"),
])
def test_plans_are_checked_at_construction(kwargs: dict[str, object], message: str) -> None:
    settings: dict[str, object] = {"claim": BETTER, "max_problems": 100, "batch": 10, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        SequentialPlan(**settings)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="information fractions must increase"):
        boundaries([0.5, 0.4, 1.0])
