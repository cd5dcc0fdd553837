"""`ttscale compare --until-decided`: looks after every batch, the stop recorded with its reason, resume after a
kill, and bad input refused in one line. The run flow is on the SIMULATED arithmetic policy (tests.adaptive.sim,
not a model); the boundaries' error rates are tests/stats/test_sequential.py's; two slow tests run the real engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.adaptive.sim import SeededSimulator, engine_config
from ttscale.cli import main
from ttscale.comparisons.paired import COMPARE, compare
from ttscale.comparisons.until_decided import FILE

#: Clearly different: a 2-token sample cannot hold an answer.
DIFFERENT = ["best_of_n n=1 max_tokens=40", "best_of_n n=1 max_tokens=2"]
#: The same samples and answers (one sample: the weighted vote is that sample's answer), two configurations.
SAME = ["self_consistency n=1 max_tokens=40", "self_consistency n=1 max_tokens=40 verifier=arithmetic"]


def sequential(tmp: Path, strategies: list[str], *, claim: str = "better:0", cap: int = 60, batch: int = 6,
               log: Any = None, engine: Any = None) -> Any:
    return compare(strategies=strategies, repeats=2, budget="400", task="arithmetic:1-3",
                   engine_config=engine_config(tmp), out=tmp / "cmp", engine=engine or SeededSimulator(seed=1),
                   progress=False, log=log or (lambda _: None), until_decided=claim, max_problems=cap, batch=batch)


def cell_records(root: Path) -> dict[str, list[str]]:
    """Each cell's problem ids, one per results line (a problem run twice would show twice)."""
    return {cell.name: [json.loads(line)["id"] for line in (cell / "results.jsonl").read_text().splitlines()]
            for cell in sorted((root / "cells").iterdir())}


def test_clearly_different_strategies_stop_early_and_say_which_look_and_why(tmp_path: Path) -> None:
    result = sequential(tmp_path, DIFFERENT)
    state = json.loads((tmp_path / "cmp" / FILE).read_text())
    stopped = state["stopped"]
    assert stopped["outcome"] == "reproduced" and stopped["look"] < len(state["looks_at"])
    assert stopped["problems"] == state["looks_at"][stopped["look"] - 1] < 60
    assert [x["look"] for x in state["looks"]] == list(range(1, stopped["look"] + 1))
    assert all(x["outcome"] == "continue" for x in state["looks"][:-1])
    final = state["looks"][-1]
    assert final["statistic"]["T(+0 pts)"] > final["critical"] == state["critical_values"][stopped["look"] - 1]
    assert "crossed the boundary" in stopped["why"] and f"at {stopped['problems']} problems" in stopped["why"]
    # Only the looks' problems ran: every cell holds exactly the first n_k problems, each once.
    assert {len(ids) == len(set(ids)) == stopped["problems"] for ids in cell_records(tmp_path / "cmp").values()} \
        == {True}
    data = json.loads((tmp_path / "cmp" / COMPARE).read_text())
    assert data["until_decided"] == state == result.to_dict()["until_decided"]
    assert data["pairs"][0]["problems"] == stopped["problems"]
    text = result.to_markdown()
    assert f"Stopped at look {stopped['look']} of 10" in text
    assert f"{60 - stopped['problems']} of the cap's 60 problems never ran" in text  # the saving, stated
    assert state["fixed_size"]["problems_80"] >= 2


def test_identical_configurations_run_to_the_cap_without_a_verdict(tmp_path: Path) -> None:
    sequential(tmp_path, SAME, cap=40, batch=10)
    state = json.loads((tmp_path / "cmp" / FILE).read_text())
    assert [x["outcome"] for x in state["looks"]] == ["continue"] * 3 + ["inconclusive"]
    assert state["stopped"]["problems"] == 40 and "the cap" in state["stopped"]["why"]
    assert all(len(ids) == 40 for ids in cell_records(tmp_path / "cmp").values())


def test_a_killed_comparison_resumes_at_the_next_batch_without_rerunning_problems(tmp_path: Path) -> None:
    lines: list[str] = []

    def killed_at_the_sixth_cell(line: str) -> None:
        lines.append(line)
        if sum(x.startswith("sweep: running") for x in lines) == 6:  # look 2's second cell, its first one done
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sequential(tmp_path, DIFFERENT, log=killed_at_the_sixth_cell)
    before = json.loads((tmp_path / "cmp" / FILE).read_text())
    assert [x["look"] for x in before["looks"]] == [1] and before["stopped"] is None
    ran = cell_records(tmp_path / "cmp")
    assert sorted(len(ids) for ids in ran.values()) == [6, 6, 6, 12]
    log: list[str] = []
    resumed = compare(resume=tmp_path / "cmp", engine=SeededSimulator(seed=2), progress=False, log=log.append)
    after = json.loads((tmp_path / "cmp" / FILE).read_text())
    assert after["looks"][0] == before["looks"][0]  # a look read stands
    running = [x.removeprefix("sweep: running ") for x in log if x.startswith("sweep: running")]
    done = next(name for name, ids in ran.items() if len(ids) == 12)
    assert done not in running[:3] and len(running[:3]) == 3  # look 2 finishes the three cells it had not run
    every = cell_records(tmp_path / "cmp")
    stop = after["stopped"]["problems"]
    assert all(len(ids) == len(set(ids)) == stop for ids in every.values())  # no problem ran twice
    assert all(every[name][:len(ids)] == ids for name, ids in ran.items())  # the finished ones kept as they were
    assert resumed.until_decided == after and after["stopped"]["outcome"] == "reproduced"
    # Resumed once more: decided, so nothing runs.
    sim, quiet = SeededSimulator(seed=3), list[str]()
    assert compare(resume=tmp_path / "cmp", engine=sim, progress=False, log=quiet.append).until_decided == after
    assert quiet == [] and sim.requests == []


