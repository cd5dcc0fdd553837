"""The sandbox's supervisor: the process ttscale starts for one execution (`python -I -S -c STUB`).

Not imported by ttscale. `sandbox.py` sends the compiled code of the harness's files (`_isolation.py`,
`_hardening.py`, `_wire.py`, `_runner.py`, `_judge.py` and this one) on stdin, with the job; the stub executes them
in one namespace and calls `main(job)`. The supervisor isolates itself (`enter_namespaces`, `bound_ipc`) and forks
pid 1 of the new pid namespace, which stays a small init and forks the worker (pid 2): it confines itself,
`harden`s, sets the limits, then becomes the tests' process (`_judge.run`), which forks the candidate's (pid 3:
`_runner.serve`). The supervisor watches: it keeps the first `output_kib` of the output and drops the rest, kills
pid 1 (so the whole namespace) at the wall-clock limit, checks the pass message against the secret it created
after the fork, and answers ttscale on stdout: `status NUL reason NUL dropped-bytes NUL output`. Nothing in the
namespace can see or signal this process (it is outside the pid namespace). At the other levels there is no init:
the worker is the supervisor's child.
"""

from __future__ import annotations

import _signal
import fcntl
import os
import select
import time

TYPE_CHECKING = False  # typing takes 20 ms to import; names below come from the shared namespace at run time
if TYPE_CHECKING:
    from typing import Any, NoReturn

    from ttscale.sandbox._hardening import bound_ipc, harden
    from ttscale.sandbox._isolation import (
        IsolationError,
        become_subreaper,
        confine,
        die_with_parent,
        enter_namespaces,
        load_libc,
        set_limits,
    )
    from ttscale.sandbox._judge import run
    from ttscale.sandbox._runner import RESULT_FD, SECRET_FD, pass_message
if "MESSAGE" not in globals():  # imported as a module (by tests), not run in the shared namespace
    from ttscale.sandbox._runner import MESSAGE

_SIGNAL_NAMES = {
    getattr(_signal, name): name
    for name in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGILL", "SIGTRAP", "SIGABRT", "SIGBUS", "SIGFPE", "SIGKILL",
                 "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM", "SIGTERM", "SIGXCPU", "SIGXFSZ", "SIGSYS")
    if hasattr(_signal, name)
}
_DRAIN_SECONDS = 0.5  # how long output is still read after the candidate's process ended (bare level only)
_RESULT_BYTES = 65536  # a failure report is one line: more is dropped
_PR_SET_DUMPABLE = 4
_M_ARENA_MAX = -8


def main(job: dict[str, Any]) -> None:
    level, limits = job["level"], job["limits"]
    host_root = os.geteuid() == 0
    libc: Any = None
    maps_done = None
    ipc_bounded = False  # the candidate's IPC namespace has small bounds (else SysV IPC is refused)
    try:
        if level != "bare":
            libc = load_libc()
        if level == "namespaces":
            maps_done = enter_namespaces(libc)
            ipc_bounded = bound_ipc(limits["file_mib"])
        elif level == "rlimits":
            become_subreaper(libc)
    except (OSError, IsolationError) as error:
        _answer("error", f"sandbox set-up: {error}", b"", 0)
        return
    supervisor = os.getpid()
    secret_read, secret_write = os.pipe()
    result_read, result_write = os.pipe()
    output_read, output_write = os.pipe()
    status_read, status_write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the candidate's process
        for fd in (secret_write, result_read, output_read, status_read):
            os.close(fd)
        _start_candidate(job, libc, supervisor, host_root, maps_done, ipc_bounded,
                         (secret_read, result_write, output_write, status_write))
    for fd in (secret_read, result_write, output_write, status_write) + ((maps_done,) if maps_done is not None else ()):
        os.close(fd)
    # The secret exists only from now on, in this process: the candidate's process never held a copy of it.
    secret = os.urandom(32)
    try:  # noqa: SIM105 - contextlib costs milliseconds to import, for every execution
        os.write(secret_write, secret)
    except BrokenPipeError:
        pass  # the candidate's process already ended (a set-up error): its report is in the result pipe
    os.close(secret_write)
    expected = pass_message(secret)
    cap = limits["output_kib"] * 1024
    timed_out, status, cpu, output, dropped, result = _watch(
        child, output_read, result_read, time.monotonic() + limits["wall_seconds"], cap)
    if level != "namespaces":  # with namespaces, the pid namespace died with its first process
        _kill_leftovers(child, subreaper=level == "rlimits")
    extra, extra_dropped, more, worker = _drain((output_read, result_read, status_read), len(output), cap)
    if worker:  # the candidate's own exit status and CPU time, as its pid namespace's init saw them
        status, cpu = int(worker.split()[0]), float(worker.split()[1])
    verdict, reason = _verdict(timed_out, status, cpu, bytes(result + more), expected, limits)
    _answer(verdict, reason, bytes(output + extra), dropped + extra_dropped)


