"""Engines: the async protocol and its backends (vLLM is imported only when an engine starts)."""

from __future__ import annotations

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


class SyncEngine:
    """An engine on a background loop, for synchronous code (scripts, notebooks, test fixtures)."""

    def __init__(self, config: EngineConfig | None = None, **overrides: Any) -> None:
        self.loop = BackgroundLoop()
        self.engine: EngineClient = self.loop.run(start_engine(config or EngineConfig(**overrides)))

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
