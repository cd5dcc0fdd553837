"""The sandbox's child-only harness (_supervisor, _isolation, _hardening, _runner's run): behaviour the plain-mode
mutation run (tools/mutation/plain.py, issue 45) found unchecked.

Each test runs real executions and checks what a correct sandbox must give, exactly: the output cap and the count
of what was dropped when the output arrives as the candidate exits, a NUL in a failure reason, ...
"""

from __future__ import annotations

import errno
import os
from typing import Any

import pytest

import ttscale.sandbox.sandbox as sandbox_module
from tests.sandbox.conftest import SQUARE, SQUARE_TEST
from ttscale.sandbox import Limits
from ttscale.sandbox._isolation import (
    IsolationError,
    _drop_capabilities,
    _wait_for_maps,
    become_subreaper,
    die_with_parent,
)
from ttscale.sandbox.sandbox import execute

LIMITS = Limits(wall_seconds=10.0, cpu_seconds=1.0, memory_mib=512, processes=8, output_kib=16)
"""A wall limit far from the CPU limit: under load a CPU-limit test must not end at the wall instead."""
F_SETPIPE_SZ = 1031


def test_output_still_in_the_pipe_when_the_candidate_exits_is_capped_and_every_dropped_byte_counted() -> None:
    # The supervisor reads the output while the candidate runs, and drains what is left once it has ended. A
    # candidate can make that drain do most of the work: it stops its supervisor (its parent's parent: its parent is
    # the tests' process), fills a 1 MiB pipe, and exits while a helper lets the supervisor go on. The supervisor
    # then sees the exit after one read, and drains the rest in many chunks: the cap counts what it kept before, and
    # every dropped byte is counted. At the bare level: the others' filter refuses growing a pipe (issue 59).
    program = (f"import fcntl, os, signal, time\nfcntl.fcntl(1, {F_SETPIPE_SZ}, 1 << 20)\n"
               "with open(f'/proc/{os.getppid()}/stat') as handle:\n"
               "    supervisor = int(handle.read().rsplit(')', 1)[1].split()[1])\n"
               "os.kill(supervisor, signal.SIGSTOP)\n"
               "data = memoryview(b'x' * (1 << 20))\nwhile data:\n    data = data[os.write(1, data):]\n"
               "if os.fork() == 0:\n    time.sleep(0.3)\n    os.kill(supervisor, signal.SIGCONT)\n    os._exit(0)\n")
    execution = execute("bare", LIMITS, program, "", None)
    assert execution.passed, execution
    dropped = (1 << 20) - 16 * 1024
    assert execution.output == "x" * 16 * 1024 + f"\n[{dropped:,} more bytes of output dropped]"


def test_a_nul_in_a_failure_reason_comes_back_as_a_question_mark() -> None:
    # The supervisor's answer is NUL-separated: a NUL the candidate puts in its error must not split it, and is
    # shown as one "?" (the reason is one line of text).
    execution = execute("namespaces", LIMITS, "raise ValueError('a\\x00b\\x00')\n", "", None)
    assert execution.status == "crashed"
    assert execution.reason == "ValueError: a?b? (program line 1: raise ValueError('a\\x00b\\x00'))"


@pytest.mark.parametrize("level", ["namespaces", "rlimits"])
def test_the_candidate_holds_exactly_its_five_descriptors(level: str) -> None:
    # 0 /dev/null, 1 and 2 the output, 3 the secret, 4 the result: nothing else of the supervisor's, and only the
    # first three pass to a program the candidate executes (the secret and the result never do).
    program = ("import os\nfds = sorted(int(f) for f in os.listdir('/proc/self/fd'))\n"
               "print(fds[:-1], [os.get_inheritable(fd) for fd in fds[:-1]])\n")
    execution = execute(level, LIMITS, program, "", None)
    assert execution.passed, execution
    assert execution.output == "[0, 1, 2, 3, 4] [True, True, True, False, False]\n"


@pytest.mark.parametrize("level", ["namespaces", "rlimits", "bare"])
def test_a_candidate_killed_by_a_signal_crashed_by_that_signal(level: str) -> None:
    execution = execute(level, LIMITS, "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n", "", None)
    assert (execution.status, execution.reason) == ("crashed", "killed by SIGTERM")
    assert execute(level, LIMITS, SQUARE, SQUARE_TEST, "solve").passed


def test_a_failed_set_up_is_an_error_that_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # A directory to mount that does not exist: the candidate's process cannot confine itself, and reports why.
    monkeypatch.setattr(sandbox_module, "_mount_plan", lambda: (["/nonexistent-ttscale-mount"], []))
    execution = execute("namespaces", LIMITS, SQUARE, SQUARE_TEST, "solve")
    assert execution.status == "crashed", execution
    assert execution.reason == ("sandbox error: sandbox set-up: [Errno 2] No such file or directory: "
                                "'/nonexistent-ttscale-mount'")



