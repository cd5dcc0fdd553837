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

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from ttscale.engine.base import EngineConfig

if TYPE_CHECKING:
    import pandas as pd

    from ttscale.engine import SyncEngine
    from ttscale.engine.base import Engine as EngineObject
    from ttscale.engine.openai import OpenAIConfig
    from ttscale.scaling.result import Fit

T = TypeVar("T")


class Engine:
    """A started engine that several `run` calls share (a context manager; `close()` otherwise).

    `model`: `embedded`, a local Hugging Face folder or a hub id. Keyword settings are `EngineConfig`'s
    fields (max_model_len, gpu_memory_utilization, chat_template_kwargs, ...) or, for anything else, any
    argument of the installed vLLM's engine (tensor_parallel_size, quantization, ...), checked by name.
    """

    def __init__(self, *, model: str = "embedded", **settings: Any) -> None:
        self.config = engine_config(model=model, **settings)
        self._sync: SyncEngine | None = None

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> SyncEngine:
        if self._sync is None:
            from ttscale.engine import SyncEngine

            self._sync = SyncEngine(self.config)
        return self._sync

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
            self._sync = None


def engine_config(*, model: str = "embedded", engine_args: Mapping[str, Any] | None = None,
                  **settings: Any) -> EngineConfig:
    """EngineConfig from keyword settings: its own fields by name; every other key, and every key of
    `engine_args`, a vLLM engine argument (checked by name against the installed vLLM, typed by its field)."""
    from ttscale.engine.args import parse_engine_args

    if engine_args is not None and not isinstance(engine_args, Mapping):
        raise ValueError(f"engine_args must map vLLM engine argument names to values, got {engine_args!r}")
    own = {f.name for f in fields(EngineConfig)}
    values = {k: v for k, v in settings.items() if k in own}
    vllm = {**(engine_args or {}), **{k: v for k, v in settings.items() if k not in own}}
    if vllm:
        values["engine_args"] = parse_engine_args(vllm)
    return EngineConfig(model=model, **values)


def call_config(engine: Engine | EngineObject | None, *, model: str | None, engine_args: Mapping[str, Any] | None,
                config: EngineConfig | None, deterministic: bool | None = None) -> EngineConfig:
    """The engine settings a call (`run`, `sweep`, `compare`) records, from one source, checked in one line:
    a shared `Engine`'s own; else `config` whole, or one made from `model` and `engine_args`. `deterministic`
    (None: as the settings say) must agree with a shared engine's mode, and sets the mode of one the call starts."""
    if deterministic is not None and not isinstance(deterministic, bool):
        raise ValueError(f"deterministic must be True, False or None, got {deterministic!r}")
    if isinstance(engine, Engine):
        if config is not None or engine_args or (model is not None and model != engine.config.model):
            raise ValueError(f"engine= is a ttscale.Engine of model {engine.config.model!r} and its settings are the "
                             "call's; model=, engine_args= and engine_config= are for an engine the call starts itself")
        if deterministic is not None and deterministic != engine.config.deterministic:
            raise ValueError(f"deterministic={deterministic}, but engine= is a ttscale.Engine started with "
                             f"deterministic={engine.config.deterministic}: start it as "
                             f"ttscale.Engine(deterministic={deterministic})")
        return engine.config
    chosen = _call_config(engine, model=model, engine_args=engine_args, config=config)
    return chosen if deterministic is None else replace(chosen, deterministic=deterministic)


def _call_config(engine: EngineObject | None, *, model: str | None, engine_args: Mapping[str, Any] | None,
                 config: EngineConfig | None) -> EngineConfig:
    if engine is not None and not callable(getattr(engine, "generate", None)):
        raise ValueError(f"engine must be a ttscale.Engine (or an engine object with generate(), such as a "
                         f"simulator), got {type(engine).__name__}")
    if config is None:
        return engine_config(model="embedded" if model is None else model, engine_args=engine_args)
    if not isinstance(config, EngineConfig):
        raise ValueError(f"engine_config must be an EngineConfig, got {type(config).__name__}")
    if model is not None or engine_args:
        raise ValueError("give engine_config= or model=/engine_args=, not both")
    return config


