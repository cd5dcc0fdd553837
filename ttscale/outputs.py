"""Where a command may write a file the user named (`report --out`, `fit --plot`, `policy --out`).

Never over one of the command's own inputs, and never over a file the toolkit writes in a run, sweep, compare or
allocation directory (every name in `ttscale.runstore.names.TOOLKIT_FILES`: config.json, results.jsonl,
stages.jsonl, allocate.json, trials.jsonl, ...): `ttscale report RUN --out RUN/results.jsonl` would replace weeks of
results with a page of Markdown. Paths are compared resolved
(links followed, `..` folded), and an existing file also as a file, so a hard link to a run's results is
refused too. The check runs before the command reads or writes anything.

`write_output` then writes the file as a new one renamed into place: a name that was another hard link to a file
(someone's results, another run's) keeps its content, where writing in place would truncate it for every name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from ttscale.runstore.names import TOOLKIT_FILES, toolkit_file
from ttscale.runstore.runfiles import write_atomic


class OutputError(ValueError):
    """An output path that would write over an input or a run's file (one line, for the CLI)."""


def protected_names() -> frozenset[str]:
    """The names of the files the toolkit writes in its directories (one list: `TOOLKIT_FILES`)."""
    return TOOLKIT_FILES


def check_output(out: str | Path, *, inputs: Iterable[str | Path], flag: str) -> None:
    """Refuse `out` (given as `flag`) when writing it would overwrite one of `inputs` (files, or folders read
    whole) or a file of a run, sweep or compare directory; OutputError in one line, before anything is touched."""
    given = str(out)
    target = Path(os.path.realpath(out))
    names = protected_names()
    sources = [(Path(item), Path(os.path.realpath(item))) for item in inputs]
    for shown, source in sources:
        if target == source:
            raise OutputError(f"{flag} {given!r} is one of this command's inputs ({str(shown)!r}); write elsewhere")
    if toolkit_file(target.name):
        inside = next((shown for shown, source in sources if target.is_relative_to(source)), None)
        if inside is not None:
            raise OutputError(f"{flag} {given!r} is {target.name} inside {str(inside)!r}, an input of this command: "
                              "a run's file, never written over; write elsewhere")
        if any((target.parent / name).is_file() for name in names):
            raise OutputError(f"{flag} {given!r} is {target.name} of the ttscale directory {str(target.parent)!r}: "
                              "a run's file, never written over; write elsewhere")
    try:
        info = target.stat()
    except OSError:
        return  # absent (it will be created), or unreadable (the write says why)
    if info.st_nlink > 1:  # another name for this file exists: is it an input, or a run's file?
        for shown, source in sources:
            for path in _files(source, names):
                if _same(path, target):
                    raise OutputError(f"{flag} {given!r} is the same file as {str(path)!r} (a hard link) under "
                                      f"{str(shown)!r}, an input of this command; write elsewhere")


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # removed meanwhile: not the same file
        return False


def _files(source: Path, names: frozenset[str]) -> Iterator[Path]:
    """`source` itself when it is a file; the run, sweep and compare files under it when it is a folder."""
    if source.is_file():
        yield source
        return
    for folder, _, files in os.walk(source):
        for name in files:
            if name in names or toolkit_file(name):
                yield Path(folder) / name


def write_output(out: str | Path, data: str | bytes) -> None:
    """Write the file the user named (its folder made if absent) as a new file renamed into place: never through
    another name of the file that stood there (a hard link). Raises StorageError (an OSError) naming the file."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data.encode("utf-8") if isinstance(data, str) else data)


__all__ = ["OutputError", "check_output", "protected_names", "write_output"]
