"""ttscale.stats.power against independent calculations (issue 60): the planned size of `better:0` with one pair per
problem against McNemar's closed-form size (Connor 1987), the problem types' design effect against 1 + (R − 1)ρ and
against repeats simulated as correlated copies, `tables` against `paired_proportions` on the same records, and the
ratio claims' delta-method z-test against its formulas written out (Φ, not statsmodels)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from ttscale.stats.power import (
    Accuracy,
    Claim,
    Ratio,
    accuracy_problems,
    accuracy_reachable,
    decided,
    pilot_accuracy,
    problem_types,
    ratio_detectable,
    ratio_power,
    ratio_problems,
    tables,
    tango_score,
)
from ttscale.stats.proportions import paired_proportions

N = NormalDist()
Z = N.inv_cdf(0.975)


def mcnemar_size(difference: float, discordance: float, power: float) -> float:
    """Connor (1987, Biometrics 43:207): n = (z_{α/2}·√q + z_β·√(q − Δ²))² / Δ² problems, one pair each."""
    zb = N.inv_cdf(power)
    return (Z * math.sqrt(discordance) + zb * math.sqrt(discordance - difference**2)) ** 2 / difference**2


@pytest.mark.parametrize(("difference", "discordance"), [(0.1, 0.3), (0.15, 0.35), (0.2, 0.5)])
def test_better_0_with_one_pair_a_problem_is_mcnemar_s_size(difference: float, discordance: float) -> None:
    # Tango's statistic at δ = 0 is McNemar's score statistic (b − c)/√(b + c): the simulated size is Connor's
    # closed form up to the simulation's noise (4,000 experiments a size) and the normal approximation's.
    acc = Accuracy(difference=difference, discordance=discordance)
    n = accuracy_problems(Claim(kind="better", value=0.0), acc, 0.8)
    assert n is not None
    expected = mcnemar_size(difference, discordance, 0.8)
    assert abs(n - expected) <= 0.08 * expected + 2, (n, expected)


def test_tango_at_zero_is_mcnemar_s_statistic() -> None:
    b, c = np.array([30.0, 12.0, 5.0]), np.array([10.0, 12.0, 9.0])
    n = np.array([100.0, 80.0, 40.0])
    assert np.allclose(tango_score(b, c, n, 0.0), (b - c) / np.sqrt(b + c))


@pytest.mark.parametrize(("repeats", "design"), [(1, 1.0), (2, 1.0), (2, 1.5), (3, 2.2), (4, 4.0)])
def test_the_problem_types_have_the_design_effect_and_the_discordance_assumed(repeats: int, design: float) -> None:
    # Copies with probability ρ = (D − 1)/(R − 1): Var(s_p) = R σ² (1 + (R − 1) ρ), σ² = q − Δ² the variance of one
    # pair's x_A − x_B; and each pair is A-only with probability (q + Δ)/2, B-only with (q − Δ)/2.
    acc = Accuracy(difference=0.1, discordance=0.3, repeats=repeats, design_effect=design)
    only_a, only_b, weights = problem_types(acc)
    assert weights.sum() == pytest.approx(1.0)
    assert float(weights @ only_a) / repeats == pytest.approx((0.3 + 0.1) / 2)
    assert float(weights @ only_b) / repeats == pytest.approx((0.3 - 0.1) / 2)
    s = only_a - only_b
    variance = float(weights @ s**2) - float(weights @ s) ** 2
    assert variance / (repeats * (0.3 - 0.1**2)) == pytest.approx(design)


def test_correlated_repeats_simulated_as_copies_give_the_design_effect_1_plus_r_minus_1_rho() -> None:
    # Records drawn here (not through problem_types): each problem's R pairs are one draw copied (probability ρ)
    # or R independent draws; paired_proportions' estimate over many problems is 1 + (R − 1)ρ.
    rng = np.random.default_rng(60)
    repeats, rho, problems = 3, 0.4, 6000
    outcomes = [(1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (0.0, 0.0)]
    probs = [0.2, 0.1, 0.5, 0.2]
    rows = []
    for _ in range(problems):
        if rng.random() < rho:
            rows.append([outcomes[rng.choice(4, p=probs)]] * repeats)
        else:
            rows.append([outcomes[i] for i in rng.choice(4, size=repeats, p=probs)])
    found = paired_proportions(rows)
    assert found.design_effect == pytest.approx(1 + (repeats - 1) * rho, abs=0.08)


def test_tables_divides_the_counts_by_the_design_effect_paired_proportions_estimates() -> None:
    # Random experiments, counted by problem type: tables' (b, c, K)/D is paired_proportions' on the same problems.
    acc = Accuracy(difference=0.1, discordance=0.4, repeats=3, design_effect=2.0)
    only_a, only_b, weights = problem_types(acc)
    rng = np.random.default_rng(7)
    counts = rng.multinomial(25, weights, size=6).astype(float)
    b, c, k = tables(acc, counts)
    for row, bb, cc, kk in zip(counts, b, c, k, strict=True):
        problems = []
        for t, many in enumerate(row):
            i, j = int(only_a[t]), int(only_b[t])
            pairs = [(1.0, 0.0)] * i + [(0.0, 1.0)] * j + [(1.0, 1.0)] * (3 - i - j)
            problems += [pairs] * int(many)
        found = paired_proportions(problems)
        assert (bb, cc, kk) == pytest.approx((found.only_a / found.design_effect, found.only_b / found.design_effect,
                                              found.pairs / found.design_effect))


def test_a_ratio_claim_is_not_read_as_an_accuracy_claim() -> None:
    one = np.array([1.0])
    with pytest.raises(ValueError, match="not an accuracy claim"):
        decided(Claim(kind="ratio", value=1.5), one, one, one)


@pytest.mark.parametrize(("claim", "difference", "reachable"), [
    (Claim(kind="better", value=0.05), 0.05, False), (Claim(kind="better", value=0.05), 0.06, True),
    (Claim(kind="equal", value=0.05), 0.05, False), (Claim(kind="equal", value=0.05), -0.04, True),
    (Claim(kind="not_worse", value=0.05), -0.05, False), (Claim(kind="not_worse", value=0.05), -0.04, True)])
def test_a_claim_is_reachable_only_with_the_difference_strictly_on_its_side(claim: Claim, difference: float,
                                                                            reachable: bool) -> None:
    assert accuracy_reachable(claim, Accuracy(difference=difference, discordance=0.3)) is reachable


def test_a_pilot_reads_its_counts_as_planning_assumptions() -> None:
    # 30 A-only and 10 B-only of 200 pairs over 100 problems: Δ = 0.1, q = 0.2, R = 2, D as measured (kept in [1, R]).
    acc = pilot_accuracy(only_a=30, only_b=10, pairs=200, problems=100, design_effect=1.3)
    assert acc == Accuracy(difference=0.1, discordance=0.2, repeats=2, design_effect=1.3)
    assert pilot_accuracy(only_a=30, only_b=10, pairs=200, problems=100, design_effect=5.0).design_effect == 2.0
    assert pilot_accuracy(only_a=30, only_b=10, pairs=200, problems=100, design_effect=0.5).design_effect == 1.0
    # No discordant pair: the rule of three's 3/K, not 0.
    none = pilot_accuracy(only_a=0, only_b=0, pairs=60, problems=60, design_effect=1.0)
    assert (none.difference, none.discordance, none.repeats) == (0.0, 3 / 60, 1)
    assert pilot_accuracy(only_a=30, only_b=10, pairs=200, problems=100, design_effect=1.0,
                          difference=0.05).difference == 0.05


# -- ratios: the one-sample z-test of log ρ, written out -------------------------------------------------------

@pytest.mark.parametrize(("h", "rho", "spread"), [(1.34, 1.6, 0.5), (0.8, 0.6, 0.4), (1.1, 1.3, 0.9)])
def test_a_ratio_s_power_and_size_are_the_z_test_s(h: float, rho: float, spread: float) -> None:
    claim, cost = Claim(kind="ratio", value=h), Ratio(ratio=rho, spread=spread)
    d = abs(math.log(rho) - math.log(h)) / spread  # toward the claim's side in both directions here
    for n in (5, 20, 60):
        assert ratio_power(claim, cost, n) == pytest.approx(N.cdf(d * math.sqrt(n) - Z), abs=1e-6)
    n80 = ratio_problems(claim, cost, 0.8)
    assert n80 == max(2, math.ceil(((Z + N.inv_cdf(0.8)) / d) ** 2))
    assert ratio_power(claim, cost, n80) >= 0.8 > ratio_power(claim, cost, n80 - 1)
    # The ratio that n80 problems detect at 80% is h·e^{±(z + z_β)σ/√n}.
    step = (Z + N.inv_cdf(0.8)) * spread / math.sqrt(n80)
    assert ratio_detectable(claim, spread, n80) == pytest.approx(h * math.exp(step if h > 1 else -step), rel=1e-4)


def test_a_ratio_on_the_wrong_side_of_h_has_no_size_and_a_huge_effect_needs_two_problems() -> None:
    assert ratio_problems(Claim(kind="ratio", value=1.5), Ratio(ratio=1.2, spread=0.3), 0.8) is None
    assert ratio_problems(Claim(kind="ratio", value=0.8), Ratio(ratio=0.9, spread=0.3), 0.8) is None
    assert ratio_problems(Claim(kind="ratio", value=1.5), Ratio(ratio=1.5, spread=0.3), 0.8) is None
    assert ratio_problems(Claim(kind="ratio", value=1.1), Ratio(ratio=20.0, spread=0.1), 0.8) == 2


# -- compare's words on a difference's and a ratio's size ------------------------------------------------------

def test_a_difference_s_words_name_what_its_problems_detect_and_what_the_measured_one_needs() -> None:
    from ttscale.stats.power import accuracy_detectable, difference_evidence

    acc = Accuracy(difference=-0.05, discordance=0.3, repeats=2, design_effect=1.5)
    mirrored = Accuracy(difference=0.05, discordance=0.3, repeats=2, design_effect=1.5)  # either way: |Δ|
    either = Claim(kind="better", value=0.0)
    smallest = accuracy_detectable(either, mirrored, 40)
    needed = accuracy_problems(either, mirrored, 0.8)
    assert smallest is not None and needed is not None and needed > 40
    head = f"40 × 2 problems detect |Δ| ≥ {100 * smallest:.1f} pts with 80% power"
    assert difference_evidence(acc, 40, detectable=True) == head
    assert difference_evidence(acc, 40, detectable=False) == f"{head}; the measured Δ needs {needed} × 2 problems"
    assert difference_evidence(acc, 40, detectable=False, tokens_per_pair=150.0) == (
        f"{head}; the measured Δ needs {needed} × 2 problems (about {needed * 2 * 150.0:.3g} generated tokens, "
        "both arms)")
    assert difference_evidence(acc, 40, detectable=True, tokens_per_pair=150.0) == head
    one = Accuracy(difference=0.0, discordance=0.2)
    text = difference_evidence(one, 40, detectable=False, tokens_per_pair=150.0)
    assert text.startswith("40 problems detect |Δ| ≥ ") and text.endswith("; no size detects the measured Δ (0)")


def test_a_ratio_s_words_are_the_z_test_s_on_the_measured_spread() -> None:
    import statistics

    from ttscale.stats.power import ratio_evidence

    a = [10.0, 12.0, 9.0, 15.0, 11.0, 13.0, 8.0, 14.0]
    b = [9.0, 10.0, 9.5, 11.0, 10.0, 12.0, 9.0, 10.5]
    n = len(a)
    sigma = statistics.stdev(x / statistics.fmean(a) - y / statistics.fmean(b) for x, y in zip(a, b, strict=True))
    shown = math.exp((Z + N.inv_cdf(0.8)) / math.sqrt(n) * sigma)
    head = f"{n} problems tell ≥ {shown:.2f}x or ≤ {1 / shown:.2f}x from 1 at 80% power"
    assert ratio_evidence(np.array(a), np.array(b), detectable=True) == head
    distance = abs(math.log(sum(a) / sum(b)))
    needed = max(2, math.ceil(((Z + N.inv_cdf(0.8)) * sigma / distance) ** 2))
    assert ratio_evidence(a, b, detectable=False) == f"{head}; the measured ratio needs {needed} problems"  # type: ignore[arg-type]
    same = [10.0, 12.0, 9.0, 15.0]
    assert ratio_evidence(np.array(same), np.array(same[::-1]), detectable=False).endswith(  # type: ignore[union-attr]
        "; no size tells the measured ratio (1.00x) from 1")
    assert ratio_evidence(np.array(same), 2 * np.array(same), detectable=True) is None  # a constant ratio: told
    assert ratio_evidence(np.array([3.0]), np.array([2.0]), detectable=True) is None  # one problem: no spread
