"""Reference pages of the docs site for what the registries hold: one page per strategy, verifier, task and engine
backend, generated from the code when the site is built (`tools/docs/hooks.py`), never written by hand.

A page is read off the registered object as `ttscale list --params` reads it (`ttscale.kit.params.describe_params`:
each field's type, default and the docstring under it) and from its module's docstring, where each built-in names
its paper, the reference code it follows and what differs. A name registered tomorrow gets its page on the next build
with no edit here: the pages are whatever `Registry.names()` lists.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ttscale.kit.params import describe_params, params_class

_LIST = re.compile(r"^(\d+\.|-|\*) ")
#: Where an installed package's modules live in the repository (pyproject's package-dir): a page names the file.
PACKAGE_DIRS = {"ttscale.strategies": "strategies", "ttscale.verifiers": "verifiers", "ttscale.evals": "evals"}


@dataclass(frozen=True)
class Kind:
    """One registry as the site shows it: its title, its folder under reference/, and how to read an entry."""

    title: str
    folder: str
    registry: Any
    parameters: Callable[[Any], list[Parameter]]
    usage: Callable[[str], str]
    """How a user names this entry on the command line, for the page's first lines."""


@dataclass(frozen=True)
class Parameter:
    """One parameter as a page shows it (a `ParamDoc`'s fields, or a task factory's keyword argument)."""

    name: str
    type: str
    default: str
    doc: str


def kinds() -> list[Kind]:
    """The registries with reference pages, imported here (not at import time: building the site imports them)."""
    from ttscale.engine import ENGINES
    from ttscale.evals import TASKS
    from ttscale.strategies import STRATEGIES
    from ttscale.verifiers import VERIFIERS

    return [
        Kind("Strategies", "strategies", STRATEGIES, lambda obj: _dataclass_parameters(params_class(obj)),
             lambda name: f"ttscale run --strategy {name} --param KEY=VALUE"),
        Kind("Verifiers", "verifiers", VERIFIERS, _dataclass_parameters,
             lambda name: f"ttscale run --strategy best_of_n --param verifier={name}:KEY=VALUE,..."),
        Kind("Tasks", "tasks", TASKS, _factory_parameters,
             lambda name: f"ttscale run --task {name}[:ARG] --task-option KEY=VALUE"),
        Kind("Engine backends", "backends", ENGINES, _backend_parameters,
             lambda name: f"ttscale run --backend {name}"),
    ]


def _dataclass_parameters(cls: Any) -> list[Parameter]:
    """A parameter dataclass's public fields, read by the one reader `ttscale list --params` uses."""
    if not dataclasses.is_dataclass(cls):
        return []
    return [Parameter(p.name, p.type, "required" if p.default is dataclasses.MISSING else repr(p.default), p.doc)
            for p in describe_params(cls)]


def _backend_parameters(backend: Any) -> list[Parameter]:
    # A backend's options are its config class (docs/architecture.md, Adding an engine backend); vLLM in-process has
    # none of its own: its options are the run's engine flags (see the CLI reference).
    return _dataclass_parameters(getattr(backend, "config", None))


def _factory_parameters(factory: Any) -> list[Parameter]:
    """A task factory's options: its positional argument is `--task NAME:ARG`, its keywords `--task-option`s."""
    if dataclasses.is_dataclass(factory):
        return _dataclass_parameters(factory)
    out = []
    for p in inspect.signature(factory).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        annotation = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
        default = "required" if p.default is p.empty else repr(p.default)
        where = ("`--task NAME:ARG`" if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and not out
                 else f"`--task-option {p.name}=VALUE`")
        out.append(Parameter(p.name, str(annotation or "any"), default, f"Given as {where}."))
    return out


def module_doc(obj: Any) -> str:
    """The docstring of the module that defines `obj`: where each built-in states its paper and reference."""
    module = sys.modules.get(getattr(obj, "__module__", ""), None)
    return inspect.cleandoc(module.__doc__ or "") if module else ""


def own_doc(obj: Any) -> str:
    """The object's own docstring: none where it is a dataclass's generated signature or repeats its module's."""
    doc = inspect.cleandoc(getattr(obj, "__doc__", None) or "")
    generated = dataclasses.is_dataclass(obj) and doc.startswith(f"{getattr(obj, '__name__', '')}(")
    return "" if generated or doc == module_doc(obj) else doc


