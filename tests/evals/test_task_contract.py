"""The task contract (ttscale.evals.base) sits below the registry that names tasks: nothing in it imports the
package's `__init__` (issue 47: the arrow evals/base.py -> evals/__init__ is gone), and `load_task` lives beside
`TASKS`, which it reads."""

from __future__ import annotations

import ast
from pathlib import Path

import ttscale.evals
import ttscale.evals.base

REPO = Path(__file__).resolve().parents[2]


def test_the_task_contract_imports_nothing_of_its_package() -> None:
    tree = ast.parse((REPO / "evals" / "base.py").read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "ttscale.evals" not in imported and not any(m and m.startswith("ttscale.evals.") for m in imported)


def test_load_task_is_the_registrys() -> None:
    assert ttscale.evals.load_task.__module__ == "ttscale.evals"
    assert not hasattr(ttscale.evals.base, "load_task")
    assert ttscale.evals.load_task("arithmetic:1-2").problems()
