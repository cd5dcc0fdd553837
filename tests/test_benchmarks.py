"""Every benchmark script still imports and parses its flags against the current package.

Benchmarks are not run by the suite (they take minutes to hours), so an API they use can move without a
test noticing; benchmarks/adaptive.py once imported an allocator from where it no longer lived. `--help`
loads the whole module, every import included, and exits before any engine starts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

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


def _harness() -> Any:
    sys.path.insert(0, str(BENCHMARKS[0].parent))
    try:
        import harness
    finally:
        sys.path.pop(0)
    return harness


def test_every_default_row_of_the_harness_is_a_valid_run() -> None:
    # The rows' parameters are only checked when a strategy's parameter class parses them: a renamed or
    # newly validated parameter (deepconf's n ≥ warmup online, mcts's lack of a width) fails here, not hours in.
    from ttscale.running.runner import prepare

    harness = _harness()
    assert {"deepconf", "deepconf~online", "mcts", harness.ONLINE_BASELINE} <= set(harness.DEFAULT)
    for name in harness.DEFAULT:
        prepared = prepare(harness.spec_for(name, problems=2, width=64, budget="32768"))
        assert prepared.strategy_name == name.partition("~")[0]
        if name == "deepconf~online":
            assert (prepared.params.mode, prepared.params.window) == ("online", 16)
    online = harness.spec_for("deepconf~online", problems=2, width=64, budget="32768").params
    assert online["n"] == harness.spec_for(harness.ONLINE_BASELINE, problems=2, width=64, budget="32768").params["n"]


def test_deepconf_online_runs_in_the_harness_and_stops_traces_in_the_engine() -> None:
    import asyncio
    import tempfile

    from ttscale.running.runner import prepare
    from ttscale.testing import LatencyModel

    harness = _harness()
    spec = harness.spec_for("deepconf~online", problems=2, width=64, budget="32768")
    engines: list[Any] = []
    real = harness.LatencyEngine

    def keep(**options: Any) -> Any:
        engines.append(real(**options))
        return engines[-1]

    harness.LatencyEngine = keep
    try:
        with tempfile.TemporaryDirectory() as out:
            m = asyncio.run(harness.run_once(spec, LatencyModel.zero_cost(), Path(out), label="deepconf~online"))
    finally:
        harness.LatencyEngine = real
    assert m.strategy == "deepconf~online" and m.problems == len(prepare(spec).problems) == 2
    (engine,) = engines
    assert engine.aborted > 0 and m.requests > 2  # a warm-up request per problem, then streamed traces
