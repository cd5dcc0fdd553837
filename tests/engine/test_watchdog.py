"""The watchdog ends an engine's processes when their owner dies without closing it (ttscale.engine.watchdog).

Here the "engine" is two `sleep`s, one of them with a child of its own; tests/test_cli.py kills a CLI that runs the
real engine with SIGKILL and checks vLLM's processes end too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil

OWNER = r"""
import subprocess, sys, time
from ttscale.engine.watchdog import Watchdog
engine = [subprocess.Popen(["sleep", "60"]), subprocess.Popen(["sh", "-c", "sleep 60 & wait"])]
time.sleep(0.3)  # the shell has started its child
watchdog = Watchdog.start([p.pid for p in engine])
if sys.argv[1] == "close":
    watchdog.close()
print(" ".join(str(p.pid) for p in engine), flush=True)
time.sleep(60)
"""


def _owner(mode: str) -> tuple[subprocess.Popen[str], list[psutil.Process]]:
    owner = subprocess.Popen([sys.executable, "-c", OWNER, mode], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    engine = [psutil.Process(int(pid)) for pid in owner.stdout.readline().split()]
    engine += engine[1].children()  # the shell's sleep
    assert len(engine) == 3 and all(p.is_running() for p in engine)
    return owner, engine


def _gone_within(processes: list[psutil.Process], seconds: float) -> bool:
    _, alive = psutil.wait_procs(processes, timeout=seconds)
    return not alive


def test_an_owner_killed_with_sigkill_takes_its_engines_processes_and_their_children_with_it() -> None:
    owner, engine = _owner("watch")
    os.kill(owner.pid, signal.SIGKILL)  # no cleanup of any kind: the OOM killer, a scheduler's kill -9
    owner.wait(timeout=10)
    try:
        assert _gone_within(engine, 10), [p.pid for p in engine if p.is_running()]
    finally:
        for process in engine:
            if process.is_running():
                process.kill()


def test_an_owner_that_closed_its_engine_leaves_the_processes_to_it() -> None:
    owner, engine = _owner("close")
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait(timeout=10)
    try:
        time.sleep(1.5)  # the watchdog's reaction to an owner's death takes well under a second
        assert all(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in engine)
    finally:
        for process in engine:
            process.kill()
