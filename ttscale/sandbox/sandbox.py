"""`Sandbox`: run a candidate program and its tests in a fresh, isolated, limited process.

ttscale's side of the sandbox. One execution is one `python -I -S -c STUB` process (the supervisor, see
`_supervisor.py`) that receives the compiled harness and the job on stdin and answers on stdout; everything
that touches the candidate happens in there. What the machine allows is probed once per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import keyword
import marshal
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from ttscale.sandbox.limits import STATUSES, Execution, Limits, SandboxUnavailable

__all__ = ["ExecutionCancelled", "Sandbox", "in_thread"]

T = TypeVar("T")

LEVELS = ("namespaces", "rlimits", "bare")
"""What an execution gets, most isolated first: the order the sandbox degrades in. `bare` (no isolation, no
limits but the wall clock) is for measuring the sandbox's overhead only; `Sandbox` never picks it."""
ISOLATION = {
    "namespaces": "user, pid, net, mount, IPC namespaces; read-only filesystem (a minimal root: the Python "
    "installation, /usr, /dev/null, zero, random, urandom and its own /proc); an empty tmpfs as cwd, HOME and "
    "TMPDIR; uid 1000 without capabilities; its own session keyring; seccomp: keyring calls, io_uring, "
    "memfd_create, memfd_secret and address families but unix, inet, inet6, netlink refused; bounded SysV IPC; "
    "rlimits",
    "rlimits": "none: rlimits, own session and process group, orphans killed (subreaper), a host temp dir as cwd, "
    "HOME and TMPDIR; its own session keyring; seccomp as with namespaces, SysV shared memory, message queues "
    "and semaphores refused too; the network and the host's files are reachable, and so are the host's IPC objects",
    "bare": "none (benchmark baseline): no isolation, no limits but the wall clock",
}
MAX_SOURCE_BYTES = 1 << 20
_GRACE_SECONDS = 5.0  # how much longer than the wall-clock limit the supervisor may take before it is killed
_HARNESS = ("_isolation.py", "_hardening.py", "_wire.py", "_runner.py", "_judge.py", "_supervisor.py")
_MARKER = "ttscale-sandbox"  # in every supervisor's and candidate's command line
_STUB = (
    "import marshal,sys\n"
    "d=sys.stdin.buffer.read()\n"
    "n=int.from_bytes(d[:4],'big')\n"
    "g={'__name__':'ttscale_sandbox'}\n"
    "for c in marshal.loads(d[4:4+n]):exec(c,g)\n"
    "g['main'](marshal.loads(d[4+n:]))\n"
    f"# {_MARKER}"
)
_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
_PROBE = {"program": "def probe():\n    return 1\n", "test": "def check(f):\n    assert f() == 1\n",
          "entry_point": "probe"}
_DETECTED: dict[str, tuple[str, str]] = {}
_DETECT_LOCK = threading.Lock()


@cache
def _python() -> str:
    # The interpreter itself, not a venv's link to it: -I -S ignores the venv anyway, and its real prefix is
    # what the candidate's read-only root shows.
    return os.path.realpath(sys.executable)


@cache
def _harness_codes() -> bytes:
    here = Path(__file__).resolve().parent
    codes = tuple(compile((here / name).read_text(), str(here / name), "exec", dont_inherit=True) for name in _HARNESS)
    blob = marshal.dumps(codes)
    return len(blob).to_bytes(4, "big") + blob


@cache
def _mount_plan() -> tuple[list[str], list[tuple[str, str]]]:
    """Host directories the candidate sees read-only (at the same path), and top-level links such as /bin."""
    binds, links = [], []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            links.append((top, os.readlink(top)))
        elif os.path.isdir(top):
            binds.append(top)
    for prefix in {sys.base_prefix, sys.base_exec_prefix, os.path.dirname(os.path.dirname(_python()))}:
        real = os.path.realpath(prefix)
        if os.path.isdir(real) and not any(real == bound or real.startswith(bound + "/") for bound in binds):
            binds.append(real)
    return binds, links


