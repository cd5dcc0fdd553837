"""The one-call Python API — `ttscale.run`, `ttscale.sweep`, `ttscale.fit`, `ttscale.report` (and
`ttscale.compare`, `ttscale.load_runs`) — and `ttscale.Engine` for notebooks that share one engine. The CLI's
commands are thin adapters over these.

    import ttscale
    r = ttscale.run(strategy="self_consistency", budget="1k", task="arithmetic", limit=2, out="runs/x")
    r.summary["accuracy"], r.records            # the summary, and one row per problem (a DataFrame)

    with ttscale.Engine(model="embedded") as engine:  # start-up paid once for several runs
        a = ttscale.run(strategy="beam", budget="8k", limit=20, engine=engine)
        b = ttscale.run(strategy="best_of_n", budget="8k", limit=20, engine=engine)

    s = ttscale.sweep(strategies=["self_consistency", "best_of_n"], budgets=["512", "1k"], limit=20)
    s.table                                         # one row per cell: accuracy, mean spend, derived from
    fit = ttscale.fit(law="saturation", runs=[s.path / "cells"], x="samples")
    html = ttscale.report([s.path], out="report.html")

A run writes the same directory as `ttscale run` (config.json first, so it can be resumed; results.jsonl
fsynced per problem; summary.json): `ttscale run --resume DIR` continues it, and so does calling `run` again
with the same `out` and settings (finished problems are not run twice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ttscale.engine.base import EngineConfig

if TYPE_CHECKING:
    import pandas as pd

    from ttscale.engine import SyncEngine
    from ttscale.scaling.result import Fit


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


def engine_config(*, model: str = "embedded", **settings: Any) -> EngineConfig:
    """EngineConfig from keyword settings: its own fields by name, every other key a vLLM engine argument."""
    from ttscale.engine.args import parse_engine_args

    own = {f.name for f in fields(EngineConfig)}
    extra = {k: v for k, v in settings.items() if k not in own}
    values = {k: v for k, v in settings.items() if k in own}
    if extra:
        values["engine_args"] = {**values.get("engine_args", {}), **parse_engine_args(extra)}
    return EngineConfig(model=model, **values)


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
    model: str = "embedded",
    out: str | Path | None = None,
    engine: Engine | None = None,
    seed: int = 0,
    concurrency: int = 64,
    task_options: dict[str, Any] | None = None,
    progress: bool = False,
    verbose: bool = False,
) -> Run:
    """Run `strategy` on `task` at `budget` per problem; write and return the run directory (see the module doc).

    `engine`: a started `Engine` to share (its model is the run's); None = start one for this run.
    Calling again with the same `out` resumes: the settings must be the run's, and only unfinished problems run.
    The engine's start-up output goes to the run's engine.log (`verbose=True`: to this terminal); a new run
    that finished nothing is removed, and an engine that failed to start raises `EngineStartError` naming
    where its log was kept.
    """
    from ttscale.engine.loop import BackgroundLoop
    from ttscale.launch import launch
    from ttscale.runner import RunSpec, check_resume, default_out, prepare
    from ttscale.storage import RunDir

    config = engine.config if engine is not None else engine_config(model=model)
    spec = RunSpec(strategy=strategy, budget=str(budget), task=task, limit=limit, params=dict(params or {}),
                   seed=seed, concurrency=concurrency, task_options=dict(task_options or {}), engine=config)
    run_dir = RunDir(out if out is not None else default_out(spec))
    resuming = run_dir.has_results()
    prepared = prepare(spec, task_defaults=not resuming)
    if resuming:
        stored = (run_dir.read_config().get("identity") or {}).get("params")
        if isinstance(stored, dict):  # the parameters the run was made with (task defaults of that day included)
            prepared = prepare(replace(spec, params={**stored, **spec.params}), task_defaults=False)
        check_resume(run_dir, prepared)
    # A shared engine's own loop runs the problems and the engine stays up for the next call; otherwise a loop
    # of this run's own (so this works inside a notebook's running loop too) starts and closes one.
    shared = engine.start() if engine is not None else None
    loop = shared.loop if shared is not None else BackgroundLoop()
    try:
        summary = loop.run(launch(prepared, run_dir, resuming=resuming, engine=shared.engine if shared else None,
                                  progress=progress, log=not verbose, argv=["ttscale.run", strategy]))
    finally:
        if shared is None:
            loop.stop()
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
    strategies: Sequence[str],
    budgets: Sequence[str | int],
    seeds: Sequence[int] = (0,),
    task: str = "arithmetic",
    limit: int | None = None,
    model: str = "embedded",
    out: str | Path | None = None,
    engine: Engine | None = None,
    concurrency: int = 64,
    task_options: dict[str, Any] | None = None,
    subsample: bool = True,
    holdout: int = 0,
    progress: bool = False,
) -> Sweep:
    """Run a grid as `ttscale sweep` does: each strategy (`"name key=v1|v2 ..."`) × budget × seed, sample pools
    generated once at the largest budget and replayed at the smaller ones (`subsample`).

    `engine`: a started `Engine` shared by every seed (seeds still seed every request); None = one engine per
    seed. Calling again with the same `out` finishes an interrupted sweep (its stored grid is the one run).
    """
    import asyncio

    from ttscale.routing.outcomes import load_results, sweep_table
    from ttscale.routing.replay import best_at_compute
    from ttscale.sweeps import SWEEP, GridEntry, SweepSpec, create_sweep, load_spec, run_sweep

    config = engine.config if engine is not None else engine_config(model=model)
    spec = SweepSpec(grid=tuple(GridEntry.parse(s) for s in strategies), budgets=tuple(str(b) for b in budgets),
                     seeds=tuple(seeds), task=task, task_options=dict(task_options or {}), limit=limit,
                     engine=config, concurrency=concurrency, subsample=subsample, holdout=holdout)
    root = Path(out) if out is not None else Path("sweeps") / f"{task.replace(':', '-')}-{_stamp()}"
    if (root / SWEEP).is_file():
        spec = load_spec(root)
    else:
        create_sweep(spec, root, command=["ttscale.sweep", *strategies])
    if engine is not None:
        started = engine.start()
        started.loop.run(run_sweep(spec, root, engine=started.engine, progress=progress))
    else:
        asyncio.run(run_sweep(spec, root, progress=progress))
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
    paired comparisons (compare.json) found under them; written to `out` when given (`format` from its suffix
    unless given: .html, else Markdown). Returns the text."""
    from ttscale.reporting import find_comparisons, load_runs, render_html, render_markdown

    kind = format or ("html" if out is not None and Path(out).suffix.lower() in (".html", ".htm") else "md")
    if kind not in ("md", "html"):
        raise ValueError(f"format must be md or html, got {kind!r}")
    problems = load_runs(runs)
    comparisons = find_comparisons(runs)
    text = (render_html if kind == "html" else render_markdown)(problems, title=title, comparisons=comparisons)
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
    return text


def _stamp() -> str:
    import time

    return time.strftime("%Y%m%d-%H%M%S")


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """A run directory's records (results.jsonl, one dict per problem; a torn last line is left out, as
    `--resume` leaves it)."""
    from ttscale.storage import RunDir

    return RunDir(path).records()


__all__ = ["Engine", "Run", "Sweep", "engine_config", "fit", "read_records", "report", "run", "sweep"]
