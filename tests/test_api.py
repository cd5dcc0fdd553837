"""The one-call Python API (ttscale.run, ttscale.Engine) on the real engine, and its checks without one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ttscale
from ttscale.engine.base import EngineConfig
from ttscale.engine.openai import OpenAIConfig


@pytest.mark.slow
def test_run_writes_a_resumable_run_and_an_engine_serves_several(tmp_path: Path, api_engine: ttscale.Engine) -> None:
    # The session's engine (tests/conftest.py): a ttscale.Engine that several calls share, started once.
    first, second, engine = tmp_path / "sc", tmp_path / "bon", api_engine
    a = ttscale.run(strategy="self_consistency", budget="1k", task="arithmetic", limit=2, out=first,
                    params={"n": 2, "max_tokens": 48}, engine=engine)
    b = ttscale.run(strategy="best_of_n", budget="1k", limit=2, out=second, params={"n": 2, "max_tokens": 48},
                    engine=engine)
    again = ttscale.run(strategy="self_consistency", budget="1k", task="arithmetic", limit=2, out=first,
                        params={"n": 2, "max_tokens": 48}, engine=engine)
    grid = ttscale.sweep(strategies=["self_consistency max_tokens=48"], budgets=[96, 192], limit=2,
                         out=tmp_path / "sweep", engine=engine)
    # A sweep on the same engine: the 192-token pool ran, the 96-token cell was replayed from it.
    assert sorted((c["budget"], c["derived_from"] is None) for c in grid.cells) == [("192", True), ("96", False)]
    assert len(grid.table) == 2 and grid.matched
    assert len(ttscale.load_runs(grid.path / "cells")) == 4  # its cells are run directories like any other
    html = ttscale.report([first, second], out=tmp_path / "report.html")
    assert "<svg" in html and (tmp_path / "report.html").read_text() == html
    assert 0.0 <= a.summary["accuracy"] <= 1.0 and a.summary["problems"] == 2 and b.summary["problems"] == 2
    assert len(a.records) == 2 and a.records["correct"].sum() == a.summary["correct"]
    assert again.summary["resumed"] is True  # the same call again: nothing run twice
    lines = (first / "results.jsonl").read_text().splitlines()
    assert len(lines) == 2
    config = json.loads((first / "config.json").read_text())
    assert config["environment"]["engine"]["vllm_config"]["max_num_seqs"] >= 1  # the started engine's own settings
    done = subprocess.run([sys.executable, "-m", "ttscale.cli", "run", "--resume", str(first), "--json",
                           "--no-progress"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout[done.stdout.index("{"):])["resumed"] is True
    assert (first / "results.jsonl").read_text().splitlines() == lines  # the CLI found nothing to redo
    # Sleep-time compute as its reference runs it, on the same engine: greedy rethink passes (3 at most here) within
    # the stage's budget, then one greedy answer per query under the verbosity prompt.
    sleep = ttscale.run(strategy="sleep_time", budget="64", task="arithmetic_stateful:1", limit=2,
                        task_options={"queries": 2, "per_level": 1}, out=tmp_path / "sleep", engine=engine,
                        params={"sleep_tokens": 96, "rethinks": 3, "rethink_tokens": 32, "max_tokens": 32})
    stage = json.loads((tmp_path / "sleep" / "stages.jsonl").read_text())  # one context: one stage
    assert 1 <= stage["value"]["passes"] <= 3 and stage["value"]["ended"] in ("rethinks", "finished", "unchanged",
                                                                              "budget")
    assert stage["ledger"]["generated_tokens"] == stage["value"]["tokens"] <= 96 and stage["ledger"]["calls"] == (
        stage["value"]["passes"])
    records = [json.loads(line) for line in (tmp_path / "sleep" / "results.jsonl").read_text().splitlines()]
    assert sleep.summary["problems"] == 2 and all(len(r["samples"]) == 1 for r in records)
    assert all(r["ledger"]["generated_tokens"] == r["ledger"]["test_tokens"] <= 32 for r in records)
    assert all(r["info"]["rethink_passes"] == stage["value"]["passes"] for r in records)


#: README's Python block ("From Python (scripts and notebooks)"), shrunk: fewer problems, samples and tokens.
README_SCRIPT = """\
import ttscale

