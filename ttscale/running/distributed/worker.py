"""The Ray actor: one engine, solving the problems the driver sends it.

A plain class (no Ray import here): the pool wraps it with `ray.remote` when it starts. It is an
async actor, so the problems the driver has in flight on it run as coroutines on one event loop
and its engine batches their requests, exactly as in a one-engine run.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ttscale.engine.base import AsyncEngine
    from ttscale.running.runner import Prepared
    from ttscale.schema import Problem


class Worker:
    """Owns one engine, started on first use: after Ray restarts a dead worker, the first call starts it again."""

    def __init__(self, prepared: Prepared, rank: int) -> None:
        self._prepared = prepared
        self._rank = rank
        self._engine: AsyncEngine | None = None
        self._starting: asyncio.Lock | None = None

    async def start(self) -> dict[str, Any]:
        """Start the engine (if not yet) and say who this worker is."""
        engine = await self._ready()
        return {"rank": self._rank, "pid": os.getpid(), "engine": engine.describe()}

    async def solve(self, problem: Problem) -> dict[str, Any]:
        """One problem, as `ttscale.running.runner.solve` does it; the record goes back to the driver."""
        from ttscale.running.runner import solve

        engine = await self._ready()
        record = await solve(self._prepared, engine, problem)
        return record.to_json()

    def pid(self) -> int:
        return os.getpid()

    async def stop(self) -> None:
        """Close the engine before the actor is killed: vLLM's engine processes go with it."""
        if self._engine is not None:
            engine, self._engine = self._engine, None
            await engine.close()

    async def _ready(self) -> AsyncEngine:
        if self._starting is None:  # created here: the actor's event loop exists only once methods run
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._engine is None:
                from ttscale.engine import start_engine

                # Several workers may share one machine: each binding its threads to every core would
                # oversubscribe them, so workers keep vLLM's own binding unless the user set one.
                os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "auto")
                self._engine = await start_engine(self._prepared.spec.engine_config())
        return self._engine
