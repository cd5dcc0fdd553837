"""README's and the docs pages' fenced blocks as test cases: each shell command and Python block, named, shrunk for
the suite.

The switch: `TTSCALE_README_SMALL` (default 1, as `make test` runs it) shrinks what a command runs, never what it
means: `--limit` (or `--max-problems`) to a few problems (added where a command runs the whole task), repeats,
trials and held-out pools to a few, the Python block's `limit=` likewise; on the real engine, budgets too
(`--budget` 1k, the Python block's a quarter). `TTSCALE_README_SMALL=0` runs README as written (hours on a CPU).
A command is named `<heading>.<block>-<k>-<words>` (the heading above it, its block's place under the heading, its
place in the block, its first words), and a docs page's `<page>/<heading>...` (`how-to/extend/writing-a-strategy.1`:
the page's path under docs/ without `.md`), so a skip or an expected failure is declared by name, next to why.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = README.parent / "docs"
SMALL = os.environ.get("TTSCALE_README_SMALL", "1") != "0"
#: Problems per command under the switch (a sweep's policy needs more: its bins are quantiles).
LIMIT = 3
#: Per command: the limit it runs with under the switch, where LIMIT is too few for what it computes.
ROUTING = "how-to/sweep-fit-policy/compute-optimal-routing.1"
LIMITS = {f"{ROUTING}-1-ttscale-sweep": 10, f"{ROUTING}-3-ttscale-run": 10, f"{ROUTING}-4-ttscale-run": 10}
#: Flags shrunk under the switch, to at most this value.
CAPS = {"--repeats": 2, "--trials": 2, "--holdout": 8, "--max-problems": 4}
#: Commands whose run covers the whole task unless given --limit (under the switch they get one).
RUNS_A_TASK = {"run", "compare", "sweep", "allocate"}


@dataclass(frozen=True)
class Block:
    """A fenced block of README or a docs page: its language, the section it is under, its text, the line it starts
    on and the page (`README.md`, `docs/how-to/extend.md`)."""

    language: str
    section: str
    """`<heading>.<k>`: the slug of the heading above it and its place under that heading."""
    text: str
    line: int
    page: str = "README.md"


@dataclass
class Command:
    """One shell command of a block, as a user types it (continuations joined, the comment dropped)."""

    name: str
    argv: list[str]
    line: int
    source: str
    env: dict[str, str] = field(default_factory=dict)


def pages() -> list[Path]:
    """README and every page of docs/, in a fixed order: what the suite runs the blocks of."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def page_name(path: Path) -> str:
    """The prefix of a docs page's block names (`how-to/extend/`); README's have none (their names predate docs/)."""
    return "" if path == README else path.relative_to(DOCS).with_suffix("").as_posix() + "/"


def corpus() -> str:
    """README and the docs pages as one text: what the tests that hold the documentation to a fact search."""
    return "\n\n".join(path.read_text(encoding="utf-8") for path in pages())


def blocks(text: str | None = None, *, page: Path = README) -> list[Block]:
    """Every fenced block (```bash, ```python, indented ones in list items too), with the heading above it; without
    `text`, those of README and of every docs page."""
    if text is None:
        return [block for path in pages() for block in blocks(path.read_text(encoding="utf-8"), page=path)]
    prefix, where = page_name(page), page.relative_to(README.parent).as_posix()
    found, section, lines = [], prefix + "intro", text.splitlines()
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if lines[i].startswith("#") and not lines[i].startswith("#!"):
            section = prefix + _slug(lines[i].lstrip("#"))
        elif stripped.startswith("```") and stripped != "```":
            indent = len(lines[i]) - len(lines[i].lstrip())
            language, start, body = stripped[3:].strip(), i + 1, []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i][indent:])
                i += 1
            k = 1 + sum(b.section.rpartition(".")[0] == section for b in found)
            found.append(Block(language, f"{section}.{k}", "\n".join(body) + "\n", start, where))
        i += 1
    return found


def _slug(heading: str) -> str:
    words = re.findall(r"[a-z0-9]+", heading.lower())
    return "-".join(words[:3]) or "section"


def commands(block: Block) -> list[Command]:
    """The commands of a shell block, named; `\\` continuations joined, `# comments` dropped."""
    out, logical, first = [], "", 0
    for offset, raw in enumerate(block.text.splitlines()):
        if not logical:
            first = offset
        logical += raw.rstrip()
        if logical.endswith("\\"):
            logical = logical[:-1] + " "
            continue
        words = shlex.split(logical, comments=True)
        logical = ""
        if not words:
            continue
        env = {}
        while words and re.fullmatch(r"[A-Z_]+=.*", words[0]):
            key, _, value = words.pop(0).partition("=")
            env[key] = value
        out.append(Command("", words, block.line + first, " ".join(words), env))
    for k, command in enumerate(out, 1):
        command.name = f"{block.section}-{k}-" + "-".join(w for w in command.argv[:2] if re.fullmatch(r"[\w.]+", w))
    return out


def shrink(argv: list[str], name: str) -> list[str]:
    """`argv` under the switch: fewer problems, repeats, trials and held-out samples; the rest as written."""
    if not SMALL:
        return list(argv)
    argv, limit = list(argv), LIMITS.get(name, LIMIT)
    for flag, cap in {**CAPS, "--limit": limit}.items():
        if flag in argv:
            i = argv.index(flag) + 1
            argv[i] = str(min(int(argv[i]), cap))
    resuming = "--resume" in argv
    directories = len(argv) > 2 and argv[1] == "compare" and not any(a.startswith("--strategy") for a in argv)
    sequential = "--until-decided" in argv  # sized by --max-problems, which refuses --limit
    if (len(argv) > 1 and argv[1] in RUNS_A_TASK and "--limit" not in argv and not resuming and not directories
            and not sequential):
        argv += ["--limit", str(limit)]
    return argv


def shrink_python(source: str) -> str:
    """A Python block under the switch: every `limit=N` at most LIMIT, every budget `"Nk"` a quarter (it runs on the
    real engine: `"4k"` is `"1000"`)."""
    if not SMALL:
        return source
    source = re.sub(r"\blimit=(\d+)", lambda m: f"limit={min(int(m.group(1)), LIMIT)}", source)
    return re.sub(r'"(\d+)k"', lambda m: f'"{int(m.group(1)) * 250}"', source)


__all__ = ["DOCS", "LIMIT", "README", "ROUTING", "SMALL", "Block", "Command", "blocks", "commands", "corpus", "pages",
           "shrink", "shrink_python"]
