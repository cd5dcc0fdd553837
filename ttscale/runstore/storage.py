"""A run directory (`RunDir`): config.json, results.jsonl (one fsynced line per finished problem), summary.json.
The run pipeline writes one through `ttscale.runstore.writer`, whose few calls reach this module.

A `kill -9` loses at most the line being written: a resume cuts a torn last line off and gives a whole last record
its newline; a bad line elsewhere (an edit) is refused, never cut. A lock refuses a second writer; a failed write is
cut back to the last whole line and raised as a one-line `StorageError`. A new run starts only in a folder that is
absent, empty, or holds what a start cut off, and removes only what it created. Run files are regular files, opened
so that no open blocks (a FIFO). Written records and configs carry today's format version, and are read back in
today's shape whatever version wrote them (`ttscale.runstore.runformat`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import jsonlines

from ttscale.runstore.names import CONFIG, ENGINE_LOG, RESULTS, STAGES, SUMMARY
from ttscale.runstore.names import LOCK as _LOCK
from ttscale.runstore.records import record_problem
from ttscale.runstore.runfiles import (
    RunDirError,
    StorageError,
    check_regular,
    irregular,
    open_regular,
    parse_json,
    storage_error,
    write_atomic,
)
from ttscale.runstore.runformat import migrate_config, migrate_record, stamp_config, stamp_record

_RUN_FILES = (CONFIG, RESULTS, SUMMARY, ENGINE_LOG, STAGES, _LOCK)


class RunExists(RunDirError):
    """A new run was asked for (`resume=False`) in a directory that holds one."""


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock: IO[str] | None = None
        self._results: IO[bytes] | None = None
        self._size = 0
        """Bytes of whole lines in results.jsonl: a failed append is cut back to it."""
        self._read = _ReadState()
        """What has been parsed of results.jsonl so far: later reads parse only what was appended since."""
        self._tail: _ReadState | None = None
        """A whole last record without its newline (not cached in `_read`: the newline may still come)."""
        self._created: set[str] = set()
        """The run files this object created: all that `discard` removes."""
        self._made_dir = False

    # -- ownership ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def open_for_writing(self) -> Iterator[RunDir]:
        """Hold the directory's lock for the duration of a run; refuse if another process holds it."""
        try:
            try:
                self.path.mkdir(parents=True)
                self._made_dir = True
            except FileExistsError:
                if not self.path.is_dir():
                    raise
            self._refuse_irregular()
            fd = self._open(_LOCK, os.O_RDWR | os.O_CREAT)
            self._lock = os.fdopen(fd, "a+")  # held for the whole run, closed below
        except OSError as exc:
            raise RunDirError(f"cannot write run directory {str(self.path)!r}: {exc.strerror}") from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise RunDirError(
                f"another ttscale run is writing {str(self.path)!r}; wait for it or use another --out"
            ) from None
        except OSError as exc:
            self._lock.close()
            raise storage_error(exc, self.path / _LOCK, "lock") from None
        try:
            self._repair_results()
            try:
                fd = self._open(RESULTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
                # Unbuffered: what a failed write left in a buffer would reach the file with a later write or the
                # close, after the cut back to the last whole line (a record's tail, then a torn line).
                self._results = os.fdopen(fd, "ab", buffering=0)  # closed in finally
                self._size = self._results.seek(0, os.SEEK_END)
            except OSError as exc:
                raise storage_error(exc, self.path / RESULTS, "open") from None
            yield self
        finally:
            if self._results:
                with contextlib.suppress(OSError):  # nothing is left unflushed: every append fsyncs
                    self._results.close()
                self._results = None
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()

    def discard(self, *, remove_dir: bool = False) -> None:
        """Remove what this run created (with `remove_dir`, the directory too if this run made it), when it
        finished no problem; a file it found there is never touched, whatever its name."""
        if self.records():
            raise RunDirError(f"{str(self.path)!r} holds finished problems; it is not discarded")
        for name in sorted(self._created):
            with contextlib.suppress(OSError):
                (self.path / name).unlink()
        self._created.clear()
        if remove_dir and self._made_dir:
            with contextlib.suppress(OSError):
                self.path.rmdir()  # only when empty

    def claim(self, name: str) -> None:
        """Note that this run created `name` (a file another part wrote for it: the engine log), for `discard`."""
        self._created.add(name)

    # -- files ----------------------------------------------------------------------------------
    def has_results(self) -> bool:
        """Whether the directory holds a run (its config.json): the one rule of `--resume` and `--out`."""
        return os.path.lexists(self.path / CONFIG)

    def stored(self, *, resume: bool | None) -> dict[str, Any] | None:
        """The config.json of the run this folder holds, to continue (`read_config`), or None: a new run, once the
        folder is fit for one (`check_new`). `resume`: True = continue the run held (refused in one line where it
        holds none); False = a new run, refused (`RunExists`) where it holds one; None = whichever it holds."""
        if self.has_results() if resume is None else resume:
            return self.read_config()
        if self.has_results():
            raise RunExists(f"{str(self.path)!r} already holds a run: continue it with --resume, or pick another --out")
        self.check_new()  # never a run mixed into someone's files (a failed start would then clean up among them)
        return None

    def check_new(self) -> None:
        """Refuse to start a new run here unless the directory is absent, empty, or holds only what a start cut
        off before its config.json left (the lock, an empty results file): never mix a run into other files."""
        try:
            entries = list(os.scandir(self.path))
        except FileNotFoundError:
            return
        except OSError as exc:
            raise RunDirError(f"cannot use {str(self.path)!r} for a run: {exc.strerror}") from None
        self._refuse_irregular()
        others = sorted(e.name for e in entries if not _leftover(e))
        if others:
            more = f" and {len(others) - 1} more" if len(others) > 1 else ""
            raise RunDirError(f"{str(self.path)!r} is not empty and not a ttscale run (it holds {others[0]!r}{more}, "
                              f"no {CONFIG}); a new run needs a new or empty directory")

    def read_config(self) -> dict[str, Any]:
        """config.json in today's shape (`ttscale.runstore.runformat.RunConfigData`, without `format`), whatever version
        wrote it; a one-line RunDirError when it is absent, unreadable, not an object, or of a version not read here."""
        try:
            with os.fdopen(open_regular(self.path / CONFIG, os.O_RDONLY)[0], "rb") as handle:
                data = parse_json(handle.read().decode("utf-8"))
        except FileNotFoundError:
            raise RunDirError(f"{str(self.path)!r} is not a ttscale run: no {CONFIG}") from None
        except RunDirError:
            raise
        except (OSError, ValueError) as exc:
            raise RunDirError(f"cannot read {self.path / CONFIG}: {exc}") from None
        if not isinstance(data, dict):
            raise RunDirError(f"{self.path / CONFIG} is not a JSON object")
        return migrate_config(data, where=self.path / CONFIG)

    def write_config(self, data: Mapping[str, Any]) -> None:
        """Write config.json (today's shape) stamped with today's format version, atomically."""
        self.write_json(CONFIG, dict(stamp_config(data, where=self.path / CONFIG)))

    def stored_wall_seconds(self) -> float:
        """The wall time summary.json records of the run's earlier parts (0.0 where none was written, or where the
        file or its number cannot be read: a resumed run then counts its own part alone)."""
        try:
            wall = json.loads((self.path / SUMMARY).read_text(encoding="utf-8")).get("wall_seconds")
        except (OSError, ValueError, AttributeError):
            return 0.0
        ok = isinstance(wall, int | float) and not isinstance(wall, bool) and math.isfinite(wall) and wall >= 0
        return float(wall) if ok else 0.0

    def write_json(self, name: str, data: dict[str, Any]) -> None:
        """Write atomically: a reader sees the old file or the new one, never half of one. `data` is written as
        given: config.json goes through `write_config`, which stamps its format version."""
        # ASCII: a lone surrogate (a model's broken bytes) is written as the JSON escape that reads back to it.
        text = json.dumps(data, indent=2, sort_keys=True, default=str, ensure_ascii=True) + "\n"
        new = not os.path.lexists(self.path / name)
        write_atomic(self.path / name, text.encode("ascii"))
        if new:
            self._created.add(name)

    def append(self, record: dict[str, Any]) -> None:
        """Append one result line, stamped with today's format version, and make it durable before returning."""
        self.append_many([record])

    def append_many(self, records: list[dict[str, Any]]) -> None:
        """Append result lines and make them all durable with one fsync before returning (a group commit:
        see `GroupCommit`); on failure none of them is kept."""
        if self._results is None:
            raise RuntimeError("RunDir.append outside open_for_writing()")
        lines = [stamp_record(record, where=self.path / RESULTS) for record in records]
        data = b"".join(_utf8(json.dumps(record, ensure_ascii=False, default=str) + "\n", record) for record in lines)
        try:
            view = memoryview(data)
            while view:  # a short write (a disk filling up) is continued, and fails on the next call
                view = view[self._results.write(view) or 0:]
            os.fsync(self._results.fileno())
        except OSError as exc:
            # Part of a line may have reached the file: cut it off, or the next append would glue
            # onto it and turn a good record into a bad middle line.
            with contextlib.suppress(OSError):
                os.ftruncate(self._results.fileno(), self._size)
            raise storage_error(exc, self.path / RESULTS, "append to") from None
        self._size += len(data)

    def records(self) -> list[dict[str, Any]]:
        """Finished problems, first record per id (a torn last line is ignored), each in today's shape whatever
        version wrote its line (`ttscale.runstore.runformat`)."""
        # Copies: the parsed lines are kept for the next read, and a caller may edit what it gets.
        return [dict(r) for r in self._first().values()]

    def torn_tail(self) -> bool:
        """Whether results.jsonl ends in a torn line (a write cut off, or still under way); `records` leaves it out."""
        good = self._read_lines()
        try:
            return (self.path / RESULTS).stat().st_size > good
        except FileNotFoundError:
            return False

    def finished_ids(self) -> set[str]:
        return set(self._first())

    def unfinished_attempts(self) -> list[dict[str, Any]]:
        """Records of attempts a server fault left unfinished (`records` leaves them out; `--resume` reruns them)."""
        self._read_lines()
        return [dict(r) for r in self._read.unfinished + (self._tail.unfinished if self._tail else [])]

    # -- internals ------------------------------------------------------------------------------
    def _first(self) -> dict[str, dict[str, Any]]:
        self._read_lines()
        first, tail = self._read.first, self._tail
        return {**first, **{k: v for k, v in tail.first.items() if k not in first}} if tail else first

    def _open(self, name: str, flags: int) -> int:
        fd, created = open_regular(self.path / name, flags)
        if created:
            self._created.add(name)
        return fd

    def _refuse_irregular(self) -> None:
        for name in _RUN_FILES:
            check_regular(self.path / name)

    def _read_lines(self) -> int:
        """Parse the whole lines into `self._read` (a last record without its newline into `self._tail`); returns
        the bytes they span (a last line that does not parse is a torn write).

        Incremental: the lines parsed by an earlier call are kept, and only bytes appended since are
        read, so a resume (and every summary after it) parses each line of a long run once. A file
        that shrank or was replaced (another inode) is read again from the start.
        """
        path = self.path / RESULTS
        self._tail = None
        try:
            info = path.stat()
        except FileNotFoundError:
            self._read = _ReadState()
            return 0
        except OSError as exc:
            raise storage_error(exc, path, "read") from None
        if not stat.S_ISREG(info.st_mode):
            raise RunDirError(irregular(path, info.st_mode))
        state = self._read
        if (info.st_dev, info.st_ino) != state.file or info.st_size < state.good:
            state = self._read = _ReadState(file=(info.st_dev, info.st_ino))
        if info.st_size == state.good:
            return state.good
        bad_line = 0
        try:
            with os.fdopen(open_regular(path, os.O_RDONLY)[0], "rb") as handle:
                handle.seek(state.good)
                for number, raw in enumerate(handle, start=state.lines + 1):
                    if bad_line:  # a bad line with more after it: not a torn write
                        raise RunDirError(
                            f"{path}:{bad_line} is not a whole JSON record, and more lines follow it; "
                            "it was not written by ttscale: fix or delete that line"
                        )
                    record = _parse_line(raw)
                    if record is None:
                        bad_line = number
                        continue
                    record = migrate_record(record, where=f"{path}:{number}")  # each line by its own version
                    problem = record_problem(record)  # every reader (a resume too) refuses an edited record alike
                    if problem is not None:
                        raise RunDirError(f"{path}: the record of problem {record.get('id')!r}: {problem} (fix or "
                                          "delete that line)")
                    if raw.endswith(b"\n"):
                        state.add(record, len(raw))
                    else:  # the last line, whole but for its newline
                        self._tail = _ReadState()
                        self._tail.add(record, len(raw))
        except OSError as exc:
            raise storage_error(exc, path, "read") from None
        return state.good + (self._tail.good if self._tail else 0)

    def _repair_results(self) -> None:
        path = self.path / RESULTS
        if not path.is_file():
            return
        good = self._read_lines()
        try:
            if good < path.stat().st_size or self._tail:
                with os.fdopen(open_regular(path, os.O_RDWR)[0], "r+b") as handle:
                    handle.truncate(good)  # a torn line cut off
                    if self._tail:  # a whole record kept: it gets the newline its write did not finish
                        handle.seek(good)
                        handle.write(b"\n")
                        handle.flush()
                        os.fsync(handle.fileno())
        except OSError as exc:
            raise storage_error(exc, path, "repair") from None
        if self._tail:
            self._read_lines()


def _leftover(entry: os.DirEntry[str]) -> bool:
    """What a start cut off before its config.json left: the lock, an empty results file, the config's temporary."""
    if entry.name == _LOCK or entry.name.startswith(f".{CONFIG}."):
        return True
    try:
        return entry.name == RESULTS and entry.is_file() and entry.stat().st_size == 0
    except OSError:
        return False


class _ReadState:
    """The whole lines of results.jsonl parsed so far (see `RunDir._read_lines`)."""

    def __init__(self, file: tuple[int, int] | None = None) -> None:
        self.file = file
        """(device, inode) of the file these lines came from."""
        self.first: dict[str, dict[str, Any]] = {}
        """The first record of each problem id."""
        self.good = 0
        """Bytes of whole lines parsed."""
        self.lines = 0
        self.unfinished: list[dict[str, Any]] = []
        """Attempts a passing server fault cut short (what they spent still counts against a total budget)."""

    def add(self, record: dict[str, Any], size: int) -> None:
        if record.get("unfinished") is True:  # a server fault's line: not finished, so a later record counts
            self.unfinished.append(record)
        else:
            self.first.setdefault(str(record.get("id")), record)
        self.good += size
        self.lines += 1


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    """A whole record line, or None (torn: not JSON, not an object). A last line without its newline that parses
    is whole: a record is one JSON object, so no prefix of its text parses (the write died before the newline)."""
    try:
        record: dict[str, Any] = jsonlines.Reader((raw,)).read(type=dict)
    except (jsonlines.InvalidLineError, RecursionError):
        return None
    return record


def _utf8(text: str, data: Any, **dump: Any) -> bytes:
    """`text` as UTF-8; text holding lone surrogates (a model's broken bytes) is written with JSON
    escapes instead, which read back to the same string (UTF-8 cannot carry them at all)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        newline = "\n" if text.endswith("\n") else ""
        return (json.dumps(data, ensure_ascii=True, default=str, **dump) + newline).encode("ascii")


__all__ = ["CONFIG", "ENGINE_LOG", "RESULTS", "SUMMARY", "RunDir", "RunDirError", "RunExists", "StorageError",
           "storage_error"]
