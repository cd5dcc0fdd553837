"""What `ttscale.run`, `ttscale.sweep`, `ttscale.compare` and `ttscale.allocate` share below their arguments: the
shared engine handle (`SharedEngine`), the engine settings a call records (`call_config`), and the driver that runs a
call's coroutine from synchronous code (`drive`). A run itself is carried out by `ttscale.pipeline`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import fields, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from ttscale.engine.base import EngineConfig

if TYPE_CHECKING:
    from ttscale.engine import BlockingEngine
    from ttscale.engine.base import AsyncEngine

T = TypeVar("T")


class SharedEngine:
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
        self._sync: BlockingEngine | None = None
        self._log = None if log is None else Path(log)
        self._verbose = verbose
        self.log_path: Path | None = None
        """Where the engine's start-up output and its processes' later output went (None: not started, or
        `verbose`)."""

    def __enter__(self) -> SharedEngine:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> BlockingEngine:
        if self._sync is None:
            from ttscale.engine import BlockingEngine
            from ttscale.engine.spawn import refuse_in_spawned_bootstrap
            from ttscale.running.launch import start_logged

            refuse_in_spawned_bootstrap("ttscale.Engine")
            log = None if self._verbose else self._log or _temporary_log()

            def start(config: EngineConfig) -> Coroutine[Any, Any, AsyncEngine]:
                return start_logged(config, log=log)

            self._sync = BlockingEngine(self.config, start=start)
            self.log_path = log
        return self._sync

    def close(self) -> None:
        if self._sync is not None:
            from ttscale.engine.logs import capture_output

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


def call_config(engine: SharedEngine | AsyncEngine | None, *, model: str | None, engine_args: Mapping[str, Any] | None,
                config: EngineConfig | None, deterministic: bool | None = None) -> EngineConfig:
    """The engine settings a call (`run`, `sweep`, `compare`) records, from one source, checked in one line:
    a `SharedEngine`'s own; else `config` whole, or one made from `model` and `engine_args`. `deterministic`
    (None: as the settings say) must agree with a shared engine's mode, and sets the mode of one the call starts."""
    if deterministic is not None and not isinstance(deterministic, bool):
        raise ValueError(f"deterministic must be True, False or None, got {deterministic!r}")
    if isinstance(engine, SharedEngine):
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


def _call_config(engine: AsyncEngine | None, *, model: str | None, engine_args: Mapping[str, Any] | None,
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


def drive(engine: SharedEngine | AsyncEngine | None,
          work: Callable[[AsyncEngine | None], Coroutine[Any, Any, T]]) -> T:
    """Run `work(engine)` to its end from synchronous code, inside a running event loop (a notebook) too.

    A `SharedEngine`'s own loop runs it and the engine stays up for the next call. Otherwise, with no loop
    running here (a script, the CLI), `asyncio.run`: Ctrl-C cancels the work, so its cleanup (closing an engine
    it started) runs. Inside a running loop, where `asyncio.run` is refused, a loop of this call's own in a
    background thread (`BackgroundLoop`), stopped afterwards. An engine object is handed to `work` as it is.
    """
    from ttscale.engine.loop import BackgroundLoop

    if isinstance(engine, SharedEngine):
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


__all__ = ["SharedEngine", "call_config", "drive", "engine_config", "stamp"]