def repo_path(obj: Any) -> str:
    """The repository file that defines `obj` (`ttscale.strategies.beam` is `strategies/beam.py`)."""
    module = getattr(obj, "__module__", "") or ""
    for package, folder in PACKAGE_DIRS.items():
        if module == package or module.startswith(package + "."):
            module = folder + module[len(package):]
            break
    path = module.replace(".", "/")
    source = getattr(sys.modules.get(getattr(obj, "__module__", "")), "__file__", "") or ""
    return path + ("/__init__.py" if source.endswith("__init__.py") else ".py")


def page(kind: Kind, name: str) -> str:
    """The Markdown page of one registry entry."""
    obj = kind.registry.get(name)
    aliases = kind.registry.aliases(name)
    lines = [f"# {name}", "", f"<!-- generated by tools/docs/registry_pages.py from the {kind.registry.kind} "
             "registry -->", "", f"A {kind.registry.kind} registered as `{name}`"
             + (f", also `{'`, `'.join(aliases)}`" if aliases else "") + f"; defined in `{repo_path(obj)}`.", "",
             "```text", kind.usage(name), "```", ""]
    about, own = module_doc(obj), own_doc(obj)
    lines += ["## About", ""]
    lines += [_as_markdown(text) + "\n" for text in (about, own) if text]
    params = kind.parameters(obj)
    lines += ["## Parameters", ""]
    if not params:
        lines += ["No documented parameters.", ""]
    for p in params:
        lines += [f"### `{p.name}`", "", f"`{p.type}` · default `{p.default}`", "", _as_markdown(p.doc or
                                                                                                    "(undocumented)"),
                  ""]
    return "\n".join(lines)


def _as_markdown(text: str) -> str:
    """A docstring read as Markdown. Docstrings are prose with `code` spans: a bare `<` (`x < y`, `<think>`) would open
    HTML, so it is escaped outside code spans; a numbered or bulleted list written right under a line of prose
    gets the blank line Markdown needs to see a list."""
    parts = text.split("`")  # odd parts are inside code spans, where `<` is literal
    text = "`".join(part if i % 2 else part.replace("<", "&lt;") for i, part in enumerate(parts))
    out: list[str] = []
    for line in text.splitlines():
        if _LIST.match(line) and out and out[-1].strip() and not _LIST.match(out[-1]) and not out[-1].startswith(" "):
            out.append("")
        out.append(line)
    return "\n".join(out)


def index(kind: Kind) -> str:
    """The page that lists every entry of one registry with its first line."""
    lines = [f"# {kind.title}", "", f"<!-- generated by tools/docs/registry_pages.py from {kind.registry.kind} "
             "registry -->", "", f"Every {kind.registry.kind} registered in this build, with its one-line summary. "
             "`ttscale list` prints the same names.", "", "| name | aliases | summary |", "|---|---|---|"]
    for name in kind.registry.names():
        obj = kind.registry.get(name)
        first = (own_doc(obj) or module_doc(obj)).strip().splitlines()
        summary = _as_markdown(first[0]).replace("|", "\\|") if first else ""
        aliases = ", ".join(f"`{a}`" for a in kind.registry.aliases(name))
        lines.append(f"| [`{name}`]({name}.md) | {aliases} | {summary} |")
    return "\n".join(lines) + "\n"


def pages() -> Iterator[tuple[str, str]]:
    """(path under docs/, Markdown) for every registry page and each registry's index."""
    for kind in kinds():
        yield f"reference/{kind.folder}/index.md", index(kind)
        for name in kind.registry.names():
            yield f"reference/{kind.folder}/{name}.md", page(kind, name)


def nav() -> list[dict[str, Any]]:
    """The Reference section's entries for these pages, in the registries' order."""
    return [{kind.title: [f"reference/{kind.folder}/index.md",
                          *({name: f"reference/{kind.folder}/{name}.md"} for name in kind.registry.names())]}
            for kind in kinds()]


__all__ = ["Kind", "Parameter", "index", "kinds", "nav", "page", "pages", "repo_path"]
