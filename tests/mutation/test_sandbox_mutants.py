"""ttscale.sandbox (limits.py, sandbox.py): behaviour the mutation run (tools/mutation) found unchecked.

Hand examples: each limit accepted at its least allowed value and refused one below it, with the message the
limit must give; the memory cap described for a run's config; the refusals of input the sandbox will not run.
"""

from __future__ import annotations

import asyncio
import contextlib
import marshal
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

import ttscale.sandbox.sandbox as sandbox_module
from ttscale.sandbox import Execution, Limits, Sandbox, SandboxUnavailable
from ttscale.sandbox.limits import MIN_PROCESS_MIB, STATUSES
from ttscale.sandbox.sandbox import (
    ISOLATION,
    MAX_SOURCE_BYTES,
    ExecutionCancelled,
    _decode,
    _kill_tree,
    _refusal,
    _remove,
    _Scope,
    _timed_out,
    execute,
    execute_async,
    in_thread,
)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"wall_seconds": 0.001}, {"cpu_seconds": 1}, {"wall_seconds": 3}, {"memory_mib": 64, "processes": 1},
        {"memory_mib": 512, "processes": 8}, {"file_mib": 1}, {"processes": 1}, {"open_files": 16},
        {"output_kib": 0},
    ],
    ids=repr,
)
def test_each_limit_is_accepted_at_its_least_value(kwargs: dict[str, Any]) -> None:
    limits = Limits(**kwargs)
    for name, value in kwargs.items():
        assert getattr(limits, name) == value


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"wall_seconds": 0}, "wall_seconds must be > 0, got 0"),
        ({"cpu_seconds": -0.5}, "cpu_seconds must be > 0, got -0.5"),
        ({"cpu_seconds": float("nan")}, "cpu_seconds must be a finite number of seconds, got nan"),
        ({"wall_seconds": "10"}, "wall_seconds must be a finite number of seconds, got '10'"),
        ({"wall_seconds": False}, "wall_seconds must be a finite number of seconds, got False"),
        ({"memory_mib": 63, "processes": 1}, "memory_mib must be >= 64, got 63"),
        ({"memory_mib": True}, "memory_mib must be an int, got True"),
        ({"memory_mib": 1024.0}, "memory_mib must be an int, got 1024.0"),
        ({"file_mib": 0}, "file_mib must be >= 1, got 0"),
        ({"processes": True}, "processes must be an int, got True"),
        ({"open_files": 15}, "open_files must be >= 16, got 15"),
        ({"open_files": "64"}, "open_files must be an int, got '64'"),
        ({"output_kib": 1.0}, "output_kib must be an int, got 1.0"),
        ({"memory_mib": 511, "processes": 8},
         r"memory_mib must be >= 64 MiB per process \(512 for 8 processes\), got 511"),
        ({"memory_mib": 127, "processes": 2},
         r"memory_mib must be >= 64 MiB per process \(128 for 2 processes\), got 127"),
    ],
)
def test_a_limit_below_its_least_value_is_refused_by_name(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        Limits(**kwargs)


def test_the_least_share_per_process_is_64_mib() -> None:
    assert MIN_PROCESS_MIB == 64


def test_the_memory_cap_names_the_share_and_the_whole() -> None:
    limits = Limits(memory_mib=1000, processes=3)
    # 1000 // 3 = 333 MiB a process (floor: three shares may not exceed the whole).
    assert limits.memory_cap(processes_capped=True) == (
        "1000 MiB for the whole execution: 333 MiB of address space per process (RLIMIT_AS) x 3 processes and "
        "threads (RLIMIT_NPROC); SysV shared memory, message queues and semaphores bounded in its IPC namespace")
    assert limits.memory_cap(processes_capped=False) == (
        "333 MiB of address space per process (RLIMIT_AS); no cap on the whole execution (root without "
        "namespaces: RLIMIT_NPROC does not bind)")


def test_limits_travel_as_a_plain_dict() -> None:
    limits = Limits(wall_seconds=2.5, cpu_seconds=1, memory_mib=256, file_mib=2, processes=4, open_files=32,
                    output_kib=8)
    assert limits.to_dict() == {"wall_seconds": 2.5, "cpu_seconds": 1, "memory_mib": 256, "file_mib": 2,
                                "processes": 4, "open_files": 32, "output_kib": 8}


@pytest.mark.parametrize("status", STATUSES)
def test_only_a_passed_execution_passed(status: str) -> None:
    execution = Execution(status=status, reason="r", seconds=0.0)  # type: ignore[arg-type]
    assert execution.passed is (status == "passed")
    assert execution.output == ""


def test_the_statuses_are_the_five_documented() -> None:
    assert STATUSES == ("passed", "failed", "timeout", "crashed", "refused")
    with pytest.raises(ValueError, match=r"^status must be one of passed, failed, timeout, crashed, refused, "
                                         r"got 'error'$"):
        Execution(status="error", reason="", seconds=0)  # type: ignore[arg-type]


# -- sandbox.py: what comes back from the supervisor, and input refused before any process --------------------


def test_a_supervisor_answer_is_decoded_field_by_field() -> None:
    execution = _decode(b"failed\0AssertionError (test line 2)\x000\0hello\n", b"", 0, 1.25)
    assert execution == Execution(status="failed", reason="AssertionError (test line 2)", seconds=1.25,
                                  output="hello\n")


def test_dropped_output_is_counted_with_thousands_separators() -> None:
    execution = _decode(b"passed\0passed\x0012345\0abc", b"", 0, 0.5)
    assert execution.status == "passed" and execution.reason == "passed"
    assert execution.output == "abc\n[12,345 more bytes of output dropped]"


def test_the_output_may_hold_nul_bytes() -> None:
    # Only the first three NULs separate fields: the candidate's output is kept whole after them.
    execution = _decode(b"failed\0r\x000\0a\0b\0c", b"", 0, 0.0)
    assert execution.output == "a\0b\0c"


def test_a_supervisor_error_is_a_crash_that_says_sandbox_error() -> None:
    execution = _decode(b"error\0sandbox set-up: no /proc\x000\0", b"", 0, 0.1)
    assert execution == Execution(status="crashed", reason="sandbox error: sandbox set-up: no /proc", seconds=0.1)


@pytest.mark.parametrize(
    "stdout",
    [b"", b"passed\0r\x000", b"great\0r\x000\0", b"passed\0r\0x\0", b"passed\0r\0-1\0"],
    ids=["empty", "three_fields", "unknown_status", "count_not_digits", "negative_count"],
)
def test_an_answer_that_is_not_one_is_a_crash_naming_the_last_stderr_line(stdout: bytes) -> None:
    execution = _decode(stdout, b"Traceback\n  File x\nMemoryError: boom\n\n", -9, 2.0)
    assert execution == Execution(status="crashed", reason="sandbox error: the supervisor exited -9 without an "
                                  "answer (MemoryError: boom)", seconds=2.0)


def test_no_stderr_at_all_says_no_message() -> None:
    assert _decode(b"", b"  \n", 1, 0.0).reason == ("sandbox error: the supervisor exited 1 without an answer "
                                                    "(no message)")


def test_a_timeout_names_the_wall_clock_limit() -> None:
    execution = _timed_out(Limits(wall_seconds=2.5), 7.5)
    assert execution == Execution(status="timeout", reason="wall-clock limit of 2.5 s: the supervisor did not "
                                  "answer in time; process group killed", seconds=7.5)


def test_the_source_limit_is_one_mib_counted_in_utf8_bytes() -> None:
    assert MAX_SOURCE_BYTES == 1024 * 1024
    assert _refusal("x" * MAX_SOURCE_BYTES, "", None) is None
    assert _refusal("x" * (MAX_SOURCE_BYTES + 1), "", None) == "program is 1,048,577 bytes: over the 1 MiB limit"
    # 2 bytes each in UTF-8: half as many characters reach the limit.
    assert _refusal("", "é" * (MAX_SOURCE_BYTES // 2), None) is None
    assert _refusal("", "é" * (MAX_SOURCE_BYTES // 2) + "x", None) == ("test is 1,048,577 bytes: over the 1 MiB "
                                                                       "limit")
    # Exactly 1 Mi characters of 2 bytes each: counted in bytes, 2 MiB.
    assert _refusal("é" * MAX_SOURCE_BYTES, "", None) == "program is 2,097,152 bytes: over the 1 MiB limit"


def test_refusals_name_the_part_and_accept_what_is_allowed() -> None:
    assert _refusal("def f():\n    return 1\n", "assert f() == 1\n", "f") is None
    assert _refusal("", "", None) is None
    assert _refusal("", "x = '\x00'", None) == "test contains a NUL byte"
    assert _refusal("", "", "1abc") == "entry point '1abc' is not a Python identifier"
    assert _refusal("", "", "-" * 100) == f"entry point {'-' * 80!r} is not a Python identifier"
    with pytest.raises(TypeError, match=r"^test must be a str, got NoneType$"):
        _refusal("", None, None)  # type: ignore[arg-type]


def test_a_cancelled_scope_adopts_nothing_more() -> None:
    scope = _Scope()
    assert scope.adopt(999_999_999) is True
    scope.release(999_999_999)
    scope.cancel()  # nothing adopted any more: nothing to kill
    assert scope.cancelled is True
    assert scope.adopt(999_999_998) is False


# -- sandbox.py: the processes (a few short executions) --------------------------------------------------------


SMALL = Limits(wall_seconds=10.0, cpu_seconds=1.0, memory_mib=512)
SHOW = "import os\nprint(sorted(os.environ), os.getcwd())\n"
LEFT = "ttscale-sandbox-"


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return Sandbox(limits=SMALL)


def test_a_sandbox_checks_its_arguments(sandbox: Sandbox) -> None:
    with pytest.raises(TypeError, match=r"^limits must be a Limits, got dict$"):
        Sandbox(limits={})  # type: ignore[arg-type]
    for bad in (0, True, 1.5, "2"):
        with pytest.raises(ValueError, match=f"^max_parallel must be an int >= 1, got {bad!r}$"):
            Sandbox(max_parallel=bad)  # type: ignore[arg-type]
    assert Sandbox(max_parallel=1).max_parallel == 1
    assert sandbox.level in ("namespaces", "rlimits") and sandbox.isolation == ISOLATION[sandbox.level]
    assert sandbox.network_isolated is (sandbox.level == "namespaces")
    assert repr(sandbox) == f"Sandbox(level={sandbox.level!r}, limits={SMALL!r})"


def test_the_memory_cap_binds_unless_root_runs_without_namespaces(sandbox: Sandbox,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    plain = Sandbox(limits=SMALL)
    plain.network_isolated = False
    monkeypatch.setattr(sandbox_module.os, "geteuid", lambda: 0)
    assert plain.config()["memory"] == SMALL.memory_cap(processes_capped=False)
    monkeypatch.setattr(sandbox_module.os, "geteuid", lambda: 1)
    assert plain.config()["memory"] == SMALL.memory_cap(processes_capped=True)
    plain.network_isolated = True
    monkeypatch.setattr(sandbox_module.os, "geteuid", lambda: 0)
    assert plain.config()["memory"] == SMALL.memory_cap(processes_capped=True)


def test_detection_probes_namespaces_then_rlimits_once_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    probes: list[tuple[str, Limits, dict[str, Any]]] = []
    answers = {"namespaces": Execution(status="crashed", reason="no user namespaces", seconds=0.0),
               "rlimits": Execution(status="passed", reason="passed", seconds=0.0)}

    def probe(level: str, limits: Limits, **job: Any) -> Execution:
        probes.append((level, limits, job))
        return answers[level]

    monkeypatch.setattr(sandbox_module, "_DETECTED", {})
    monkeypatch.setattr(sandbox_module, "execute", probe)
    monkeypatch.setattr(sandbox_module, "_python", lambda: "/opt/python3")
    assert sandbox_module._detect() == ("rlimits", "no user namespaces")
    assert [(level, limits) for level, limits, _ in probes] == [("namespaces", Limits(wall_seconds=20.0)),
                                                                ("rlimits", Limits(wall_seconds=20.0))]
    assert probes[0][2] == sandbox_module._PROBE
    assert sandbox_module._detect() == ("rlimits", "no user namespaces") and len(probes) == 2  # cached
    # The rlimits level without namespaces refuses a sandbox that must isolate the network, naming why.
    with pytest.raises(SandboxUnavailable, match=r"^network isolation is not available on this machine \(no user "
                                                 r"namespaces\): pass allow_network=True"):
        Sandbox()
    assert Sandbox(allow_network=True).level == "rlimits"
    answers["namespaces"] = Execution(status="passed", reason="passed", seconds=0.0)
    monkeypatch.setattr(sandbox_module, "_DETECTED", {})
    assert sandbox_module._detect() == ("namespaces", "")


def test_nothing_that_runs_is_a_sandbox_unavailable_naming_the_last_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    levels: list[str] = []

    def probe(level: str, limits: Limits, **job: Any) -> Execution:
        levels.append(level)
        return Execution(status="crashed", reason=f"{level} failed", seconds=0.0)

    monkeypatch.setattr(sandbox_module, "_DETECTED", {})
    monkeypatch.setattr(sandbox_module, "execute", probe)
    monkeypatch.setattr(sandbox_module, "_python", lambda: "/opt/python3")
    with pytest.raises(SandboxUnavailable, match=r"^the sandbox's harness does not run here \(rlimits failed\): check "
                                                 r"that /opt/python3 runs and /proc is mounted$"):
        sandbox_module._detect()
    assert levels == ["namespaces", "rlimits"]  # never bare: it is no isolation at all
    monkeypatch.setattr(sandbox_module.sys, "platform", "darwin")
    with pytest.raises(SandboxUnavailable, match=r"^the sandbox needs Linux \(this is darwin\): run code tasks on "
                                                 r"Linux$"):
        sandbox_module._detect()


def test_the_candidate_sees_only_its_environment_at_every_level_and_entry(sandbox: Sandbox,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # The host directories these runs create, recorded as they are made: other processes (a second test worker)
    # may make and remove sandbox directories of their own in /tmp meanwhile.
    made: list[str] = []
    mkdtemp = sandbox_module.tempfile.mkdtemp

    def recorded(*args: Any, **kwargs: Any) -> str:
        made.append(mkdtemp(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(sandbox_module.tempfile, "mkdtemp", recorded)
    for level in ("namespaces", "rlimits") if sandbox.level == "namespaces" else ("rlimits",):
        made.clear()
        done = execute(level, SMALL, SHOW, "", None)
        done_async = asyncio.run(execute_async(level, SMALL, SHOW, "", None))
        for execution in (done, done_async):
            assert execution.status == "passed", execution
            assert 0 < execution.seconds < 60
            names, cwd = execution.output.rsplit(" ", 1)
            # The sandbox's own variables (tests/sandbox's conftest adds one) and HOME and TMPDIR, nothing else.
            assert names == str(sorted({*sandbox_module._ENV, "HOME", "TMPDIR"}))
            # rlimits: a fresh host directory as cwd, removed afterwards; namespaces: its own tmpfs at /tmp.
            assert cwd.startswith(f"/tmp/{LEFT}") if level == "rlimits" else cwd == "/tmp\n"
        # rlimits: one directory per run, each the candidate's cwd, all removed; namespaces: none on the host.
        assert [f"{path}\n" for path in made] == ([done.output.rsplit(" ", 1)[1], done_async.output.rsplit(" ", 1)[1]]
                                                  if level == "rlimits" else [])
        assert not any(Path(path).exists() for path in made)


def test_the_async_entry_runs_at_the_sandboxs_level(sandbox: Sandbox) -> None:
    program = "import os\nprint(os.getpid())\n"
    # pid 3 of its own pid namespace (1 its init, 2 the tests' process)
    expected = "3\n" if sandbox.level == "namespaces" else None
    execution = asyncio.run(sandbox.run_async(program=program, test=""))
    assert execution.status == "passed" and execution.seconds > 0
    if expected is not None:
        assert execution.output == expected


def test_a_crashed_supervisor_is_described_from_its_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    # A harness that does not load: the supervisor dies before it answers, and its last stderr line says why.
    monkeypatch.setattr(sandbox_module, "_harness_codes", lambda: (5).to_bytes(4, "big") + b"junk!")
    for execution in (execute("rlimits", SMALL, "", "", None),
                      asyncio.run(execute_async("rlimits", SMALL, "", "", None))):
        assert execution.status == "crashed"
        assert execution.reason.startswith("sandbox error: the supervisor exited 1 without an answer (")
        assert "no message" not in execution.reason and execution.seconds > 0


def test_removing_a_workdir_unlocks_what_the_candidate_locked(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "locked").mkdir(parents=True)
    (work / "locked" / "file").write_text("x")
    os.chmod(work / "locked", 0o500)  # (root ignores the mode: there the removal needs no unlock)
    _remove(str(work))
    assert not work.exists()


_ORPHAN = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
print(child.pid, flush=True)
time.sleep(60)
"""


def test_killing_a_tree_reaches_children_outside_its_process_group() -> None:
    parent = subprocess.Popen([sys.executable, "-c", _ORPHAN], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        assert parent.stdout is not None
        child = psutil.Process(int(parent.stdout.readline()))
        _kill_tree(parent.pid)
        assert parent.wait(timeout=10) == -9
        child.wait(timeout=10)
        assert not child.is_running()
    finally:
        with contextlib.suppress(OSError):
            os.killpg(parent.pid, 9)
        parent.wait()
    _kill_tree(parent.pid)  # gone already: nothing to kill, no error


def test_a_cancelled_task_ends_the_executions_of_its_thread(sandbox: Sandbox) -> None:
    reasons: list[str] = []
    finished = threading.Event()

    def work() -> str:
        try:
            for program in ("import time\ntime.sleep(8)\n", "x = 1\n"):
                try:
                    sandbox.run(program=program, test="")
                except ExecutionCancelled as error:
                    reasons.append(str(error))
        finally:
            finished.set()
        return "done"

    async def main() -> float:
        assert await in_thread(lambda a, *, b: a + b, 2, b=3) == 5
        task = asyncio.ensure_future(in_thread(work))
        await asyncio.sleep(1.0)
        started = time.monotonic()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await asyncio.to_thread(finished.wait, 20)
        return time.monotonic() - started

    took = asyncio.run(main())
    message = "the run was stopped: the execution was not run to its end"
    assert reasons == [message, message]
    assert took < 5.0  # the sleeping execution was killed, not waited for (8 s)
    with pytest.raises(ExecutionCancelled, match=f"^{message}$"):
        raise sandbox_module._cancelled()


def test_bytes_that_are_not_text_are_replaced_not_raised() -> None:
    # Each part is decoded with errors replaced: a candidate's bytes never make the decoding raise.
    execution = _decode(b"failed\0bad \xff reason\x000\0out \xfe", b"", 0, 0.0)
    assert (execution.reason, execution.output) == ("bad \ufffd reason", "out \ufffd")
    crashed = _decode(b"\xffpassed\0r\x000\0", b"last \xff line\n", 1, 0.0)
    assert crashed.reason == "sandbox error: the supervisor exited 1 without an answer (last \ufffd line)"


def test_a_supervisor_error_keeps_the_output() -> None:
    execution = _decode(b"error\0set-up\x003\0partial", b"", 0, 0.0)
    assert execution.output == "partial\n[3 more bytes of output dropped]"


def test_the_supervisor_runs_isolated_without_site(sandbox: Sandbox) -> None:
    # -I (no PYTHON* variables, no user site, no cwd on sys.path) and -S (no site module): the candidate's
    # process is a fork of the supervisor, so it shows the supervisor's flags.
    execution = sandbox.run(program="import sys\nprint(sys.flags.isolated, sys.flags.no_site)\n", test="")
    assert execution.output == "1 1\n"


_HANG = marshal.dumps((compile("import time\ntime.sleep(30)\n", "<hang>", "exec"),))


def test_a_supervisor_that_never_answers_is_killed_after_the_limit_and_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "_harness_codes", lambda: len(_HANG).to_bytes(4, "big") + _HANG)
    monkeypatch.setattr(sandbox_module, "_GRACE_SECONDS", 0.5)
    limits = Limits(wall_seconds=0.5)
    reason = "wall-clock limit of 0.5 s: the supervisor did not answer in time; process group killed"
    for run in (lambda: execute("rlimits", limits, "", "", None),
                lambda: asyncio.run(execute_async("rlimits", limits, "", "", None))):
        started = time.monotonic()
        execution = run()
        took = time.monotonic() - started
        assert (execution.status, execution.reason) == ("timeout", reason)
        assert 1.0 <= execution.seconds <= took < 10  # killed after 0.5 + 0.5 s, not waited for (30 s)
