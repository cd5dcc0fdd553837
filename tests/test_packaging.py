"""Layout contracts: a light `import ttscale`, and a wheel without top-level strategies/verifiers/evals."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_import_ttscale_is_light(tmp_path: Path) -> None:
    code = (
        "import sys, ttscale, ttscale.cli, ttscale.strategies, ttscale.evals, ttscale.verifiers, "
        "ttscale.running.runner;"
        "print(','.join(m for m in ('vllm', 'torch', 'ray', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def test_wheel_has_no_top_level_card_folders(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    wheel = next(tmp_path.glob("ttscale-*.whl"))
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert not tops & {"strategies", "verifiers", "evals", "tests"}
    names = zipfile.ZipFile(wheel).namelist()
    for package in ("strategies", "verifiers", "evals"):
        assert f"ttscale/{package}/__init__.py" in names
    # Every package of the source tree is in the wheel (pyproject lists them by hand: a new one is easily missed).
    for init in sorted((REPO / "ttscale").rglob("__init__.py")):
        if "__pycache__" not in init.parts:
            where = init.relative_to(REPO).as_posix()
            assert where in names, f"{init.parent.name} is missing from pyproject's packages"
