"""tools/lint_imports.py: the layering contracts checked on the package as installed, every module of it."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # as tools/lint_imports.py reads it on 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "lint_imports.py"


def load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lint_imports_tool", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_checkout(into: Path) -> Path:
    """The package's sources and pyproject.toml (what the contracts read), copied to `into`."""
    for folder in ("ttscale", "strategies", "verifiers", "evals"):
        shutil.copytree(REPO / folder, into / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "pyproject.toml", into / "pyproject.toml")
    return into


def test_stage_lays_the_mapped_folders_inside_ttscale(tmp_path: Path) -> None:
    packages = load_tool().stage(tmp_path)
    assert {"ttscale.strategies", "ttscale.verifiers", "ttscale.evals"} <= set(packages)
    staged = tmp_path / "ttscale" / "strategies" / "beam.py"
    assert staged.read_text() == (REPO / "strategies" / "beam.py").read_text()
    assert (tmp_path / "ttscale" / "verifiers" / "prm.py").is_file()
    assert (tmp_path / "ttscale" / "evals" / "datasets.py").is_file()
    assert (tmp_path / "ttscale" / "search" / "score.py").is_file()
    assert not (tmp_path / "strategies").exists()


def test_the_contracts_hold_for_the_whole_package() -> None:
    proc = subprocess.run([sys.executable, str(TOOL), "--no-logo"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize(
    ("folder", "source", "upward"),
    [
        # A strategy importing the API: before, strategies/ was not in the graph at all.
        ("strategies", "from ttscale.api import run\n", "ttscale.api"),
        # A verifier naming the runner for the type checker only: before, TYPE_CHECKING imports were not counted.
        ("verifiers",
         "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ttscale.running.runner import Prepared\n",
         "ttscale.running.runner"),
        # A task importing a strategy (tasks sit below strategies).
        ("evals", "import ttscale.strategies.beam\n", "ttscale.strategies"),
    ],
)
def test_an_upward_import_in_a_mapped_folder_breaks_the_layers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: str, source: str, upward: str
) -> None:
    import ttscale.verifiers.embeddings as held

    root = copy_checkout(tmp_path / "checkout")
    (root / folder / "upward.py").write_text(f'"""An import that climbs."""\n\n{source}')
    assert load_tool().main(["--no-logo", "--contract", "layers"], root=root) == 1
    # The process's own modules come back: a later test's `import` gets the objects its module-level names hold.
    assert sys.modules["ttscale.verifiers.embeddings"] is held
    out = capsys.readouterr().out
    assert f"ttscale.{folder}.upward -> {upward}" in out


def test_no_break_of_the_layers_or_cycle_is_let_through() -> None:
    # issue 47: the contracts allow no exception, and every module of the package is on a layer
    with open(REPO / "pyproject.toml", "rb") as f:
        contracts = {c["id"]: c for c in tomllib.load(f)["tool"]["importlinter"]["contracts"]}
    assert [c.get("ignore_imports", []) for c in contracts.values()] == [[], [], []]
    assert contracts["layers"]["exhaustive"] is True and contracts["layers"]["containers"] == ["ttscale"]


@pytest.mark.parametrize(
    ("module", "source", "said"),
    [
        # the breaks issue 47 found, each put back where it was: none is ignored any more
        ("ttscale/runstore/records.py", "from ttscale.evals import load_task",
         "ttscale.runstore.records -> ttscale.evals"),
        ("ttscale/kit/selection.py", "from ttscale.verifiers.loading import load_verifier",
         "ttscale.kit.selection -> ttscale.verifiers.loading"),
        ("evals/datasets.py", "from ttscale.verifiers.loading import load_verifier",
         "ttscale.evals.datasets -> ttscale.verifiers.loading"),
        ("ttscale/search/score.py", "from ttscale.verifiers import VERIFIERS",
         "ttscale.search.score -> ttscale.verifiers"),
        ("ttscale/answers/grading.py", "from ttscale.evals import load_task",
         "ttscale.answers.grading -> ttscale.evals"),
        # routing sits below the strategies now: the adaptive strategy imports it, never the other way
        ("ttscale/routing/policy.py", "import ttscale.strategies.adaptive",
         "ttscale.routing.policy -> ttscale.strategies.adaptive"),
        # the cycle inside evals/
        ("evals/datasets.py", "from ttscale.evals.stateful import StatefulDatasetTask",
         "It could be made acyclic by removing 1 dependency:\n\n- .stateful -> .datasets"),
    ],
)
def test_each_former_break_breaks_the_contracts_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], module: str, source: str, said: str
) -> None:
    root = copy_checkout(tmp_path / "checkout")
    with (root / module).open("a") as f:
        f.write(f"\n{source}  # noqa\n")
    assert load_tool().main(["--no-logo"], root=root) == 1
    assert said in capsys.readouterr().out


def test_a_module_on_no_layer_breaks_the_layers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = copy_checkout(tmp_path / "checkout")
    (root / "ttscale" / "unplaced.py").write_text('"""A module nobody placed on a layer."""\n')
    assert load_tool().main(["--no-logo", "--contract", "layers"], root=root) == 1
    out = capsys.readouterr().out
    assert "The following modules are not listed as layers" in out and "- ttscale.unplaced" in out