def drive(engine: Engine | EngineObject | None,
          work: Callable[[EngineObject | None], Coroutine[Any, Any, T]]) -> T:
    """Run `work(engine)` to its end from synchronous code, inside a running event loop (a notebook) too.

    A shared `Engine`'s own loop runs it and the engine stays up for the next call. Otherwise, with no loop
    running here (a script, the CLI), `asyncio.run`: Ctrl-C cancels the work, so its cleanup (closing an engine
    it started) runs. Inside a running loop, where `asyncio.run` is refused, a loop of this call's own in a
    background thread (`BackgroundLoop`), stopped afterwards. An engine object is handed to `work` as it is.
    """
    from ttscale.engine.loop import BackgroundLoop

    if isinstance(engine, Engine):
        started = engine.start()
        return started.loop.run(work(started.engine))
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work(engine))
    loop = BackgroundLoop()
    try:
        return loop.run(work(engine))
    finally:
        loop.stop()


@dataclass(frozen=True)
class Run:
    """A finished (or resumed) run: its directory, summary and records."""

    path: Path
    summary: dict[str, Any]

    @property
    def records(self) -> pd.DataFrame:
        """One row per problem (`ttscale.load_runs`)."""
        from ttscale.reporting.frames import load_runs

        return load_runs(self.path)