def test_threads_allocate_within_their_process_memory_share() -> None:
    # 64 MiB of address space per process (512 MiB over 8): one malloc arena for all threads. An arena per thread
    # would reserve 64 MiB each, and the threads' small allocations would fail with MemoryError.
    program = ("import threading\nkept = []\ndef work():\n    kept.append([bytearray(4096) for _ in range(1000)])\n"
               "threads = [threading.Thread(target=work) for _ in range(6)]\n"
               "for t in threads:\n    t.start()\nfor t in threads:\n    t.join()\nprint(len(kept))\n")
    execution = execute("namespaces", LIMITS, program, "", None)
    assert execution.passed and execution.output == "6\n", execution


@pytest.mark.parametrize("level", ["namespaces", "rlimits"])
def test_the_candidates_rlimits_are_its_share_with_cpu_seconds_rounded_up(level: str) -> None:
    # 1.5 s of CPU: the kernel counts whole seconds, so SIGXCPU at 2 and SIGKILL one later; 512 MiB over 8
    # processes: 64 MiB of address space each (RLIMIT_AS alone bounds one process, not the execution).
    limits = Limits(wall_seconds=10.0, cpu_seconds=1.5, memory_mib=512, processes=8, file_mib=4, open_files=32)
    program = ("import resource as r\nprint([r.getrlimit(getattr(r, 'RLIMIT_' + name)) for name in "
               "('CPU', 'AS', 'FSIZE', 'NOFILE', 'CORE')])\n")
    execution = execute(level, limits, program, "", None)
    assert execution.output == f"[(2, 3), ({64 << 20}, {64 << 20}), ({4 << 20}, {4 << 20}), (32, 32), (0, 0)]\n"


def test_the_namespaced_candidate_has_no_capabilities_and_a_hidden_noexec_proc() -> None:
    program = ("print(sorted(l.split()[1] for l in open('/proc/self/status') if l[:6] in ('CapInh', 'CapPrm', "
               "'CapEff')))\nfor line in open('/proc/self/mountinfo'):\n    if line.split()[4] == '/proc':\n"
               "        print(line.split()[5], line.split(' - ')[1].split()[2])\n")
    execution = execute("namespaces", LIMITS, program, "", None)
    assert execution.output == ("['0000000000000000', '0000000000000000', '0000000000000000']\n"
                                "rw,nosuid,nodev,noexec,relatime rw,hidepid=invisible\n"), execution


def test_the_candidates_ipc_namespace_bounds_shared_memory_by_its_file_limit() -> None:
    # A shared-memory segment is memory the process limits do not see: one may be at most file_mib (4 MiB here).
    limits = Limits(wall_seconds=10.0, cpu_seconds=1.0, memory_mib=512, processes=8, file_mib=4)
    program = "print(open('/proc/sys/kernel/shmmax').read().strip(), open('/proc/sys/kernel/shmall').read().strip())\n"
    execution = execute("namespaces", limits, program, "", None)
    assert execution.output == f"{4 << 20} {(4 << 20) // 4096}\n", execution


def test_the_tests_run_with_the_import_state_of_before_the_program() -> None:
    # The program changes sys.path and sys.meta_path in place; the tests must see them as they were at start-up.
    program = "import sys\nsys.path.append('/planted')\nsys.meta_path.append(None)\n"
    test = "import sys\nassert '/planted' not in sys.path and None not in sys.meta_path\n"
    execution = execute("namespaces", LIMITS, program, test, None)
    assert execution.passed, execution


def test_a_reason_that_is_not_valid_unicode_still_comes_back() -> None:
    # A lone surrogate in the program's error cannot be encoded: it is replaced, the report is never lost.
    execution = execute("namespaces", LIMITS, "raise ValueError('a\\ud800b')\n", "", None)
    assert (execution.status, execution.reason) == ("crashed", "ValueError: a?b (program line 1: raise "
                                                               "ValueError('a\\ud800b'))")


def test_the_program_compiles_without_the_harness_future_imports() -> None:
    # The harness's own `from __future__ import annotations` must not leak into the candidate's program.
    program = "def f(x: int) -> int:\n    return x\nprint(f.__annotations__)\n"
    execution = execute("namespaces", LIMITS, program, "", None)
    assert execution.output == "{'x': <class 'int'>, 'return': <class 'int'>}\n", execution


def test_a_limit_hit_by_top_level_test_asserts_is_named() -> None:
    # Without a check function the test source's own statements are the tests: a limit they hit is named too.
    test = "hog = []\nwhile True:\n    hog.append(bytearray(10**6))\n"
    execution = execute("namespaces", LIMITS, SQUARE, test, None)
    assert execution.status == "failed", execution
    assert execution.reason.endswith(": memory limit: 64 MiB per process, 512 MiB for the execution"), execution


