"""A small pool of persistent grader processes with a deadline on every call.

Why processes: a symbolic grader can hang on hostile input (`(10^{10})!`), and a thread cannot
be stopped. math-verify's own timeout uses SIGALRM, which works only in the main thread, while
the runner grades from asyncio code and threads. So every call gets a deadline in the parent;
a worker that overruns it is killed (and replaced in the background) and the call answers
"timeout". Works from any thread; many threads may share one pool.

Why plain subprocesses (`python -c ...` with two pipes) rather than `multiprocessing`: its
spawn/forkserver methods re-import the user's `__main__` in every worker (a script without an
`if __name__ == "__main__"` guard would run again), and fork is unsafe in a parent that runs
threads. A worker costs one interpreter start plus the sympy import (about a second); that is
paid once per worker, and after a kill off the caller's clock.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Literal

Outcome = Literal["equal", "different", "timeout", "late", "error"]
"""A pair's fate: a verdict; "timeout" (a worker ran it until its deadline and was killed);
"late" (it never reached a worker before the call's deadline: all were busy or restarting);
"error" (the grader raised or the worker died)."""

_START_TIMEOUT = 120.0  # seconds for a worker to come up (it imports sympy)
# The worker sees the parent's sys.path (a source checkout, a notebook's additions), then serves.
_BOOT = (
    "import sys; sys.path[:] = {path!r}; "
    "from ttscale.answers.mv_worker import main; main({read_fd}, {write_fd}, {memory!r})"
)


class WorkerStartError(RuntimeError):
    """A worker process exited before it was ready (a broken install: see its stderr)."""


@dataclass(frozen=True, kw_only=True)
class PoolConfig:
    """How the grader's worker processes are run."""

    workers: int = 2
    """Worker processes (each grades one pair at a time)."""
    memory_limit_mb: int | None = 2048
    """Address-space cap of each worker; None leaves it unlimited."""

    def __post_init__(self) -> None:
        if not isinstance(self.workers, int) or not 1 <= self.workers <= 256:
            raise ValueError(f"workers must be an integer in [1, 256], got {self.workers!r}")
        if self.memory_limit_mb is not None and (
            not isinstance(self.memory_limit_mb, int) or self.memory_limit_mb < 256
        ):
            raise ValueError(f"memory_limit_mb must be None or an integer ≥ 256, got {self.memory_limit_mb!r}")


class _Worker:
    """One worker slot: a process and the parent's ends of its two pipes (None until started)."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.requests: Connection | None = None
        self.replies: Connection | None = None
        self._lock = threading.Lock()  # close() at exit may race a background respawn

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self, *, reap: bool = True) -> subprocess.Popen[bytes] | None:
        """SIGKILL the process and close the pipes; with `reap=False` the caller must `wait()` it."""
        with self._lock:
            process, conns = self.process, (self.requests, self.replies)
            self.process = self.requests = self.replies = None
        if process is not None:
            process.kill()
            if reap:
                process.wait()
        for conn in conns:
            if conn is not None:
                conn.close()
        return process


class _Waiter:
    """A thread waiting for a worker: the releasing thread hands one over directly (FIFO)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.worker: _Worker | None = None


class GraderPool:
    """Persistent math-verify workers; `run` grades pairs, each within its own deadline."""

    def __init__(self, config: PoolConfig | None = None) -> None:
        self.config = config or PoolConfig()
        self._lock = threading.Lock()
        self._idle: list[_Worker] = [_Worker() for _ in range(self.config.workers)]
        self._waiters: collections.deque[_Waiter] = collections.deque()
        self._closed = False
        self.restarts = 0
        """Workers killed and replaced (overruns, crashes)."""
        self._all = list(self._idle)
        self._pid = os.getpid()
        _LIVE_POOLS.add(self)

    # -- public ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start every worker now, in parallel (otherwise each starts on first use). Outside any deadline."""
        workers = [self._acquire(deadline=None) for _ in range(self.config.workers)]
        try:
            cold = [w for w in workers if w is not None and not w.alive()]
            for worker in cold:
                self._launch(worker)
            for worker in cold:
                self._await_ready(worker, deadline=None)
        finally:
            for held in workers:
                if held is not None:
                    self._release(held)

    @property
    def usable(self) -> bool:
        """Open, and owned by this process (a forked child must start its own pool)."""
        return not self._closed and os.getpid() == self._pid

    def run(self, pairs: Sequence[tuple[str, str]], *, timeout: float, deadline: float | None = None) -> list[Outcome]:
        """Grade each `(prediction, reference)`; each may use at most `timeout` seconds of a worker.

        `deadline` (a `time.monotonic()` value) bounds the whole call, waiting for a free
        worker included: pairs not finished by then answer "late". Thread-safe.
        """
        results: list[Outcome | None] = [None] * len(pairs)
        pending = collections.deque(range(len(pairs)))
        held: dict[Connection, tuple[_Worker, int, float]] = {}
        retried: set[int] = set()
        try:
            while pending or held:
                self._dispatch(pairs, pending, held, results, retried, timeout=timeout, deadline=deadline)
                if not held:
                    break  # no worker came free before the deadline
                now = time.monotonic()
                nearest = min(due for _, _, due in held.values())
                try:
                    ready = wait(list(held), timeout=max(0.0, nearest - now))
                except (OSError, ValueError):  # close() from another thread shut the pipes
                    ready = list(held)
                for conn in ready:
                    worker, index, _ = held.pop(conn)  # type: ignore[call-overload]
                    results[index] = self._receive(worker)
                now = time.monotonic()
                for conn, (worker, index, due) in list(held.items()):
                    if now >= due:
                        del held[conn]
                        results[index] = "timeout"
                        self._discard(worker)
        finally:
            for worker, _, _ in held.values():  # interrupted (KeyboardInterrupt): no half-done workers
                self._discard(worker)
        return [r if r is not None else "late" for r in results]

    def __del__(self) -> None:
        # A pool dropped without close(): end its workers now rather than at interpreter exit.
        # Not contextlib.suppress: at interpreter shutdown the module's globals (contextlib among them) may be None.
        try:  # noqa: SIM105
            self.close()
        except Exception:  # at interpreter shutdown anything may be gone
            pass

    def close(self) -> None:
        """Stop every worker. The pool cannot be used afterwards."""
        if os.getpid() != self._pid:  # a forked copy: the workers belong to the parent
            self._closed = True
            return
        with self._lock:
            self._closed = True
            self._idle = []
            waiters, self._waiters = list(self._waiters), collections.deque()
        for waiter in waiters:  # they wake with no worker and answer "late"
            waiter.event.set()
        for worker in self._all:  # busy ones too: their callers see EOF and answer "error"
            worker.kill()

    # -- internals ---------------------------------------------------------------------------

    def _dispatch(
        self,
        pairs: Sequence[tuple[str, str]],
        pending: collections.deque[int],
        held: dict[Connection, tuple[_Worker, int, float]],
        results: list[Outcome | None],
        retried: set[int],
        *,
        timeout: float,
        deadline: float | None,
    ) -> None:
        """Send pending pairs to free workers: wait for one only when none is held."""
        while pending:
            worker = self._acquire(deadline=deadline, block=not held)
            if worker is None:
                return
            index = pending.popleft()
            try:
                if not worker.alive():
                    self._spawn(worker, deadline=deadline)
                if worker.requests is None or worker.replies is None:
                    raise OSError("worker pipes are closed")
                worker.requests.send(pairs[index])
            except TimeoutError:  # a replacement did not come up before the caller's deadline
                results[index] = "late"
                self._release(worker)
                continue
            except (OSError, EOFError, WorkerStartError):  # the worker died between jobs: the pair never started
                self._discard(worker)
                if index in retried:
                    results[index] = "error"
                else:  # so it gets one more try, on another worker
                    retried.add(index)
                    pending.appendleft(index)
                continue
            due = time.monotonic() + timeout
            held[worker.replies] = (worker, index, due if deadline is None else min(due, deadline))

    def _receive(self, worker: _Worker) -> Outcome:
        try:
            if worker.replies is None:  # close() from another thread got here first
                raise EOFError
            answer = worker.replies.recv()
        except (EOFError, OSError):  # the worker died (segfault in a C extension, OOM kill)
            self._discard(worker)
            return "error"
        if answer is None:  # math-verify raised: the worker is fine, the verdict is unknown
            self._release(worker)
            return "error"
        if not isinstance(answer, bool):  # out of memory or too deep: start afresh
            self._discard(worker)
            return "error"
        self._release(worker)
        return "equal" if answer else "different"

    def _spawn(self, worker: _Worker, *, deadline: float | None = None) -> None:
        self._launch(worker)
        self._await_ready(worker, deadline=deadline)

    def _launch(self, worker: _Worker) -> None:
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        boot = _BOOT.format(
            path=list(sys.path),
            read_fd=request_read,
            write_fd=reply_write,
            memory=self.config.memory_limit_mb,
        )
        try:
            worker.process = subprocess.Popen(
                [sys.executable, "-c", boot], pass_fds=(request_read, reply_write), stdin=subprocess.DEVNULL
            )
        finally:
            os.close(request_read)
            os.close(reply_write)
        worker.requests = Connection(request_write, readable=False)
        worker.replies = Connection(reply_read, writable=False)

    def _await_ready(self, worker: _Worker, *, deadline: float | None) -> None:
        replies, process = worker.replies, worker.process
        limit = _START_TIMEOUT if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            if replies is not None and replies.poll(limit) and replies.recv() == "ready":
                return
            exited = False
        except (EOFError, OSError):  # the pipe closed: the process is exiting
            exited = True
        code = None
        if exited and process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = process.wait(timeout=5)
        worker.kill()
        if exited:  # its traceback went to stderr
            raise WorkerStartError(f"a grader worker exited while starting (exit code {code}); see its error above")
        raise TimeoutError(f"a grader worker did not start within {limit:.1f} s")

    def _discard(self, worker: _Worker) -> None:
        """Kill a worker whose state is unknown and start its replacement in the background.

        The caller returns at once; the slot rejoins the pool when the new process is ready, so
        a worker's start (an interpreter and the sympy import) never eats another call's deadline.
        """
        process = worker.kill(reap=False)  # reaped in the background: the caller returns now
        with self._lock:
            self.restarts += 1
        threading.Thread(
            target=self._respawn, args=(worker, process), daemon=True, name="ttscale-grader-respawn"
        ).start()

    def _respawn(self, worker: _Worker, dead: subprocess.Popen[bytes] | None) -> None:
        try:
            if dead is not None:
                dead.wait()
            if not self._closed:
                self._spawn(worker)
        except Exception:  # the slot goes back empty; the next user starts it (and sees the error)
            worker.kill()
        finally:
            self._release(worker)

    def _acquire(self, *, deadline: float | None, block: bool = True) -> _Worker | None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the grader pool is closed")
            if self._idle and not self._waiters:
                return self._idle.pop()
            if not block:
                return None
            waiter = _Waiter()
            self._waiters.append(waiter)
        waiter.event.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        with self._lock:
            if waiter.worker is None and waiter in self._waiters:
                self._waiters.remove(waiter)
            return waiter.worker

    def _release(self, worker: _Worker) -> None:
        with self._lock:
            if self._closed:
                worker.kill()
                return
            if self._waiters:
                waiter = self._waiters.popleft()
                waiter.worker = worker
                waiter.event.set()
            else:
                self._idle.append(worker)


_LIVE_POOLS: weakref.WeakSet[GraderPool] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Workers exit on their own when the parent's pipes close; this just does not wait for that."""
    for pool in list(_LIVE_POOLS):
        pool.close()