def test_the_fixed_size_plan_decides_either_way_and_none_on_the_line() -> None:
    from ttscale.comparisons.until_decided import fixed_size
    from ttscale.stats.power import Claim, accuracy_power

    read = {"only_a": 12, "only_b": 4, "pairs": 60, "paired_problems": 30, "design_effect": 1.0}
    better = fixed_size(Claim(kind="better", value=0.0), read)
    assert better is not None and better["verdict"] == "reproduced" and better["problems_80"] > 30
    # +13 points is not "equal within ±1": the size named is the one that reads "not reproduced".
    equal = fixed_size(Claim(kind="equal", value=0.01), read)
    assert equal is not None and equal["verdict"] == "not reproduced" and equal["problems_80"] > 30
    from ttscale.stats.power import pilot_accuracy

    mirrored = pilot_accuracy(only_a=12, only_b=4, pairs=60, problems=30, design_effect=1.0)
    assert accuracy_power(Claim(kind="better", value=0.01), mirrored, equal["problems_80"], sims=2000) >= 0.8
    line = fixed_size(Claim(kind="better", value=0.0), {**read, "only_a": 4})  # Δ = 0: neither verdict is reachable
    assert line is not None and line["problems_80"] is None and line["verdict"] is None


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"until_decided": "ratio:1.5"}, "until_decided: 'ratio:1.5' is a cost ratio, which has no sequential boundary "
                                     "here; give better:T, equal:M or not-worse:M"),
    ({"until_decided": "equal:0"}, "equal's margin must be in (0, 100) points, got 0"),
    ({"until_decided": "better:0", "limit": 5}, "until_decided runs up to max_problems, not limit"),
    ({"until_decided": "better:0", "max_problems": 1}, "max_problems must be a whole number ≥ 2, got 1"),
    ({"until_decided": "better:0", "max_problems": 20, "batch": 30}, "batch must be ≤ max_problems (20), got 30"),
    ({"max_problems": 50}, "max_problems, batch and design apply only with until_decided"),
    ({"until_decided": "better:0", "strategies": [*DIFFERENT, "beam width=2"]}, "give two, got 3"),
])
def test_bad_settings_are_refused_before_anything_runs(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    settings: dict[str, Any] = {"strategies": DIFFERENT, "repeats": 1, "budget": "400", "task": "arithmetic:1-3",
                                "engine_config": engine_config(tmp_path), "out": tmp_path / "cmp",
                                "engine": SeededSimulator(seed=1), "progress": False, **kwargs}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compare(**settings)
    assert not (tmp_path / "cmp").exists()


def test_the_cli_refuses_bad_claims_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = str(engine_config(tmp_path).model)
    new = ["--strategy", DIFFERENT[0], "--strategy", DIFFERENT[1], "--model", model, "--out", str(tmp_path / "c")]
    (tmp_path / "old").mkdir()
    bad = [
        ([*new, "--until-decided", "faster:2"], "compare: --until-decided: 'faster:2' is not a claim it can test; "
                                                "give better:T, equal:M or not-worse:M (points"),
        ([*new, "--until-decided", "ratio:2"], "compare: --until-decided: 'ratio:2' is a cost ratio, which has no "
                                               "sequential boundary here; give better:T, equal:M or not-worse:M"),
        ([*new, "--until-decided", "better:x"], "--until-decided: claim 'better:x': 'x' is not a number; give"),
        ([*new, "--max-problems", "50"],
         "compare: --max-problems, --batch and --design apply only with --until-decided"),
        ([*new, "--until-decided", "better:0", "--design", "linear"],
         "compare: spending must be one of obrien_fleming, pocock, hsd:GAMMA"),
        ([*new, "--until-decided", "better:0", "--limit", "5"], "runs up to --max-problems N, not --limit"),
        (["--resume", str(tmp_path / "old"), "--until-decided", "better:0"],
         "--until-decided applies only to a new run (--strategy); --resume continues the stored runs"),
    ]
    for args, message in bad:
        assert main(["compare", *args]) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0] and "Traceback" not in err[0], (args, err)
    assert not (tmp_path / "c").exists()


#: Right on every problem vs on none (p_correct=1; 2 tokens hold no answer): a 100-point difference.
APART = ["best_of_n n=1 max_tokens=200", "best_of_n n=1 max_tokens=2"]