def run(
    *,
    strategy: str,
    budget: str = "8k",
    task: str = "arithmetic",
    limit: int | None = None,
    params: dict[str, Any] | None = None,
    model: str | None = None,
    engine_args: Mapping[str, Any] | None = None,
    engine_config: EngineConfig | None = None,
    out: str | Path | None = None,
    engine: Engine | EngineObject | None = None,
    seed: int = 0,
    concurrency: int = 64,
    task_options: dict[str, Any] | None = None,
    progress: bool = False,
    verbose: bool = False,
    deterministic: bool | None = None,
) -> Run:
    """Run `strategy` on `task` at `budget` per problem; write and return the run directory (see the module doc).

    `engine`: a started `Engine` to share (its model and settings are the run's), or an engine object used as
    it is (anything with the engine's methods: a simulator in tests); None = start one for this run, of
    `model` (None: `embedded`) with `engine_args` (any argument of the installed vLLM's engine, by name:
    {"tensor_parallel_size": 2, "quantization": "fp8"}; checked before anything starts), or as `engine_config`
    (a whole EngineConfig) says. Works inside a running event loop (a notebook) too.
    `deterministic=True`: samples that do not depend on the batch or the concurrency (`EngineConfig.deterministic`;
    refused in one line where the device cannot); None keeps the engine settings' own mode.
    Calling again with the same `out` resumes: the settings must be the run's, and only unfinished problems run.
    Problems a passing server fault left unfinished (answers that stayed malformed through every retry) do not
    raise: `summary["unfinished"]` counts them (a few with their errors in `unfinished_examples`), and calling
    again runs them; `ttscale run` exits 1 for them.
    The engine's start-up output goes to the run's engine.log (`verbose=True`: to this terminal); a new run
    that finished nothing is removed, and an engine that failed to start raises `EngineStartError` naming
    where its log was kept.
    """
    from ttscale.launch import launch
    from ttscale.runner import RunSpec, check_resume, default_out, prepare
    from ttscale.storage import RunDir

    config = call_config(engine, model=model, engine_args=engine_args, config=engine_config,
                         deterministic=deterministic)
    spec = RunSpec(strategy=strategy, budget=str(budget), task=task, limit=limit, params=params or {},
                   seed=seed, concurrency=concurrency, task_options=task_options or {}, engine=config)
    run_dir = RunDir(out if out is not None else default_out(spec))
    resuming = run_dir.has_results()
    if not resuming:  # refused before any engine starts: a new run never mixes into other files
        run_dir.check_new()
    prepared = prepare(spec, task_defaults=not resuming)
    if resuming:
        identity = run_dir.read_config().get("identity")
        stored = identity.get("params") if isinstance(identity, dict) else None  # not a dict: check_resume says so
        if isinstance(stored, dict):  # the parameters the run was made with (task defaults of that day included)
            prepared = prepare(replace(spec, params={**stored, **spec.params}), task_defaults=False)
        check_resume(run_dir, prepared)
    summary = drive(engine, lambda started: launch(prepared, run_dir, resuming=resuming, engine=started,
                                                   progress=progress, log=not verbose,
                                                   argv=["ttscale.run", strategy]))
    return Run(path=run_dir.path, summary=summary)


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
    engine: Engine | EngineObject | None = None,
    concurrency: int = 64,
    task_options: dict[str, Any] | None = None,
    subsample: bool = True,
    holdout: int = 0,
    progress: bool = False,
    command: Sequence[str] | None = None,
    deterministic: bool | None = None,
) -> Sweep:
    """Run a grid as `ttscale sweep` does: each strategy (`"name key=v1|v2 ..."`) × budget × seed, sample pools
    generated once at the largest budget and replayed at the smaller ones (`subsample`).

    `engine`: a started `Engine` shared by every seed (seeds still seed every request), or an engine object used
    as it is (a simulator in tests); None = one engine per seed, of `model` with `engine_args` (vLLM engine
    arguments by name) or as `engine_config` says, as for `run`. `server`: a served model (an OpenAIConfig:
    the `openai` backend) instead of engines in this process. Works inside a running event loop too.
    `deterministic`: as for `run` (engines ttscale starts only).
    Calling again with the same `out` finishes an interrupted sweep (its stored grid is the one run), and so
    does `out` alone, with no strategies. `command`: what sweep.json records as the command (default this call).
    """
    from ttscale.routing.outcomes import load_results, sweep_table
    from ttscale.routing.replay import best_at_compute
    from ttscale.sweeps import SWEEP, GridEntry, SweepSpec, create_sweep, load_spec, run_sweep

    strategies = [strategies] if isinstance(strategies, str) else strategies  # one strategy, not its characters
    budgets = [budgets] if isinstance(budgets, str | int) else budgets
    config = call_config(engine, model=model, engine_args=engine_args, config=engine_config,
                         deterministic=deterministic)
    if server is not None and (isinstance(engine, Engine) or model is not None or engine_args):
        raise ValueError("server= runs a served model; engine=, model= and engine_args= are for vLLM engines in "
                         "this process (the served model's name goes in the OpenAIConfig)")
    from ttscale.engine.determinism import refuse_served

    refuse_served(served=server is not None, deterministic=config.deterministic)  # before the sweep's folder exists
    root = Path(out) if out is not None else Path("sweeps") / f"{task.replace(':', '-')}-{_stamp()}"
    if out is not None and not strategies and not budgets:  # finishing the sweep in `out`, as it was made
        spec = load_spec(root)
    else:
        if not strategies or not budgets:
            raise ValueError("a sweep needs strategies (['NAME key=v1|v2 ...', ...]) and budgets, or out= a sweep "
                             "directory to finish")
        spec = SweepSpec(grid=tuple(GridEntry.parse(s) for s in strategies), budgets=tuple(str(b) for b in budgets),
                         seeds=tuple(seeds), task=task, task_options=dict(task_options or {}), limit=limit,
                         engine=config, backend="vllm" if server is None else "openai", server=server,
                         concurrency=concurrency, subsample=subsample, holdout=holdout)
        if (root / SWEEP).is_file():
            spec = load_spec(root)
        else:
            create_sweep(spec, root, command=list(command) if command else ["ttscale.sweep", *strategies])
    drive(engine, lambda started: run_sweep(spec, root, engine=started, progress=progress))
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

    Runs are read through `ttscale.runs`; what the reading counted specially (errored problems kept as wrong,
    torn last lines left out) is in `fit.details["read"]`. Bad input raises ValueError with one line.
    """
    from ttscale.scaling.inputs import read_points, read_runs
    from ttscale.scaling.laws import fit_law

    if (runs is None) == (points is None):
        raise ValueError("give either run directories (runs=) or a CSV of points (points=), one of the two")
    if law == "genrm" and lam is None:
        raise ValueError("law genrm needs lam (verification tokens per solution token, e.g. 1.0)")
    data = read_points(points, law=law) if points is not None else read_runs(list(runs or []), law=law, x=x)
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
    from ttscale.outputs import check_output
    from ttscale.reporting import find_comparisons, load_runs, render_html, render_markdown

    kind = format or ("html" if out is not None and Path(out).suffix.lower() in (".html", ".htm") else "md")
    if kind not in ("md", "html"):
        raise ValueError(f"format must be md or html, got {kind!r}")
    if out is not None:  # never over a run's files or the inputs (OutputError, a ValueError)
        check_output(out, inputs=[runs] if isinstance(runs, str | Path) else runs, flag="out")
    from ttscale.reporting.allocations import find_allocations

    problems = load_runs(runs)
    comparisons = find_comparisons(runs)
    text = (render_html if kind == "html" else render_markdown)(problems, title=title, comparisons=comparisons,
                                                                  allocations=find_allocations(runs))
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
    return text


def _stamp() -> str:
    import time

    return time.strftime("%Y%m%d-%H%M%S")


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """A run directory's records (results.jsonl, one dict per finished problem), read as every other reader reads
    it (`ttscale.runs.read_run`): a torn last line, records of problems outside the run's task and attempts a server
    fault left unfinished are left out, each with a warning; an empty run gives []."""
    from ttscale.runs import read_run

    return read_run(path, finished=False).records


__all__ = ["Engine", "Run", "Sweep", "engine_config", "fit", "read_records", "report", "run", "sweep"]