r = ttscale.run(strategy="self_consistency", budget="256", task="arithmetic", limit=2, out="runs/sc",
                params={"n": 2, "max_tokens": 24})
r.summary["accuracy"], r.records

with ttscale.Engine(model="embedded") as engine:
    for n in (2, 4):
        ttscale.run(strategy="best_of_n", budget="256", limit=2, params={"n": n, "max_tokens": 24}, engine=engine,
                    out=f"runs/bon{n}")

ttscale.compare(runs=["runs/bon2", "runs/bon4"]).to_markdown()
ttscale.report(["runs"], out="report.html")
frame = ttscale.load_runs("runs")
print("records", len(r.records), len(frame), "engine log", engine.log_path)
"""

#: What vLLM, torch and their libraries print at an engine's start (its log lines, warnings, weight loading).
VLLM_CHATTER = ("INFO", "WARNING", "Triton", "FutureWarning", "NUMA", "Loading", "it/s]")


@pytest.mark.slow
def test_readmes_python_block_runs_as_a_plain_script_and_keeps_the_terminal_quiet(tmp_path: Path) -> None:
    # Issue 49 items 1 and 4. vLLM starts its engine process with spawn, which ran script.py's top level again
    # there: the nested ttscale.run met the first one's lock, and the user read "Engine core initialization failed".
    # Two engine starts (the run's own, then the shared ttscale.Engine's): both must leave the script alone, and
    # both must keep vLLM's output off the terminal (the run's in runs/sc/engine.log, the Engine's in its log).
    (tmp_path / "script.py").write_text(README_SCRIPT)
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout.strip().splitlines()[-1].split()
    assert said[:3] == ["records", "2", "6"], done.stdout  # 2 records of runs/sc; 6 in runs/ (sc, bon2, bon4)
    summary = json.loads((tmp_path / "runs" / "sc" / "summary.json").read_text())
    assert summary["problems"] == 2 and len((tmp_path / "runs" / "sc" / "results.jsonl").read_text().splitlines()) == 2
    assert (tmp_path / "report.html").is_file()
    loud = [line for line in (done.stderr + done.stdout).splitlines() if any(m in line for m in VLLM_CHATTER)]
    assert loud == [], loud[:10]
    shared_log = Path(said[-1])
    try:
        for log in (tmp_path / "runs" / "sc" / "engine.log", shared_log):
            assert "INFO" in log.read_text(errors="replace"), log
    finally:
        shared_log.unlink(missing_ok=True)


def test_engine_settings_are_checked_before_anything_starts() -> None:
    engine = ttscale.Engine(max_model_len=4096, kv_cache_dtype="auto")  # not started until used
    assert engine.config.max_model_len == 4096 and engine.config.engine_args == {"kv_cache_dtype": "auto"}
    with pytest.raises(ValueError, match="max_model_len must be in"):
        ttscale.Engine(max_model_len=10)
    with pytest.raises(ValueError, match="not an engine argument of the installed vLLM"):
        ttscale.Engine(max_num_seq=8)


def test_fit_and_report_read_real_runs_as_the_cli_does(capsys: pytest.CaptureFixture[str]) -> None:
    from ttscale.cli import main

    runs = [Path(__file__).parent / "data" / "real_runs" / name for name in ("sc-n4", "sc-n8", "sc-n16")]
    fit = ttscale.fit(law="saturation", runs=runs, x="samples", n_boot=100)
    assert main(["fit", "--law", "saturation", "--x", "samples", "--n-boot", "100", "--json", *map(str, runs)]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(fit.to_dict()))
    markdown = ttscale.report(runs)
    assert main(["report", *map(str, runs)]) == 0
    assert capsys.readouterr().out == markdown and all(r.name in markdown for r in runs)
    with pytest.raises(ValueError, match="give either run directories"):
        ttscale.fit(law="coverage")
    with pytest.raises(ValueError, match="format must be md or html"):
        ttscale.report(runs, format="pdf")


def test_run_refuses_bad_settings_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="did you mean 'self_consistency'"):
        ttscale.run(strategy="self_consistncy", out=tmp_path / "x")
    with pytest.raises(ValueError, match="n must be ≥ 1"):
        ttscale.run(strategy="self_consistency", params={"n": 0}, out=tmp_path / "y")
    assert not (tmp_path / "y").exists()  # refused before any directory or engine


# -- inside a running event loop (a notebook), engine-free: the SIMULATED arithmetic policy (tests.adaptive.sim) --


def test_run_and_sweep_work_inside_a_running_event_loop(tmp_path: Path) -> None:
    import asyncio
    import threading

    from tests.adaptive.sim import SeededSimulator, model_dir

    model, sim = str(model_dir(tmp_path)), SeededSimulator(seed=1)
    loop_thread: list[threading.Thread] = []

    async def notebook_cell() -> tuple[ttscale.Run, ttscale.Sweep, ttscale.Sweep]:
        loop_thread.append(threading.current_thread())
        one = ttscale.run(strategy="best_of_n", budget="400", task="arithmetic:1-3", limit=3, model=model,
                          params={"n": 2, "max_tokens": 40}, engine=sim, out=tmp_path / "run")
        grid = ttscale.sweep(strategies=["best_of_n n=2 max_tokens=40"], budgets=["200", "400"],
                             task="arithmetic:1-3", limit=3, model=model, engine=sim, out=tmp_path / "sweep")
        again = ttscale.sweep(out=tmp_path / "sweep", engine=sim)  # `out` alone: finish that sweep (nothing left)
        return one, grid, again

    asked = []
    original = sim.generate

    async def generate(*args: object, **kwargs: object) -> object:
        asked.append(threading.current_thread())
        return await original(*args, **kwargs)  # type: ignore[arg-type]

    sim.generate = generate  # type: ignore[method-assign]
    one, grid, again = asyncio.run(notebook_cell())
    assert one.summary["problems"] == 3 and len(one.records) == 3
    # The work ran on a loop of its own, in another thread: asyncio.run is refused inside a running loop.
    assert asked and loop_thread[0] not in set(asked)
    assert sorted((c["budget"], c["derived_from"] is None) for c in grid.cells) == [("200", False), ("400", True)]
    requests = len(asked)
    assert again.cells == grid.cells and len(asked) == requests  # finished: the engine was not asked again
    stored = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert stored["spec"]["engine"]["model"] == model and stored["command"][0] == "ttscale.sweep"


def test_a_sweep_called_again_with_another_grid_in_the_same_out_is_refused_and_touches_nothing(
        tmp_path: Path) -> None:
    from tests.adaptive.sim import SeededSimulator, model_dir

    model, sim, out = str(model_dir(tmp_path)), SeededSimulator(seed=1), tmp_path / "sweep"
    args = dict(strategies=["best_of_n n=2 max_tokens=40"], task="arithmetic:1-3", limit=2, model=model, engine=sim,
                out=out, progress=False)
    first = ttscale.sweep(budgets=["200"], **args)  # type: ignore[arg-type]
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    for other, differ in ((dict(budgets=["400"]), "budgets"), (dict(budgets=["200"], limit=3), "limit"),
                          (dict(budgets=["200"], strategies=["self_consistency max_tokens=40"]), "grid")):
        with pytest.raises(ValueError) as refused:
            ttscale.sweep(**{**args, **other})  # type: ignore[arg-type]
        assert str(refused.value) == (f"{str(out)!r} already holds a sweep of another grid ({differ} differ): "
                                      f"finish it with out={str(out)!r} alone, or pick another out")
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # nothing written, nothing run
    again = ttscale.sweep(budgets=["200"], **args)  # type: ignore[arg-type]  # the same call finishes it
    assert again.cells == first.cells
    # How many problems run at once changes no cell: the same grid at another concurrency finishes it too.
    assert ttscale.sweep(budgets=["200"], concurrency=3, **args).cells == first.cells  # type: ignore[arg-type]


def test_engine_args_are_routed_into_the_engine_config_and_checked(tmp_path: Path) -> None:
    from tests.adaptive.sim import SeededSimulator, model_dir

    model = str(model_dir(tmp_path))
    grid = ttscale.sweep(strategies="best_of_n n=1 max_tokens=40", budgets="400", task="arithmetic:1-3", limit=2,
                         model=model, engine_args={"max_num_seqs": 8, "kv_cache_dtype": "auto"},
                         engine=SeededSimulator(seed=1), out=tmp_path / "sweep")
    engine = json.loads((grid.path / "sweep.json").read_text())["spec"]["engine"]
    assert (engine["model"], engine["max_num_seqs"], engine["engine_args"]) == (model, 8, {"kv_cache_dtype": "auto"})
    with pytest.raises(ValueError, match="'max_num_seq' is not an engine argument of the installed vLLM"):
        ttscale.run(strategy="best_of_n", engine_args={"max_num_seq": 8}, out=tmp_path / "x")
    with pytest.raises(ValueError, match="engine_args must map vLLM engine argument names to values"):
        ttscale.run(strategy="best_of_n", engine_args=["max_num_seqs=8"], out=tmp_path / "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="give engine_config= or model=/engine_args=, not both"):
        ttscale.sweep(strategies=["best_of_n"], budgets=["1k"], model=model, engine_config=EngineConfig(model=model),
                      out=tmp_path / "x")
    shared = ttscale.Engine(model="embedded")  # never started: every call below is refused first
    wrongs = ({"model": model}, {"engine_args": {"max_num_seqs": 8}}, {"engine_config": EngineConfig(model=model)})
    for wrong in wrongs:
        with pytest.raises(ValueError, match=r"engine= is a ttscale\.Engine of model 'embedded'"):
            ttscale.run(strategy="best_of_n", engine=shared, out=tmp_path / "x", **wrong)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"engine must be a ttscale\.Engine .* got object"):
        ttscale.sweep(strategies=["best_of_n"], budgets=["1k"], engine=object(), out=tmp_path / "x")  # type: ignore
    served = OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="served", tokenizer=model)
    with pytest.raises(ValueError, match="server= runs a served model; engine=, model= and engine_args= are for vLLM"):
        ttscale.sweep(strategies=["best_of_n"], budgets=["1k"], model=model, server=served, out=tmp_path / "x")
    with pytest.raises(ValueError, match="a sweep needs strategies"):
        ttscale.sweep(budgets=["1k"], out=tmp_path / "x")
    with pytest.raises(ValueError, match="not a ttscale sweep"):
        ttscale.sweep(out=tmp_path / "x")  # `out` alone finishes a sweep: there is none
    assert shared._sync is None and not (tmp_path / "x").exists()


# -- one path: `ttscale run` and `ttscale.run` both build a RunSpec and hand it to ttscale.pipeline.carry_out ----


def test_the_cli_and_the_api_hand_the_same_spec_to_one_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import ttscale.engine
    import ttscale.pipeline
    from ttscale.cli import build_parser, main
    from ttscale.pipeline import SpecOver
    from ttscale.running.runner import RunSpec
    from ttscale.testing import SimulatedArithmeticPolicy

    calls: list[tuple[RunSpec, dict[str, object]]] = []
    carry_out = ttscale.pipeline.carry_out

    def recorded(spec: RunSpec | SpecOver, **kwargs: object) -> ttscale.Run:
        made = spec
        if not isinstance(made, RunSpec):  # `--resume`: the flags over the stored spec, as carry_out applies them
            config = Path(str(kwargs["out"])) / "config.json"
            made = made(RunSpec.from_stored(json.loads(config.read_text())["spec"], where=config))
        calls.append((made, kwargs))
        return carry_out(spec, **kwargs)  # type: ignore[arg-type]

    async def simulated(config: object) -> SimulatedArithmeticPolicy:
        return SimulatedArithmeticPolicy(seed=1)

    monkeypatch.setattr(ttscale.pipeline, "carry_out", recorded)
    monkeypatch.setattr(ttscale.engine, "start_engine", simulated)  # the engine `ttscale run` starts
    cli, api = tmp_path / "cli", tmp_path / "api"
    argv = ["run", "--strategy", "self_consistency", "--budget", "256", "--total-budget", "512", "--task",
            "arithmetic:1-2", "--limit", "2", "--param", "n=2", "--seed", "3", "--hardware", "H100", "--out", str(cli)]
    assert main([*argv, "--no-progress", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    done = ttscale.run(strategy="self_consistency", budget="256", total_budget="512", task="arithmetic:1-2", limit=2,
                       params={"n": "2"}, seed=3, hardware="H100", out=api, engine=SimulatedArithmeticPolicy(seed=1))
    assert len(calls) == 2
    (cli_spec, cli_how), (api_spec, api_how) = calls
    assert cli_spec == api_spec and cli_spec.engine.seed == 3 and cli_spec.total_budget == "512"
    assert (cli_how["resume"], api_how["resume"]) == (False, None)  # the CLI's new run refuses a run's folder
    stored = [json.loads((path / "config.json").read_text()) for path in (cli, api)]
    assert stored[0]["spec"] == stored[1]["spec"] and stored[0]["identity"] == stored[1]["identity"]
    assert printed["problems"] == done.summary["problems"] == 2
    assert printed["total_budget"] == done.summary["total_budget"]

    # Resuming: `--resume DIR` and the same call again reach it too, and each finds nothing left to run.
    assert main(["run", "--resume", str(api), "--no-progress", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["resumed"] is True
    again = ttscale.run(strategy="self_consistency", budget="256", total_budget="512", task="arithmetic:1-2", limit=2,
                        params={"n": "2"}, seed=3, hardware="H100", out=cli, engine=SimulatedArithmeticPolicy(seed=1))
    assert again.summary["resumed"] is True
    assert [(how["resume"], spec.params) for spec, how in calls[2:]] == [(True, {"n": "2"}), (None, {"n": "2"})]
    # A total alone caps each problem too, from either side.
    only_total = RunSpec.from_cli_args(build_parser().parse_args(["run", "--strategy", "sc", "--total-budget", "1k"]))
    ttscale.run(strategy="sc", total_budget="1k", task="arithmetic:1", limit=1, out=tmp_path / "total",
                engine=SimulatedArithmeticPolicy(seed=1))
    assert calls[-1][0].budget == calls[-1][0].total_budget == only_total.budget == only_total.total_budget == "1k"


def test_run_resume_says_whether_out_must_hold_a_run(tmp_path: Path) -> None:
    from ttscale.testing import SimulatedArithmeticPolicy

    settings = {"strategy": "ets", "budget": "2k", "task": "arithmetic:1", "limit": 1, "params": {"width": 2}}
    with pytest.raises(ValueError, match="is not a ttscale run"):
        ttscale.run(**settings, out=tmp_path / "run", resume=True, engine=SimulatedArithmeticPolicy(seed=1))
    first = ttscale.run(**settings, out=tmp_path / "run", resume=False, engine=SimulatedArithmeticPolicy(seed=1))
    with pytest.raises(ValueError, match="already holds a run: continue it with --resume, or pick another --out"):
        ttscale.run(**settings, out=tmp_path / "run", resume=False, engine=SimulatedArithmeticPolicy(seed=1))
    # Resumed under the alias it was made with (width, ETS's name for n): the stored n is not given twice.
    again = ttscale.run(**settings, out=tmp_path / "run", resume=True, engine=SimulatedArithmeticPolicy(seed=1))
    assert again.summary["resumed"] is True and again.summary["correct"] == first.summary["correct"]
