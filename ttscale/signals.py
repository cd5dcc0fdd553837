"""SIGINT and SIGTERM stop a run cleanly: finished problems stay saved, the engine's processes end.

A cluster's scheduler preempts with SIGTERM; left to Python's default, SIGTERM kills the parent at
once and vLLM's engine processes run on, holding their GPUs (observed: EngineCore and Worker at
100% CPU after the parent died). Here both signals cancel the run's main task, so every `finally`
on the way out runs: the engine is shut down and the run directory closed. Whatever a crashed
shutdown still leaves behind is ended by `end_children`. vLLM's engine start blocks the event loop,
so a signal that arrives during it takes effect when the start returns (interrupting the start from
a signal handler was tried: vLLM then waited out its 600 s engine-ready timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal

#: Exit codes of the shell convention, 128 + the signal's number.
_EXIT = {"SIGINT": 130, "SIGTERM": 143}


class StopSignals:
    """Turns SIGTERM into a cancellation of the running main task (asyncio already does so for SIGINT)."""

    def __init__(self) -> None:
        self.name: str | None = None
        """The signal that stopped the run, once one did."""
        self._children: set[int] = set()

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Call inside the main task, before the engine starts."""
        main = asyncio.current_task()
        self._children = _child_pids()  # processes that were there before: not the run's to end

        def on_sigterm() -> None:
            self.name = self.name or "SIGTERM"
            if main is not None:
                main.cancel()

        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not on Windows / main thread
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)

    @property
    def exit_code(self) -> int:
        return _EXIT.get(self.name or "SIGINT", 130)

    def end_children(self, *, timeout: float = 5.0) -> list[int]:
        """Terminate the processes this run started that are still alive (then kill them); their pids."""
        try:
            import psutil
        except ImportError:  # pragma: no cover - psutil is a core dependency
            return []
        me = psutil.Process()
        try:
            left = [p for p in me.children(recursive=True) if p.pid not in self._children]
        except psutil.Error:
            return []
        for process in left:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        _gone, alive = psutil.wait_procs(left, timeout=timeout)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        psutil.wait_procs(alive, timeout=timeout)
        return [p.pid for p in left]


def _child_pids() -> set[int]:
    try:
        import psutil

        return {p.pid for p in psutil.Process().children(recursive=True)}
    except Exception:
        return set()
