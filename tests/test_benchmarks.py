"""Every benchmark script still imports and parses its flags against the current package.

Benchmarks are not run by the suite (they take minutes to hours), so an API they use can move without a
test noticing; benchmarks/adaptive.py once imported an allocator from where it no longer lived. `--help`
loads the whole module, every import included, and exits before any engine starts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def test_there_are_benchmarks() -> None:
    assert len(BENCHMARKS) >= 10, [p.name for p in BENCHMARKS]


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda p: p.name)
def test_the_script_imports_and_shows_its_flags(script: Path) -> None:
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120,
                          cwd=script.parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
