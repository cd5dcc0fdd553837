"""The one-call Python API — `ttscale.run`, `ttscale.sweep`, `ttscale.fit`, `ttscale.report` (and
`ttscale.compare`, `ttscale.load_runs`) — and `ttscale.Engine` for notebooks that share one engine. The CLI's
commands are thin adapters over these. Each works inside a running event loop (a notebook's) too.

    import ttscale
    r = ttscale.run(strategy="self_consistency", budget="1k", task="arithmetic", limit=2, out="runs/x")
    r.summary["accuracy"], r.records            # the summary, and one row per problem (a DataFrame)

    with ttscale.Engine(model="embedded") as engine:  # start-up paid once for several runs
        a = ttscale.run(strategy="beam", budget="8k", limit=20, engine=engine)
        b = ttscale.run(strategy="best_of_n", budget="8k", limit=20, engine=engine)
        c = ttscale.compare(strategies=["beam", "best_of_n"], repeats=3, budget="8k", limit=20, engine=engine)

    s = ttscale.sweep(strategies=["self_consistency", "best_of_n"], budgets=["512", "1k"], limit=20,
                      model="Qwen/Qwen3-1.7B", engine_args={"tensor_parallel_size": 2})  # any vLLM engine argument
    s.table                                         # one row per cell: accuracy, mean spend, derived from
    fit = ttscale.fit(law="saturation", runs=[s.path / "cells"], x="samples")
    html = ttscale.report([s.path], out="report.html")

A run writes the same directory as `ttscale run` (config.json first, so it can be resumed; results.jsonl
fsynced per problem; summary.json): `ttscale run --resume DIR` continues it, and so does calling `run` again
with the same `out` and settings (finished problems are not run twice).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ttscale.engine import backend_for
from ttscale.engine.base import EngineConfig
from ttscale.engine.spawn import refuse_in_spawned_bootstrap
from ttscale.pipeline import Finished
from ttscale.running.session import SharedEngine, call_config, drive, engine_config, stamp

if TYPE_CHECKING:
    import pandas as pd

    from ttscale.engine.base import AsyncEngine
    from ttscale.engine.openai import OpenAIConfig
    from ttscale.running.distributed import DistributedConfig
    from ttscale.scaling.result import Fit


@dataclass(frozen=True)
class Run(Finished):
    """A finished (or resumed) run: its directory, summary and records."""

    @property
    def records(self) -> pd.DataFrame:
        """One row per problem (`ttscale.load_runs`)."""
        from ttscale.reporting.frames import load_runs

        return load_runs(self.path)


def run(
    *,
    strategy: str,
    budget: str | int | None = None,
    task: str = "arithmetic",
    limit: int | None = None,
    params: dict[str, Any] | None = None,
    model: str | None = None,
    engine_args: Mapping[str, Any] | None = None,
    engine_config: EngineConfig | None = None,
    out: str | Path | None = None,
    engine: SharedEngine | AsyncEngine | None = None,
    seed: int = 0,
    concurrency: int = 64,
    task_options: dict[str, Any] | None = None,
    total_budget: str | int | None = None,
    hardware: str | None = None,
    server: OpenAIConfig | None = None,
    distributed: DistributedConfig | None = None,
    resume: bool | None = None,
    progress: bool = False,
    verbose: bool = False,
    deterministic: bool | None = None,
) -> Run:
    """Run `strategy` on `task` at `budget` per problem; write and return the run directory (see the module doc).

    `budget`: per problem (None: 8k, or `total_budget` where that is given); `total_budget`: a budget over the
    whole task, shared by its problems and never exceeded (`--total-budget`). `hardware`: the profile that prices
    FLOPs and eFLOPs (None: B200). `seed`: the run's seed, and the engine's when the call starts its own.
    `engine`: a started `SharedEngine` to share (its model and settings are the run's), or an engine object used as
    it is (anything with the engine's methods: a simulator in tests); None = start one for this run, of
    `model` (None: `embedded`) with `engine_args` (any argument of the installed vLLM's engine, by name:
    {"tensor_parallel_size": 2, "quantization": "fp8"}; checked before anything starts), or as `engine_config`
    (a whole EngineConfig) says. `server`: a served model (an OpenAIConfig: the `openai` backend) instead of an
    engine in this process. `distributed`: the problems spread over Ray workers, one engine each (a
    `ttscale.running.distributed.DistributedConfig`). Works inside a running event loop (a notebook) too.
    `deterministic=True`: samples that do not depend on the batch or the concurrency (`EngineConfig.deterministic`;
    refused in one line where the device cannot); None keeps the engine settings' own mode.
    `resume`: None = calling again with the same `out` resumes: the settings must be the run's, and only unfinished
    problems run; False = `out` must not hold a run; True = it must (`ttscale run --resume`).
    Problems a passing server fault left unfinished (answers that stayed malformed through every retry) do not
    raise: `summary["unfinished"]` counts them (a few with their errors in `unfinished_examples`), and calling
    again runs them; `ttscale run` exits 1 for them.
    The engine's start-up output goes to the run's engine.log (`verbose=True`: to this terminal); a new run
    that finished nothing is removed, and an engine that failed to start raises `EngineStartError` naming
    where its log was kept.
    """
    from ttscale.pipeline import carry_out  # the pipeline `ttscale run` calls too, looked up when called
    from ttscale.running.runner import RunSpec

    refuse_in_spawned_bootstrap("ttscale.run")  # before the run's folder is read or locked
    config = call_config(engine, model=model, engine_args=engine_args, config=engine_config,
                         deterministic=deterministic)
    if server is not None and (isinstance(engine, SharedEngine) or model is not None or engine_args):
        raise ValueError("server= runs a served model; engine=, model= and engine_args= are for vLLM engines in "
                         "this process (the served model's name goes in the OpenAIConfig)")
    if engine_config is None and not isinstance(engine, SharedEngine):
        config = replace(config, seed=seed)  # the engine this call makes is seeded as the run (`ttscale run --seed`)
    total = None if total_budget is None else str(total_budget)
    spec = RunSpec(strategy=strategy, budget=str(budget if budget is not None else total or "8k"), task=task,
                   limit=limit, params=params or {}, seed=seed, concurrency=concurrency,
                   task_options=task_options or {}, engine=config, total_budget=total,
                   backend="vllm" if server is None else backend_for(server), server=server,
                   **({} if hardware is None else {"hardware": hardware}))
    done = carry_out(spec, out=out, engine=engine, resume=resume, distributed=distributed, progress=progress,
                     verbose=verbose, argv=["ttscale.run", strategy])
    return Run(path=done.path, summary=done.summary)


@dataclass(frozen=True)
class Sweep:
    """A finished (or resumed) sweep: its directory, one row per cell, and the best cell per strategy at each
    matched mean token spend."""

    path: Path
    cells: list[dict[str, Any]]
    matched: list[dict[str, Any]]

    @property
    def table(self) -> pd.DataFrame:
        """`cells` as a DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.cells)


def sweep(
    *,
    strategies: Sequence[str] = (),
    budgets: Sequence[str | int] = (),
    seeds: Sequence[int] = (0,),
    task: str = "arithmetic",
    limit: int | None = None,
    model: str | None = None,
    engine_args: Mapping[str, Any] | None = None,
    engine_config: EngineConfig | None = None,
    server: OpenAIConfig | None = None,
    out: str | Path | None = None,
    engine: SharedEngine | AsyncEngine | None = None,
    concurrency: int = 64,
    task_options: dict[str, Any] | None = None,
    subsample: bool = True,
    holdout: int = 0,
    progress: bool = False,
    command: Sequence[str] | None = None,
    deterministic: bool | None = None,
    verbose: bool = False,
) -> Sweep:
    """Run a grid as `ttscale sweep` does: each strategy (`"name key=v1|v2 ..."`) × budget × seed, sample pools
    generated once at the largest budget and replayed at the smaller ones (`subsample`).

    `engine`: a started `SharedEngine` shared by every seed (seeds still seed every request), or an engine object used
    as it is (a simulator in tests); None = one engine per seed, of `model` with `engine_args` (vLLM engine
    arguments by name) or as `engine_config` says, as for `run`. `server`: a served model (an OpenAIConfig:
    the `openai` backend) instead of engines in this process. Works inside a running event loop too.
    `deterministic`: as for `run` (engines ttscale starts only). An engine the sweep starts writes its output to
    the sweep's engine.log (`verbose=True`: to this terminal).
    Calling again with the same `out` and grid finishes an interrupted sweep, and so does `out` alone, with no
    strategies; another grid in that `out` is refused (the stored one would run in its place). `server=` there
    continues it from that address, with that key (sweep.json stores the URL with its secrets masked), on the model
    it was made with: another model is refused. `command`: what sweep.json records as the command (default this
    call).
    """
    from ttscale.sweeps import SWEEP, GridEntry, SweepSpec, create_sweep, load_spec, run_sweep
    from ttscale.sweeps.grid import on_server, refuse_other_grid
    from ttscale.sweeps.outcomes import best_at_compute, load_results, sweep_table

    refuse_in_spawned_bootstrap("ttscale.sweep")
    strategies = [strategies] if isinstance(strategies, str) else strategies  # one strategy, not its characters
    budgets = [budgets] if isinstance(budgets, str | int) else budgets
    config = call_config(engine, model=model, engine_args=engine_args, config=engine_config,
                         deterministic=deterministic)
    if server is not None and (isinstance(engine, SharedEngine) or model is not None or engine_args):
        raise ValueError("server= runs a served model; engine=, model= and engine_args= are for vLLM engines in "
                         "this process (the served model's name goes in the OpenAIConfig)")
    from ttscale.engine.determinism import refuse_served

    refuse_served(served=server is not None, deterministic=config.deterministic)  # before the sweep's folder exists
    root = Path(out) if out is not None else Path("sweeps") / f"{task.replace(':', '-')}-{stamp()}"
    if out is not None and not strategies and not budgets:  # finishing the sweep in `out`, as it was made
        spec = on_server(load_spec(root), server, root)
    else:
        if not strategies or not budgets:
            raise ValueError("a sweep needs strategies (['NAME key=v1|v2 ...', ...]) and budgets, or out= a sweep "
                             "directory to finish")
        spec = SweepSpec(grid=tuple(GridEntry.parse(s) for s in strategies), budgets=tuple(str(b) for b in budgets),
                         seeds=tuple(seeds), task=task, task_options=dict(task_options or {}), limit=limit,
                         engine=config, backend="vllm" if server is None else backend_for(server), server=server,
                         concurrency=concurrency, subsample=subsample, holdout=holdout)
        if (root / SWEEP).is_file():  # the same call again finishes it; another grid is refused
            stored = load_spec(root)
            refuse_other_grid(stored, spec, root)
            spec = on_server(stored, server, root)
        else:
            create_sweep(spec, root, command=list(command) if command else ["ttscale.sweep", *strategies])
    drive(engine, lambda started: run_sweep(spec, root, engine=started, progress=progress, verbose=verbose))
    cells = sweep_table(load_results(root))
    return Sweep(path=root, cells=cells, matched=best_at_compute(cells))


def fit(
    *,
    law: str,
    runs: Sequence[str | Path] | None = None,
    points: str | Path | None = None,
    x: str = "budget",
    form: str = "ttspm",
    mode: str = "parallel",
    epsilon: float = 0.01,
    lam: float | None = None,
    scope: str | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Fit:
    """Fit a scaling law (`coverage`, `saturation`, `kinetics`, `genrm`) to run directories or a CSV of points.

    Runs are read through `ttscale.runstore.runs`; what the reading counted specially (errored problems kept as wrong,
    torn last lines left out) is in `fit.details["read"]`. Bad input raises ValueError with one line.
    """
    from ttscale.scaling.inputs import points_from_runs, read_points
    from ttscale.scaling.laws import fit_law

    if (runs is None) == (points is None):
        raise ValueError("give either run directories (runs=) or a CSV of points (points=), one of the two")
    if law == "genrm" and lam is None:
        raise ValueError("law genrm needs lam (verification tokens per solution token, e.g. 1.0)")
    data = read_points(points, law=law) if points is not None else points_from_runs(list(runs or []), law=law, x=x)
    result = fit_law(law, data, form=form, mode=mode, epsilon=epsilon, lam=lam, scope=scope, n_boot=n_boot,
                     level=level, seed=seed)
    read = list(data.get("notes") or [])
    return replace(result, details={**result.details, "read": read}) if read or runs is not None else result


def report(
    runs: str | Path | Sequence[str | Path], *, out: str | Path | None = None, title: str = "ttscale report",
    format: str | None = None,
) -> str:
    """The leaderboard and charts of run directories (or folders holding them) as HTML or Markdown, with the
    paired comparisons (compare.json) and allocation searches (`ttscale allocate`) found under them; written to
    `out` when given (`format` from its suffix unless given: .html, else Markdown). Returns the text."""
    from ttscale.outputs import check_output, write_output
    from ttscale.reporting import find_comparisons, load_runs, render_html, render_markdown

    kind = format or ("html" if out is not None and Path(out).suffix.lower() in (".html", ".htm") else "md")
    if kind not in ("md", "html"):
        raise ValueError(f"format must be md or html, got {kind!r}")
    if out is not None:  # never over a run's files or the inputs (OutputError, a ValueError)
        check_output(out, inputs=[runs] if isinstance(runs, str | Path) else runs, flag="out")
    from ttscale.reporting.allocation_searches import find_allocations

    problems = load_runs(runs)
    comparisons = find_comparisons(runs)
    text = (render_html if kind == "html" else render_markdown)(problems, title=title, comparisons=comparisons,
                                                                  allocations=find_allocations(runs))
    if out is not None:
        write_output(out, text)  # a new file renamed into place: never through a hard link's other name
    return text


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """A run directory's records (results.jsonl, one dict per finished problem), read as every other reader reads
    it (`ttscale.runstore.runs.read_run`): a torn last line, records of problems outside the run's task and attempts
    a server fault left unfinished are left out, each with a warning; an empty run gives []."""
    from ttscale.evals import load_task
    from ttscale.runstore.runs import read_run

    return read_run(path, finished=False, tasks=load_task).records


__all__ = ["Run", "SharedEngine", "Sweep", "engine_config", "fit", "read_records", "report", "run", "sweep"]
