"""Engines: the async protocol and its backends (vLLM is imported only when an engine starts).

A backend is one file and one line of `ENGINES` (see `ttscale.engine.backend`); another package registers one
under the `ttscale.engines` entry-point group.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from ttscale.engine.backend import Backend
from ttscale.engine.base import AsyncEngine, EngineConfig, EngineFatalError, Prompt
from ttscale.engine.loop import BackgroundLoop
from ttscale.registry import Registry

if TYPE_CHECKING:
    from ttscale.engine.openai import OpenAIConfig

ENGINES: Registry[type[Backend]] = Registry("backend", entry_point_group="ttscale.engines")
"""Engine backends by name: `Backend` subclasses, imported when chosen."""
ENGINES.register("vllm", "ttscale.engine.vllm:VLLMBackend")
ENGINES.register("openai", "ttscale.engine.openai:OpenAIBackend")


class EngineStarter(Protocol):
    """A config that starts a backend of its own (a plugin's, or a simulator of `ttscale.testing`)."""

    async def start_engine(self) -> AsyncEngine: ...


async def start_engine(config: EngineConfig | OpenAIConfig | EngineStarter) -> AsyncEngine:
    """Start the engine `config` describes, inside the running event loop.

    An `EngineConfig` starts vLLM in this process; the config of a registered backend (an `OpenAIConfig`: a
    served model) starts that backend; any other config with an async `start_engine()` method starts its own
    (a simulator of `ttscale.testing`), so Ray workers and the runner need no change to use it.
    """
    starter = getattr(config, "start_engine", None)
    if callable(starter):
        engine: AsyncEngine = await starter()
        return engine
    return await ENGINES.get(backend_for(config)).start(config)


def backend_for(config: Any) -> str:
    """The registered backend whose config `config` is (`vllm` for an EngineConfig); TypeError for none."""
    if isinstance(config, EngineConfig):
        return "vllm"
    for name in ENGINES.names():
        options = ENGINES.get(name).config
        if options is not None and isinstance(config, options):
            return name
    raise TypeError(f"no registered backend takes a {type(config).__name__} (known: {', '.join(ENGINES.names())})")


def check_backend(backend: str, server: Any) -> None:
    """`backend` is registered, and `server` is its config exactly when it has a config class of its own (the
    in-process vLLM engine has none: its options are the EngineConfig). One-line ValueErrors."""
    if backend not in ENGINES:
        raise ValueError(f"backend must be one of {', '.join(ENGINES.names())}, got {backend!r}")
    options = ENGINES.get(backend).config
    if options is None and server is not None:
        raise ValueError(f"backend {backend} takes no server (its options are the engine's)")
    if options is not None and not isinstance(server, options):
        got = "none" if server is None else f"a {type(server).__name__}"
        raise ValueError(f"backend {backend} needs a server: an {options.__name__}, got {got}")


async def _awaited(value: Awaitable[AsyncEngine]) -> AsyncEngine:
    return await value


class BlockingEngine:
    """An engine on a background loop, for synchronous code (scripts, notebooks, test fixtures)."""

    def __init__(self, config: EngineConfig | None = None, *,
                 start: Callable[[EngineConfig], Awaitable[AsyncEngine]] | None = None, **overrides: Any) -> None:
        """`start`: what starts the engine on the loop (default `start_engine`; `ttscale.Engine` logs its start)."""
        self.loop = BackgroundLoop()
        starting = (start or start_engine)(config or EngineConfig(**overrides))
        try:
            self.engine: AsyncEngine = self.loop.run(_awaited(starting))
        except BaseException:
            self.loop.stop()  # a failed start leaves no loop thread behind
            raise

    def close(self) -> None:
        self.loop.run(self.engine.close())
        self.loop.stop()


__all__ = [
    "ENGINES",
    "AsyncEngine",
    "Backend",
    "BackgroundLoop",
    "BlockingEngine",
    "EngineConfig",
    "EngineFatalError",
    "EngineStarter",
    "Prompt",
    "backend_for",
    "check_backend",
    "start_engine",
]
