"""SIGINT and SIGTERM stop a run cleanly: finished problems stay saved, the engine's processes end.

A cluster's scheduler preempts with SIGTERM; left to Python's default, SIGTERM kills the parent at
once and vLLM's engine processes run on, holding their GPUs (observed: EngineCore and Worker at
100% CPU after the parent died). Here both signals cancel the run's main task, so every `finally`
on the way out runs: the engine is shut down and the run directory closed. Whatever a crashed
shutdown still leaves behind is ended by `end_children`. vLLM's engine start blocks the event loop,
so a signal that arrives during it takes effect when the start returns (interrupting the start from
a signal handler was tried: vLLM then waited out its 600 s engine-ready timeout).

Ctrl-C in a terminal, and a scheduler that signals the whole job, reach vLLM's engine process too:
it exits, and the start fails with vLLM's "Engine core initialization failed" before the loop ever
sees the signal. `NoteStops` therefore notes each signal the moment it arrives (a handler chained
in front of the one in place), so that such a failure is reported as the stop it was (`Interrupted`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from typing import Any

#: Exit codes of the shell convention, 128 + the signal's number.
_EXIT = {"SIGINT": 130, "SIGTERM": 143}


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal whose arrival made something fail (the engine's start, most often).

    A KeyboardInterrupt, so that a script or notebook sees Ctrl-C as the interrupt it was.
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"stopped by {name}")
        self.name = name


class NoteStops:
    """While entered, notes SIGINT and SIGTERM as they arrive, then lets the handler in place act as before.

    `name`: the first stop signal that arrived (None: none). Only a Python handler is chained, in the main
    thread: where a signal still has its default action the process ends with it, and nothing is left to report.
    """

    def __init__(self) -> None:
        self.name: str | None = None
        self._chained: dict[int, tuple[Any, Any]] = {}

    def __enter__(self) -> NoteStops:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in (signal.SIGINT, signal.SIGTERM):
            before = signal.getsignal(signum)
            if not callable(before):
                continue

            def note(number: int, frame: Any, before: Any = before) -> None:
                self.name = self.name or signal.Signals(number).name
                before(number, frame)

            signal.signal(signum, note)
            self._chained[signum] = (note, before)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, (note, before) in self._chained.items():
            if signal.getsignal(signum) is note:  # a handler set meanwhile by someone else stays
                signal.signal(signum, before)
        self._chained = {}


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

    def note(self, exc: BaseException) -> None:
        """Take the signal's name from an `Interrupted` (the loop's own handler may never have run)."""
        if isinstance(exc, Interrupted):
            self.name = self.name or exc.name

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
            left = [p for p in me.children(recursive=True) if p.pid not in self._children and not _tracker(p)]
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


def _tracker(process: Any) -> bool:
    """Whether `process` is multiprocessing's resource tracker, which vLLM's start leaves running.

    It ignores SIGTERM by design (stopping took 5 s more, then a kill) and exits by itself when this
    process does, after removing what the engine's processes left behind: it is left to do so.
    """
    try:
        return "multiprocessing.resource_tracker" in " ".join(process.cmdline())
    except Exception:  # gone meanwhile, or not ours to read
        return False


def _child_pids() -> set[int]:
    try:
        import psutil

        return {p.pid for p in psutil.Process().children(recursive=True)}
    except Exception:
        return set()