@pytest.mark.parametrize(("design", "stops_at"), [(None, 10), ("obrien_fleming,looks=10,first=none,first_spend=0", 40)])
def test_a_hundred_point_difference_stops_at_ten_problems_under_the_default_design(
        tmp_path: Path, design: str | None, stops_at: int) -> None:
    # Issue 63: today's recommended design decides it at its first look (10 pairs one way: T = 3.16 > 3.09); the
    # design before it (O'Brien-Fleming-like, a look every N/10) needed 40 of a cap of 200.
    result = compare(strategies=APART, repeats=1, budget="400", task="arithmetic:1-3", engine_config=engine_config(
        tmp_path), out=tmp_path / "cmp", engine=SeededSimulator(seed=1, p_correct=1.0), progress=False,
        log=lambda _: None, until_decided="better:0", max_problems=200, design=design)
    state = result.until_decided
    assert state["stopped"]["outcome"] == "reproduced" and state["stopped"]["problems"] == stops_at
    assert state["design"]["first"] == (10 if design is None else None)
    assert all(len(ids) == stops_at for ids in cell_records(tmp_path / "cmp").values())
    assert f"Problems used: {stops_at}; {200 - stops_at} of the cap's 200 problems never ran" in result.to_markdown()


def test_a_stored_design_is_the_one_a_resume_continues(tmp_path: Path) -> None:
    from ttscale.comparisons.until_decided import load, plan_of, save, settle
    from ttscale.stats.sequential import boundaries

    state = settle("better:0", 120, None, "pocock,looks=4,first=12")
    save(tmp_path, state)
    plan = plan_of(load(tmp_path) or {})
    assert plan.looks == state["looks_at"] == [12, 48, 84, 120] and plan.spending == "pocock"
    assert [round(float(c), 4) for c in plan.critical_values()] == state["critical_values"]
    # A version-1 file (before designs): a look every `batch` problems, O'Brien-Fleming-like, no first-look floor.
    old = {k: v for k, v in settle("better:0", 60, 6).items() if k not in ("design", "design_text")}
    old.update(version=1, spending="obrien_fleming")
    plan = plan_of(old)
    assert plan.looks == list(range(6, 61, 6)) and plan.floor == 0
    assert plan.critical_values() == pytest.approx(boundaries([n / 60 for n in plan.looks]), abs=1e-9)


# -- the real engine (the session's: no start-up of their own) ------------------------------------------


@pytest.mark.slow
def test_on_the_real_engine_clearly_different_strategies_stop_early(tmp_path: Path, api_engine: Any) -> None:
    result = compare(strategies=["best_of_n n=1 max_tokens=48", "best_of_n n=1 max_tokens=1"], repeats=1,
                     budget="64", task="arithmetic:1", out=tmp_path / "cmp", engine=api_engine, progress=False,
                     log=lambda _: None, until_decided="better:0", max_problems=40)
    stopped = result.until_decided["stopped"]  # the recommended design: looks from 10 problems
    assert result.until_decided["looks_at"][0] == 10
    assert stopped["outcome"] == "reproduced" and stopped["problems"] < 40, result.until_decided["looks"]
    assert all(len(ids) == stopped["problems"] for ids in cell_records(tmp_path / "cmp").values())


@pytest.mark.slow
def test_on_the_real_engine_identical_strategies_run_to_the_cap(tmp_path: Path, api_engine: Any) -> None:
    # The same requests under the same seeds: the same samples but for what batching changes in bf16 (the two arms
    # run in different batches), so the arms differ by chance alone.
    result = compare(strategies=["self_consistency n=1 max_tokens=48",
                                 "self_consistency n=1 max_tokens=48 verifier=arithmetic"], repeats=1, budget="64",
                     task="arithmetic:1", out=tmp_path / "cmp", engine=api_engine, progress=False,
                     log=lambda _: None, until_decided="better:0", max_problems=20, batch=5)
    state = result.until_decided
    assert [x["outcome"] for x in state["looks"]] == ["continue"] * 3 + ["inconclusive"]
    assert state["stopped"]["problems"] == 20 and "no verdict either way" in state["stopped"]["why"]
    assert all(len(ids) == 20 for ids in cell_records(tmp_path / "cmp").values())


def test_a_comparison_of_other_runs_never_replaces_a_comparison_that_ran_its_strategies(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 59: `compare A B --out CMP` wrote over a sequential comparison's compare.json (its own format), and
    report and plan then described runs that are not in CMP."""
    sequential(tmp_path, DIFFERENT, cap=12)
    root = tmp_path / "cmp"
    before = (root / COMPARE).read_bytes()
    cells = sorted(str(cell) for cell in (root / "cells").iterdir())
    assert main(["compare", *cells, "--out", str(root)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"ttscale: error: compare: --out {str(root)!r} is a comparison that ran its strategies "
                   "(sweep.json, until_decided.json): its compare.json describes the runs in it, never replaced; "
                   "write elsewhere")
    assert (root / COMPARE).read_bytes() == before
    # A comparison of runs written before is written again in its own folder, as ever.
    assert main(["compare", *cells, "--out", str(tmp_path / "again")]) == 0
    assert main(["compare", *cells, "--out", str(tmp_path / "again")]) == 0
