"""ttscale.plan and `ttscale plan`: a pilot read from a compare directory (built on the simulator engine, not a
model), from read mode's compare.json and from two run directories; stated assumptions; bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adaptive.sim import SeededSimulator, engine_config
from ttscale.cli import main
from ttscale.comparisons.paired import compare
from ttscale.comparisons.planning import parse_claim, plan, read_pilot
from ttscale.stats.power import Accuracy, Claim, accuracy_problems

STRATEGIES = ["best_of_n n=2 max_tokens=40", "beam width=2 max_tokens=40"]


@pytest.fixture(scope="module")
def pilot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("pilot")
    compare(strategies=STRATEGIES, repeats=2, budget="400", task="arithmetic:1-3", limit=12,
            engine_config=engine_config(tmp), out=tmp / "cmp", engine=SeededSimulator(seed=1), progress=False,
            log=lambda _: None, command=["test"])
    return tmp / "cmp"


def test_a_pilot_gives_what_compare_measured(pilot: Path) -> None:
    data = json.loads((pilot / "compare.json").read_text())
    accuracy = data["pairs"][0]["effects"]["accuracy"]
    tokens = data["pairs"][0]["effects"]["generated_tokens"]
    found = read_pilot(pilot)
    assert (found["problems"], found["pairs"], found["repeats"]) == (12, 24, 2)
    assert 100 * found["difference"] == pytest.approx(accuracy["value"], abs=1e-6)
    assert 1 + found["copy"] == pytest.approx(accuracy["design_effect"], abs=1e-5)  # R = 2: D = 1 + ρ_c
    assert found["ratio"] == pytest.approx(tokens["value"], rel=1e-5)
    records = [json.loads(line) for cell in sorted((pilot / "cells").iterdir())
               for line in (cell / "results.jsonl").read_text().splitlines()]
    per_pair = sum(r["ledger"]["generated_tokens"] for r in records) / 24
    assert found["per_pair"].generated_tokens == pytest.approx(per_pair)
    assert found["per_pair"].wall_seconds is not None and found["per_pair"].eflops is not None


def test_the_plan_scales_the_pilots_compute_by_the_planned_size(pilot: Path) -> None:
    result = plan(pilot=pilot, claims=["not-worse:60", "better:-60"], sims=1000)
    worse, better = result.claims
    assert worse.repeats == 2 and worse.size == 12
    n80, n90 = worse.problems[0.8], worse.problems[0.9]
    assert n80 is not None and n90 is not None and n80 < n90
    assert result.per_pair is not None and result.accuracy is not None
    assert worse.compute[0.9] is not None
    assert worse.compute[0.9].generated_tokens == pytest.approx(result.per_pair.generated_tokens * n90 * 2)
    # Its sizes are the stats module's for the pilot's measured Δ, discordance and design effect.
    assert n80 == accuracy_problems(Claim(kind="not_worse", value=0.6), result.accuracy, 0.8, sims=1000)
    assert "| accuracy: not worse by more than 60 pts |" in result.to_markdown()
    # The same claim in the other words: not worse by 60 points is better by more than −60.
    assert better.problems == worse.problems


def test_read_mode_directories_and_two_runs_give_the_same_plan(pilot: Path, tmp_path: Path) -> None:
    arms = json.loads((pilot / "compare.json").read_text())["arms"]
    cells = [Path(source) for arm in arms for source in arm["sources"]]  # A's runs first, as in the pilot
    compare(runs=cells, out=tmp_path / "read")  # read mode: compare.json only, naming its runs
    assert sorted(p.name for p in (tmp_path / "read").iterdir()) == ["compare.json"]
    base = plan(pilot=pilot, claims=["ratio:0.5"]).to_dict()
    assert plan(pilot=tmp_path / "read", claims=["ratio:0.5"]).to_dict()["claims"] == base["claims"]
    assert plan(pilot=cells, claims=["ratio:0.5"]).to_dict()["claims"] == base["claims"]


def test_stated_assumptions_without_a_pilot() -> None:
    result = plan(difference=0.1, discordance=0.3, repeats=2, design_effect=1.4, claims=["better:0"], sims=1000)
    (row,) = result.claims
    want = accuracy_problems(Claim(kind="better", value=0.0),
                             Accuracy(difference=0.1, discordance=0.3, repeats=2, design_effect=1.4), 0.8, sims=1000)
    assert row.problems[0.8] == want and row.compute[0.8] is None and row.size is None
    # Accuracies alone: the discordance of independent outcomes, the repeats as copies when not told otherwise.
    guessed = plan(accuracy_a=0.6, accuracy_b=0.5, repeats=2, claims=["better:0"], sims=1000)
    assert guessed.accuracy is not None
    assert (guessed.accuracy.difference, guessed.accuracy.discordance) == pytest.approx((0.1, 0.5))
    assert (guessed.accuracy.repeats, guessed.accuracy.design_effect) == (2, 2.0)
    ratio = plan(ratio=1.6, ratio_spread=0.4, claims=["ratio:1.34"], size=30).claims[0]
    assert ratio.problems[0.8] is not None and ratio.power_now is not None and 0 < ratio.power_now < 1


def test_one_claim_may_be_given_alone() -> None:
    alone = plan(difference=0.1, discordance=0.3, claims="better:0", sims=500)
    assert [c.claim for c in alone.claims] == [Claim(kind="better", value=0.0)]


def test_claims_parse_in_points_and_times() -> None:
    assert parse_claim("equal:1") == Claim(kind="equal", value=0.01)
    assert parse_claim("not-worse:2.5") == Claim(kind="not_worse", value=0.025)
    assert parse_claim("ratio:1.34") == Claim(kind="ratio", value=1.34)


def test_one_grammar_serves_plan_and_until_decided() -> None:
    # The sequential path reads accuracy claims exactly as plan does, and refuses a ratio naming what it allows.
    for text in ("better:0", "better:-2", "equal:1", "not-worse:2.5", "not_worse:1"):
        assert parse_claim(text, ratio=False) == parse_claim(text)
    with pytest.raises(ValueError) as refused:
        parse_claim("ratio:1.5", ratio=False, what="--until-decided")
    message = str(refused.value)
    assert message == ("--until-decided: 'ratio:1.5' is a cost ratio, which has no sequential boundary here; "
                       "give better:T, equal:M or not-worse:M (points; better:0 = the first strategy more accurate)")
    assert "\n" not in message
    with pytest.raises(ValueError, match=r"^claim 'equal:0': equal's margin must be in \(0, 100\) points, got 0; "
                                         r"give better:T, equal:M, not-worse:M \(points\) or ratio:H \(times\)$"):
        parse_claim("equal:0")
    with pytest.raises(ValueError, match=r"^'faster:2' is not a claim it can test; give better:T, equal:M, "
                                         r"not-worse:M \(points\) or ratio:H"):
        parse_claim("faster:2")


def test_the_cli_prints_a_plan_and_refuses_bad_input(pilot: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(pilot), "--claim", "not-worse:60", "--sims", "500"]) == 0
    out = capsys.readouterr().out
    assert "problems × repeats for 80%" in out and "× 2 |" in out and "tokens" in out
    assert main(["plan", str(pilot), "--claim", "ratio:0.5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["claims"][0]["problems"]["0.8"] >= 2
    bad = [
        (["plan", str(tmp_path / "missing")], "does not exist"),
        (["plan", str(pilot), "--claim", "worse:1"], "give better:T, equal:M, not-worse:M (points) or ratio:H"),
        (["plan", str(pilot), "--claim", "equal:0"], "equal's margin must be in (0, 100) points, got 0"),
        (["plan", str(pilot), "--claim", "equal:x"], "'x' is not a number"),
        (["plan", "--claim", "better:0"], "give difference (or accuracy_a and accuracy_b) and discordance"),
        (["plan", "--difference", "500", "--discordance", "10"], "--difference is in points or percent"),
        (["plan", "--difference", "5", "--discordance", "10", "--repeats", "2", "--design-effect", "3"],
         "design_effect must be in [1, repeats]"),
        (["plan", str(pilot), "--metric", "bogus"], "metric must be one of"),
        (["plan", str(pilot), "--size", "1"], "size must be a whole number ≥ 2"),
        (["plan", str(next((pilot / "cells").iterdir()))], "a comparison needs at least two arms"),
    ]
    for argv, message in bad:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("ttscale: error: plan: ") and message in err and err.count("\n") == 1, (argv, err)


@pytest.mark.parametrize(("flags", "message"), [
    (["--seed", "-1"], "plan: seed must be a whole number ≥ 0, got -1"),
    (["--repeats", "1000000000"], "plan: repeats must be a whole number in [1, 100], got 1000000000"),
    (["--repeats", "0"], "plan: repeats must be a whole number in [1, 100], got 0"),
    (["--sims", "1000000000000"], "plan: sims must be a whole number in [100, 100,000], got 1000000000000"),
    (["--sims", "100000000"], "plan: sims must be a whole number in [100, 100,000], got 100000000"),
])
def test_plan_refuses_sizes_it_cannot_compute_in_one_line(flags: list[str], message: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # Were an OverflowError, a MemoryError, a run past 90 s and numpy's "expected non-negative integer".
    assert main(["plan", "--difference", "5", "--discordance", "20", *flags]) == 2
    assert capsys.readouterr().err.strip() == f"ttscale: error: {message}"


def test_the_plan_recommends_a_sequential_design_beside_the_fixed_one(capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 63: for each accuracy claim, the recommended design's cap (the fixed design's 80% power kept) and its
    # expected problems by simulation of the verdict; a ratio claim has no sequential design.
    from ttscale.stats.designs import RECOMMENDED, recommend

    assumed = {"difference": 0.10, "discordance": 0.30, "repeats": 2, "design_effect": 1.4}
    result = plan(claims=["better:0", "ratio:1.2"], ratio=1.3, ratio_spread=0.3, sims=2000, **assumed)
    better, ratio = result.claims
    rec = better.sequential
    assert ratio.sequential is None and rec is not None and rec.design == RECOMMENDED
    fixed = better.problems[0.8]
    assert rec.fixed_problems == fixed and fixed < rec.max_problems <= 1.25 * fixed and rec.power >= 0.8
    again = recommend(Claim(kind="better", value=0.0), Accuracy(**assumed), sims=2000, fixed=fixed)
    assert again == rec  # the plan's numbers are the simulation's, seeded
    assert rec.at["twice"].expected_problems < rec.at["planned"].expected_problems < rec.max_problems
    text = result.to_markdown()
    assert f"ttscale compare --until-decided better:0 --max-problems {rec.max_problems} --design " \
           f"{RECOMMENDED.spec()}" in text
    assert f"| better by more than 0 pts | {fixed} | {rec.max_problems} ({rec.max_problems / fixed:.2f}x) |" in text
    assert result.to_dict()["claims"][0]["sequential"]["max_problems"] == rec.max_problems
    pocock = plan(claims=["better:0"], sims=2000, design="pocock", **assumed).claims[0].sequential
    assert pocock is not None and pocock.design.spending == "pocock" and pocock.max_problems > rec.max_problems
    assert main(["plan", "--difference", "10", "--discordance", "30", "--claim", "better:0", "--design",
                 "hsd:x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "plan: spending must be one of obrien_fleming, pocock, hsd:GAMMA" in err[0]
