"""What `ttscale.run`, `ttscale.sweep`, `ttscale.compare` and `ttscale.allocate` share below their arguments: the
shared engine handle (`Engine`), the engine settings a call records (`call_config`), the driver that runs a call's
coroutine from synchronous code (`drive`), and `carry_out`, the one path of a run that `ttscale.run` and
`ttscale run` both take once they have a `RunSpec`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from ttscale.engine.base import EngineConfig
from ttscale.runstore.storage import RunDirError

if TYPE_CHECKING:
    from ttscale.distributed import DistributedConfig
    from ttscale.engine import SyncEngine
    from ttscale.engine.base import EngineClient
    from ttscale.run_spec import RunSpec
    from ttscale.runstore.storage import RunDir

T = TypeVar("T")


class Engine:
    """A started engine that several `run` calls share (a context manager; `close()` otherwise).

    `model`: `embedded`, a local Hugging Face folder or a hub id. Keyword settings are `EngineConfig`'s
    fields (max_model_len, gpu_memory_utilization, chat_template_kwargs, ...) or, for anything else, any
    argument of the installed vLLM's engine (tensor_parallel_size, quantization, ...), checked by name.
    What vLLM and its processes print goes to `log` (a file, appended; None: a new temporary file), as a run's goes
    to its engine.log; `verbose=True`: to this terminal instead. `log_path` says where it went.
    """

    def __init__(self, *, model: str = "embedded", log: str | Path | None = None, verbose: bool = False,
                 **settings: Any) -> None:
        if log is not None and not isinstance(log, str | os.PathLike):
            raise ValueError(f"log must be a file path or None, got {type(log).__name__}")
        if not isinstance(verbose, bool):
            raise ValueError(f"verbose must be True or False, got {verbose!r}")
        self.config = engine_config(model=model, **settings)
        self._sync: SyncEngine | None = None
        self._log = None if log is None else Path(log)
        self._verbose = verbose
        self.log_path: Path | None = None
        """Where the engine's start-up output and its processes' later output went (None: not started, or
        `verbose`)."""

    def __enter__(self) -> Engine:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> SyncEngine:
        if self._sync is None:
            from ttscale.engine import SyncEngine
            from ttscale.engine.spawn import refuse_in_spawned_bootstrap
            from ttscale.launch import start_logged

            refuse_in_spawned_bootstrap("ttscale.Engine")
            log = None if self._verbose else self._log or _temporary_log()

            def start(config: EngineConfig) -> Coroutine[Any, Any, EngineClient]:
                return start_logged(config, log=log)

            self._sync = SyncEngine(self.config, start=start)
            self.log_path = log
        return self._sync

    def close(self) -> None:
        if self._sync is not None:
            from ttscale.logs import capture_output

            # vLLM logs its shutdown (and a forced kill of its engine process) at the level set for the start.
            with capture_output(self.log_path):
                self._sync.close()
            self._sync = None


def _temporary_log() -> Path:
    """A new, empty file for a shared engine's log: it has no run directory to hold an engine.log."""
    import tempfile

    handle, name = tempfile.mkstemp(prefix="ttscale-engine-", suffix=".log")
    os.close(handle)
    return Path(name)


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