def _refusal(program: str, test: str, entry_point: str | None, context: str | None = None) -> str | None:
    for name, text in (("program", program), ("test", test)):
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    for name, value in (("entry_point", entry_point), ("context", context)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
    for name, text in (("program", program), ("test", test), ("context", context or "")):
        size = len(text) if len(text) > MAX_SOURCE_BYTES else len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_SOURCE_BYTES:
            return f"{name} is {size:,} bytes: over the 1 MiB limit"
        if "\x00" in text:
            return f"{name} contains a NUL byte"
    if entry_point is not None and (not entry_point.isidentifier() or keyword.iskeyword(entry_point)):
        return f"entry point {entry_point[:80]!r} is not a Python identifier"
    return None


def _prepare(level: str, limits: Limits, program: str, test: str, entry_point: str | None,
             workdir: str | None, context: str | None) -> tuple[list[str], bytes]:
    binds, links = _mount_plan()
    job = {"level": level, "limits": limits.to_dict(), "program": program, "test": test,
           "entry_point": entry_point, "binds": binds, "links": links, "workdir": workdir, "context": context}
    return [_python(), "-I", "-S", "-c", _STUB], _harness_codes() + marshal.dumps(job)


def _decode(stdout: bytes, stderr: bytes, returncode: int | None, seconds: float) -> Execution:
    parts = stdout.split(b"\0", 3)
    status = parts[0].decode("ascii", "replace") if len(parts) == 4 else ""
    if status not in (*STATUSES, "error") or not parts[2].isdigit():
        lines = stderr.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1] if lines else "no message"
        return Execution(status="crashed", reason=f"sandbox error: the supervisor exited {returncode} without an "
                         f"answer ({why})", seconds=seconds)
    reason, dropped = parts[1].decode("utf-8", "replace"), int(parts[2])
    output = parts[3].decode("utf-8", "replace") + (f"\n[{dropped:,} more bytes of output dropped]" if dropped else "")
    if status == "error":
        return Execution(status="crashed", reason=f"sandbox error: {reason}", seconds=seconds, output=output)
    return Execution(status=status, reason=reason, seconds=seconds, output=output)  # type: ignore[arg-type]


def _timed_out(limits: Limits, seconds: float) -> Execution:
    return Execution(status="timeout", reason=f"wall-clock limit of {limits.wall_seconds} s: the supervisor did "
                     "not answer in time; process group killed", seconds=seconds)


def _kill_tree(pid: int) -> None:
    """Kill a supervisor that did not answer, and whatever it started (the candidate dies with it anyway)."""
    import psutil  # only here: the one place that needs it

    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    for process in descendants:
        with contextlib.suppress(psutil.Error):
            process.kill()


def _remove(path: str) -> None:
    def unlock(function: Any, target: str, _info: Any) -> None:
        # The candidate may have taken write permission away from its own directories.
        os.chmod(os.path.dirname(target), stat.S_IRWXU)
        function(target)

    shutil.rmtree(path, onerror=unlock)


class ExecutionCancelled(RuntimeError):
    """The work that asked for an execution was cancelled (a stop signal): it was not run, or was ended."""


class _Scope:
    """The executions started by one piece of work in a thread (`in_thread`); `cancel` ends them all and
    refuses new ones."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pids: set[int] = set()
        self.cancelled = False

    def adopt(self, pid: int) -> bool:
        with self._lock:
            if not self.cancelled:
                self._pids.add(pid)
            return not self.cancelled

    def release(self, pid: int) -> None:
        with self._lock:
            self._pids.discard(pid)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled, pids = True, list(self._pids)
        for pid in pids:
            _kill_tree(pid)


_SCOPE: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar("ttscale_sandbox_scope", default=None)


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`asyncio.to_thread(fn, ...)` whose sandbox executions end when the awaiting task is cancelled.

    A thread cannot be cancelled: a stop signal during code grading left each grading thread running its
    remaining executions (6 s each), and the process waited 85-115 s for them at exit (issue 43). Here the
    cancellation kills the executions in flight and makes every later one in that thread raise
    `ExecutionCancelled` at once, so the thread ends in moments.
    """
    scope = _Scope()
    context = contextvars.copy_context()
    context.run(_SCOPE.set, scope)
    loop = asyncio.get_running_loop()
    try:
        return await loop.run_in_executor(None, functools.partial(context.run, fn, *args, **kwargs))
    except asyncio.CancelledError:
        scope.cancel()
        raise


def _cancelled() -> ExecutionCancelled:
    return ExecutionCancelled("the run was stopped: the execution was not run to its end")


def execute(level: str, limits: Limits, program: str, test: str, entry_point: str | None,
            context: str | None = None) -> Execution:
    """One execution at `level` (blocking). `Sandbox.run` checks the input first; benchmarks call this directly.
    Raises `ExecutionCancelled` when the work it runs for is cancelled (see `in_thread`)."""
    scope = _SCOPE.get()
    if scope is not None and scope.cancelled:
        raise _cancelled()
    started = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix=f"{_MARKER}-") if level == "rlimits" else None
    try:
        argv, payload = _prepare(level, limits, program, test, entry_point, workdir or tempfile.gettempdir(), context)
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   cwd="/", env=_ENV, start_new_session=True)
        if scope is not None and not scope.adopt(process.pid):
            _kill_tree(process.pid)
            process.communicate()
            raise _cancelled()
        try:
            stdout, stderr = process.communicate(payload, timeout=limits.wall_seconds + _GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            _kill_tree(process.pid)
            process.communicate()
            return _timed_out(limits, time.perf_counter() - started)
        finally:
            if scope is not None:
                scope.release(process.pid)
    finally:
        if workdir is not None:
            _remove(workdir)
    if scope is not None and scope.cancelled:  # ended by the cancellation: its "crashed" is no verdict
        raise _cancelled()
    return _decode(stdout, stderr, process.returncode, time.perf_counter() - started)


async def execute_async(level: str, limits: Limits, program: str, test: str, entry_point: str | None,
                        context: str | None = None) -> Execution:
    """`execute` for an event loop: the process is awaited, never waited for."""
    started = time.perf_counter()
    workdir = tempfile.mkdtemp(prefix=f"{_MARKER}-") if level == "rlimits" else None
    try:
        argv, payload = _prepare(level, limits, program, test, entry_point, workdir or tempfile.gettempdir(), context)
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/", env=_ENV,
            start_new_session=True)
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(payload),
                                                    timeout=limits.wall_seconds + _GRACE_SECONDS)
        except asyncio.TimeoutError:
            _kill_tree(process.pid)
            await process.wait()
            return _timed_out(limits, time.perf_counter() - started)
        except asyncio.CancelledError:  # a stop signal: the execution ends with the task that awaited it
            _kill_tree(process.pid)
            raise
    finally:
        if workdir is not None:
            await asyncio.to_thread(_remove, workdir)
    return _decode(stdout, stderr, process.returncode, time.perf_counter() - started)


