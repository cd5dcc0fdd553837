"""`ttscale compare`: pairing, the cluster bootstrap, verdicts, the directory flow (run, resume, read) and the CLI.

The statistics are tested on records built here (planted effects and null arms); the run flow on the
SIMULATED arithmetic policy (tests.adaptive.sim, not a model); one slow test runs the real engine.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.adaptive.sim import SeededSimulator, engine_config
from ttscale.cli import main
from ttscale.comparisons.paired import COMPARE, Arm, CompareOptions, analyse, compare, load_arms, markdown
from ttscale.stats.paired import compare_pair, pair_records
from ttscale.stats.proportions import tango_interval

Records = dict[tuple[str, int], dict[str, Any]]


def record(problem: str, *, correct: bool, tokens: float, kv: float | None = None, error: str | None = None,
           **extra: Any) -> dict[str, Any]:
    ledger: dict[str, Any] = {"generated_tokens": tokens, "eflops": 1e9 * tokens,
                              "verifier": {"calls": 0}, "wall_seconds": tokens / 1000}
    if kv is not None:
        ledger["tree"] = {"peak_unique_kv_tokens": kv, "verifier_calls": 4}
    return {"id": problem, "correct": correct, "ledger": ledger, "error": error, **extra}


def arm(rng: np.random.Generator, *, problems: int, seeds: range, kv_scale: float = 1.0,
        p_correct: np.ndarray | None = None) -> Records:
    """Records of one arm: each problem has its own difficulty and size (what pairing must cancel), plus noise."""
    base = np.random.default_rng(99)  # per-problem difficulty and size: the same problems in every arm
    size = base.uniform(50, 500, problems)
    pc = base.uniform(0.1, 0.9, problems) if p_correct is None else p_correct
    out: Records = {}
    for p in range(problems):
        for s in seeds:
            tokens = size[p] * rng.lognormal(0, 0.3)
            out[(f"p{p:03d}", s)] = record(f"p{p:03d}", correct=bool(rng.random() < pc[p]), tokens=tokens,
                                           kv=kv_scale * tokens * 3)
    return out


# -- the statistics ---------------------------------------------------------------------------------


def test_a_planted_2x_kv_difference_is_detected() -> None:
    rng = np.random.default_rng(1)
    a = arm(rng, problems=40, seeds=range(3))
    b = arm(rng, problems=40, seeds=range(3), kv_scale=2.0)
    result = compare_pair("ets", a, "rebase", b)
    kv = result.effects["kv_tokens"]
    assert kv.high is not None and kv.low is not None and kv.high < 1 and kv.detectable
    assert kv.value is not None and 0.4 < kv.value < 0.6  # tokens are noisy; KV per token is exactly 2x
    assert result.problems == 40 and result.pairs == 120 and result.paired_by == "problem and run seed"
    assert "KV 2." in result.verdict and "x fewer [" in result.verdict
    kv_text = next(part for part in result.verdict.split("; ") if part.startswith("KV"))
    assert "no detectable" not in kv_text
    # The same planted difference is found in every one of 20 fresh data sets (power).
    found = [compare_pair("a", arm(np.random.default_rng(s), problems=40, seeds=range(3)), "b",
                          arm(np.random.default_rng(s + 100), problems=40, seeds=range(3), kv_scale=2.0),
                          resamples=500).effects["kv_tokens"].detectable for s in range(20)]
    assert all(found)


def test_identical_strategies_with_different_seeds_show_no_difference() -> None:
    rng = np.random.default_rng(2)
    a = arm(rng, problems=50, seeds=range(0, 3))
    b = arm(rng, problems=50, seeds=range(3, 6))  # the same strategy, other seeds: a null comparison
    result = compare_pair("sc", a, "sc again", b)
    assert result.paired_by.startswith("problem and repeat order (run seeds differ: 0,1,2 vs 3,4,5")
    for name in ("accuracy", "generated_tokens", "kv_tokens"):
        effect = result.effects[name]
        assert effect.low is not None and effect.high is not None
        null = 0.0 if name == "accuracy" else 1.0
        assert effect.low < null < effect.high and not effect.detectable, (name, effect)
    computed = [e for e in result.effects.values() if e.value is not None]
    assert len(computed) == 6 and not any(e.detectable for e in computed)
    assert result.verdict.count("(no detectable difference)") == 6
    # Calibration: over 100 null data sets a 95% interval excludes "no difference" about 5% of the time.
    false_alarms = {"accuracy": 0, "generated_tokens": 0}
    for s in range(100):
        again = compare_pair("a", arm(np.random.default_rng(1000 + s), problems=30, seeds=range(2)), "b",
                             arm(np.random.default_rng(5000 + s), problems=30, seeds=range(2)), resamples=400)
        for name in false_alarms:
            false_alarms[name] += again.effects[name].detectable
    assert all(1 <= n <= 12 for n in false_alarms.values()), false_alarms


def test_pairs_are_by_problem_and_repeat_whatever_the_record_order() -> None:
    rng = np.random.default_rng(3)
    a, b = arm(rng, problems=25, seeds=range(3)), arm(rng, problems=25, seeds=range(3), kv_scale=1.3)
    first = compare_pair("A", a, "B", b).to_dict()
    items_a, items_b = list(a.items()), list(b.items())
    random.Random(0).shuffle(items_a)
    random.Random(1).shuffle(items_b)
    assert compare_pair("A", dict(items_a), "B", dict(items_b)).to_dict() == first
    # B equal to A pair by pair: every resample of problems gives a difference of exactly 0 (a pairing that
    # mixed problems or repeats would not).
    twin = {key: dict(r) for key, r in a.items()}
    same = compare_pair("A", a, "twin", twin).effects
    # Accuracy: no discordant pair, so Tango's score interval with the repeats counted as copies (25 problems),
    # not the zero-width interval a bootstrap gives (which read as proof of equality).
    low, high = tango_interval(0, 0, 25)
    assert (same["accuracy"].value, same["accuracy"].low, same["accuracy"].high) == (
        0.0, pytest.approx(100 * low), pytest.approx(100 * high))
    assert same["accuracy"].design_effect == 3.0 and high > 0.13
    assert same["generated_tokens"].low == same["generated_tokens"].high == pytest.approx(1.0)
    # Swapping two problems' records in B breaks the pairs: the interval is no longer a point. (Within a
    # problem, repeats only decide which pair an error removes: see the errored-pairs test.)
    swapped = dict(twin)
    swapped[("p000", 0)], swapped[("p001", 0)] = twin[("p001", 0)], twin[("p000", 0)]
    broken = compare_pair("A", a, "swapped", swapped).effects["generated_tokens"]
    assert broken.low is not None and broken.high is not None and broken.high - broken.low > 0.01


def test_errored_pairs_are_left_out_of_both_sides_and_counted() -> None:
    a = {(f"p{p}", s): record(f"p{p}", correct=p % 2 == 0, tokens=100 + p) for p in range(6) for s in range(2)}
    b = {(f"p{p}", s): record(f"p{p}", correct=True, tokens=200 + p) for p in range(6) for s in range(2)}
    a[("p3", 1)] = record("p3", correct=False, tokens=0, error="RuntimeError: boom")
    b[("p3", 1)] = record("p3", correct=True, tokens=1e9)  # must not count: its pair errored
    b[("p4", 0)] = record("p4", correct=False, tokens=5, error="ValueError: bad")
    del b[("p5", 1)]  # present in A only
    result = compare_pair("A", a, "B", b)
    assert (result.errored, result.errored_problems, result.unpaired, result.pairs, result.problems) == (2, 2, 1, 9, 6)
    tokens = result.effects["generated_tokens"]
    assert tokens.mean_b is not None and tokens.mean_b < 210
    paired, _, counts = pair_records(a, b)
    assert sum(map(len, paired.values())) == 9 and counts == {"errored": 2, "errored_problems": 2, "unpaired": 1}
    data = result.to_dict()
    assert data["excluded"] == {"errored_pairs": 2, "errored_problems": 2, "unpaired": 1}


def test_metrics_one_arm_lacks_and_the_ets_reference_kv() -> None:
    a = {(f"p{p}", 0): record(f"p{p}", correct=True, tokens=10 + p) for p in range(5)}
    b = {(f"p{p}", 0): record(f"p{p}", correct=True, tokens=10 + p, kv=50.0) for p in range(5)}
    for p in range(5):  # the reference KV where the tree searches write it (ledger.tree.reference_kv_tokens)
        a[(f"p{p}", 0)]["ledger"]["tree"] = {"reference_kv_tokens": 100.0 + p}
        b[(f"p{p}", 0)]["ledger"]["tree"]["reference_kv_tokens"] = 300.0 + p
    result = compare_pair("A", a, "B", b)
    assert result.effects["kv_tokens"].value is None and result.effects["kv_tokens"].note == "not recorded by A"
    assert result.effects["ets_kv"].value == pytest.approx(510 / 1510)
    assert result.effects["verifier_calls"].note == "zero in both: no ratio"
    assert "KV (ETS reference) 2.96x fewer" in result.verdict and "KV n/a" not in result.verdict
    # Five pairs all right on both sides: Tango's score interval ±z²/(5 + z²), not a zero-width [+0.0, +0.0].
    assert result.effects["accuracy"].value == 0.0 and "accuracy +0.0 pts [-43.4, +43.4] (no detectable" \
        in result.verdict


def test_sparse_costs_give_unbounded_or_undefined_resamples_not_nan_intervals() -> None:
    def side(calls: list[int]) -> Records:
        out = {(f"p{p}", 0): record(f"p{p}", correct=True, tokens=10) for p in range(len(calls))}
        for (p, _), r in out.items():
            r["ledger"]["verifier"] = {"calls": calls[int(p[1:])]}
        return out

    def arms(calls_a: list[int], calls_b: list[int]) -> tuple[Records, Records]:
        return side(calls_a), side(calls_b)

    # B calls its verifier on one problem of ten: most resamples divide by zero (A/B = +inf).
    a, b = arms([2] * 10, [1] + [0] * 9)
    calls = compare_pair("A", a, "B", b).effects["verifier_calls"]
    assert calls.value == pytest.approx(20.0) and calls.high == float("inf") and calls.low is not None
    assert calls.to_dict()["ci"][1] is None and "20.00x more [" in calls.text() and ", inf]" in calls.text()
    # Each arm calls on a different problem: a resample with neither is 0/0, left out and counted.
    a, b = arms([3] + [0] * 9, [0, 3] + [0] * 8)
    calls = compare_pair("A", a, "B", b).effects["verifier_calls"]
    assert calls.value == pytest.approx(1.0) and calls.undefined_resamples > 0
    assert calls.low is not None and calls.high is not None and not calls.detectable


def test_the_shared_resampling_routine() -> None:
    from ttscale.stats.bootstrap import percentile_interval, resample_counts, resample_indices

    chunks = list(resample_indices(7, 25, np.random.default_rng(4), chunk_entries=70))
    assert [c.shape for c in chunks] == [(10, 7), (10, 7), (5, 7)]
    picks = np.vstack(chunks)
    assert picks.min() >= 0 and picks.max() <= 6 and len({tuple(row) for row in picks}) > 20
    counts = np.vstack(list(resample_counts(7, 25, np.random.default_rng(4), chunk_entries=70)))
    assert (counts.sum(axis=1) == 7).all()
    assert (counts == np.stack([np.bincount(row, minlength=7) for row in picks])).all()  # the same draws
    assert percentile_interval([1.0, 2.0, 3.0, 4.0, 5.0], confidence=0.5) == (2.0, 4.0)
    assert percentile_interval([1.0, 2.0, 3.0, float("inf")], confidence=0.5) == (1.0, float("inf"))
    with pytest.raises(ValueError, match="n_units must be ≥ 1, got 0"):
        next(resample_indices(0, 5, np.random.default_rng(0)))


def test_options_refuse_bad_values() -> None:
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\), got 1.5"):
        CompareOptions(confidence=1.5)
    with pytest.raises(ValueError, match="resamples must be a whole number ≥ 100, got 10"):
        CompareOptions(resamples=10)
    with pytest.raises(ValueError, match="group must be one of config, strategy, run"):
        CompareOptions(group="seed")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seed must be a whole number ≥ 0, got -1"):
        CompareOptions(seed=-1)


# -- the directory flow, on the simulator -------------------------------------------------------------


STRATEGIES = ["best_of_n n=2 max_tokens=40", "beam width=2 max_tokens=40"]


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("compare")
    log: list[str] = []
    result = compare(strategies=STRATEGIES, repeats=2, budget="400", task="arithmetic:1-3", limit=6,
                     engine_config=engine_config(tmp), out=tmp / "cmp", engine=SeededSimulator(seed=1),
                     progress=False, log=log.append, command=["test"])
    assert sum(line.startswith("sweep: running") for line in log) == 4  # 2 strategies × 2 repeats
    assert result.directory == tmp / "cmp" and (tmp / "cmp" / COMPARE).is_file()
    return tmp / "cmp"


def test_a_compare_run_is_a_resumable_sweep_with_compare_json(compared: Path, tmp_path: Path) -> None:
    data = json.loads((compared / COMPARE).read_text())
    assert data["format"] == "ttscale.compare" and data["method"]["resamples"] == 2000
    assert data["metrics"]["kv_tokens"]["source"] == "ledger.tree.peak_unique_kv_tokens"
    assert [a["label"] for a in data["arms"]] == ["best_of_n max_tokens=40 n=2", "beam max_tokens=40 width=2"]
    assert all(a["run_seeds"] == [0, 1] and a["problems"] == 6 and a["records"] == 12 for a in data["arms"])
    (pair,) = data["pairs"]
    assert (pair["problems"], pair["pairs"], pair["paired_by"]) == (6, 12, "problem and run seed")
    assert data["verdicts"] == [pair["verdict"]] and pair["verdict"].startswith("best_of_n max_tokens=40 n=2 vs beam")
    assert markdown(data).count("\n| ") >= 6
    # Resume: nothing to redo, the engine is not asked for anything.
    sim, log = SeededSimulator(seed=1), list[str]()
    again = compare(resume=compared, engine=sim, progress=False, log=log.append)
    assert log == [] and sim.requests == [] and again.verdicts == data["verdicts"]


def test_read_mode_groups_runs_by_configuration_and_seed(compared: Path) -> None:
    cells = sorted(p for p in (compared / "cells").iterdir())
    from_cells = analyse(cells)
    assert [a.label for a in from_cells.arms] == ["beam max_tokens=40 width=2", "best_of_n max_tokens=40 n=2"]
    assert all(a.info["run_seeds"] == [0, 1] for a in from_cells.arms)
    (pair,) = from_cells.pairs
    forward, backward = pair.effects["generated_tokens"].value, analyse([compared]).pairs[0].effects[
        "generated_tokens"].value
    assert forward is not None and backward is not None and forward == pytest.approx(1 / backward)
    every_run = analyse(cells, options=CompareOptions(group="run"))
    assert len(every_run.arms) == 4 and len(every_run.pairs) == 6
    assert len({a.label for a in every_run.arms}) == 4
    with pytest.raises(ValueError, match="run seed 0 is in two directories"):
        load_arms([cells[0], cells[0]])
    with pytest.raises(ValueError, match="at least two arms, found 1"):
        load_arms(cells[:2])
    harder = compare(strategies=STRATEGIES, repeats=1, budget="400", task="arithmetic:4-5", limit=2,
                     engine_config=engine_config(compared.parent), out=compared.parent / "harder",
                     engine=SeededSimulator(seed=1), progress=False, log=lambda _: None)
    assert harder.pairs[0].problems == 2
    with pytest.raises(ValueError, match="the arms ran different tasks"):
        load_arms([cells[0], compared.parent / "harder" / "cells" / sorted(
            p.name for p in (compared.parent / "harder" / "cells").iterdir())[0]])


def test_compare_works_inside_a_running_event_loop(compared: Path, tmp_path: Path) -> None:
    """A notebook's cell runs inside a loop: asyncio.run is refused there, so the repeats run on a loop of their own."""
    import asyncio

    from tests.adaptive.sim import model_dir

    real = [Path(__file__).parent / "data" / "real_runs" / name for name in ("sc-n4", "sc-n8")]
    sim, log = SeededSimulator(seed=1), list[str]()

    async def notebook_cell() -> tuple[Any, Any, Any]:
        ran = compare(strategies=STRATEGIES, repeats=1, budget="400", task="arithmetic:1-3", limit=3,
                      model=str(model_dir(tmp_path)), engine=sim, out=tmp_path / "cmp", progress=False,
                      log=log.append)
        resumed = compare(resume=tmp_path / "cmp", engine=sim, progress=False, log=log.append)
        return ran, resumed, compare(runs=real)

    ran, resumed, read = asyncio.run(notebook_cell())
    assert sum(line.startswith("sweep: running") for line in log) == 2 and len(log) == 2  # the resume ran nothing
    assert ran.pairs[0].problems == 3 and resumed.verdicts == ran.verdicts
    stored = json.loads((tmp_path / "cmp" / "sweep.json").read_text())
    assert stored["spec"]["engine"]["model"] == str(model_dir(tmp_path))  # model= is the engine config's model
    assert [a.label for a in read.arms] == [f"self_consistency max_tokens=100 b={b}" for b in (400, 800)]
    assert read.pairs[0].problems == 12