def test_a_parent_that_could_not_write_the_id_maps_stops_the_candidate_with_that_reason() -> None:
    # The candidate waits on a pipe for its parent's one-byte answer about the uid/gid maps: "k" lets it go on, any
    # other answer (or none: the parent died) must stop it with an error that says what failed, since that reason is
    # the only line the user gets back from a sandbox that refuses to start.
    for answer in (b"x", b""):
        read_end, write_end = os.pipe()
        os.write(write_end, answer)
        os.close(write_end)
        with pytest.raises(IsolationError, match=r"^writing the uid/gid maps of the new user namespace failed$"):
            _wait_for_maps(read_end)
        with pytest.raises(OSError):
            os.fstat(read_end)  # closed either way: the candidate keeps no descriptor of the set-up
    read_end, write_end = os.pipe()
    os.write(write_end, b"k")
    os.close(write_end)
    _wait_for_maps(read_end)
    with pytest.raises(OSError):
        os.fstat(read_end)


def test_kernel_time_counts_toward_the_cpu_limit_that_reads_a_sigkill() -> None:
    # A SIGKILL with the candidate's CPU time at its (whole-second) limit is read as the CPU limit's kill. The
    # candidate ignores SIGXCPU and spends its one second mostly in the kernel (reading /dev/zero), then is killed:
    # the CPU time its init reports is user + system time, at the limit, not the user time alone.
    program = ("import os, signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nbuf = bytearray(1 << 22)\n"
               "zero = open('/dev/zero', 'rb', buffering=0)\nwhile sum(os.times()[:2]) < 1.0:\n"
               "    zero.readinto(buf)\nt = os.times()\nprint(t.system > t.user, flush=True)\n"
               "os.kill(os.getpid(), signal.SIGKILL)\n")
    execution = execute("namespaces", LIMITS, program, "", None)
    assert execution.output == "True\n", execution  # the kernel's share was the larger one
    assert (execution.status, execution.reason) == ("timeout", "CPU limit of 1.0 s: killed by SIGKILL")


@pytest.mark.parametrize("level", ["namespaces", "rlimits", "bare"])
def test_the_candidates_stdin_is_dev_null(level: str) -> None:
    # fd 0 is /dev/null (character device 1:3), never a pipe of the supervisor's, at every level.
    program = ("import os, stat\ns = os.fstat(0)\n"
               "print(stat.S_ISCHR(s.st_mode), os.major(s.st_rdev), os.minor(s.st_rdev))\n")
    execution = execute(level, LIMITS, program, "", None)
    assert (execution.status, execution.output) == ("passed", "True 1 3\n"), execution


def test_a_sigkill_at_the_cpu_limit_less_its_margin_is_the_cpu_limit() -> None:
    # The verdict on a SIGKILL reads the CPU time: at or over the whole-second limit less 0.05 s it is the
    # kernel's kill at the CPU limit, below it a crash. 1.5 s rounds up to a limit of 2: the margin starts at 1.95.
    from ttscale.sandbox._supervisor import _verdict

    limits = {"cpu_seconds": 1.5, "wall_seconds": 10.0}
    killed = 9  # a wait status: terminated by SIGKILL (signal 9), no core
    tests = "the tests' process was killed by"
    assert _verdict(False, killed, 1.95, b"", b"", limits) == ("timeout", f"CPU limit of 1.5 s: {tests} SIGKILL")
    assert _verdict(False, killed, 1.94, b"", b"", limits) == ("crashed", f"{tests} SIGKILL")
    assert _verdict(False, 24, 0.0, b"", b"", limits) == ("timeout", f"CPU limit of 1.5 s: {tests} SIGXCPU")
    # The candidate's process, as the tests' process reports it when it ended first (E: wait status, CPU seconds).
    cpu_limit = "CPU limit of 1.5 s: killed by"
    assert _verdict(False, 256, 0.0, b"\x1eE9 1.95", b"", limits) == ("timeout", f"{cpu_limit} SIGKILL")
    assert _verdict(False, 256, 0.0, b"\x1eE9 1.94", b"", limits) == ("crashed", "killed by SIGKILL")
    assert _verdict(False, 256, 0.0, b"\x1eE24 0.5", b"", limits) == ("timeout", f"{cpu_limit} SIGXCPU")
    assert _verdict(False, 256, 0.0, b"\x1eE768 0.1", b"", limits) == ("failed", "exited 3 before the tests ended")


class _Libc:
    """libc for `_drop_capabilities`, called in this process: records each call; `failing` names the call that
    returns -1 with errno EPERM."""

    def __init__(self, failing: str = "") -> None:
        self.failing = failing
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def words(self, *values: int) -> tuple[int, ...]:
        return values

    def errno(self) -> int:
        return errno.EPERM

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> int:
            self.calls.append((name, args))
            return -1 if name == self.failing else 0
        return call


