"""The names of every file the toolkit writes in the folders it makes: runs, sweeps, comparisons, allocation searches.

One list (`TOOLKIT_FILES`), so every check of a path the user names (`report --out`, `fit --plot`, `policy --out`,
and whether `sweep --out`, `compare --out` or `allocate --out` may use a folder) protects every file, and a new file
is added here once: the writers take their names from here.
"""

from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path

from ttscale.runstore.runfiles import open_regular

CONFIG = "config.json"
"""A run's settings, written first: a folder holding it is a run."""
RESULTS = "results.jsonl"
"""A run's records, one line per finished problem."""
SUMMARY = "summary.json"
"""A run's accuracy and spend, written when it ends."""
ENGINE_LOG = "engine.log"
"""What the engine and its libraries printed (start-up, warnings); `ttscale run --verbose` shows it instead."""
STAGES = "stages.jsonl"
"""Stages the problems of a run share, computed once each (ttscale.kit.stages): sleep-time notes about a context."""
LOCK = ".lock"
"""Held by the process writing a run."""
SWEEP = "sweep.json"
"""A sweep's grid and its cells: a folder holding it is a sweep."""
COMPARE = "compare.json"
"""A paired comparison's result: a folder holding it is a comparison."""
UNTIL_DECIDED = "until_decided.json"
"""A comparison that stops once decided: its plan and each look, as read (ttscale.comparisons.until_decided)."""
ALLOCATION = "allocate.json"
"""An allocation search's settings (`ttscale allocate`): a folder holding it is one."""
ALLOCATION_TABLE = "table.json"
"""An allocation search's table of proposers, written when it ends."""
SEARCH = "search.json"
"""A trial log's header (ttscale.allocsearch.trials)."""
TRIALS = "trials.jsonl"
"""A trial log's trials, one line each."""

TOOLKIT_FILES = frozenset({CONFIG, RESULTS, SUMMARY, ENGINE_LOG, STAGES, LOCK, SWEEP, COMPARE, UNTIL_DECIDED,
                           ALLOCATION, ALLOCATION_TABLE, SEARCH, TRIALS})
"""Every file the toolkit writes in its folders under a fixed name: never written over by a path the user names."""
TOOLKIT_PATTERNS = ("policy-*.json",)
"""The names of the files the toolkit writes in its folders under a varying name (`ttscale policy`'s learned
policy in its sweep's folder, `policy-<bins>.json`): protected as TOOLKIT_FILES are."""


def toolkit_file(name: str) -> bool:
    """Whether `name` is one of the files the toolkit writes in its folders (TOOLKIT_FILES, TOOLKIT_PATTERNS)."""
    return name in TOOLKIT_FILES or any(fnmatch.fnmatchcase(name, pattern) for pattern in TOOLKIT_PATTERNS)


#: What a folder holding each of these files is (the first found names it).
_KINDS = ((CONFIG, "a ttscale run"), (SWEEP, "a ttscale sweep"), (COMPARE, "a ttscale comparison"),
          (ALLOCATION, "a ttscale allocation search"), (SEARCH, "a ttscale trial log"), (RESULTS, "a ttscale run"))


def folder_entries(path: str | Path, *, what: str) -> list[str]:
    """What the folder `path`, where `what` ("a sweep") is to be written, holds: sorted names, [] when it is absent;
    a one-line ValueError when it is a file or cannot be read (a later mkdir would only say "File exists")."""
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return []
    except NotADirectoryError:
        raise ValueError(f"{str(path)!r} is a file, not a folder; {what} is written to a folder: pick another "
                         "--out") from None
    except OSError as exc:
        raise ValueError(f"cannot use {str(path)!r} for {what}: {exc.strerror}") from None


def refuse_folder(path: str | Path, entries: list[str], *, what: str) -> None:
    """Refuse the non-empty folder `path` (holding `entries`) for a new `what`, in one line that says what it is: one of
    the toolkit's folders, or someone's files."""
    kind = next((name for file, name in _KINDS if file in entries), None)
    if kind is not None:
        raise ValueError(f"{str(path)!r} is {kind}, not {what}; pick a new or empty folder for --out")
    more = f" and {len(entries) - 1} more" if len(entries) > 1 else ""
    raise ValueError(f"{str(path)!r} is not empty and not {what} (it holds {entries[0]!r}{more}); pick a new or "
                     "empty folder for --out")


def check_out_folder(path: str | Path, *, what: str, own: str, own_format: str) -> None:
    """Refuse `path` for `what` unless it is absent, empty, or holds the toolkit's `own` file of format `own_format`
    (a folder of this kind ttscale made: that file is then written again); one-line ValueError."""
    entries = folder_entries(path, what=what)
    if not entries or _format_of(Path(path) / own) == own_format:
        return
    if own in entries:
        raise ValueError(f"--out {str(path)!r} holds a {own} that ttscale did not write; it is never replaced: "
                         "write elsewhere")
    refuse_folder(path, entries, what=what)


def _format_of(path: Path) -> object:
    """The `format` field of the JSON object in `path` (None: absent, unreadable, not such an object)."""
    try:
        with os.fdopen(open_regular(path, os.O_RDONLY)[0], "rb") as handle:
            data = json.loads(handle.read(1 << 24).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data.get("format") if isinstance(data, dict) else None


__all__ = [
    "ALLOCATION",
    "ALLOCATION_TABLE",
    "COMPARE",
    "CONFIG",
    "ENGINE_LOG",
    "LOCK",
    "RESULTS",
    "SEARCH",
    "STAGES",
    "SUMMARY",
    "SWEEP",
    "TOOLKIT_FILES",
    "TOOLKIT_PATTERNS",
    "TRIALS",
    "UNTIL_DECIDED",
    "check_out_folder",
    "folder_entries",
    "refuse_folder",
    "toolkit_file",
]
