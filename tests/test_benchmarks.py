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


def test_the_ets_threshold_is_the_largest_cut_that_meets_the_rule_or_none() -> None:
    import numpy as np

    sys.path.insert(0, str(BENCHMARKS[0].parent))
    try:
        from ets_threshold import choose_threshold
    finally:
        sys.path.pop(0)
    # 100 distinct pairs at distances 0.00, 0.01, ..., 0.99: a cut at t merges about t of them.
    spread = np.arange(100) / 100
    assert choose_threshold(spread, grid=(0.02, 0.04, 0.08), at_most=0.05) == 0.04
    # Every distinct pair sits below the smallest cut: no cut meets "at most 5%", and none is chosen.
    assert choose_threshold(np.zeros(50), grid=(0.02, 0.05), at_most=0.05) is None