def _start_candidate(job: dict[str, Any], libc: Any, supervisor: int, host_root: bool, maps_done: int | None,
                     ipc_bounded: bool, pipes: tuple[int, int, int, int]) -> NoReturn:
    level = job["level"]
    secret_read, result_write, output_write, status_write = pipes
    report_fd = result_write  # where a set-up error goes: the result pipe, wherever it is at the time
    try:
        if libc is not None:
            die_with_parent(libc, supervisor)
        if level == "namespaces":
            # This process is pid 1 of the new pid namespace: it stays a small init, and the candidate's process
            # (pid 2) does the rest. Forked first, so the init has touched (copied) little memory.
            worker = os.fork()
            if worker != 0:
                _be_init(libc, worker, status_write)
            confine(libc, binds=job["binds"], links=job["links"], work_mib=job["limits"]["file_mib"],
                    maps_done=maps_done)
            home = "/tmp"
        else:
            os.setpgid(0, 0)  # its own group, which the supervisor kills at the end (never itself)
            home = job["workdir"]
            os.chdir(home)
        os.environ.update(HOME=home, TMPDIR=home)
        # Writes past RLIMIT_FSIZE fail with EFBIG (an exception the report can name) instead of a signal.
        _signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)
        # The candidate's fds: 0 /dev/null, 1 and 2 the output pipe, 3 the secret, 4 the result; nothing else.
        null = os.open("/dev/null", os.O_RDONLY)
        parked = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (null, output_write, secret_read, result_write)]
        for fd, target in zip(parked, (0, 1, SECRET_FD, RESULT_FD), strict=True):
            os.dup2(fd, target, inheritable=target < SECRET_FD)
        os.dup2(1, 2)
        report_fd = RESULT_FD
        os.closerange(RESULT_FD + 1, 1 << 20)
        if level != "bare":
            harden(libc, refuse_sysv=not ipc_bounded)
            # One malloc arena: each thread's own would reserve 64 MiB of the address space its process may use.
            libc.mallopt(_M_ARENA_MAX, 1)
            # RLIMIT_NPROC counts, besides the candidate's processes, those sharing its (user namespace, uid):
            # the tests' process (this one, which forks the candidate's), and its init and the supervisor unless
            # root mapped the candidate to nobody. Without namespaces, this process is among the uid's tasks.
            counted = (1 if host_root else 3) if level == "namespaces" else None
            set_limits(job["limits"], counted_elsewhere=counted)
    except BaseException as error:
        try:
            os.write(report_fd, MESSAGE + b"S" + f"sandbox set-up: {error}".encode("utf-8", "replace"))
        finally:
            os._exit(2)
    run(job, libc)
    os._exit(3)  # run never returns; this is a guard


