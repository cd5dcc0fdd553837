"""A private event loop in a background thread, so synchronous callers can drive an async engine.

vLLM's `AsyncLLM` belongs to the loop it first ran in. Notebooks already run a loop of their
own, and a test session wants one engine across many tests: both get it by sending
coroutines to this loop, which lives as long as the engine.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class BackgroundLoop:
    """An asyncio loop running in a daemon thread; `run(coro)` blocks until the result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="ttscale-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:
            raise RuntimeError("BackgroundLoop.run called from its own loop: await the coroutine instead")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
