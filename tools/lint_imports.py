"""Checks the package's import contracts on the package as installed: `python tools/lint_imports.py [ARGS]`.

pyproject maps ``ttscale.strategies``, ``ttscale.verifiers`` and ``ttscale.evals`` onto the top-level folders
``strategies/``, ``verifiers/``, ``evals/`` (setuptools ``package-dir``). import-linter builds its graph by walking
the root package's folder, so run on the working tree it sees ``ttscale/`` alone and none of the three; and the
editable install (`make install`) maps them with an import hook, not on disk. This script lays the package out as
a wheel would (every package of ``[tool.setuptools] packages`` copied from its ``package-dir`` folder into a
temporary directory), puts that first on ``sys.path`` and runs ``lint-imports`` there with the repository's
contracts, so every module of the installed package is checked. ARGS go to lint-imports (``--verbose``,
``--contract layers`` ...). Exit status: lint-imports' own (0 when every contract is kept).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser from PyPI (import-linter's own dependency there)
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def source_folder(package: str, package_dir: dict[str, str]) -> str:
    """Where setuptools reads `package` from: the longest `package-dir` entry that is it or a parent of it."""
    parts = package.split(".")
    for cut in range(len(parts), 0, -1):
        mapped = package_dir.get(".".join(parts[:cut]))
        if mapped is not None:
            return os.path.join(mapped, *parts[cut:])
    return os.path.join(package_dir.get("", ""), *parts)


def stage(into: Path, *, root: Path = ROOT) -> list[str]:
    """Copies the modules of every listed package to `into` as installed; returns the packages copied."""
    with open(root / "pyproject.toml", "rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    packages: list[str] = setuptools["packages"]
    package_dir: dict[str, str] = setuptools.get("package-dir", {})
    for package in packages:
        source = root / source_folder(package, package_dir)
        target = into.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        # Modules only: a subfolder is its own entry of `packages` (or no package), as setuptools sees it.
        for module in source.glob("*.py"):
            shutil.copy2(module, target / module.name)
    return packages


def _ours(module: str) -> bool:
    return module == "ttscale" or module.startswith("ttscale.")


def main(argv: Sequence[str] | None = None, *, root: Path = ROOT) -> int:
    """lint-imports with `argv` on the package of the checkout at `root`, staged; its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    from importlinter.cli import lint_imports_command

    with tempfile.TemporaryDirectory(prefix="ttscale-lint-imports-") as tmp:
        stage(Path(tmp), root=root)
        # The staged copy is found before the editable install's import hook (a meta-path finder after PathFinder);
        # lint-imports puts the working directory first on sys.path, so it runs in the stage, not in the checkout.
        sys.path.insert(0, tmp)
        cwd = os.getcwd()
        os.chdir(tmp)
        # lint-imports finds the package by importing it: the checkout's modules step aside for the stage's, and
        # come back after (a caller in this process, a test, keeps the module objects it already holds).
        saved = {name: sys.modules.pop(name) for name in [m for m in sys.modules if _ours(m)]}
        config = str(root / "pyproject.toml")
        # The cache is keyed by file paths, which are new at every call: it would only grow.
        try:
            lint_imports_command.main([config, "--no-cache", *args], standalone_mode=False)
        except SystemExit as exit_:
            return int(exit_.code or 0)
        finally:
            os.chdir(cwd)
            sys.path.remove(tmp)
            for name in [m for m in sys.modules if _ours(m)]:
                del sys.modules[name]
            sys.modules.update(saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