def _be_init(libc: Any, worker: int, status_write: int) -> NoReturn:
    """Pid 1 of the candidate's namespace: reaps orphans until the candidate's process ends, then reports its
    exit status and CPU time on the status pipe.

    The candidate must not be pid 1 itself: the kernel ignores signals without a handler sent to a namespace's
    init, SIGXCPU at the CPU limit among them.
    """
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)  # no KeyboardInterrupt here when the candidate sends SIGINT
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # the candidate cannot ptrace it or read its memory
    os.closerange(0, status_write)
    os.closerange(status_write + 1, 1 << 20)
    while True:
        try:
            pid, status, usage = os.wait4(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid == worker:
            os.write(status_write, f"{status} {usage.ru_utime + usage.ru_stime}".encode())
            os._exit(0)


def _watch(child: int, output_read: int, result_read: int, deadline: float,
           cap: int) -> tuple[bool, int, float, bytearray, int, bytearray]:
    """Read the candidate's output and result until its process ends or the deadline passes (then kill it)."""
    pidfd = os.pidfd_open(child)
    poller = select.poll()
    for fd in (output_read, result_read, pidfd):
        poller.register(fd, select.POLLIN)
    output, result, dropped = bytearray(), bytearray(), 0
    exited = timed_out = False
    while not exited:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        for fd, _event in poller.poll(left * 1000 + 1):
            if fd == pidfd:
                exited = True
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                poller.unregister(fd)
            elif fd == output_read:
                kept = max(0, min(len(chunk), cap - len(output)))
                output += chunk[:kept]
                dropped += len(chunk) - kept
            elif len(result) < _RESULT_BYTES:
                result += chunk
    if timed_out:
        os.kill(child, _signal.SIGKILL)  # pid 1 of its namespace: every process in it dies too
    _, status, usage = os.wait4(child, 0)
    os.close(pidfd)
    return timed_out, status, usage.ru_utime + usage.ru_stime, output, dropped, result


def _kill_leftovers(child: int, *, subreaper: bool) -> None:
    """Kill the candidate's process group and, as subreaper, every orphan that was re-parented here."""
    try:  # noqa: SIM105 - contextlib costs milliseconds to import, for every execution
        os.killpg(child, _signal.SIGKILL)
    except OSError:
        pass
    if not subreaper:
        return
    me = str(os.getpid())
    while True:
        for entry in os.scandir("/proc"):
            try:
                with open(f"/proc/{entry.name}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[1] == me:
                try:  # noqa: SIM105 - as above
                    os.kill(int(entry.name), _signal.SIGKILL)
                except OSError:
                    pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _drain(fds: tuple[int, int, int], kept: int, cap: int) -> tuple[bytearray, int, bytearray, bytes]:
    """What is left in the output, result and status pipes, until end of file (or a short time, if a process
    escaped)."""
    output, result, status, dropped = bytearray(), bytearray(), bytearray(), 0
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    open_fds, deadline = set(fds), time.monotonic() + _DRAIN_SECONDS
    while open_fds and time.monotonic() < deadline:
        for fd, _event in poller.poll((deadline - time.monotonic()) * 1000 + 1):
            chunk = os.read(fd, 65536)
            if not chunk:
                poller.unregister(fd)
                open_fds.discard(fd)
            elif fd == fds[0]:
                take = max(0, min(len(chunk), cap - kept - len(output)))
                output += chunk[:take]
                dropped += len(chunk) - take
            elif fd == fds[1] and len(result) < _RESULT_BYTES:
                result += chunk
            elif fd == fds[2] and len(status) < 100:
                status += chunk
    return output, dropped, result, bytes(status)


def _verdict(timed_out: bool, status: int, cpu: float, result: bytes, expected: bytes,
             limits: dict[str, Any]) -> tuple[str, str]:
    """The execution's verdict from the tests' process: its exit `status` and CPU time, and what it wrote."""
    if timed_out:
        return "timeout", f"wall-clock limit of {limits['wall_seconds']} s: process group killed"
    if os.WIFSIGNALED(status):
        return _ended_by_signal(status, cpu, limits, "the tests' process was ")
    code = os.WEXITSTATUS(status)
    if result == expected and code == 0:
        return "passed", "passed"
    start = result.rfind(MESSAGE)
    if start >= 0 and len(result) > start + 1:
        kind, text = result[start + 1 : start + 2], result[start + 2 :].decode("utf-8", "replace")
        if kind == b"F":
            return "failed", text
        if kind == b"C":
            return "crashed", text
        if kind == b"S":
            return "error", text
        if kind == b"E":  # the candidate's process ended before the tests did: its status and CPU seconds
            candidate, seconds = text.split()
            if os.WIFSIGNALED(int(candidate)):
                return _ended_by_signal(int(candidate), float(seconds), limits, "")
            return "failed", f"exited {os.WEXITSTATUS(int(candidate))} before the tests ended"
    return "failed", f"exited {code} without the harness's pass"


def _ended_by_signal(status: int, cpu: float, limits: dict[str, Any], whose: str) -> tuple[str, str]:
    signum = os.WTERMSIG(status)
    name = _SIGNAL_NAMES.get(signum, f"signal {signum}")
    cpu_limit = max(1, -(-limits["cpu_seconds"] // 1))
    if signum == _signal.SIGXCPU or (signum == _signal.SIGKILL and cpu >= cpu_limit - 0.05):
        return "timeout", f"CPU limit of {limits['cpu_seconds']} s: {whose}killed by {name}"
    return "crashed", f"{whose}killed by {name}"


def _answer(status: str, reason: str, output: bytes, dropped: int) -> None:
    # NUL-separated, not marshal: ttscale parses it, and at the rlimits level the candidate could write here too.
    head = f"{status}\0{reason.replace(chr(0), '?')}\0{dropped}\0".encode("utf-8", "replace")
    data = memoryview(head + output)
    while data:
        data = data[os.write(1, data) :]