def _detect() -> tuple[str, str]:
    """The most isolated level that runs here, and why a more isolated one did not (cached per process)."""
    with _DETECT_LOCK:
        python = _python()
        if python not in _DETECTED:
            if sys.platform != "linux":
                raise SandboxUnavailable(f"the sandbox needs Linux (this is {sys.platform}): run code tasks on Linux")
            why = ""
            for level in LEVELS[:2]:
                probe = execute(level, Limits(wall_seconds=20.0), **_PROBE)
                if probe.passed:
                    _DETECTED[python] = (level, why)
                    break
                why = probe.reason
            else:
                raise SandboxUnavailable(f"the sandbox's harness does not run here ({why}): check that {python} "
                                         "runs and /proc is mounted")
        return _DETECTED[python]


class Sandbox:
    """Runs model-written code: each `run` is a fresh process, isolated and limited, with an unforgeable pass.

    `allow_network=True` permits running where network isolation is unavailable (degraded isolation, see
    `isolation`); it never opens the network where namespaces work. `max_parallel` bounds how many executions
    run at once (default: the CPUs this process may use), so that a burst of candidates does not turn into
    wall-clock timeouts.
    """

    def __init__(self, *, limits: Limits = Limits(), allow_network: bool = False,  # noqa: B008 - frozen
                 max_parallel: int | None = None) -> None:
        if not isinstance(limits, Limits):
            raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
        if max_parallel is not None and (isinstance(max_parallel, bool) or not isinstance(max_parallel, int)
                                         or max_parallel < 1):
            raise ValueError(f"max_parallel must be an int >= 1, got {max_parallel!r}")
        level, why = _detect()
        if level != "namespaces" and not allow_network:
            raise SandboxUnavailable(
                f"network isolation is not available on this machine ({why}): pass allow_network=True "
                "(CLI: --allow-unisolated-code) to run model-written code without it")
        self.limits = limits
        self.level = level
        self.isolation: str = ISOLATION[level]
        self.network_isolated = level == "namespaces"
        self.max_parallel = max_parallel or len(os.sched_getaffinity(0))
        self._slots = threading.BoundedSemaphore(self.max_parallel)

    def config(self) -> dict[str, Any]:
        """What a run's config.json records about the sandbox."""
        capped = self.network_isolated or os.geteuid() != 0
        return {"isolation": self.isolation, "network_isolated": self.network_isolated,
                "memory": self.limits.memory_cap(processes_capped=capped), "limits": self.limits.to_dict()}

    def run(self, *, program: str, test: str, entry_point: str | None = None, context: str | None = None) -> Execution:
        """Run `program`, then `test` (and `check(entry_point)` if the test defines check) in another process that
        calls the program's functions with plain data. `context`: trusted source the tests may use (a problem's
        prompt before its stub: imports and helpers), run in the tests' process; the names it defines are its own,
        never the program's. Blocking, thread-safe; never raises for anything the candidate does."""
        refused = _refusal(program, test, entry_point, context)
        if refused is not None:
            return Execution(status="refused", reason=refused, seconds=0.0)
        with self._slots:
            return execute(self.level, self.limits, program, test, entry_point, context)

    async def run_async(self, *, program: str, test: str, entry_point: str | None = None,
                        context: str | None = None) -> Execution:
        """`run` for an event loop: never blocks it."""
        refused = _refusal(program, test, entry_point, context)
        if refused is not None:
            return Execution(status="refused", reason=refused, seconds=0.0)
        # One pool of slots for threads and event loops alike; a short poll is cheap next to an execution.
        while not self._slots.acquire(blocking=False):
            await asyncio.sleep(0.005)
        try:
            return await execute_async(self.level, self.limits, program, test, entry_point, context)
        finally:
            self._slots.release()

    def __repr__(self) -> str:
        return f"Sandbox(level={self.level!r}, limits={self.limits!r})"
