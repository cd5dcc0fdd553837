"""SIGINT and SIGTERM stop a run cleanly: finished problems stay saved, the engine's processes end.

A cluster's scheduler preempts with SIGTERM; left to Python's default, SIGTERM kills the parent at
once and vLLM's engine processes run on, holding their GPUs (observed: EngineCore and Worker at
100% CPU after the parent died). Here both signals cancel the run's main task, so every `finally`
on the way out runs: the engine is shut down and the run directory closed. Whatever a crashed
shutdown still leaves behind is ended by `end_children`; a second signal ends the process at once.
vLLM's engine start blocks the event loop, so the loop sees a signal only when the start returns
(interrupting the start from a signal handler was tried: vLLM then waited out its 600 s engine-ready
timeout); `NoteStops.starting` therefore ends the start's processes, which makes the start fail at once.

Ctrl-C in a terminal, and a scheduler that signals the whole job, reach vLLM's engine process too:
it exits, and the start fails with vLLM's "Engine core initialization failed" before the loop ever
sees the signal. `NoteStops` therefore notes each signal the moment it arrives (a handler chained
in front of the one in place), so that such a failure is reported as the stop it was (`Interrupted`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from ttscale.engine.watchdog import children, new_children

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
        self._starting: set[int] | None = None  # while an engine starts: the processes that were there before
        self._reaper: threading.Thread | None = None

    def __enter__(self) -> NoteStops:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in (signal.SIGINT, signal.SIGTERM):
            before = signal.getsignal(signum)
            if not callable(before):
                continue

            def note(number: int, frame: Any, before: Any = before) -> None:
                self.name = self.name or signal.Signals(number).name
                if self._starting is not None:
                    self._end_start()
                before(number, frame)

            signal.signal(signum, note)
            self._chained[signum] = (note, before)
        return self

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """Around an engine's start, which blocks the event loop: a stop signal then ends the processes started
        meanwhile (and any the start makes after it), so that the start fails at once and the stop is seen.

        Without it a signal to this process alone waited 20-27 s for the start to finish (issue 43): vLLM's
        engine process, signalled, only notes the signal while it is being built. Killing it is what a Ctrl-C to
        the whole job amounts to: vLLM's start fails with "Engine core initialization failed", reported as the
        stop (`Interrupted`)."""
        self._starting = children(recursive=True)
        try:
            yield
        finally:
            self._starting = None
            if self._reaper is not None:
                self._reaper.join(timeout=5)
                self._reaper = None

    def _end_start(self) -> None:
        """From the signal handler: a thread that kills the start's processes until the start is over."""
        if self._reaper is not None:
            return

        def reap() -> None:
            while (before := self._starting) is not None:
                for process in new_children(before, recursive=True):
                    with contextlib.suppress(Exception):
                        process.kill()
                time.sleep(0.05)

        self._reaper = threading.Thread(target=reap, name="ttscale-stop-during-start", daemon=True)
        self._reaper.start()

    def __exit__(self, *exc_info: object) -> None:
        for signum, (note, before) in self._chained.items():
            if signal.getsignal(signum) is note:  # a handler set meanwhile by someone else stays
                signal.signal(signum, before)
        self._chained = {}


class StopSignals:
    """Turns SIGINT and SIGTERM into a cancellation of the running main task; a second one ends the process at once.

    The first stop lets every `finally` run (the engine shut down, the run directory closed). A second is for
    when that takes too long (a hung shutdown, work in a thread that cannot be cancelled): the processes the run
    started are killed and the process exits with the signal's code, without waiting for anything. Saved
    records stay saved; a line a write had under way is a torn tail, which `--resume` cuts.
    """

    def __init__(self) -> None:
        self.name: str | None = None
        """The signal that stopped the run, once one did."""
        self.hint = ""
        """Said after the line of a second stop: how to go on (e.g. `; continue with --resume DIR`)."""
        self._children: set[int] = set()
        # The handlers in place before the run's event loop (asyncio's own SIGINT handler, set inside the loop,
        # is not the one to put back once the loop is gone).
        self._before: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            self._before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
        self._installed = False
        self._err = -1  # this terminal's stderr, kept while a run sends fd 2 to its engine.log

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Call inside the main task, before the engine starts; `restore` when the run is over (this object is
        made in the main thread before the loop starts)."""
        main = asyncio.current_task()
        self._children = children(recursive=True)  # processes that were there before: not the run's to end

        def on_stop(number: int, frame: Any) -> None:
            name = signal.Signals(number).name
            if self.name is not None:
                self._end_now(name)
            self.name = name
            if main is not None:
                with contextlib.suppress(RuntimeError):  # the loop has closed: the run is ending anyway
                    loop.call_soon_threadsafe(main.cancel)

        if not self._before or threading.current_thread() is not threading.main_thread():
            return
        with contextlib.suppress(OSError):
            self._err = os.dup(2)
        for signum in self._before:
            signal.signal(signum, on_stop)
        self._installed = True

    def restore(self) -> None:
        """Put back the handlers in place when this object was made, if `install` replaced them."""
        if self._installed:
            for signum, before in self._before.items():
                signal.signal(signum, before if before is not None else signal.SIG_DFL)
            self._installed = False
        if self._err >= 0:
            with contextlib.suppress(OSError):
                os.close(self._err)
            self._err = -1

    def _end_now(self, name: str) -> None:
        """The second stop: kill what the run started and exit, from the signal handler, without unwinding."""
        with contextlib.suppress(OSError):
            os.write(self._err if self._err >= 0 else 2,
                     f"ttscale: stopped by {name} (a second stop: ended at once){self.hint}\n".encode())
        try:
            import psutil

            left = [p for p in psutil.Process().children(recursive=True) if p.pid not in self._children]
        except Exception:  # psutil missing or the table unreadable: exit all the same
            left = []
        for process in left:
            with contextlib.suppress(Exception):
                process.kill()
        os._exit(_EXIT.get(name, 130))

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
        left = new_children(self._children, recursive=True)  # never multiprocessing's resource tracker
        for process in left:
            with contextlib.suppress(psutil.Error):
                process.terminate()
        _gone, alive = psutil.wait_procs(left, timeout=timeout)
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        psutil.wait_procs(alive, timeout=timeout)
        return [p.pid for p in left]
