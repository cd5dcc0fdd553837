"""The report shows the paired comparisons (compare.json) found under its paths, on real run directories."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ttscale
from ttscale.cli import main
from ttscale.comparisons.paired import COMPARE, analyse, write

REAL = Path(__file__).resolve().parent.parent / "data" / "real_runs"


@pytest.fixture
def compared(tmp_path: Path) -> tuple[Path, list[str]]:
    """Copies of the three real self-consistency runs (4, 8, 16 samples) with their comparison beside them."""
    root = tmp_path / "study"
    for name in ("sc-n4", "sc-n8", "sc-n16"):
        shutil.copytree(REAL / name, root / name)
    result = write(analyse([root / n for n in ("sc-n4", "sc-n8", "sc-n16")]), root)
    return root, result.verdicts


def test_markdown_and_html_reports_carry_every_verdict_of_the_comparison(compared: tuple[Path, list[str]]) -> None:
    root, verdicts = compared
    assert len(verdicts) == 3  # three arms, every pair
    markdown = ttscale.report([root])
    html = ttscale.report([root], format="html")
    assert "## Paired comparison" in markdown and 'id="comparisons"' in html
    for verdict in verdicts:
        assert verdict in markdown
        assert verdict.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in html
    # Without a compare.json the section is absent: it shows comparisons, it does not invent them.
    (root / COMPARE).unlink()
    assert "Paired comparison" not in ttscale.report([root]) and 'id="comparisons"' not in ttscale.report(
        [root], format="html")


def test_an_unreadable_comparison_is_one_line_with_exit_code_2(
    compared: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = compared
    (root / COMPARE).write_text('{"format": "ttscale.compare", "pairs": [', encoding="utf-8")
    assert main(["report", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and COMPARE in err[0] and "cannot be read as a comparison" in err[0], err
