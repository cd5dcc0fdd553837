"""tools/lint_imports.py: the layering contracts checked on the package as installed, every module of it."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

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
    assert (tmp_path / "ttscale" / "evals" / "metrics.py").is_file()
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
        ("verifiers", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ttscale.runner import Prepared\n",
         "ttscale.runner"),
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
