"""Issue 60's named examples of the evidence layer, each checked against a calculation made here:

1. a sequential `equal:M` comparison driven to "not reproduced" (arms 100 points apart) and to "reproduced" (arms of
   the same accuracy), with the look each one stops at predicted from Tango's score statistic in closed form;
2. a task with fewer problems than a look asks for: that look is the last;
3. the fixed-size "not reproduced" size of `better:T` with T ≠ 0, against a brute-force simulation of the verdict
   rule and against the better:0 size.

The comparisons run on the SIMULATED arithmetic policy (tests.adaptive.sim, not a model, not vLLM). With
p_correct = 1 every value it states is right, so an arm with room for its answer (max_tokens=200) is right on every
problem and one with 2 tokens on none: the paired counts, and so every look's statistic, are known in advance.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest

from tests.adaptive.sim import SeededSimulator, engine_config
from ttscale.comparisons.paired import compare
from ttscale.comparisons.until_decided import FILE, fixed_size
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.stats.power import Claim
from ttscale.stats.sequential import boundaries

#: Right on every problem (p_correct=1, room for the answer) vs right on none (2 tokens hold no answer).
APART = ["best_of_n n=1 max_tokens=200", "best_of_n n=1 max_tokens=2"]
#: Two configurations of one sampler: with p_correct=1 both are right on every problem (the same accuracy, 1.0).
ALIKE = ["self_consistency n=1 max_tokens=200", "self_consistency n=1 max_tokens=200 verifier=arithmetic"]
Z = NormalDist().inv_cdf(0.975)
#: The looks' spending these calculations use: O'Brien-Fleming-like, no floor at the first look.
OBRIEN_FLEMING = "obrien_fleming,first_spend=0"


def tango(b: Any, c: Any, n: Any, delta: float) -> np.ndarray:
    """Tango's (1998) score statistic T(δ) = (b − c − nδ) / √(n (2q̂ + δ(1 − δ))), q̂ the root of
    2n q² + B q + C = 0 with B = −(b + c) + (2n − b + c) δ, C = −c δ (1 − δ) (Stat. Med. 17:891, eqs. 24-26)."""
    b, c, n = (np.asarray(x, dtype=float) for x in (b, c, n))
    big_b = -(b + c) + (2 * n - b + c) * delta
    q = (np.sqrt(big_b * big_b + 8 * n * c * delta * (1 - delta)) - big_b) / (4 * n)
    numerator = b - c - n * delta
    with np.errstate(divide="ignore", invalid="ignore"):
        t = numerator / np.sqrt(n * (2 * q + delta * (1 - delta)))
    return np.where(numerator == 0, 0.0, t)


def until_decided(tmp: Path, strategies: list[str], claim: str, *, cap: int, batch: int, repeats: int = 2,
                  task: str = "arithmetic:1-3", per_level: int | None = None, p_correct: float = 1.0,
                  seed: int = 1) -> tuple[Any, dict[str, Any]]:
    result = compare(strategies=strategies, repeats=repeats, budget="400", task=task,
                     task_options=None if per_level is None else {"per_level": per_level},
                     engine_config=engine_config(tmp), out=tmp / "cmp",
                     engine=SeededSimulator(seed=seed, p_correct=p_correct), progress=False, log=lambda _: None,
                     until_decided=claim, max_problems=cap, batch=batch, design=OBRIEN_FLEMING)
    return result, json.loads((tmp / "cmp" / FILE).read_text())


def records(root: Path) -> dict[str, list[dict[str, Any]]]:
    return {cell.name: [json.loads(line) for line in (cell / "results.jsonl").read_text().splitlines()]
            for cell in sorted((root / "cells").iterdir())}


def looks_of(cap: int, batch: int) -> list[int]:
    return [*range(batch, cap, batch), cap]


def expected_stop(looks: list[int], statistic: Any) -> int:
    """The 1-based look of the first crossing of the O'Brien-Fleming-like boundaries by `statistic(n)` (Lan-DeMets
    boundaries, checked against published values in tests/stats/test_sequential.py); 0: none crosses."""
    critical = boundaries([n / looks[-1] for n in looks], alpha=0.025)
    return next((k + 1 for k, n in enumerate(looks) if statistic(n) >= critical[k]), 0)


# -- 1. equal:M driven to either verdict ---------------------------------------------------------------


def test_equal_claim_on_arms_far_apart_is_not_reproduced_at_the_predicted_look(tmp_path: Path) -> None:
    # Every pair A-only: 2 repeats that never vary are copies (design effect 2), so P problems count as P pairs with
    # b = P, c = 0, and T(+m) = √(P(1 − m)/(1 + m)). "Not reproduced" is the interval wholly above +m: T(+m) > c_k.
    m, cap, batch = 0.10, 60, 6
    looks = looks_of(cap, batch)
    stop = expected_stop(looks, lambda n: float(tango(n, 0, n, m)))
    assert stop == next(k + 1 for k, n in enumerate(looks)
                        if math.sqrt(n * (1 - m) / (1 + m)) > boundaries([x / cap for x in looks], alpha=0.025)[k])
    assert 1 < stop < len(looks)  # neither the first look (overwhelming evidence only) nor the cap
    result, state = until_decided(tmp_path, APART, "equal:10", cap=cap, batch=batch)
    for read in state["looks"]:
        assert (read["only_a"], read["only_b"], read["pairs"]) == (read["pairs"], 0, 2 * read["problems"])
        assert read["statistic"]["T(+10 pts)"] == pytest.approx(float(tango(read["problems"], 0, read["problems"], m)),
                                                                abs=1e-3)
    assert [read["outcome"] for read in state["looks"]] == ["continue"] * (stop - 1) + ["not reproduced"]
    assert state["stopped"]["look"] == stop and state["stopped"]["problems"] == looks[stop - 1]
    assert "equal within ±10 pts not reproduced" in state["stopped"]["why"]
    assert all(len(rows) == looks[stop - 1] for rows in records(tmp_path / "cmp").values())
    assert result.until_decided == state


def test_equal_claim_on_arms_of_one_accuracy_is_reproduced_at_the_predicted_look(tmp_path: Path) -> None:
    # No discordant pair: b = c = 0 and T(∓m) = ±√(P m/(1 − m)) (the interval ±z²/(n + z²) narrowing about 0);
    # "reproduced" is the whole interval inside ±m: T(−m) ≥ c_k and T(+m) ≤ −c_k.
    m, cap, batch = 0.10, 60, 6
    looks = looks_of(cap, batch)
    stop = expected_stop(looks, lambda n: min(float(tango(0, 0, n, -m)), -float(tango(0, 0, n, m))))
    assert stop == expected_stop(looks, lambda n: math.sqrt(n * m / (1 - m)))
    assert 1 < stop < len(looks)
    _, state = until_decided(tmp_path, ALIKE, "equal:10", cap=cap, batch=batch)
    for read in state["looks"]:
        assert (read["only_a"], read["only_b"]) == (0, 0)
        assert read["statistic"]["T(-10 pts)"] == pytest.approx(math.sqrt(read["problems"] * m / (1 - m)), abs=1e-3)
    assert [read["outcome"] for read in state["looks"]] == ["continue"] * (stop - 1) + ["reproduced"]
    assert state["stopped"]["problems"] == looks[stop - 1] < cap
    assert "equal within ±10 pts reproduced" in state["stopped"]["why"]


def test_equal_claim_on_independent_arms_of_one_accuracy_is_reproduced_as_their_records_say(tmp_path: Path) -> None:
    # Arms right 80% of the time each, independently (q ≈ 0.32, one repeat so no design effect): equal:25 with looks
    # every 12 problems up to 120 reproduces in about 99% of such comparisons (ttscale.stats.sequential.simulate).
    # Each look is recomputed here from the arms' records: the counts on the task's first n_k problems, T(∓m).
    m, cap, batch = 0.25, 120, 12
    looks = looks_of(cap, batch)
    critical = boundaries([n / cap for n in looks], alpha=0.025)
    _, state = until_decided(tmp_path, ALIKE, "equal:25", cap=cap, batch=batch, repeats=1, p_correct=0.8)
    cells = records(tmp_path / "cmp")
    (name_a,), (name_b,) = ([n for n in cells if "verifier" not in n], [n for n in cells if "verifier" in n])
    assert "verifier" not in state["arms"][0] and "verifier" in state["arms"][1]
    right_a = {r["id"]: bool(r["correct"]) for r in cells[name_a]}
    right_b = {r["id"]: bool(r["correct"]) for r in cells[name_b]}
    order = [p.id for p in ArithmeticTask(levels=(1, 2, 3)).problems()[:cap]]
    crossed = []
    for k, read in enumerate(state["looks"]):
        ids = order[:looks[k]]
        b = sum(right_a[i] and not right_b[i] for i in ids)
        c = sum(right_b[i] and not right_a[i] for i in ids)
        low, high = float(tango(b, c, len(ids), -m)), float(tango(b, c, len(ids), m))
        assert (read["problems"], read["only_a"], read["only_b"]) == (len(ids), b, c)
        assert (read["statistic"]["T(-25 pts)"], read["statistic"]["T(+25 pts)"]) == pytest.approx((low, high),
                                                                                                    abs=1e-3)
        crossed.append(low >= critical[k] and high <= -critical[k])
    stop = state["stopped"]["look"]
    assert crossed == [False] * (stop - 1) + [True]  # it stopped at the first look whose records decide it
    assert state["stopped"]["outcome"] == "reproduced" and stop > 1
    accuracy_a = sum(right_a[i] for i in order[:looks[stop - 1]]) / looks[stop - 1]
    assert 0.6 < accuracy_a < 0.95  # not the degenerate all-right case of the test above


# -- 2. a task that runs out before a look ---------------------------------------------------------------


def test_a_task_shorter_than_a_look_makes_that_look_the_last(tmp_path: Path) -> None:
    # 7 problems; looks at 5, 10, 15, 20. Look 2 asks for 10 and gets 7: the comparison ends there. The arms agree on
    # every pair (T(0) = 0), so no boundary is crossed: "inconclusive", saying the task ran out.
    result, state = until_decided(tmp_path, ALIKE, "better:0", cap=20, batch=5, task="arithmetic:1", per_level=7)
    assert state["looks_at"] == [5, 10, 15, 20]
    assert [(x["look"], x["problems"], x["outcome"]) for x in state["looks"]] == [(1, 5, "continue"),
                                                                                   (2, 7, "inconclusive")]
    stopped = state["stopped"]
    assert (stopped["look"], stopped["problems"], stopped["outcome"]) == (2, 7, "inconclusive")
    assert "the task's last problem (it has 7, the cap was 20)" in stopped["why"]
    assert "no verdict either way" in stopped["why"]
    assert all(len(rows) == 7 for rows in records(tmp_path / "cmp").values())
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text())["pairs"][0]["problems"] == 7
    assert "Stopped at look 2 of 4 at 7 problems" in result.to_markdown()


def test_a_verdict_can_still_come_at_the_look_where_the_task_runs_out(tmp_path: Path) -> None:
    # The same 7-problem task with the arms 100 points apart: look 2 is the last and reads all 7 problems (14 pairs,
    # all A-only; T(0) = √7 with the copies' design effect 2).
    _, state = until_decided(tmp_path, APART, "better:0", cap=20, batch=5, task="arithmetic:1", per_level=7)
    assert [x["problems"] for x in state["looks"]] == [5, 7]
    final = state["looks"][-1]
    assert (final["only_a"], final["only_b"], final["pairs"]) == (14, 0, 14)
    assert final["statistic"]["T(+0 pts)"] == pytest.approx(math.sqrt(7), abs=1e-3)
    assert state["stopped"]["look"] == 2 and state["stopped"]["outcome"] != "continue"


def test_the_look_where_the_task_runs_out_spends_the_error_left(tmp_path: Path) -> None:
    # Look 1 (5 problems) spent P(Z1 ≥ c1) of the one-sided 2.5%; a final look may spend the rest, so its boundary c
    # satisfies P(Z1 < c1, Z2 ≥ c) = 0.025 − P(Z1 ≥ c1) ≤ P(Z2 ≥ c), i.e. c ≤ z_(1 − (0.025 − P(Z1 ≥ c1))) ≈ 1.96.
    _, state = until_decided(tmp_path, APART, "better:0", cap=20, batch=5, task="arithmetic:1", per_level=7)
    c1 = state["critical_values"][0]
    bound = NormalDist().inv_cdf(1 - (0.025 - (1 - NormalDist().cdf(c1))))
    assert math.sqrt(7) > bound + 0.5  # the data are far past any boundary a last look may use
    final = state["looks"][-1]
    # Within 0.1 of it: re-spending over the looks actually taken (fractions 5/7 and 1) gives 2.00, also right.
    assert final["critical"] <= bound + 0.1, (final["critical"], bound)
    assert state["stopped"]["outcome"] == "reproduced", state["stopped"]["why"]


def test_a_task_that_ends_at_a_look_stops_at_that_look(tmp_path: Path) -> None:
    _, state = until_decided(tmp_path, APART, "better:0", cap=40, batch=10, task="arithmetic:1", per_level=10)
    assert all(len(rows) == 10 for rows in records(tmp_path / "cmp").values())
    sizes = [x["problems"] for x in state["looks"]]
    assert sizes == sorted(set(sizes)), sizes  # no look reads the problems of the look before it again
    assert state["stopped"]["look"] == 1 and "the task's last problem (it has 10" in state["stopped"]["why"]


# -- 3. the fixed-size "not reproduced" size of better:T, T ≠ 0 -------------------------------------------


def simulated_not_reproduced(problems: int, difference: float, discordance: float, line: float, *,
                             sims: int = 20_000, seed: int = 7) -> float:
    """The share of `sims` experiments of `problems` independent pairs (A-only with probability (q + Δ)/2, B-only
    (q − Δ)/2) whose 95% Tango interval lies wholly below `line`: T(line) < −z, the verdict rule's "not reproduced"
    for better:line."""
    only_a, only_b = (discordance + difference) / 2, (discordance - difference) / 2
    counts = np.random.default_rng(seed).multinomial(problems, [only_a, only_b, 1 - only_a - only_b], size=sims)
    return float(np.mean(tango(counts[:, 0], counts[:, 1], problems, line) < -Z))


def smallest_not_reproduced(difference: float, discordance: float, line: float) -> int:
    """The fewest problems whose simulated chance of "not reproduced" reaches 80% (doubling, then bisection)."""
    low, high = 1, 4
    while simulated_not_reproduced(high, difference, discordance, line) < 0.8:
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if simulated_not_reproduced(mid, difference, discordance, line) >= 0.8 else (mid, high)
    return high


#: Measured where a comparison stopped: Δ = (4 − 12)/60 = −13.3 pts, q = 16/60, one pair per problem.
BEHIND = {"only_a": 4, "only_b": 12, "pairs": 60, "paired_problems": 60, "design_effect": 1.0}


@pytest.mark.parametrize("points", [5, 0, -5])
def test_the_not_reproduced_size_of_better_t_matches_a_brute_force_simulation(points: int) -> None:
    plan = fixed_size(Claim(kind="better", value=points / 100), BEHIND)
    assert plan is not None and plan["verdict"] == "not reproduced"
    mine = smallest_not_reproduced(-8 / 60, 16 / 60, points / 100)
    assert plan["problems_80"] == pytest.approx(mine, abs=3 + 0.06 * mine), (plan, mine)


def test_a_higher_bar_needs_fewer_problems_to_be_shown_not_cleared() -> None:
    sizes = {t: fixed_size(Claim(kind="better", value=t / 100), BEHIND) for t in (-5, 0, 5)}
    n = {t: plan["problems_80"] for t, plan in sizes.items() if plan is not None}
    assert n[5] < n[0] < n[-5], n  # the line further above Δ = −13.3: a smaller interval suffices
    # The normal approximation: n ∝ 1/(T − Δ)², so better:5 needs about (13.3/18.3)² of better:0's problems.
    gap = {t: t / 100 + 8 / 60 for t in (-5, 0, 5)}
    assert n[5] / n[0] == pytest.approx((gap[0] / gap[5]) ** 2, rel=0.15)
    assert n[0] / n[-5] == pytest.approx((gap[-5] / gap[0]) ** 2, rel=0.15)


def test_better_t_between_zero_and_the_measured_difference_flips_the_verdict_planned() -> None:
    # Δ = +2 pts: better:0 is on its "reproduced" side, better:5 on its "not reproduced" side; at Δ = T neither.
    ahead = {"only_a": 9, "only_b": 7, "pairs": 100, "paired_problems": 100, "design_effect": 1.0}
    zero, five = (fixed_size(Claim(kind="better", value=t), ahead) for t in (0.0, 0.05))
    assert zero is not None and zero["verdict"] == "reproduced"
    assert five is not None and five["verdict"] == "not reproduced"
    mine = smallest_not_reproduced(0.02, 0.16, 0.05)
    assert five["problems_80"] == pytest.approx(mine, abs=3 + 0.06 * mine), (five, mine)
    on_line = fixed_size(Claim(kind="better", value=0.05), {**ahead, "only_a": 10, "only_b": 5})  # Δ = +5 pts
    assert on_line is not None and on_line["verdict"] is None and on_line["problems_80"] is None
