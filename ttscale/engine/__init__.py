"""Engines: the async protocol and its backends (vLLM is imported only when an engine starts)."""

from __future__ import annotations

from typing import Any

from ttscale.engine.base import Engine, EngineConfig, Prompt
from ttscale.engine.loop import BackgroundLoop


async def start_engine(config: EngineConfig, *, backend: str = "vllm") -> Engine:
    """Start the engine `config` describes, inside the running event loop."""
    if backend != "vllm":
        raise ValueError(f"unknown backend {backend!r}; allowed: vllm")
    from ttscale.engine.vllm import VLLMEngine

    return await VLLMEngine.start(config)


class SyncEngine:
    """An engine on a background loop, for synchronous code (scripts, notebooks, test fixtures)."""

    def __init__(self, config: EngineConfig | None = None, **overrides: Any) -> None:
        self.loop = BackgroundLoop()
        self.engine: Engine = self.loop.run(start_engine(config or EngineConfig(**overrides)))

    def close(self) -> None:
        self.loop.run(self.engine.close())
        self.loop.stop()


__all__ = ["BackgroundLoop", "Engine", "EngineConfig", "Prompt", "SyncEngine", "start_engine"]
