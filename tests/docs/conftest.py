"""The docs site, built once per test session with `mkdocs build --strict` (as `make docs` builds it) into a
temporary folder: tests/docs/ read the built pages and open them in Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: What the strict build may take on `make test`'s 2 cores (issue 62: make test gains well under a minute).
BUILD_SECONDS = 60


@dataclass(frozen=True)
class Site:
    path: Path
    seconds: float
    log: str


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (make test installs it)")
    out = tmp_path_factory.mktemp("site") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env=env)
    seconds = time.perf_counter() - start
    # --strict turns every warning (a broken link or anchor, a page missing from the nav, an unresolved
    # mkdocstrings reference) into a failed build: its log says which.
    assert done.returncode == 0, done.stderr[-4000:]
    return Site(out, seconds, done.stderr)
