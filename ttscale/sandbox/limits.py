"""The sandbox's vocabulary: `Limits` (what one execution may use), `Execution` (what happened), the error."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

MIN_PROCESS_MIB = 64
"""The least address space per process (`memory_mib // processes`): Python itself takes about 15 MiB."""
Status = Literal["passed", "failed", "timeout", "crashed", "refused"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "timeout", "crashed", "refused")


class SandboxUnavailable(ValueError):
    """The machine cannot give the isolation asked for; the message says what is missing and what to do.

    A ValueError: a run that asks for code execution where it cannot be isolated is refused as bad input
    (one line, exit 2 on the CLI), before any engine starts."""


@dataclass(frozen=True, kw_only=True)
class Limits:
    """What one execution may use. Every limit covers the candidate's program and the tests together."""

    wall_seconds: float = 10.0
    """Wall-clock time from the start of the candidate's process; after it, every process of the execution is
    killed (status `timeout`)."""
    cpu_seconds: float = 5.0
    """CPU time per process (RLIMIT_CPU; the kernel counts whole seconds, so it is rounded up): SIGXCPU, then
    SIGKILL a second later (status `timeout`)."""
    memory_mib: int = 1024
    """Memory of the whole execution, in MiB: each process's address space (RLIMIT_AS) is `memory_mib //
    processes`, so that all the processes it may have together stay within it; allocations past a process's
    share fail (MemoryError, and the reason names the limit). At least 64 MiB per process. The tests' process (which
    runs the test source apart from the candidate's code) has one more share of its own."""
    file_mib: int = 8
    """The largest file a process may write (RLIMIT_FSIZE), in MiB; with namespaces also the size of the
    candidate's temporary directory (a tmpfs)."""
    processes: int = 8
    """Processes and threads the candidate may have at once, its first process included (RLIMIT_NPROC in the
    execution's own user namespace; without namespaces, added to what the user already runs, and not enforced
    for root). The tests' process is counted apart."""
    open_files: int = 64
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    output_kib: int = 64
    """Output (stdout and stderr, interleaved) kept from the candidate, in KiB: the rest is read and dropped."""

    def __post_init__(self) -> None:
        for name in ("wall_seconds", "cpu_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
            if value <= 0:
                raise ValueError(f"{name} must be > 0, got {value!r}")
        for name, least in (("memory_mib", 64), ("file_mib", 1), ("processes", 1), ("open_files", 16),
                            ("output_kib", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be an int, got {value!r}")
            if value < least:
                raise ValueError(f"{name} must be >= {least}, got {value!r}")
        if self.memory_mib // self.processes < MIN_PROCESS_MIB:
            least = MIN_PROCESS_MIB * self.processes
            raise ValueError(f"memory_mib must be >= {MIN_PROCESS_MIB} MiB per process ({least} for {self.processes} "
                             f"processes), got {self.memory_mib}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def memory_cap(self, *, processes_capped: bool) -> str:
        """How the whole execution's memory is capped, for a run's config (`processes_capped`: whether
        RLIMIT_NPROC binds, which it does not for root without a user namespace)."""
        share = f"{self.memory_mib // self.processes} MiB of address space per process (RLIMIT_AS)"
        if not processes_capped:
            return f"{share}; no cap on the whole execution (root without namespaces: RLIMIT_NPROC does not bind)"
        return (f"{self.memory_mib} MiB for the whole execution: {share} x {self.processes} processes and threads "
                "(RLIMIT_NPROC); SysV shared memory, message queues and semaphores bounded in its IPC namespace")


@dataclass(frozen=True, kw_only=True)
class Execution:
    """What one sandboxed execution came to."""

    status: Status
    """`passed`: the harness's pass arrived (the tests returned); `failed`: a test failed or raised, or the
    process ended without the pass; `timeout`: the wall-clock or CPU limit; `crashed`: the program's own module
    code raised (SyntaxError, NameError at import, MemoryError ...) or its process was killed by a signal that
    is not a limit; `refused`: input the sandbox will not run (over 1 MiB, a NUL byte, a bad entry point)."""
    reason: str
    """One line: `AssertionError (test line 7: assert candidate(2) == 4)`, `wall-clock limit of 10.0 s: process
    group killed`, `exited 0 without the harness's pass`, `killed by SIGSEGV` ..."""
    seconds: float
    """Wall time of this execution, process start-up included (0 when refused)."""
    output: str = ""
    """The candidate's stdout and stderr, at most `Limits.output_kib` of it (a last line says how much was
    dropped). Never the verdict: nothing printed can make an execution pass."""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