def call_config(engine: Engine | EngineClient | None, *, model: str | None, engine_args: Mapping[str, Any] | None,
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


def _call_config(engine: EngineClient | None, *, model: str | None, engine_args: Mapping[str, Any] | None,
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


def drive(engine: Engine | EngineClient | None,
          work: Callable[[EngineClient | None], Coroutine[Any, Any, T]]) -> T:
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


def stamp() -> str:
    """The time now as the default output folders name it (20250101-120000)."""
    import time

    return time.strftime("%Y%m%d-%H%M%S")


@dataclass(frozen=True)
class Finished:
    """A finished (or resumed) run: its directory and summary (`ttscale.Run` adds its records as a DataFrame)."""

    path: Path
    summary: dict[str, Any]


class RunExists(RunDirError):
    """A new run was asked for (`resume=False`) in a directory that holds one."""


def carry_out(
    spec: RunSpec,
    *,
    out: str | Path | None = None,
    engine: Engine | EngineClient | None = None,
    resume: bool | None = None,
    distributed: DistributedConfig | None = None,
    progress: bool = False,
    verbose: bool = False,
    argv: list[str] | None = None,
    started: Callable[[], None] | None = None,
) -> Finished:
    """Run `spec` into `out` (None: `default_out`) and return the run: the one path of `ttscale.run` and `ttscale run`.

    `resume`: None = continue the run `out` holds, if it holds one (`ttscale.run`); False = a new run, refused where
    `out` holds one; True = continue the run `out` holds (`--resume`). A resumed run takes the parameters it was made
    with for those `spec` leaves unset, and must otherwise be the run stored (`check_resume`). Every check is made
    before any engine starts. Then `launch` on `engine` (as `drive` takes it), or on the Ray workers of
    `distributed`; `started()` is called first inside the running coroutine, on its loop (the CLI installs its signal
    handlers there). `verbose`: the engine's output goes to this terminal instead of the run's engine.log. `argv`:
    the command config.json records (None: sys.argv).
    """
    from ttscale.launch import launch
    from ttscale.runner import prepare
    from ttscale.runstore.run_config import check_resume, default_out
    from ttscale.runstore.storage import RunDir

    if distributed is not None:
        if engine is not None:
            raise ValueError("distributed= starts an engine on each Ray worker; engine= is for a run in this process")
        if spec.total_budget is not None:
            raise ValueError("a total budget needs one process (its pool ledger is in memory): drop distributed=")
        if spec.backend != "vllm":
            raise ValueError("distributed= starts vLLM engines; it does not apply to a served model (backend "
                             f"{spec.backend})")
    run_dir = RunDir(out if out is not None else default_out(spec))
    resuming = run_dir.has_results() if resume is None else bool(resume)
    if resuming:
        spec = _with_stored_params(spec, run_dir)  # reads config.json: a folder that holds no run is refused here
    elif run_dir.has_results():
        raise RunExists(f"{str(run_dir.path)!r} already holds a run: continue it with --resume, or pick another --out")
    else:  # never a run mixed into someone's files (a failed start would then clean up among them)
        run_dir.check_new()
    prepared = prepare(spec, task_defaults=not resuming)  # a resumed run never takes today's task defaults
    if resuming:
        check_resume(run_dir, prepared)

    async def work(on: EngineClient | None) -> dict[str, Any]:
        if started is not None:
            started()
        return await launch(prepared, run_dir, resuming=resuming, engine=on, distributed=distributed,
                            progress=progress, log=not verbose, argv=argv)

    return Finished(path=run_dir.path, summary=drive(engine, work))


def _with_stored_params(spec: RunSpec, run_dir: RunDir) -> RunSpec:
    """`spec` with the parameters its stored run was made with (the task defaults of that day included) under the
    ones it gives, each under its field's own name (an alias given, `width`, replaces the stored `n`)."""
    from ttscale.params import field_names, params_class
    from ttscale.strategies import STRATEGIES

    identity = run_dir.read_config().get("identity")
    stored = identity.get("params") if isinstance(identity, dict) else None  # not a dict: check_resume says so
    name = STRATEGIES.canonical(spec.strategy, strict=False)
    if not isinstance(stored, dict) or name is None:  # an unknown strategy: `prepare` says so
        return spec
    cls = params_class(STRATEGIES.get(name))
    settable = {f.name for f in fields(cls) if f.init and not f.name.startswith("_")}  # not derived ones (a digest)
    given = field_names(cls, spec.params)
    return replace(spec, params={**{k: v for k, v in stored.items() if k in settable}, **given})


__all__ = ["Engine", "Finished", "RunExists", "call_config", "carry_out", "drive", "engine_config", "stamp"]
