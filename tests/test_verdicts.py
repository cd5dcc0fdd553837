"""The verdict rules of benchmarks/findings.py and ets_regime.py (benchmarks/verdicts.py), on synthetic data.

Each rule gets a case that must read "reproduced", one "not reproduced" and one "inconclusive" (the magnitude rule
also its "direction reproduced, magnitude not"); the paired-proportion interval is checked against Tango's own
worked example and at no discordant pair; the vote behind maj@k groups equivalent answers. No engine runs: the
benchmark scripts are imported (their engine starts only in main()).
"""

from __future__ import annotations

import importlib
import json
import math
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from ttscale.stats.metrics import majority_at_k
from ttscale.stats.proportions import paired_proportions, tango_interval

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _benchmark(name: str) -> ModuleType:
    """Import benchmarks/<name>.py (the scripts import their sibling `verdicts` as a top-level module)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


v = _benchmark("verdicts")

# -- synthetic pools (also used by the fail-before check of the report: the same inputs through the old rules) --

RIGHT = "12"


def grade(answer: str | None, _pid: str = "") -> bool:
    """The task grader of these pools: 12 in any spelling is right."""
    return answer is not None and answer.strip() in ("12", "12.0", "12.00")


def pool(right: int, size: int = 32, *, dominant: int = 0, spread: tuple[int, ...] = ()) -> list[str]:
    """One pool: `right` right answers (12 spelled three ways), a wrong answer `dominant` times, wrong answers
    `spread` times each, the rest distinct wrong answers."""
    answers = [("12", "12.0", "12.00")[i % 3] for i in range(right)] + ["7"] * dominant
    for j, times in enumerate(spread):
        answers += [f"{100 + j}"] * times
    answers += [f"{1000 + j}" for j in range(size - len(answers))]
    return answers


def records(pools: list[list[str]]) -> list[list[dict[str, Any]]]:
    """benchmarks/findings.py's records: one repeat, problem i with its pool as samples."""
    return [[{"id": f"p{i}", "samples": [{"answer": a} for a in answers]} for i, answers in enumerate(pools)]]


def never_wins(problems: int = 30) -> list[list[str]]:
    """The right answer once in 32, a wrong one 26 times: every 8-sample vote has ≥ 2 of the wrong one, so maj@8 =
    maj@32 = 0 exactly, while coverage grows from pass@8 = 0.25 to pass@32 = 1."""
    return [pool(1, dominant=26) for _ in range(problems)]


def drawn(rng: np.random.Generator, right: float, size: int = 32, *, wrong: tuple[float, ...] = ()) -> list[str]:
    """A pool of independent samples: 12 (spelled three ways) with probability `right`, wrong answer j with
    probability wrong[j], else a wrong answer no other sample gives."""
    out = []
    for i, u in enumerate(rng.random(size)):
        edges = np.cumsum([right, *wrong])
        j = int(np.searchsorted(edges, u, side="right"))
        out.append(("12", "12.0", "12.00")[i % 3] if j == 0 else f"{100 + j}" if j <= len(wrong) else f"{1000 + i}")
    return out


