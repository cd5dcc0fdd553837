"""docs/architecture.md stays true to the tree: every file and folder it names exists, every registry line it
shows names a registry, and README and the package layout page link to it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"


def test_every_path_the_architecture_doc_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:ttscale|strategies|verifiers|evals|tools|tests)/[\w/.<>-]*)`", text))
    named |= {f"ttscale/{m}" for m in re.findall(r"`((?:cli|engine|search|runstore|sweeps|routing|reporting|scaling|"
                                                  r"running|kit|blocks|comparisons|allocsearch|sandbox|stats|cost|"
                                                  r"testing)/)`", text)}
    concrete = {p for p in named if "<" not in p}
    assert len(concrete) > 20
    missing = sorted(p for p in concrete if not (REPO / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_the_recipes_name_the_registry_of_each_kind() -> None:
    text = DOC.read_text(encoding="utf-8")
    for registry, home in (("STRATEGIES", "strategies/__init__.py"), ("VERIFIERS", "verifiers/__init__.py"),
                           ("TASKS", "evals/__init__.py"), ("ENGINES", "ttscale/engine/__init__.py")):
        assert f"{registry}.register(" in text and f"`{home}`" in text
        assert f"\n{registry}: Registry[" in (REPO / home).read_text(encoding="utf-8")


def test_readme_and_the_layout_page_link_the_architecture_doc() -> None:
    # README's Layout section moved to docs/layout.md (issue 62); README links both.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/architecture.md)" in readme and "(docs/layout.md)" in readme
    assert "(architecture.md)" in (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