def test_ttscale_compare_is_the_library_function() -> None:
    import ttscale
    import ttscale.comparisons.paired  # importing the module must not replace the package's `compare` function

    assert ttscale.compare is compare and isinstance(Arm, type) and ttscale.comparisons.paired.compare is compare


def test_the_rendering_is_its_own_module_and_still_exported_here() -> None:
    # comparison.py was split by concern (issue 46): compare.json's Markdown lives in ttscale.comparisons.markdown,
    # and `from ttscale.comparisons.paired import markdown` (reporting, the CLI) is the same function.
    import ttscale.comparisons.markdown
    import ttscale.comparisons.paired

    assert ttscale.comparisons.paired.markdown is ttscale.comparisons.markdown.markdown
    assert "markdown" in ttscale.comparisons.paired.__all__
    for module in (ttscale.comparisons.paired, ttscale.comparisons.markdown):
        assert len(Path(str(module.__file__)).read_text().splitlines()) < 400, module.__name__


def test_the_cli_reads_directories_and_refuses_bad_input(compared: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(compared), "--json", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr()
    printed = json.loads(out.out)
    assert printed == json.loads((tmp_path / "out" / COMPARE).read_text())
    assert printed["verdicts"] == json.loads((compared / COMPARE).read_text())["verdicts"]
    assert main(["compare", str(compared)]) == 0 and "### best_of_n" in capsys.readouterr().out
    model = str(engine_config(tmp_path).model)
    bad = [
        ([], "give run directories to compare, or at least two --strategy"),
        (["--strategy", "best_of_n n=2", "--model", model], "at least two strategies to run, got 1"),
        (["--strategy", "sc n=2|4", "--strategy", "bon", "--model", model], "one value per parameter, got n=2|4"),
        (["--strategy", "sc n=2", "--strategy", "self_consistency n=2", "--model", model],
         "strategies 'sc n=2' and 'self_consistency n=2' run the same (self_consistency "),
        # A parameter at its default value changes nothing: the two arms would run every seed twice.
        (["--strategy", "sc", "--strategy", "self_consistency temperature=0.8", "--model", model],
         "strategies 'sc' and 'self_consistency temperature=0.8' run the same (self_consistency "),
        (["--strategy", "sc", "--strategy", "bon", "--repeats", "0", "--model", model], "repeats must be"),
        ([str(compared), "--repeats", "2"], "--repeats applies only to a new run"),
        (["--resume", str(compared), "--budget", "1k", "--kv-cache-gib", "3"],
         "--budget, --kv-cache-gib apply only to a new run (--strategy); --resume continues the stored runs"),
        ([str(compared), "--resume", str(compared)], "not both"),
        ([str(tmp_path)], "is not a ttscale run, sweep or compare directory"),
        ([str(compared), "--confidence", "1.5"], "confidence must be in (0, 1)"),
        ([str(compared), "--bootstrap-seed", "-1"], "compare: --bootstrap-seed must be a whole number ≥ 0, got -1"),
        ([str(compared), "--group", "seed"], "invalid choice"),
    ]
    for args, message in bad:
        assert main(["compare", *args]) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0] and "Traceback" not in err[0], (args, err)


