"""The docs site (issue 62): the strict build passes in well under a minute, every registry entry, CLI command and
public name has its generated reference page, a new registry entry gets one with no edit, no generated page is in the
tree to be edited by hand, and README is the short front page that links every page."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.docs.conftest import BUILD_SECONDS, REPO, Site

DOCS = REPO / "docs"
README = REPO / "README.md"


def _hooks() -> ModuleType:
    """tools/docs/hooks.py, loaded by path as mkdocs loads it."""
    if "ttscale_docs_hooks" in sys.modules:
        return sys.modules["ttscale_docs_hooks"]
    spec = importlib.util.spec_from_file_location("ttscale_docs_hooks", REPO / "tools" / "docs" / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _registries() -> dict[str, Any]:
    from ttscale.engine import ENGINES
    from ttscale.evals import TASKS
    from ttscale.strategies import STRATEGIES
    from ttscale.verifiers import VERIFIERS

    return {"strategies": STRATEGIES, "verifiers": VERIFIERS, "tasks": TASKS, "backends": ENGINES}


def _text(page: Path) -> str:
    """A built page's visible text, roughly: tags dropped, entities of < > & read back."""
    html = page.read_text(encoding="utf-8")
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", html).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return " ".join(text.split())


def _shows(text: str, doc: str, words: int = 6) -> bool:
    """Whether a page's text shows the first words of a docstring as rendered: code marks gone, and spacing lost
    where a tag ended (`offline`: reads "offline :")."""
    return "".join(re.sub(r"[`*]", "", doc).split()[:words]) in "".join(text.split())


def test_the_strict_build_passes_in_well_under_a_minute(site: Site) -> None:
    assert site.seconds < BUILD_SECONDS, f"mkdocs build --strict took {site.seconds:.1f} s"
    assert (site.path / "index.html").is_file() and "WARNING" not in site.log


def test_every_registry_entry_has_its_page_with_every_parameter(site: Site) -> None:
    from ttscale.kit.params import describe_params, params_class

    for folder, registry in _registries().items():
        assert len(registry.names()) >= 2
        listing = _text(site.path / "reference" / folder / "index.html")
        for name in registry.names():
            page = site.path / "reference" / folder / name / "index.html"
            assert page.is_file(), f"no reference page for {registry.kind} {name!r}"
            assert f"{name}/" in listing or name in listing
            obj = registry.get(name)
            cls = params_class(obj) if folder == "strategies" else getattr(obj, "config", obj)
            if dataclasses.is_dataclass(cls):
                text = _text(page)
                for p in describe_params(cls):  # the reader `ttscale list --params` uses
                    assert p.name in text, f"{registry.kind} {name}: parameter {p.name} is not on its page"
                    assert _shows(text, p.doc), f"{registry.kind} {name}.{p.name}: its docstring is not on its page"


def test_every_cli_command_and_flag_has_its_page(site: Site) -> None:
    from ttscale.cli import SUBCOMMANDS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(SUBCOMMANDS)
    for name, command in sub.choices.items():
        page = site.path / "reference" / "cli" / name / "index.html"
        assert page.is_file(), f"no reference page for `ttscale {name}`"
        text = _text(page)
        for action in command._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue  # --help is every command's, and a hidden flag is hidden from --help too
            for option in action.option_strings:
                assert option in text, f"`ttscale {name}` {option} is not on its page"


def test_the_python_api_and_the_run_formats_are_rendered(site: Site) -> None:
    import ttscale
    from ttscale.runstore.runformat import FORMAT_VERSION

    api = _text(site.path / "reference" / "python-api" / "index.html")
    for name in ("run", "sweep", "compare", "plan", "fit", "report", "load_runs", "SharedEngine", "Budget"):
        assert name in ttscale.__all__ and re.search(rf"\b{name}\b", api), name
    # mkdocstrings rendered the docstrings, not only the names: ttscale.run's first line is there.
    assert _shows(api, ttscale.run.__doc__ or "")
    formats = _text(site.path / "reference" / "run-formats" / "index.html")
    assert f"Today's run format is {FORMAT_VERSION}" in formats and "migrate_config" in formats


def test_the_search_index_holds_the_hand_written_and_generated_pages(site: Site) -> None:
    index = json.loads((site.path / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = {doc["location"].split("#")[0] for doc in index["docs"]}
    assert {"getting-started/", "concepts/budgets/", "reference/strategies/beam/", "reference/cli/run/"} <= locations


def test_a_new_registry_entry_gets_a_page_with_no_hand_edit(monkeypatch: pytest.MonkeyPatch) -> None:
    from ttscale.kit.params import strategy
    from ttscale.strategies import STRATEGIES

    @dataclasses.dataclass(frozen=True)
    class ToyParams:
        width: int = 3
        """How many toys wide the search goes."""

    @strategy(ToyParams)
    async def toy(problem: Any, ctx: Any, p: ToyParams) -> Any:
        """A toy strategy, registered only in this test."""

    # The registry's tables copied, so the toy's registration ends with the test.
    for table in ("_targets", "_aliases", "_loaded"):
        monkeypatch.setattr(STRATEGIES, table, dict(getattr(STRATEGIES, table)))
    STRATEGIES.register("toy_search_for_docs", aliases=("toy_docs",))(toy)
    pages = _hooks().reference_pages()
    page = pages["reference/strategies/toy_search_for_docs.md"]
    assert "`width`" in page and "How many toys wide the search goes." in page and "default `3`" in page
    assert "`toy_docs`" in page and "[`toy_search_for_docs`](toy_search_for_docs.md)" in (
        pages["reference/strategies/index.md"])
    nav = json.dumps(_hooks().reference_nav())
    assert "reference/strategies/toy_search_for_docs.md" in nav


def test_no_generated_page_is_in_the_tree() -> None:
    # Generated pages exist only in a build: one in docs/ could be edited by hand (and the build refuses it).
    generated = set(_hooks().reference_pages()) | {"index.md"}
    in_tree = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert not generated & in_tree
    assert not (DOCS / "reference").exists()


def test_readme_is_the_short_front_page_and_links_every_page() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= 200, f"README is {len(lines)} lines"
    # The two commands stay the first thing a reader sees.
    demo = ("make demo   # set up (.venv, vLLM for this machine, the embedded model) and run the main job, offline, "
            "on CPU")
    test = "make test   # the same set-up, then lint, type checks and the whole test suite (real vLLM engine)"
    assert lines[:6] == ["# ttscale", "", "```bash", demo, test, "```"]
    linked = set(re.findall(r"\]\(docs/([^)#]+)", text))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert not pages - linked, f"README does not link {sorted(pages - linked)}"
    sections = {path for path in _hooks().reference_pages() if path.count("/") == 2 and path.endswith("index.md")}
    assert sections - {"reference/index.md"} <= linked | {"reference/index.md"}
    assert not {link for link in linked if not link.startswith("reference/")} - pages, "README links a missing page"


def test_every_page_is_in_the_nav() -> None:
    # mkdocs --strict also fails on a page left out of the nav; this names it without a build.
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        assert page.relative_to(DOCS).as_posix() in nav, page
