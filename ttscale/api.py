"""The one-call Python API: `ttscale.run`, and `ttscale.Engine` for notebooks that share one engine.

    import ttscale
    r = ttscale.run(strategy="self_consistency", budget="1k", task="arithmetic", limit=2, out="runs/x")
    r.summary["accuracy"], r.records            # the summary, and one row per problem (a DataFrame)

    with ttscale.Engine(model="embedded") as engine:  # start-up paid once for several runs
        a = ttscale.run(strategy="beam", budget="8k", limit=20, engine=engine)
        b = ttscale.run(strategy="best_of_n", budget="8k", limit=20, engine=engine)

A run writes the same directory as `ttscale run` (config.json first, so it can be resumed; results.jsonl
fsynced per problem; summary.json): `ttscale run --resume DIR` continues it, and so does calling `run` again
with the same `out` and settings (finished problems are not run twice).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ttscale.engine.base import EngineConfig

if TYPE_CHECKING:
    import pandas as pd

    from ttscale.engine import SyncEngine


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
        from ttscale.report.frames import load_runs

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
) -> Run:
    """Run `strategy` on `task` at `budget` per problem; write and return the run directory (see the module doc).

    `engine`: a started `Engine` to share (its model is the run's); None = start one for this run.
    Calling again with the same `out` resumes: the settings must be the run's, and only unfinished problems run.
    """
    from ttscale.engine import SyncEngine
    from ttscale.runner import RunSpec, check_resume, default_out, execute, prepare, record_engine, write_config
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
    own = engine.start() if engine is not None else SyncEngine(config)
    try:
        with run_dir.open_for_writing():
            if not resuming:
                write_config(run_dir, prepared, own.engine, argv=["ttscale.run", strategy])
            elif not (run_dir.read_config().get("environment") or {}).get("engine"):
                record_engine(run_dir, own.engine.describe())
            summary = own.loop.run(execute(prepared, own.engine, run_dir, progress=progress))
    finally:
        if engine is None:
            own.close()
    return Run(path=run_dir.path, summary=summary)


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """A run directory's records (results.jsonl, one dict per problem; a torn last line is left out, as
    `--resume` leaves it)."""
    from ttscale.storage import RunDir

    return RunDir(path).records()


__all__ = ["Engine", "Run", "engine_config", "read_records", "run"]