# -- the real engine ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_compare_on_the_real_engine_pairs_repeats_and_resumes(tmp_path: Path, api_engine: Any) -> None:
    # On the session's engine (no start-up of its own); the CLI then resumes it with nothing left to run.
    out = tmp_path / "cmp"
    result = compare(strategies=["best_of_n n=2 max_tokens=24", "self_consistency n=2 max_tokens=24"], repeats=2,
                     task="arithmetic", limit=6, budget="128", out=out, progress=False, engine=api_engine)
    data = json.loads((out / COMPARE).read_text())
    assert result.to_dict() == data
    (pair,) = data["pairs"]
    assert (pair["problems"], pair["pairs"], pair["paired_by"]) == (6, 12, "problem and run seed")
    assert pair["excluded"]["errored_pairs"] == sum(a["errored"] for a in data["arms"]) == 0
    assert {"accuracy", "generated_tokens", "eflops"} <= set(pair["effects"])
    arms = {a["label"]: a for a in data["arms"]}
    assert set(arms) == {"best_of_n max_tokens=24 n=2", "self_consistency max_tokens=24 n=2"}
    # Repeats are different draws (run seed r seeds every request of repeat r), within the budget.
    for a in arms.values():
        s0, s1 = ({r["id"]: r for r in ttscale_records(Path(src))} for src in a["sources"])
        assert set(s0) == set(s1) and len(s0) == 6
        assert any([x["text"] for x in s0[p]["samples"]] != [x["text"] for x in s1[p]["samples"]] for p in s0)
        assert all(r["ledger"]["spent"] <= 128 for r in [*s0.values(), *s1.values()])
    # Resume: every cell is finished, so no engine starts and nothing runs again.
    again = subprocess.run([sys.executable, "-m", "ttscale.cli", "compare", "--resume", str(out), "--no-progress",
                            "--json"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = json.loads(again.stdout)
    assert "sweep: running" not in again.stderr and resumed.pop("created") and data.pop("created")
    assert resumed == data  # the same analysis of the same runs


def ttscale_records(path: Path) -> list[dict[str, Any]]:
    from ttscale.comparisons.paired import read_config_and_records

    return read_config_and_records(path)[1]



def test_a_comparison_keeps_the_time_it_was_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    # compare.json is written from to_dict() and a caller may ask again later: both must say the same `created`
    # (the real-engine test compares them and failed when a second ticked over between the two).
    from ttscale.comparisons import paired as comparison
    from ttscale.comparisons.paired import CompareOptions, Comparison

    result = Comparison((), (), CompareOptions())
    first = result.to_dict()["created"]
    monkeypatch.setattr(comparison.time, "strftime", lambda *a: "2099-01-01T00:00:00+0000")
    assert result.to_dict()["created"] == first != "2099-01-01T00:00:00+0000"
