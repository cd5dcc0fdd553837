"""How long a stop takes (issue 43, items 9 and 10), on `ttscale run` in a subprocess over a SIMULATED engine.

- A stop during code grading ends the executions in flight and exits within seconds (it waited 85-115 s for
  every execution the grading threads had left); finished problems stay saved, and nothing the stop cut short
  is recorded. A second stop is immediate, whatever the first still waits for.
- A stop signal to this process alone during the engine's start ends the start's processes and exits within
  seconds (it waited 20-27 s for the start to finish).

The engine is `tests/hostile/stop_script.py`'s simulator; no model runs. Each test takes a few seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

SCRIPT = Path(__file__).with_name("stop_script.py")
MARKER = "ttscale-sandbox"  # in the command line of every sandbox process


def _start(mode: str, out: Path, *flags: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, str(SCRIPT), mode, "--", "run", "--strategy", "self_consistency", "--budget", "4096",
            "--param", "n=3", "--param", "max_tokens=512", "--out", str(out), "--no-progress", *flags]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _descendants(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    try:
        return psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        return []


def _wait_for(proc: subprocess.Popen[bytes], what: str, ready: object, timeout: float = 60) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        found = [p for p in _descendants(proc) if _matches(p, ready)]
        if found:
            return found
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"{what} never appeared: {proc.communicate()[1].decode()[-2000:]}")


def _matches(process: psutil.Process, ready: object) -> bool:
    try:
        return callable(ready) and bool(ready(" ".join(process.cmdline())))
    except psutil.Error:
        return False


def _executions(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    """The sandbox's processes under `proc`: each execution is its own session (its command line, once in
    its namespaces, may not be readable from here)."""
    found = []
    for process in _descendants(proc):
        try:
            if os.getsid(process.pid) != proc.pid:
                found.append(process)
        except OSError:
            continue
    return found


def _grading(proc: subprocess.Popen[bytes], out: Path) -> list[psutil.Process]:
    """Once the first problem is saved and the others' executions are under way: those executions."""
    deadline = time.monotonic() + 60
    results = out / "results.jsonl"
    while time.monotonic() < deadline and proc.poll() is None:
        if results.is_file() and results.read_text().count("\n") == 1 and _executions(proc):
            time.sleep(0.5)  # well under way
            running = _executions(proc)
            assert running and results.read_text().count("\n") == 1, "no execution in flight to stop"
            return running
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"grading never got under way: {proc.communicate()[1].decode()[-2000:]}")


def _gone(processes: list[psutil.Process], within: float = 5.0) -> list[int]:
    _, alive = psutil.wait_procs(processes, timeout=within)
    alive = [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    for p in alive:  # clean up before failing
        p.kill()
    return [p.pid for p in alive]


def _finish(proc: subprocess.Popen[bytes], sent: float) -> tuple[float, list[str]]:
    try:
        _, stderr = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return time.monotonic() - sent, stderr.decode().strip().splitlines()


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_during_code_grading_ends_the_executions_and_exits_within_seconds(
    signum: signal.Signals, code: int, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    # Problem code-L1-0000 finishes at once; the others' programs sleep in the function the tests call, each
    # execution until the task's 30 s limit, three distinct programs a problem graded one after another.
    proc = _start("slow_code", out, "--task", "code:1", "--limit", "4", "--concurrency", "4",
                  "--task-option", "timeout=30")
    running = _grading(proc, out)
    sent = time.monotonic()
    proc.send_signal(signum)
    took, lines = _finish(proc, sent)
    print(f"stop during grading: {signum.name} to exit {took:.2f} s")
    assert not _gone(running), "executions left running after the stop"
    assert proc.returncode == code, lines[-20:]
    assert lines[-1].startswith(f"ttscale: stopped by {signum.name}; 1 finished problems are saved"), lines[-5:]
    assert f"--resume {out}" in lines[-1] and not any("Traceback" in line for line in lines)
    assert took < 10, f"{took:.1f} s from {signum.name} to exit"
    # The finished problem is saved; nothing the stop cut short is recorded (a killed execution is no verdict).
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ["code-L1-0000"] and records[0]["correct"] is True


def test_a_second_ctrl_c_is_immediate_whatever_the_first_still_waits_for(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # The engine's shutdown hangs for 120 s: the first Ctrl-C waits for it, the second does not.
    proc = _start("hung_close", out, "--task", "code:1", "--limit", "2", "--task-option", "timeout=30")
    _grading(proc, out)
    proc.send_signal(signal.SIGINT)
    time.sleep(2.0)
    assert proc.poll() is None, "the first Ctrl-C was expected to wait for the hung shutdown"
    left = _descendants(proc)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    took, lines = _finish(proc, sent)
    print(f"second Ctrl-C to exit {took:.2f} s")
    assert proc.returncode == 130 and took < 3, (proc.returncode, took, lines[-5:])
    assert lines[-1] == f"ttscale: stopped by SIGINT (a second stop: ended at once); continue with --resume {out}"
    assert not _gone(left), "processes of the run left after the second Ctrl-C"


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_to_the_process_alone_during_the_engine_start_stops_it_within_seconds(
    signum: signal.Signals, code: int, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    # The simulated start blocks the event loop waiting for an "engine process" that ignores SIGINT and SIGTERM
    # (vLLM's EngineCore notes them only while it is being built) for 60 s.
    proc = _start("hung_start", out, "--task", "arithmetic", "--limit", "2")
    core = _wait_for(proc, "the engine process", lambda line: "signal.SIG_IGN" in line)
    time.sleep(0.5)  # its handlers are in place
    sent = time.monotonic()
    proc.send_signal(signum)  # to the main process alone, as a scheduler or `kill PID` sends it
    took, lines = _finish(proc, sent)
    print(f"stop during the start: {signum.name} to exit {took:.2f} s")
    assert not _gone(core), "the engine's process outlived the stop"
    assert proc.returncode == code and lines == [f"ttscale: stopped by {signum.name}"], (took, lines[-5:])
    assert took < 10, f"{took:.1f} s from {signum.name} to exit"
    assert not out.exists()  # a new run that finished nothing leaves nothing
