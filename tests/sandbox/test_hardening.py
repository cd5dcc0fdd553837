"""The seccomp program, run by a small classic-BPF interpreter for every machine it knows (the real filter is
exercised on this machine's kernel by tests/sandbox/test_hostile_kernel.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ttscale.sandbox._hardening import (
    ALLOWED_FAMILIES,
    BUFFER_OPTIONS,
    EAFNOSUPPORT,
    ENOSYS,
    EPERM,
    F_SETPIPE_SZ,
    SOL_SOCKET,
    SYSCALLS,
    filter_program,
)
from ttscale.sandbox._isolation import IsolationError

ALLOW, KILL = 0x7FFF0000, 0x80000000


def errno(number: int) -> int:
    return 0x00050000 | number


def run_filter(program: list[tuple[int, int]], *, arch: int, nr: int, arg0: int = 0, arg1: int = 0,
               arg2: int = 0) -> int:
    """What the kernel would decide: the four instructions the program uses, over struct seccomp_data."""
    data = {0: nr, 4: arch, 16: arg0, 24: arg1, 32: arg2}
    accumulator, pc = 0, 0
    while True:
        word, k = program[pc]
        code, jt, jf = word & 0xFFFF, (word >> 16) & 0xFF, word >> 24
        if code == 0x20:  # ld [k]
            accumulator = data[k]
            pc += 1
        elif code in (0x15, 0x35):  # jeq / jge #k
            taken = accumulator == k if code == 0x15 else accumulator >= k
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # ret #k
            return k
        else:
            raise AssertionError(f"unknown opcode {code:#x}")


@pytest.mark.parametrize("machine", sorted(SYSCALLS))
def test_the_filter_decides_as_documented(machine: str) -> None:
    arch, numbers = SYSCALLS[machine]
    program = filter_program(machine, refuse_sysv=False)
    assert len(program) < 64

    def decide(name: str | int, arg0: int = 0, on: int = arch) -> int:
        return run_filter(program, arch=on, nr=numbers[name] if isinstance(name, str) else name, arg0=arg0)

    for name in ("add_key", "keyctl", "request_key"):
        assert decide(name) == errno(EPERM)
    for name in ("io_uring_setup", "io_uring_enter", "io_uring_register", "memfd_create", "memfd_secret"):
        assert decide(name) == errno(ENOSYS)
    for call in ("socket", "socketpair"):
        for family in range(64):
            expected = ALLOW if family in ALLOWED_FAMILIES else errno(EAFNOSUPPORT)
            assert decide(call, family) == expected, (call, family)
    # Issue 59: buffers grown past the kernel's defaults held 3.6 GB of socket memory outside memory_mib.
    for level in (SOL_SOCKET, 0, 6):  # SOL_SOCKET, SOL_IP, SOL_TCP
        for option in range(40):
            expected = errno(EPERM) if level == SOL_SOCKET and option in BUFFER_OPTIONS else ALLOW
            got = run_filter(program, arch=arch, nr=numbers["setsockopt"], arg0=3, arg1=level, arg2=option)
            assert got == expected, (level, option)
    for command in (0, 1, 2, 3, 4, 1030, 1032, F_SETPIPE_SZ):  # F_DUPFD ... F_SETFL, F_SETLEASE, F_GETPIPE_SZ
        expected = errno(EPERM) if command == F_SETPIPE_SZ else ALLOW
        assert run_filter(program, arch=arch, nr=numbers["fcntl"], arg0=3, arg1=command) == expected, command
    assert decide("shmget") == ALLOW and decide("msgget") == ALLOW and decide("semget") == ALLOW
    assert decide(0) == ALLOW and decide(numbers["socket"] + 1000) == ALLOW
    assert decide("socket", 2, on=0x40000003) == KILL  # another ABI (i386's number)
    if machine == "x86_64":
        assert decide(0x40000000 | numbers["socket"], 40) == KILL  # the x32 ABI


def test_sysv_ipc_is_refused_where_its_bounds_cannot_be_set() -> None:
    arch, numbers = SYSCALLS["x86_64"]
    program = filter_program("x86_64", refuse_sysv=True)
    assert run_filter(program, arch=arch, nr=numbers["shmget"]) == errno(ENOSYS)
    assert run_filter(program, arch=arch, nr=numbers["msgget"]) == errno(ENOSYS)
    assert run_filter(program, arch=arch, nr=numbers["semget"]) == errno(ENOSYS)


def test_an_unknown_machine_is_a_set_up_error_not_an_unfiltered_run() -> None:
    with pytest.raises(IsolationError, match=r"^seccomp: unknown system call numbers on s390x$"):
        filter_program("s390x", refuse_sysv=False)


def test_where_an_outer_filter_refuses_the_keyring_the_sandbox_still_runs() -> None:
    """As under Docker's default profile (keyctl refused with EPERM around ttscale): the candidate cannot reach
    a keyring either, so the sandbox runs rather than fail its set-up."""
    code = (
        "import os\n"
        "from ttscale.sandbox._isolation import load_libc\n"
        "from ttscale.sandbox._hardening import filter_program, install_filter\n"
        "install_filter(load_libc(), filter_program(os.uname().machine, refuse_sysv=False))\n"
        "from ttscale.sandbox import Limits, Sandbox\n"
        "sandbox = Sandbox(limits=Limits(wall_seconds=5.0), allow_network=True)\n"
        "print(sandbox.run(program='def f():\\n    return 1\\n', test='assert f() == 1\\n'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert "status='passed'" in out.stdout, out.stdout + out.stderr