def test_dropping_capabilities_clears_all_three_sets_then_forbids_new_privileges() -> None:
    # capset(2) with _LINUX_CAPABILITY_VERSION_3 (0x20080522) for this process (pid 0) and two 32-bit halves of
    # each set {effective, permitted, inheritable}, all 0; then PR_SET_NO_NEW_PRIVS (38) = 1. A failure names the
    # call, since that line is all a refused sandbox start gives back.
    libc = _Libc()
    _drop_capabilities(libc)  # type: ignore[arg-type]
    assert libc.calls == [("capset", ((0x20080522, 0), (0, 0, 0, 0, 0, 0))), ("prctl", (38, 1, 0, 0, 0))]
    with pytest.raises(IsolationError, match=r"^capset: Operation not permitted$"):
        _drop_capabilities(_Libc("capset"))  # type: ignore[arg-type]
    with pytest.raises(IsolationError, match=r"^prctl\(no_new_privs\): Operation not permitted$"):
        _drop_capabilities(_Libc("prctl"))  # type: ignore[arg-type]


def test_the_namespaced_candidates_tmp_is_its_only_writable_place_and_noexec() -> None:
    # /tmp, the working directory, is writable but nosuid, nodev and noexec: nothing written there runs.
    program = ("import os\nfor line in open('/proc/self/mountinfo'):\n    if line.split()[4] == '/tmp':\n"
               "        print(line.split()[5])\nprint(os.getcwd())\n"
               "open('/tmp/run.sh', 'w').write('#!/bin/sh\\n')\nos.chmod('/tmp/run.sh', 0o755)\n"
               "try:\n    os.execv('/tmp/run.sh', ['run.sh'])\nexcept PermissionError:\n    print('refused')\n")
    execution = execute("namespaces", LIMITS, program, "", None)
    assert execution.passed, execution
    options, cwd, refused = execution.output.splitlines()
    assert {"rw", "nosuid", "nodev", "noexec"} <= set(options.split(","))
    assert (cwd, refused) == ("/tmp", "refused")


def test_the_death_signal_and_the_subreaper_are_asked_for_with_their_prctl_words() -> None:
    # prctl(PR_SET_PDEATHSIG = 1, SIGKILL = 9, 0, 0, 0) and prctl(PR_SET_CHILD_SUBREAPER = 36, 1, 0, 0, 0); a refusal
    # names the call. This process's parent is alive: die_with_parent returns.
    libc = _Libc()
    die_with_parent(libc, os.getppid())  # type: ignore[arg-type]
    become_subreaper(libc)  # type: ignore[arg-type]
    assert libc.calls == [("prctl", (1, 9, 0, 0, 0)), ("prctl", (36, 1, 0, 0, 0))]
    with pytest.raises(IsolationError, match=r"^prctl\(pdeathsig\): Operation not permitted$"):
        die_with_parent(_Libc("prctl"), os.getppid())  # type: ignore[arg-type]
    with pytest.raises(IsolationError, match=r"^prctl\(child_subreaper\): Operation not permitted$"):
        become_subreaper(_Libc("prctl"))  # type: ignore[arg-type]


def test_an_unprivileged_supervisor_maps_only_its_own_ids_after_denying_setgroups(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Not root (uid 1234, gid 5678): one unshare of the user, pid, net and IPC namespaces, then "deny" to setgroups
    # (the kernel takes a gid map from an unprivileged process only after it), then the candidate's id 1000 mapped
    # to its own uid and gid, one id each. Nothing is left to wait for (no helper): None. The writes are recorded,
    # not made (this process is root and must keep its namespaces).
    import ttscale.sandbox._isolation as isolation

    writes: list[tuple[str, str]] = []
    monkeypatch.setattr(isolation.os, "geteuid", lambda: 1234)
    monkeypatch.setattr(isolation.os, "getuid", lambda: 1234)
    monkeypatch.setattr(isolation.os, "getgid", lambda: 5678)
    monkeypatch.setattr(isolation, "_write", lambda path, text: writes.append((path, text)))
    libc = _Libc()
    assert isolation.enter_namespaces(libc) is None  # type: ignore[arg-type]
    new = isolation.CLONE_NEWUSER | isolation.CLONE_NEWPID | isolation.CLONE_NEWNET | isolation.CLONE_NEWIPC
    assert libc.calls == [("unshare", (new,))]
    assert writes == [("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", "1000 1234 1"),
                      ("/proc/self/gid_map", "1000 5678 1")]
    with pytest.raises(IsolationError, match=r"^unshare\(user, pid, net, ipc\): Operation not permitted$"):
        isolation.enter_namespaces(_Libc("unshare"))  # type: ignore[arg-type]
