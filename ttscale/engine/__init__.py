"""Engines: the async protocol and its backends (vLLM is imported only when an engine starts)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from ttscale.engine.base import EngineClient, EngineConfig, EngineFatalError, Prompt
from ttscale.engine.loop import BackgroundLoop

if TYPE_CHECKING:
    from ttscale.engine.openai import OpenAIConfig

BACKENDS = ("vllm", "openai")


class EngineStarter(Protocol):
    """A config that starts a backend of its own (a plugin's, or a simulator of `ttscale.testing`)."""

    async def start_engine(self) -> EngineClient: ...


async def start_engine(config: EngineConfig | OpenAIConfig | EngineStarter) -> EngineClient:
    """Start the engine `config` describes, inside the running event loop.

    An `EngineConfig` starts vLLM in this process; an `OpenAIConfig` connects to a served model; any
    other config with an async `start_engine()` method starts its own backend (a plugin's, or a
    simulator of `ttscale.testing`), so Ray workers and the runner need no change to use it.
    """
    starter = getattr(config, "start_engine", None)
    if callable(starter):
        engine: EngineClient = await starter()
        return engine
    if isinstance(config, EngineConfig):
        from ttscale.engine.vllm import VLLMEngine

        return await VLLMEngine.start(config)
    from ttscale.engine.openai import OpenAIConfig, OpenAIEngine

    if not isinstance(config, OpenAIConfig):
        raise TypeError(f"start_engine takes an EngineConfig or an OpenAIConfig, got {type(config).__name__}")
    return await OpenAIEngine.start(config)


async def _awaited(value: Awaitable[EngineClient]) -> EngineClient:
    return await value


class SyncEngine:
    """An engine on a background loop, for synchronous code (scripts, notebooks, test fixtures)."""

    def __init__(self, config: EngineConfig | None = None, *,
                 start: Callable[[EngineConfig], Awaitable[EngineClient]] | None = None, **overrides: Any) -> None:
        """`start`: what starts the engine on the loop (default `start_engine`; `ttscale.Engine` logs its start)."""
        self.loop = BackgroundLoop()
        starting = (start or start_engine)(config or EngineConfig(**overrides))
        try:
            self.engine: EngineClient = self.loop.run(_awaited(starting))
        except BaseException:
            self.loop.stop()  # a failed start leaves no loop thread behind
            raise

    def close(self) -> None:
        self.loop.run(self.engine.close())
        self.loop.stop()


__all__ = [
    "BACKENDS",
    "BackgroundLoop",
    "EngineClient",
    "EngineConfig",
    "EngineFatalError",
    "EngineStarter",
    "Prompt",
    "SyncEngine",
    "start_engine",
]
