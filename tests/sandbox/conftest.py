"""Fixtures of the sandbox tests: one sandbox with small limits, a host to protect, stray-process checks."""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

import ttscale.sandbox.sandbox as sandbox_module
from ttscale.sandbox import Limits, Sandbox

MARKER = "ttscale-sandbox"
"""In the command line of every sandbox process (supervisor, candidate, their forks)."""
SQUARE_TEST = "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(5) == 25\n"
SQUARE = "def solve(x):\n    return x * x\n"
WRONG = "def solve(x):\n    return x\n"
TEST_LIMITS = Limits(wall_seconds=5.0, cpu_seconds=1.0, memory_mib=512, processes=8, output_kib=16)


SESSION = f"{os.getpid()}-{time.time_ns()}"
"""In the environment of every sandbox process this test session starts (others may run sandboxes too)."""


@pytest.fixture(scope="session", autouse=True)
def _tagged_environment() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sandbox_module, "_ENV", {**sandbox_module._ENV, "TTSCALE_SANDBOX_TEST_SESSION": SESSION})
        yield


@pytest.fixture(scope="session")
def sandbox() -> Sandbox:
    return Sandbox(limits=TEST_LIMITS)


@pytest.fixture(scope="session")
def namespaced(sandbox: Sandbox) -> Sandbox:
    """The sandbox, where it has namespaces: hostile code is only ever run isolated (kill(-1) as root ...)."""
    if not sandbox.network_isolated:
        pytest.skip(f"no namespaces on this machine ({sandbox.isolation}): hostile code is not run unisolated")
    return sandbox


@dataclass
class Host:
    """What a hostile candidate must not reach: a run directory with sentinel files, a HOME, a secret file."""

    run_dir: Path
    home: Path
    secret_path: Path
    secret: str

    def snapshot(self) -> dict[str, str]:
        """Every file under the run directory and HOME, with a digest of its content."""
        files = {}
        for root in (self.run_dir, self.home):
            for path in sorted(root.rglob("*")):
                files[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        return files


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    run_dir, home = tmp_path / "run", tmp_path / "home"
    run_dir.mkdir()
    home.mkdir()
    (run_dir / "results.jsonl").write_text('{"problem": 1, "correct": false}\n')
    (run_dir / "config.json").write_text('{"strategy": "best_of_n"}\n')
    (home / ".bashrc").write_text("# sentinel\n")
    secret = f"secret-{time.time_ns()}"
    secret_path = run_dir / "secret.txt"
    secret_path.write_text(secret)
    # The sandbox must not rely on these (it sets its own), but the test process itself points at them.
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TTSCALE_SANDBOX_TEST_SECRET", secret)
    return Host(run_dir=run_dir, home=home, secret_path=secret_path, secret=secret)


def sandbox_processes(since: float, marker: str = MARKER) -> list[str]:
    """Live processes of this test session with `marker` in their command line, started since `since`."""
    found = []
    for process in psutil.process_iter(["cmdline", "create_time", "status"]):
        info = process.info
        cmdline = " ".join(info["cmdline"] or [])
        if marker not in cmdline or info["create_time"] < since - 1 or info["status"] == psutil.STATUS_ZOMBIE:
            continue
        with contextlib.suppress(psutil.Error):
            if marker != MARKER or process.environ().get("TTSCALE_SANDBOX_TEST_SESSION") == SESSION:
                found.append(f"{process.pid}: {cmdline[:120]}")
    return found


@pytest.fixture
def no_strays() -> Iterator[None]:
    """After the test: no child of this process, no sandbox process started during it."""
    since = time.time()
    yield
    deadline = time.monotonic() + 2.0  # a killed process can take a moment to disappear from /proc
    while True:
        children = []
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):  # other fixtures' processes (an engine) started earlier
                if child.create_time() >= since - 1 and child.status() != psutil.STATUS_ZOMBIE:
                    children.append(child)
        strays = sandbox_processes(since)
        if (not children and not strays) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not children, f"children left: {children}"
    assert not strays, f"sandbox processes left: {strays}"