def plateaued(problems: int = 30, seed: int = 0) -> list[list[str]]:
    """Half the problems easy (12 at rate 0.75, wrong answers scattered: the vote has won by k = 8), half hard
    (12 at rate 0.03 against one wrong answer at 0.9: the vote never finds it)."""
    rng = np.random.default_rng(seed)
    return ([drawn(rng, 0.75) for _ in range(problems // 2)]
            + [drawn(rng, 0.03, wrong=(0.9,)) for _ in range(problems - problems // 2)])


def still_rising(problems: int = 40, seed: int = 1) -> list[list[str]]:
    """12 at rate 0.35 against two wrong answers at 0.2 each: more votes keep helping 12."""
    rng = np.random.default_rng(seed)
    return [drawn(rng, 0.35, wrong=(0.2, 0.2)) for _ in range(problems)]


def curves(pools: list[list[str]], ks: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(maj@k, coverage@k) per problem, as findings.pool_findings computes them."""
    from ttscale.stats.metrics import pass_at_k

    majority = np.array([v.grouped_majority(p, grade, ks) for p in pools])
    cover = np.array([[pass_at_k(n=len(p), c=sum(map(grade, p)), k=k) for k in ks] for p in pools])
    return majority, cover


KS = [1, 2, 4, 8, 16, 32]


def heavy_tail(rng: np.random.Generator, problems: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, correct) of 32-sample pools whose per-problem rates have a long tail toward 0 (Beta(0.2, 2)): coverage
    climbs slowly over every doubling, the shape exp(a·k^b) describes."""
    return np.full(problems, 32), rng.binomial(32, rng.beta(0.2, 2.0, problems))


def ceiling(rng: np.random.Generator, problems: int) -> tuple[np.ndarray, np.ndarray]:
    """Half the problems solved at rate 0.4, half never: coverage flattens at 0.5 within a few doublings."""
    return np.full(problems, 32), rng.binomial(32, np.where(rng.random(problems) < 0.5, 0.4, 0.0))


# -- the paired-proportion interval ----------------------------------------------------------------------


def test_tango_interval_reproduces_the_papers_worked_example() -> None:
    # Tango (1998), Statistics in Medicine 17:891-908, section 6.1 (soft contact lenses, Table V): 44 pairs,
    # a = 43 both effective, b = 0 new only, c = 1 standard only, d = 0. The paper prints, for the margin
    # Δ = 0.1, the score statistic Z = 1.709 (one-sided p = 0.044) and the lower limit −0.096 of the 90% interval.
    low, _ = tango_interval(0, 1, 44, confidence=0.90)
    assert round(low, 3) == -0.096
    # Z(−Δ) = 1.709 means −Δ = −0.1 is the lower limit at the confidence whose z is 1.709.
    at_z = 2 * statistics.NormalDist().cdf(1.709) - 1
    assert tango_interval(0, 1, 44, confidence=at_z)[0] == pytest.approx(-0.1, abs=2e-4)
    # At Δ = 0 the statistic is McNemar's (b − c)/√(b + c) (the paper's section 6.2): 0 is a limit at that z.
    b, c, n = 9, 2, 50
    z = (b - c) / math.sqrt(b + c)
    assert tango_interval(b, c, n, confidence=2 * statistics.NormalDist().cdf(z) - 1)[0] == pytest.approx(0, abs=1e-9)


def test_no_discordant_pair_in_60_still_leaves_several_points_either_way() -> None:
    low, high = tango_interval(0, 0, 60)
    z2 = statistics.NormalDist().inv_cdf(0.975) ** 2
    assert (low, high) == (pytest.approx(-z2 / (60 + z2)), pytest.approx(z2 / (60 + z2)))  # ±6.0 points
    assert high - low > 0.1 and low < -0.05 and high > 0.05
    one_each = paired_proportions([[(1.0, 1.0)]] * 40 + [[(0.0, 0.0)]] * 20)
    assert (one_each.low, one_each.high, one_each.design_effect) == (pytest.approx(low), pytest.approx(high), 1.0)
    # The same 60 pairs as 30 problems × 2 repeats: nothing says the repeats differ, so they count as copies.
    repeats = paired_proportions([[(1.0, 1.0)] * 2] * 20 + [[(0.0, 0.0)] * 2] * 10)
    assert repeats.design_effect == 2.0 and repeats.high == pytest.approx(tango_interval(0, 0, 30)[1])
    # Repeats that disagree within each problem (one pair each way, so every problem's difference sums to 0)
    # carry no cluster effect: they count as the pairs they are (design effect 1, not below it), and the
    # interval is Tango's on the undivided counts.
    split = paired_proportions([[(1.0, 0.0), (0.0, 1.0)]] * 20 + [[(1.0, 1.0), (0.0, 0.0)]] * 10)
    assert (split.only_a, split.only_b, split.pairs, split.design_effect) == (20, 20, 60, 1.0)
    assert (split.low, split.high) == (pytest.approx(tango_interval(20, 20, 60)[0]),
                                       pytest.approx(tango_interval(20, 20, 60)[1]))


# -- the accuracy rules ----------------------------------------------------------------------------------


def test_equal_accuracy_needs_the_whole_interval_inside_the_margin() -> None:
    assert v.equivalent((0.0, -0.004, 0.008)) == v.REPRODUCED
    assert v.equivalent((0.05, 0.02, 0.08)) == v.NOT_REPRODUCED
    assert v.equivalent((-0.05, -0.08, -0.02)) == v.NOT_REPRODUCED
    assert v.equivalent((0.0, -0.06, 0.06)) == v.INCONCLUSIVE
    # From records: 60 problems where both arms agree on every one. The old bootstrap gave [0, 0] here and the
    # old rule read "equal"; the score interval is ±6 points: not evidence of equality.
    both = np.array([[1.0]] * 40 + [[0.0]] * 20)
    same = v.accuracy_difference(both, both)
    assert same[0] == 0 and same[1] < -0.05 and same[2] > 0.05 and v.equivalent(same) == v.INCONCLUSIVE
    # 2,000 problems in full agreement do bound the difference within a point; 40 more right of 200 do not.
    many = np.ones((2000, 1))
    assert v.equivalent(v.accuracy_difference(many, many)) == v.REPRODUCED
    better = np.array([[1.0]] * 100 + [[0.0]] * 100)
    worse = np.array([[1.0]] * 60 + [[0.0]] * 140)
    assert v.equivalent(v.accuracy_difference(better, worse)) == v.NOT_REPRODUCED


def test_not_worse_and_above() -> None:
    assert v.not_worse((0.0, -0.008, 0.01)) == v.REPRODUCED
    assert v.not_worse((-0.1, -0.15, -0.05)) == v.NOT_REPRODUCED
    assert v.not_worse((0.0, -0.06, 0.06)) == v.INCONCLUSIVE
    assert v.above((0.05, 0.01, 0.09), 0) == v.REPRODUCED
    assert v.above((-0.05, -0.09, -0.01), 0) == v.NOT_REPRODUCED
    assert v.above((0.05, -0.01, 0.09), 0) == v.INCONCLUSIVE


# -- the magnitude rule (F5, F6) ----------------------------------------------------------------------------


def test_magnitude_separates_the_direction_from_the_papers_factor() -> None:
    paper = v.PAPER_KV_FACTOR  # 1.8x: reproduced needs the interval at or above √1.8 = 1.34x
    assert v.magnitude((1.9, 1.5, 2.3), paper) == v.REPRODUCED
    # The README's F5 row before this rule: 1.07x [1.01, 1.13] read "reproduced"; it is a cut, far from 1.8x.
    assert v.magnitude((1.07, 1.01, 1.13), paper) == v.DIRECTION_ONLY
    assert v.magnitude((0.8, 0.7, 0.9), paper) == v.NOT_REPRODUCED
    assert v.magnitude((1.05, 0.95, 1.2), paper) == v.NOT_REPRODUCED  # excludes even half the paper's cut
    assert v.magnitude((1.2, 0.9, 1.6), paper) == v.INCONCLUSIVE
    assert v.magnitude((1.4, 1.1, 1.8), paper) == v.DIRECTION_MAGNITUDE_OPEN
    # F6 against 3x (√3 = 1.73x): the README's A* row, tokens 0.69x [0.54, 0.88] = best-of-N/A* 1.45x [1.14, 1.85].
    assert v.magnitude((1 / 0.69, 1 / 0.88, 1 / 0.54), v.PAPER_TOKEN_FACTOR) == v.DIRECTION_MAGNITUDE_OPEN


def test_f5_and_f6_combine_cost_and_accuracy() -> None:
    equal, unknown, worse = (0.0, -0.005, 0.005), (0.0, -0.06, 0.06), (-0.1, -0.15, -0.05)
    assert v.kv_at_equal_accuracy((2.0, 1.7, 2.3), equal).verdict == v.REPRODUCED
    found = v.kv_at_equal_accuracy((1.07, 1.01, 1.13), equal)
    assert found.verdict == v.DIRECTION_ONLY and "paper 1.8x; reproduced needs CI ≥ 1.34x" in found.measured
    assert v.kv_at_equal_accuracy((2.0, 1.7, 2.3), worse).verdict == v.NOT_REPRODUCED
    # The old F5 reading: 1.07x with accuracy "+0.0 pts [+0.0, +0.0]"; with the score interval it is unknown.
    assert v.kv_at_equal_accuracy((1.07, 1.01, 1.13), unknown).verdict == v.INCONCLUSIVE
    assert v.fewer_tokens_at_matching_accuracy((3.2, 2.5, 4.0), (0.02, -0.005, 0.05)).verdict == v.REPRODUCED
    assert v.fewer_tokens_at_matching_accuracy((1.07, 1.02, 1.12), equal).verdict == v.DIRECTION_ONLY
    assert v.fewer_tokens_at_matching_accuracy((3.2, 2.5, 4.0), worse).verdict == v.NOT_REPRODUCED
    assert v.fewer_tokens_at_matching_accuracy((3.2, 2.5, 4.0), unknown).verdict == v.INCONCLUSIVE


def test_f9_deepconf_against_the_papers_52_9_percent_cut() -> None:
    # 52.9% fewer tokens is 2.12x; reproduced needs the ratio's interval wholly at or above √2.12 = 1.46x.
    assert pytest.approx(2.1231, abs=1e-4) == v.PAPER_DEEPCONF_FACTOR
    equal, worse = (0.0, -0.005, 0.005), (-0.08, -0.14, -0.03)

    def f9(tokens: v.Interval, accuracy: v.Interval) -> v.Verdict:
        return v.fewer_tokens_at_matching_accuracy(tokens, accuracy, paper=v.PAPER_DEEPCONF_FACTOR,
                                                   names=("self-consistency", "DeepConf"))

    found = f9((2.3, 1.9, 2.8), equal)
    assert found.verdict == v.REPRODUCED
    assert "self-consistency/DeepConf tokens" in found.measured and "paper 2.12x; reproduced needs CI ≥ 1.46x" in (
        found.measured) and "DeepConf − self-consistency accuracy" in found.measured
    # Synthetic data where it must say "not reproduced": the savings bought with accuracy (stopping the right
    # traces), or no savings at all (every trace above the threshold, nothing stopped).
    assert f9((2.3, 1.9, 2.8), worse).verdict == v.NOT_REPRODUCED
    assert f9((0.97, 0.9, 1.0), equal).verdict == v.NOT_REPRODUCED
    assert f9((1.2, 1.1, 1.3), equal).verdict == v.DIRECTION_ONLY  # fewer tokens, far from the paper's cut
    # Inconclusive: either half undecided; "direction reproduced, magnitude inconclusive" when only the cut's
    # magnitude is open.
    open_accuracy, open_cut = (0.0, -0.11, 0.11), (1.5, 1.2, 1.9)
    assert f9((2.3, 1.9, 2.8), open_accuracy).verdict == v.INCONCLUSIVE
    assert f9((1.3, 0.9, 1.8), equal).verdict == v.INCONCLUSIVE  # no cut shown, nor half the paper's excluded
    assert f9(open_cut, equal).verdict == v.DIRECTION_MAGNITUDE_OPEN
    assert f9(open_cut, worse).verdict == v.NOT_REPRODUCED


# -- F1: the coverage law on held-out k -----------------------------------------------------------------------


def test_f1_law_against_a_ceiling_on_held_out_k() -> None:
    rng = np.random.default_rng(1)
    found = v.coverage_law(*heavy_tail(rng, 100), 32, n_boot=400)
    assert found.verdict == v.REPRODUCED, found
    assert "held-out k=16,32" in found.measured and "fitted on k=1,2,4,8" in found.measured
    # Coverage that levels off at 0.5: the old rule (coverage@32 − coverage@1 > 0) read "reproduced", as it does
    # for every pool; the ceiling predicts k = 16, 32 and the law overshoots.
    found = v.coverage_law(*ceiling(rng, 100), 32, n_boot=400)
    assert found.verdict == v.NOT_REPRODUCED, found
    found = v.coverage_law(*heavy_tail(rng, 5), 32, n_boot=400)
    assert found.verdict == v.INCONCLUSIVE, found


def test_f1_is_inconclusive_when_the_ceiling_fits_as_well_as_the_law() -> None:
    """Every problem solved at rate 0.6: coverage is at 1 by k = 16 and both curves predict it to a fraction of a
    point. The old rule (`above`: CI high < +1 → not reproduced) refuted the law on data that cannot tell the two
    apart."""
    rng = np.random.default_rng(1)
    found = v.coverage_law(np.full(100, 32), rng.binomial(32, np.full(100, 0.6)), 32, n_boot=400)
    assert found.verdict == v.INCONCLUSIVE, found
    assert "not reproduced CI < −1" in found.measured
    assert v.law_rule((0.0, -0.3, 0.2)) == v.INCONCLUSIVE
    assert v.law_rule((0.05, 0.02, 0.08)) == v.REPRODUCED
    assert v.law_rule((-0.05, -0.08, -0.02)) == v.NOT_REPRODUCED


def test_saturating_fit_recovers_its_parameters() -> None:
    k = np.array([1.0, 2.0, 4.0, 8.0])
    s, p = v.saturating_fit((0.6 * (1 - 0.7**k))[None, :], k)
    assert s[0] == pytest.approx(0.6, rel=0.01) and p[0] == pytest.approx(0.3, rel=0.01)


# -- F8: saturation inside the range, and accuracy no longer rising ---------------------------------------------


def coverage_curves(rates: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """coverage@k per problem (problems × KS) of one 32-sample pool drawn at each problem's rate."""
    from ttscale.stats.metrics import pass_at_k

    return np.array([[pass_at_k(n=32, c=int(c), k=k) for k in KS] for c in rng.binomial(32, rates)])


def test_f8_not_reproduced_while_accuracy_still_rises_at_the_largest_n() -> None:
    rising = coverage_curves(np.random.default_rng(0).beta(0.2, 2.0, 60), np.random.default_rng(1))
    # The case: coverage still climbing about 8 points a doubling at the end; the TTSPM fit puts N* inside
    # the range (the old rule's "reproduced"), but the last doubling's gain is wholly above the margin.
    assert np.diff(rising.mean(axis=0))[-2:].min() > 0.06
    found = v.saturation(rising, KS)
    assert found.verdict == v.NOT_REPRODUCED, found
    star_high = float(found.measured.split("]")[0].split(", ")[-1])
    assert star_high <= 32 and "coverage@32 − coverage@16 +" in found.measured  # N* alone would say reproduced


def test_f8_reproduced_and_inconclusive() -> None:
    rng = np.random.default_rng(0)
    flat = coverage_curves(np.where(rng.random(60) < 0.5, 0.4, 0.0), rng)  # levels off at about 0.47 by k = 8
    found = v.saturation(flat, KS)
    assert found.verdict == v.REPRODUCED, found
    few = coverage_curves(np.random.default_rng(2).beta(0.3, 1, 4), np.random.default_rng(12))
    assert v.saturation(few, KS).verdict == v.INCONCLUSIVE  # 4 problems: 14 points of gain, its CI down to 0


def test_f8_rule_on_intervals() -> None:
    flat, rising, open_gain = (0.0, 0.0, 0.004), (0.08, 0.04, 0.12), (0.02, 0.0, 0.06)
    assert v.saturation_rule((6, 6, 7), flat, 32) == v.REPRODUCED
    assert v.saturation_rule((12, 9, 16), rising, 32) == v.NOT_REPRODUCED  # still rising
    assert v.saturation_rule((60, 40, 90), flat, 32) == v.NOT_REPRODUCED  # the saturation point beyond the range
    assert v.saturation_rule((12, 5, 40), flat, 32) == v.INCONCLUSIVE
    assert v.saturation_rule((12, 5, 19), open_gain, 32) == v.INCONCLUSIVE


# -- F2: the grouped vote and its plateau ---------------------------------------------------------------------


def test_majority_at_k_groups_equivalent_answers() -> None:
    answers = ["12", "12.0", "12.00", "7", "7"]
    # Raw strings: three votes of one for 12 against two for 7, so the vote of all five is always 7.
    assert majority_at_k(answers=answers, correct=[grade(a) for a in answers], k=5) == 0
    assert v.vote_groups(answers) == ["12", "12", "12", "7", "7"]
    assert v.grouped_majority(answers, grade, [5]) == [1.0]


def test_vote_groups_count_as_majority_vote_does() -> None:
    from ttscale.kit.selection import majority_vote
    from ttscale.schema import Sample

    pools: list[Sequence[str | None]] = [["x+1", "1+x", "(x+1)", "2x", "2x", "\\frac{1}{2}"],
                                         ["0.5", "1/2", "\\dfrac12", "3", "3", "3"],
                                         ["12", "12.0", "7", "7", None, ""], *plateaued(6)]
    for answers in pools:
        groups = v.vote_groups(answers)
        votes = {g: groups.count(g) for g in groups if g is not None}
        winner = min(votes, key=lambda g: (-votes[g], groups.index(g)))
        samples = [Sample(text="", answer=a, num_tokens=1) for a in answers]
        prediction, totals = majority_vote(samples)
        assert sorted(votes.values()) == sorted(totals.values()), answers
        assert prediction is not None and v.vote_groups([prediction])[0] == winner, answers


def test_f2_plateau_needs_positive_evidence() -> None:
    majority, cover = curves(plateaued(), KS)
    assert v.plateau(majority, cover, KS, n_boot=400).verdict == v.REPRODUCED
    majority, cover = curves(still_rising(), KS)
    found = v.plateau(majority, cover, KS, n_boot=400)
    assert found.verdict == v.NOT_REPRODUCED and "maj@32 − maj@8" in found.measured
    # A pool where the right answer never wins: maj@8 = maj@32 = 0, so the gain's interval is [0, 0] and coverage
    # grows; the old rule ("the gain's interval covers 0") called it a plateau. A floor at 0 is not one.
    majority, cover = curves(never_wins(), KS)
    assert (majority[:, 3] == 0).all() and (majority[:, 5] == 0).all() and (cover[:, 5] > cover[:, 3]).all()
    assert v.plateau(majority, cover, KS, n_boot=400).verdict == v.INCONCLUSIVE
    # Too few problems to bound the gain within ±1 point.
    majority, cover = curves(plateaued(2) + still_rising(2), KS)
    assert v.plateau(majority, cover, KS, n_boot=400).verdict == v.INCONCLUSIVE


def test_the_rules_on_intervals_alone() -> None:
    grows, level = (0.3, 0.2, 0.4), (0.5, 0.4, 0.6)
    assert v.plateau_rule((0.0, -0.005, 0.005), grows, level) == v.REPRODUCED
    assert v.plateau_rule((0.05, 0.02, 0.08), grows, level) == v.NOT_REPRODUCED
    assert v.plateau_rule((-0.05, -0.08, -0.02), grows, level) == v.NOT_REPRODUCED  # falling is no plateau
    assert v.plateau_rule((0.0, -0.03, 0.03), grows, level) == v.INCONCLUSIVE
    assert v.plateau_rule((0.0, 0.0, 0.0), grows, (0.0, 0.0, 0.0)) == v.INCONCLUSIVE  # a floor
    assert v.plateau_rule((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), level) == v.INCONCLUSIVE  # nothing left to find


def test_findings_pool_rows_use_the_rules() -> None:
    findings = _benchmark("findings")
    rows = {name.split()[0]: (verdict, text) for name, verdict, text in
            findings.pool_findings(records(never_wins()), grade, 32)}
    assert rows["F2"][0] == v.INCONCLUSIVE and "votes grouped by equivalence" in rows["F2"][1]
    # F1: one right answer in 32 makes coverage k/32 exactly, a straight line in k, not exp(a·k^b); the ceiling
    # curve s·(1 − (1 − p)^k) follows it closer at the held-out k = 16, 32, so the law is not reproduced. Every
    # problem is the same pool, so each resample of problems gives the same gap: the interval is one point.
    verdict, text = rows["F1"]
    assert verdict == v.NOT_REPRODUCED
    assert text.startswith("fitted on k=1,2,4,8, held-out k=16,32: ")
    gap = re.search(r"ceiling − law ([-+]\d+\.\d) pts \[([-+]\d+\.\d), ([-+]\d+\.\d)\]", text)
    assert gap is not None and gap[1] == gap[2] == gap[3] and float(gap[1]) < -1


# -- ets_regime: the same F5 rule ----------------------------------------------------------------------------


def test_ets_regime_reads_equal_accuracy_by_the_same_rule() -> None:
    from ttscale.comparisons.paired import Arm, CompareOptions, Comparison
    from ttscale.stats.paired import compare_pair

    ets_regime = _benchmark("ets_regime")

    def arm(kv: float) -> dict[tuple[str, int], dict[str, Any]]:
        # 60 problems × 3 repeats, right on the first 20 in both arms: no pair disagrees.
        return {(f"p{p}", s): {"id": f"p{p}", "correct": p < 20, "info": {"rounds": []},
                               "ledger": {"tree": {"reference_kv_tokens": kv * (100 + p), "nodes_per_depth": [1]}}}
                for p in range(60) for s in range(3)}

    rebase, ets = Arm(label="rebase n=16", records=arm(2.0)), Arm(label="ets n=16", records=arm(1.0))
    pair = compare_pair(rebase.label, rebase.records, ets.label, ets.records)
    _, rows = ets_regime.table(Comparison((rebase, ets), (pair,), CompareOptions()), 16, "n=16")
    (row,) = rows
    # KV cut exactly 2x, accuracy identical pair by pair: the old rule (interval [0, 0] within ±1 point) met the
    # goal; the score interval (60 problems, repeats as copies) is ±6 points, so equality is not shown.
    assert row["kv_ratio"] == pytest.approx(2.0) and row["delta_pts"] == 0
    assert row["delta_low"] < -5 and row["delta_high"] > 5
    assert row["verdict"] == v.INCONCLUSIVE and not row["met"]


# -- F7: adaptive routing, from benchmarks/adaptive.py's report -------------------------------------------------


def test_f7_reads_each_outcome_from_the_adaptive_report(tmp_path: Path) -> None:
    findings = _benchmark("findings")

    def row(value: float, low: float | str, high: float | str) -> tuple[str, str, str]:
        report = {"problems": 24, "policies": {
            "oracle (per-problem)": {"ratio": {"value": 9, "ci95_low": 9, "ci95_high": 9}},
            "adaptive, total budget (live runs)": {"ratio": {"value": value, "ci95_low": low, "ci95_high": high}}}}
        path = tmp_path / "benchmark.json"
        path.write_text(json.dumps(report))
        return findings.adaptive_row(str(path))

    name, verdict, text = row(1.6, 1.2, 2.1)
    assert verdict == v.REPRODUCED and name.startswith("F7") and "1.60x [1.20, 2.10] (24 held-out problems)" in text
    assert row(0.7, 0.5, 0.9)[1] == v.NOT_REPRODUCED
    assert row(1.1, 0.8, 1.5)[1] == v.INCONCLUSIVE
    verdict, text = row(2.0, 1.3, "inf")[1:]
    assert verdict == v.REPRODUCED and "[1.30, > max]" in text  # best-of-N's largest budget fell short
    assert findings.adaptive_row(None)[1:] == ("not run", "needs benchmarks/adaptive.py's report: give "
                                                          "--adaptive-report FILE")
    assert findings.adaptive_row(str(tmp_path / "missing.json"))[1] == "not run"


# -- what each row's size could detect, and what would decide it ------------------------------------------------


def test_rows_say_their_size_what_it_detects_and_what_would_decide_them() -> None:
    from ttscale.stats.power import Accuracy, Claim, Ratio, accuracy_problems, pilot_accuracy, ratio_problems

    rng = np.random.default_rng(0)
    # 30 problems × 2 repeats, the two arms alike in accuracy (a fifth of pairs disagree, either way).
    base = rng.random((30, 2)) < 0.5
    flip = rng.random((30, 2)) < 0.2
    sc, dc = base.astype(float), np.where(flip, ~base, base).astype(float)
    tokens_sc = rng.lognormal(6.0, 0.4, 30)
    tokens_dc = tokens_sc / 1.5 * rng.lognormal(0.0, 0.3, 30)
    accuracy = v.accuracy_difference(dc, sc)
    assert accuracy[2] - accuracy[1] > 0.15  # no interval near ±1 point at this size
    found = v.fewer_tokens_at_matching_accuracy(v.ratio_of_means(tokens_sc, tokens_dc), accuracy,
                                                paper=v.PAPER_DEEPCONF_FACTOR, names=("self-consistency", "DeepConf"))
    assert found.verdict == v.INCONCLUSIVE
    cost_text, accuracy_text = found.measured.rsplit(" [", 1)[1].rstrip("]").split(" | ")
    assert accuracy_text.startswith("size 30 × 2; detects a margin of ")
    assert "power at the paper's Δ +0 pts " in accuracy_text
    counts = paired_proportions([list(zip(a, b, strict=True)) for a, b in zip(dc.tolist(), sc.tolist(),
                                                                               strict=True)])
    measured = pilot_accuracy(only_a=counts.only_a, only_b=counts.only_b, pairs=counts.pairs, problems=30,
                              design_effect=counts.design_effect)
    needed = accuracy_problems(Claim(kind="not_worse", value=v.MARGIN),
                               Accuracy(difference=0.0, discordance=measured.discordance, repeats=2,
                                        design_effect=measured.design_effect), 0.8)
    assert needed is not None and needed > 300
    assert accuracy_text.endswith(f"deciding it needs {needed} × 2 problems (80% at the paper's Δ)")
    assert cost_text.startswith("size 30; shows ≥ 1.46x at 80% if the ratio is ")
    assert "power at the paper's 2.12x " in cost_text
    spread = float(np.std(tokens_sc / tokens_sc.mean() - tokens_dc / tokens_dc.mean(), ddof=1))
    ratio = v.ratio_of_means(tokens_sc, tokens_dc)
    assert v.magnitude(ratio, v.PAPER_DEEPCONF_FACTOR) == v.DIRECTION_MAGNITUDE_OPEN  # near 1.46x, either side
    h = math.sqrt(v.PAPER_DEEPCONF_FACTOR)
    planned = ratio_problems(Claim(kind="ratio", value=h), Ratio(ratio=h * math.exp(abs(math.log(ratio[0] / h))),
                                                                       spread=spread), 0.8)
    assert planned is not None and planned > 30
    assert cost_text.endswith(f"deciding it needs {planned} problems (80% at the measured {ratio[0]:.2f}x)")
    # F3/F4's "better": no paper Δ, so the planned size is at the measured Δ.
    better = v.accuracy_evidence(accuracy, Claim(kind="better", value=0.0))
    assert "the paper gives no Δ to compute power at" in better
    # Plain intervals (no outcomes kept) say nothing more: the rules alone stay as they were.
    assert v.accuracy_evidence((0.0, -0.1, 0.1), Claim(kind="better", value=0.0)) == ""
