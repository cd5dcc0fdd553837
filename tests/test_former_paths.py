"""Modules that moved into packages (issue 47) still import under the paths README, docs and plugins used, through
one table (`ttscale.FORMER_PATHS`), as the same module objects."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import ttscale

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("former", "home"), sorted(ttscale.FORMER_PATHS.items()))
def test_a_former_path_is_the_moved_module_itself(former: str, home: str) -> None:
    module = importlib.import_module(home)
    assert importlib.import_module(former) is module
    # the module keeps its own name and spec: pickles, reloads and tracebacks name where it lives now
    assert module.__name__ == home and module.__spec__ is not None and module.__spec__.name == home


def test_a_plugin_strategy_written_against_the_former_paths_still_imports() -> None:
    from ttscale.capabilities import pool_replay
    from ttscale.comparison import INTERVALS
    from ttscale.context import Context
    from ttscale.kit import capabilities, context, params, selection
    from ttscale.params import strategy
    from ttscale.sampling import sample_pool
    from ttscale.selection import SYMBOLIC, majority_vote

    assert (Context, strategy, pool_replay) == (context.Context, params.strategy, capabilities.pool_replay)
    assert (majority_vote, SYMBOLIC) == (selection.majority_vote, selection.SYMBOLIC)
    assert sample_pool is importlib.import_module("ttscale.blocks.sampling").sample_pool
    assert INTERVALS is importlib.import_module("ttscale.comparisons.paired").INTERVALS


def test_no_file_stands_at_a_former_path() -> None:
    # one mechanism: the table, not a module file per former path
    folders = {"ttscale.verifiers": REPO / "verifiers", "ttscale.evals": REPO / "evals", "ttscale": REPO / "ttscale"}
    for former in ttscale.FORMER_PATHS:
        package, _, name = former.rpartition(".")
        assert not (folders[package] / f"{name}.py").exists(), former


def test_the_table_imports_nothing_until_a_former_path_is_asked_for() -> None:
    code = ("import sys, ttscale; print(sorted(m for m in ttscale.FORMER_PATHS.values() if m in sys.modules)); "
            "import ttscale.context; print('ttscale.kit.context' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "True"]


def test_the_shared_engine_handle_keeps_the_name_users_write() -> None:
    # renamed for what it is (a handle several calls share, not an engine backend); README writes ttscale.Engine
    from ttscale.running.session import SharedEngine

    assert ttscale.Engine is ttscale.SharedEngine is SharedEngine
    assert "Engine" in ttscale.__all__ and "SharedEngine" in ttscale.__all__
    assert not hasattr(importlib.import_module("ttscale.running.session"), "Engine")


def test_a_former_path_or_name_warns_with_its_new_home_and_the_version_that_removes_it() -> None:
    # In a fresh interpreter: a module imports once per process, and so warns once.
    code = """
import importlib, warnings
import ttscale
warnings.simplefilter("always")
for former, home in sorted(ttscale.FORMER_PATHS.items()):
    with warnings.catch_warnings(record=True) as caught:
        assert importlib.import_module(former) is importlib.import_module(home)
    assert [w.category for w in caught] == [DeprecationWarning], former
    assert str(caught[0].message) == (f"{former} moved to {home}; import it from there (the former path goes in "
                                      f"ttscale {ttscale.FORMER_PATHS_REMOVED_IN})"), caught[0].message
with warnings.catch_warnings(record=True) as caught:
    from ttscale.scaling.coverage import pass_at_k
from ttscale.stats.metrics import pass_at_k as home
assert pass_at_k is home and [w.category for w in caught] == [DeprecationWarning]
assert "ttscale.scaling.coverage.pass_at_k moved to ttscale.stats.metrics.pass_at_k" in str(caught[0].message)
try:
    from ttscale.scaling.coverage import no_such_name
except ImportError as exc:
    print("refused:", exc)
print("ok", len(ttscale.FORMER_PATHS))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "refused: cannot import name 'no_such_name'" in out and out.strip().endswith(
        f"ok {len(ttscale.FORMER_PATHS)}")
    assert ttscale.FORMER_PATHS["ttscale.confidence"] == "ttscale.engine.confidence"  # users' scripts import it
