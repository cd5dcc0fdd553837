"""An engine's processes end with the process that started them, however it ends.

vLLM's engine processes (EngineCore, and its workers) have no watch on their parent: a script of
`ttscale.run` or `ttscale.Engine` killed by a scheduler's SIGTERM (Python's default: exit at once,
no cleanup) or by SIGKILL (the OOM killer) left them running, holding their memory (observed: an
EngineCore and its Worker, 3.7 GB, alive 52 minutes after their owner died, on a GPU its memory).
The CLI stops cleanly on a signal (`ttscale.running.signals`); this covers every other owner.

`Watchdog.start(pids)` starts a small process that holds the processes `pids` (taken as they are
now: a pid reused later is not one of them) and waits on a pipe whose other end only the owner
holds. `close()` says goodbye first and the watchdog leaves them alone; an end of the pipe without
it (the owner died) makes it end them and their children: SIGTERM, then SIGKILL after 3 s.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from typing import Any

#: The watchdog itself (`python -c`): psutil only, so that it starts in a fraction of a second.
_WATCH = r"""
import os, sys, psutil
held = []
for pid in sys.argv[1:]:
    try:
        held.append(psutil.Process(int(pid)))
    except psutil.Error:
        pass
print("watching", flush=True)
said = b""
while True:
    try:
        chunk = os.read(0, 64)
    except InterruptedError:
        continue
    if not chunk:
        break
    said += chunk
if said.endswith(b"bye"):
    sys.exit(0)
every = []
for process in held:
    try:
        every += [*process.children(recursive=True), process]
    except psutil.Error:
        pass
for process in every:
    try:
        process.terminate()
    except psutil.Error:
        pass
_, alive = psutil.wait_procs(every, timeout=3)
for process in alive:
    try:
        process.kill()
    except psutil.Error:
        pass
"""


class Watchdog:
    """Ends the processes it was given when the process that made it dies without `close()` (see the module doc)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    @classmethod
    def start(cls, pids: list[int]) -> Watchdog | None:
        """Watch `pids` (None when there are none). Returns once the watchdog holds them."""
        if not pids:
            return None
        # Its own session: a Ctrl-C to the terminal's job does not end it before it could do its work. Its stdin is
        # the pipe; the write end stays here alone (not inheritable, and no child of ours is given it).
        process = subprocess.Popen([sys.executable, "-c", _WATCH, *map(str, pids)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                                   close_fds=True)
        assert process.stdout is not None
        process.stdout.readline()  # "watching": the processes are held from here on
        process.stdout.close()
        return cls(process)

    def close(self) -> None:
        """The owner is done with them (the engine was shut down): the watchdog leaves without ending anything."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(OSError):
                stdin.write(b"bye")
                stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=5)


def children(*, recursive: bool = False) -> set[int]:
    """The pids of this process's children now (`recursive`: all its descendants); none where the process table
    cannot be read."""
    try:
        import psutil

        return {p.pid for p in psutil.Process().children(recursive=recursive)}
    except Exception:
        return set()


def new_children(before: set[int], *, recursive: bool = False) -> list[Any]:
    """This process's children (`recursive`: descendants) not in `before`, as psutil processes, but multiprocessing's
    resource tracker (`is_resource_tracker`); none where the process table cannot be read."""
    try:
        import psutil

        return [p for p in psutil.Process().children(recursive=recursive)
                if p.pid not in before and not is_resource_tracker(p)]
    except Exception:
        return []


def is_resource_tracker(process: Any) -> bool:
    """Whether `process` is multiprocessing's resource tracker, which vLLM's start leaves running.

    It ignores SIGTERM by design (stopping took 5 s more, then a kill) and exits by itself when this
    process does, after removing what the engine's processes left behind: it is left to do so.
    """
    try:
        return "multiprocessing.resource_tracker" in " ".join(process.cmdline())
    except Exception:  # gone meanwhile, or not ours to read
        return False


__all__ = ["Watchdog", "children", "is_resource_tracker", "new_children"]
