"""ttscale.comparisons.until_decided's reading of one look, its words and its stored state (issue 60), on hand-made
rows whose counts give Tango's statistic in closed form: with one pair per problem and no B-only pair, T(0) for
`better:0` is McNemar's b/√b. Every way a look ends is here: a boundary crossed, the cap, the task's last problem
(before its look's size, or exactly at it), and no pair at all."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from ttscale.comparisons.until_decided import (
    DEFAULT_MAX_PROBLEMS,
    arguments,
    load,
    markdown_lines,
    read_look,
    save,
    settle,
)
from ttscale.stats.power import Claim
from ttscale.stats.sequential import SequentialPlan

PLAN = SequentialPlan(claim=Claim(kind="better", value=0.0), max_problems=40, batch=10)
C = [float(x) for x in PLAN.critical_values()]


def rows(a_only: int, b_only: int = 0, both: int = 0, neither: int = 0) -> list[list[tuple[float, float]]]:
    return ([[(1.0, 0.0)]] * a_only + [[(0.0, 1.0)]] * b_only + [[(1.0, 1.0)]] * both + [[(0.0, 0.0)]] * neither)


def test_a_look_inside_its_boundary_continues_and_says_so() -> None:
    read = read_look(PLAN, 0, rows(8, neither=2), problems=10)
    t = 8 / math.sqrt(8)  # 2.83 < c_1 = 4.33
    assert read["outcome"] == "continue"
    assert (read["look"], read["problems"], read["paired_problems"], read["pairs"]) == (1, 10, 10, 10)
    assert (read["only_a"], read["only_b"], read["difference"], read["design_effect"]) == (8, 0, 0.8, 1.0)
    assert read["critical"] == round(C[0], 4)
    assert read["statistic"] == {"T(+0 pts)": round(t, 4)}
    assert read["why"] == f"look 1 of 4 at 10 problems (10 pairs): T(+0 pts) = {t:.2f} inside ±{C[0]:.2f}"


def test_a_look_that_crosses_names_the_arms_and_the_verdict() -> None:
    read = read_look(PLAN, 1, rows(18, b_only=2), problems=20, names=("fast", "slow"))
    t = 16 / math.sqrt(20)  # 3.58 > c_2 = 2.96
    assert read["outcome"] == "reproduced"
    assert read["why"] == (f"look 2 of 4 at 20 problems (20 pairs): T(+0 pts) = {t:.2f} crossed the boundary "
                           f"±{C[1]:.2f}: fast vs slow, better by more than 0 pts reproduced")
    read = read_look(PLAN, 1, rows(2, b_only=18), problems=20, names=("fast", "slow"))
    assert read["outcome"] == "not reproduced" and read["why"].endswith("better by more than 0 pts not reproduced")


def test_the_cap_s_look_without_a_verdict_is_inconclusive_and_says_the_cap() -> None:
    read = read_look(PLAN, 3, rows(5, b_only=3, both=32), problems=40, task_problems=100)
    t = 2 / math.sqrt(8)
    assert read["outcome"] == "inconclusive" and read["critical"] == round(C[3], 4)
    assert read["why"] == (f"look 4 of 4 at 40 problems (40 pairs), the cap: T(+0 pts) = {t:.2f} inside "
                           f"±{C[3]:.2f}, no verdict either way")


@pytest.mark.parametrize(("problems", "task_problems"), [(15, None), (15, 15), (20, 20)])
def test_the_task_s_last_problem_makes_its_look_the_last_and_spends_the_error_left(problems: int,
                                                                                   task_problems: int | None) -> None:
    # Fewer problems than the look's 20 (15), or the task's last at exactly the look's size (20 of 20).
    read = read_look(PLAN, 1, rows(5, b_only=3, both=problems - 8), problems=problems, task_problems=task_problems)
    z = PLAN.critical_at_end(1, problems)
    assert z < C[1] and read["critical"] == round(z, 4)
    assert read["outcome"] == "inconclusive"
    assert read["why"].startswith(f"look 2 of 4 at {problems} problems ({problems} pairs), the task's last problem "
                                  f"(it has {problems}, the cap was 40): ")
    assert ", the cap:" not in read["why"]


def test_a_look_the_task_still_has_problems_beyond_is_not_the_last() -> None:
    read = read_look(PLAN, 1, rows(5, b_only=3, both=12), problems=20, task_problems=21)
    assert read["outcome"] == "continue" and read["critical"] == round(C[1], 4)


def test_the_cap_reached_with_the_task_s_last_problem_uses_the_planned_boundary() -> None:
    read = read_look(PLAN, 3, rows(5, b_only=3, both=32), problems=40, task_problems=40)
    assert read["critical"] == round(C[3], 4) and "the task's last problem" not in read["why"]


@pytest.mark.parametrize(("index", "last"), [(0, False), (3, True)])
def test_a_look_with_no_pair_reads_nothing(index: int, last: bool) -> None:
    problems = PLAN.looks[index]
    read = read_look(PLAN, index, [], problems=problems)
    assert read == {"look": index + 1, "problems": problems, "paired_problems": 0, "critical": round(C[index], 4),
                    "outcome": "inconclusive" if last else "continue", "statistic": {},
                    "why": f"look {index + 1}: no pair without an error among {problems} problems"}


def test_the_statistics_shown_are_those_each_claim_reads() -> None:
    for claim, keys in ((Claim(kind="not_worse", value=0.05), ["T(-5 pts)"]),
                        (Claim(kind="equal", value=0.05), ["T(-5 pts)", "T(+5 pts)"]),
                        (Claim(kind="better", value=0.1), ["T(+10 pts)"])):
        plan = SequentialPlan(claim=claim, max_problems=40, batch=10)
        read = read_look(plan, 0, rows(5, b_only=1, both=4), problems=10)
        assert list(read["statistic"]) == keys


# -- the stored state and its words --------------------------------------------------------------------------

def test_a_new_comparison_s_settings_default_to_the_cap_and_the_recommended_design() -> None:
    state = settle("better:0", None, None)
    assert state["max_problems"] == DEFAULT_MAX_PROBLEMS == 200
    assert state["looks_at"][0] == 10 and state["looks_at"][-1] == 200 and len(state["looks_at"]) == 20
    assert state["looks"] == [] and state["stopped"] is None and state["arms"] is None
    assert state["claim"] == "better:0" and state["claim_text"] == "better by more than 0 pts"
    assert arguments(runs=[], resume=None, limit=None, strategies=["a", "b"], claim=None, max_problems=None,
                     batch=None) is None
    assert arguments(runs=[], resume=None, limit=None, strategies=["a", "b"], claim="better:0", max_problems=None,
                     batch=None) == state


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"runs": ["x"]}, "run directories are compared as they are"),
    ({"resume": "d"}, "a resumed comparison continues the claim it stored"),
    ({"design": "pocock", "claim": None}, "max_problems, batch and design apply only with until_decided"),
    ({"batch": 5, "claim": None}, "max_problems, batch and design apply only with until_decided"),
    ({"max_problems": True}, "max_problems must be a whole number ≥ 2, got True"),
    ({"max_problems": 2.5}, "max_problems must be a whole number ≥ 2, got 2.5"),
])
def test_arguments_that_do_not_go_together_are_refused(kwargs: dict, message: str) -> None:
    settings = {"runs": [], "resume": None, "limit": None, "strategies": ["a", "b"], "claim": "better:0",
                "max_problems": None, "batch": None, **kwargs}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        arguments(**settings)


def test_a_saved_state_loads_back_and_a_foreign_file_is_refused(tmp_path: Path) -> None:
    assert load(tmp_path) is None  # a fixed-size comparison has no such file
    state = settle("equal:2", 60, 6)
    save(tmp_path, state)
    assert load(tmp_path) == state
    path = next(tmp_path.iterdir())
    foreign = ['{"format": "something else"}', "[1, 2]", "not json", '{"format": "ttscale.comparisons.until_decided"}']
    for text in foreign:
        path.write_text(text)
        with pytest.raises(ValueError, match=f"cannot read {path}"):
            load(tmp_path)


def test_the_words_of_a_comparison_not_yet_decided() -> None:
    state = settle("better:0", 40, 10)
    state["looks"] = [{"look": 1}]
    lines = markdown_lines(state)
    assert lines[0].startswith("Until decided: better by more than 0 pts (better:0), 4 looks at 10, 20, 30, 40 "
                               "problems (the cap), group-sequential boundaries (")
    assert lines[0].endswith(", a look every 10 problems; α = 0.05 over all looks).")
    assert lines[1] == "Not decided yet: 1 look(s) read; `ttscale compare --resume DIR` continues."
    many = markdown_lines(settle("better:0", 200, None))
    assert "20 looks at 10, 20, 30, 40, ..., 200 problems" in many[0] and "a look every" not in many[0]


def test_the_words_of_a_decided_comparison_give_what_it_saved() -> None:
    state = settle("better:0", 40, 10)
    state["stopped"] = {"look": 2, "problems": 20, "outcome": "reproduced", "why": "look 2 of 4 at 20 problems"}
    state["fixed_size"] = {"problems_80": 33, "verdict": "reproduced", "at": "the measured Δ"}
    lines = markdown_lines(state)
    assert lines[-2] == "Stopped at look 2 of 4 at 20 problems."
    assert lines[-1] == ("Problems used: 20; 20 of the cap's 40 problems never ran; a fixed-size comparison deciding "
                         "it (reproduced) at 80% power would need 33 (the measured Δ).")
    state["stopped"]["problems"] = 40
    state["fixed_size"] = None
    assert markdown_lines(state)[-1] == "Problems used: 40; it ran to the cap."
    assert json.loads(json.dumps(state)) == state  # the state is plain JSON


# -- a comparison that starts its own engine ------------------------------------------------------------------

@pytest.mark.parametrize("verbose", [False, True])
def test_a_comparison_starts_one_engine_for_all_its_looks_only_when_a_look_has_problems_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verbose: bool
) -> None:
    import ttscale.running.launch
    from tests.adaptive.sim import SeededSimulator, engine_config
    from ttscale.comparisons.paired import compare
    from ttscale.comparisons.until_decided import FILE
    from ttscale.runstore.names import ENGINE_LOG

    starts: list[Path | None] = []
    closed: list[int] = []

    class Counted(SeededSimulator):
        async def close(self) -> None:
            closed.append(1)
            await super().close()

    configs: list[object] = []

    async def start_logged(config: object, *, log: Path | None) -> Counted:
        starts.append(log)
        configs.append(config)
        return Counted(seed=1)

    monkeypatch.setattr(ttscale.running.launch, "start_logged", start_logged)
    out = tmp_path / "cmp"

    def run(**kwargs: object) -> object:
        return compare(progress=False, log=lambda _: None, engine=None, verbose=verbose, **kwargs)  # type: ignore[arg-type]

    run(strategies=["self_consistency n=1 max_tokens=40", "self_consistency n=1 max_tokens=40 verifier=arithmetic"],
        repeats=2, budget="400", task="arithmetic:1-3", engine_config=engine_config(tmp_path), out=out,
        until_decided="better:0", max_problems=30, batch=10)
    state = json.loads((out / FILE).read_text())
    assert len(state["looks"]) == 3 and state["stopped"] is not None  # three looks (to the cap) on one engine
    assert starts == [None if verbose else out / ENGINE_LOG] and closed == [1]
    assert configs == [engine_config(tmp_path)]  # the comparison's engine, as given
    # Resumed once decided: nothing to run, so no engine starts.
    run(resume=out)
    assert len(starts) == 1 and closed == [1]
    # Cut back to before its last look was read (a kill after that look's cells ran): the records already hold the
    # look's problems, so it is read again without an engine, to the same outcome.
    stopped = state["stopped"]
    state["looks"], state["stopped"] = state["looks"][:-1], None
    state.pop("fixed_size", None)
    (out / FILE).write_text(json.dumps(state))
    run(resume=out)
    again = json.loads((out / FILE).read_text())
    assert len(again["looks"]) == 3 and again["stopped"] == stopped
    assert len(starts) == 1 and closed == [1]


def test_a_foreign_state_file_is_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "until_decided.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match=re.escape("not a ttscale.comparisons.until_decided file")):
        load(tmp_path)


def test_the_words_name_the_stored_design_or_the_one_before_designs() -> None:
    from ttscale.stats.designs import LEGACY, Design

    design = Design(spending="pocock", looks=8, first=10)
    state = settle("better:0", 80, None, design)
    assert len(state["looks_at"]) == 8
    first = markdown_lines(state)[0]
    assert f"8 looks at {', '.join(map(str, state['looks_at']))} problems (the cap)" in first
    assert f"group-sequential boundaries ({design.text()}; α = 0.05 over all looks)." in first
    nine = settle("better:0", 90, None, Design(spending="pocock", looks=9, first=10))
    assert "9 looks at 10, 20, 30, 40, ..., 90 problems" in markdown_lines(nine)[0]
    old = {k: v for k, v in settle("better:0", 60, 6).items() if k not in ("design", "design_text")}
    assert f"({LEGACY.text()}, a look every 6 problems; α" in markdown_lines(old)[0]


def test_a_decided_comparison_names_its_arms_and_what_each_look_left_out(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.adaptive.sim import SeededSimulator, engine_config
    from ttscale.comparisons.paired import compare
    from ttscale.comparisons.until_decided import FILE

    arms = ["best_of_n n=1 max_tokens=40", "best_of_n n=1 max_tokens=2"]  # a 2-token sample holds no answer
    compare(strategies=arms, repeats=2, budget="400", task="arithmetic:1-3", engine_config=engine_config(tmp_path),
            out=tmp_path / "cmp", engine=SeededSimulator(seed=1), progress=False, log=lambda _: None,
            until_decided="better:0", max_problems=60, batch=6)
    state = json.loads((tmp_path / "cmp" / FILE).read_text())
    assert state["stopped"]["outcome"] == "reproduced"
    names = state["arms"]
    assert len(names) == 2 and f"{names[0]} vs {names[1]}, better by more than 0 pts reproduced" in \
        state["stopped"]["why"]
    assert all(look["excluded"] == {"errored": 0, "errored_problems": 0, "unpaired": 0} for look in state["looks"])
    # Cut back to before its deciding look was read: that look's problems have records (the task's others do not),
    # so the resume reads it again and stops there without starting an engine.
    import ttscale.running.launch

    assert state["stopped"]["problems"] < 60
    starts: list[object] = []

    async def start_logged(config: object, *, log: Path | None) -> SeededSimulator:
        starts.append(config)
        return SeededSimulator(seed=1)

    monkeypatch.setattr(ttscale.running.launch, "start_logged", start_logged)
    stopped = state["stopped"]
    state["looks"], state["stopped"] = state["looks"][:-1], None
    state.pop("fixed_size", None)
    (tmp_path / "cmp" / FILE).write_text(json.dumps(state))
    compare(resume=tmp_path / "cmp", engine=None, progress=False, log=lambda _: None)
    assert json.loads((tmp_path / "cmp" / FILE).read_text())["stopped"] == stopped and starts == []


def test_an_equal_claim_shows_both_statistics_and_its_interval() -> None:
    from ttscale.stats.proportions import paired_proportions

    plan = SequentialPlan(claim=Claim(kind="equal", value=0.05), max_problems=40, batch=10)
    data = rows(3, b_only=2, both=5)
    read = read_look(plan, 0, data, problems=10)
    low, high = read["statistic"]["T(-5 pts)"], read["statistic"]["T(+5 pts)"]
    assert read["why"] == (f"look 1 of 4 at 10 problems (10 pairs): T(-5 pts) = {low:.2f}, T(+5 pts) = {high:.2f} "
                           f"inside ±{C[0]:.2f}")
    found = paired_proportions(data)
    assert read["ci95"] == [found.low, found.high] and found.low < read["difference"] == 0.1 < found.high


def test_a_stored_ratio_claim_is_not_a_sequential_state(tmp_path: Path) -> None:
    state = settle("better:0", 60, 6)
    state["claim"] = "ratio:1.5"
    save(tmp_path, state)
    with pytest.raises(ValueError, match=re.escape("'ratio:1.5' is a cost ratio, which has no sequential boundary")):
        load(tmp_path)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"runs": ["x"]}, "until_decided applies to a new run of two strategies; run directories are compared as they "
                      "are"),
    ({"resume": "d"}, "until_decided applies to a new run of two strategies; a resumed comparison continues the "
                      "claim it stored"),
    ({"limit": 5}, "until_decided runs up to max_problems, not limit: give max_problems"),
    ({"claim": None, "max_problems": 50}, "max_problems, batch and design apply only with until_decided (a comparison "
                                          "that stops when decided); a fixed-size one takes limit"),
    ({"strategies": ["a"]}, "until_decided tests a claim of one strategy over another: give two, got 1"),
])
def test_each_refusal_says_why_in_full(kwargs: dict, message: str) -> None:
    settings = {"runs": [], "resume": None, "limit": None, "strategies": ["a", "b"], "claim": "better:0",
                "max_problems": None, "batch": None, **kwargs}
    with pytest.raises(ValueError) as caught:
        arguments(**settings)
    assert str(caught.value) == message


def test_the_stored_state_says_its_version_design_spending_and_method() -> None:
    from ttscale.stats.designs import Design

    design = Design(spending="pocock", looks=4, first=10)
    for given in (design, design.spec()):
        state = settle("better:0", 40, None, given)
        assert state["version"] == 2 and state["design"] == design.to_dict()
        assert state["design_text"] == design.text() and state["spending"] == "pocock"
        assert state["method"].startswith("looks at the design's sizes: the first n_k problems of every cell")
        assert state["looks_at"] == [10, 20, 30, 40] and state["alpha"] == 0.05


@pytest.mark.parametrize("cap", [2.5, True, 1, 0])
def test_a_cap_that_is_not_a_whole_number_of_at_least_two_is_refused(cap: object) -> None:
    with pytest.raises(ValueError, match=re.escape(f"max_problems must be a whole number ≥ 2, got {cap!r}")):
        settle("better:0", cap, None)  # type: ignore[arg-type]


def test_the_smallest_cap_is_two_problems() -> None:
    assert settle("better:0", 2, None)["looks_at"] == [2]


@pytest.mark.parametrize(("only_a", "verdict", "claim"), [
    (12, "reproduced", Claim(kind="better", value=0.0)),
    (12, "not reproduced", Claim(kind="equal", value=0.01)),
    (4, None, Claim(kind="better", value=0.0)),
])
def test_the_fixed_size_plan_says_at_what_it_was_planned(only_a: int, verdict: str | None, claim: Claim) -> None:
    from ttscale.comparisons.until_decided import fixed_size
    from ttscale.stats.power import Accuracy, accuracy_problems

    read = {"only_a": only_a, "only_b": 4, "pairs": 60, "paired_problems": 30, "design_effect": 1.0}
    found = fixed_size(claim, read)
    d, q = (only_a - 4) / 60, (only_a + 4) / 60
    assert found is not None and found["verdict"] == verdict
    assert found["at"] == f"the measured Δ {100 * d:+.1f} pts, discordance {q:.2f}, design effect 1.00"
    acc = Accuracy(difference=d, discordance=q, repeats=2, design_effect=1.0)
    if verdict == "reproduced":
        assert found["problems_80"] == accuracy_problems(claim, acc, 0.8, sims=2000)
    elif verdict == "not reproduced":  # equal:1 at +13 points: shown not equal as "better than +1" is
        mirrored = Accuracy(difference=d, discordance=q, repeats=2, design_effect=1.0)
        assert found["problems_80"] == accuracy_problems(Claim(kind="better", value=0.01), mirrored, 0.8, sims=2000)
    assert fixed_size(claim, {"look": 1}) is None  # a look with no pair read nothing to plan from
