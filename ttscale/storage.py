"""A run directory: config.json, results.jsonl (one flushed line per finished problem), summary.json.

Crash safety: each result line is written whole, flushed and fsynced before the next problem
is reported done, so a `kill -9` loses at most the line being written. A torn last line is
cut off on resume; a bad line anywhere else is someone else's edit and is refused, never cut.
A lock file refuses a second process writing the same directory. A write that fails (disk
full, permissions) is rolled back to the last whole line and raised as a one-line `StorageError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import jsonlines

CONFIG = "config.json"
RESULTS = "results.jsonl"
SUMMARY = "summary.json"
ENGINE_LOG = "engine.log"
"""What the engine and its libraries printed (start-up, warnings); `ttscale run --verbose` shows it instead."""
_LOCK = ".lock"


class RunDirError(ValueError):
    """A run directory that cannot be used as asked (held by another run, not a run, unreadable)."""


class StorageError(OSError):
    """Reading or writing a run file failed (disk full, permission denied, read-only file system)."""


def storage_error(exc: OSError, path: Path, doing: str) -> StorageError:
    """`exc` as one line that names the file and the reason."""
    reason = exc.strerror or type(exc).__name__
    return StorageError(exc.errno or 0, f"cannot {doing} {path}: {reason}")


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock: IO[str] | None = None
        self._results: IO[bytes] | None = None
        self._size = 0
        """Bytes of whole lines in results.jsonl: a failed append is cut back to it."""
        self._read = _ReadState()
        """What has been parsed of results.jsonl so far: later reads parse only what was appended since."""

    # -- ownership ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def open_for_writing(self) -> Iterator[RunDir]:
        """Hold the directory's lock for the duration of a run; refuse if another process holds it."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock = open(self.path / _LOCK, "a+")  # noqa: SIM115 - held for the whole run, closed below
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
                self._results = open(self.path / RESULTS, "ab")  # noqa: SIM115 - closed in finally
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
        """Remove the files of a run that finished no problem (never one that did)."""
        if self.records():
            raise RunDirError(f"{str(self.path)!r} holds finished problems; it is not discarded")
        for name in (RESULTS, CONFIG, SUMMARY, ENGINE_LOG, _LOCK):
            with contextlib.suppress(OSError):
                (self.path / name).unlink()
        if remove_dir:
            with contextlib.suppress(OSError):
                self.path.rmdir()  # only when empty

    # -- files ----------------------------------------------------------------------------------
    def has_results(self) -> bool:
        return (self.path / RESULTS).is_file() or (self.path / CONFIG).is_file()

    def read_config(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / CONFIG).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunDirError(f"{str(self.path)!r} is not a ttscale run: no {CONFIG}") from None
        except (OSError, ValueError) as exc:
            raise RunDirError(f"cannot read {self.path / CONFIG}: {exc}") from None
        if not isinstance(data, dict):
            raise RunDirError(f"{self.path / CONFIG} is not a JSON object")
        return data

    def write_json(self, name: str, data: dict[str, Any]) -> None:
        """Write atomically: a reader sees the old file or the new one, never half of one."""
        text = json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=self.path)
            with os.fdopen(fd, "wb") as handle:
                handle.write(_utf8(text, data, indent=2, sort_keys=True))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path / name)
        except OSError as exc:
            raise storage_error(exc, self.path / name, "write") from None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def append(self, record: dict[str, Any]) -> None:
        """Append one result line and make it durable before returning."""
        self.append_many([record])

    def append_many(self, records: list[dict[str, Any]]) -> None:
        """Append result lines and make them all durable with one fsync before returning (a group commit:
        see `GroupCommit`); on failure none of them is kept."""
        if self._results is None:
            raise RuntimeError("RunDir.append outside open_for_writing()")
        try:
            for record in records:
                try:
                    jsonlines.Writer(self._results, dumps=_dumps).write(record)
                except UnicodeEncodeError:  # lone surrogates (a model's broken bytes): JSON escapes read back the same
                    jsonlines.Writer(self._results, dumps=_dumps_ascii).write(record)
            self._results.flush()
            os.fsync(self._results.fileno())
        except OSError as exc:
            # Part of a line may have reached the file: cut it off, or the next append would glue
            # onto it and turn a good record into a bad middle line.
            with contextlib.suppress(OSError):
                os.ftruncate(self._results.fileno(), self._size)
                self._results.seek(self._size)
            raise storage_error(exc, self.path / RESULTS, "append to") from None
        self._size = self._results.tell()

    def records(self) -> list[dict[str, Any]]:
        """Finished problems, first record per id (a torn last line is ignored)."""
        self._read_lines()
        # Copies: the parsed lines are kept for the next read, and a caller may edit what it gets.
        return [dict(r) for r in self._read.first.values()]

    def torn_tail(self) -> bool:
        """Whether results.jsonl ends in a torn line (a write cut off, or still under way); `records` leaves it out."""
        good = self._read_lines()
        try:
            return (self.path / RESULTS).stat().st_size > good
        except FileNotFoundError:
            return False

    def finished_ids(self) -> set[str]:
        self._read_lines()
        return set(self._read.first)

    # -- internals ------------------------------------------------------------------------------
    def _read_lines(self) -> int:
        """Parse the whole lines into `self._read`; returns the bytes they span (a bad last line is a torn write).

        Incremental: the lines parsed by an earlier call are kept, and only bytes appended since are
        read, so a resume (and every summary after it) parses each line of a long run once. A file
        that shrank or was replaced (another inode) is read again from the start.
        """
        path = self.path / RESULTS
        try:
            stat = path.stat()
        except FileNotFoundError:
            self._read = _ReadState()
            return 0
        except OSError as exc:
            raise storage_error(exc, path, "read") from None
        state = self._read
        if (stat.st_dev, stat.st_ino) != state.file or stat.st_size < state.good:
            state = self._read = _ReadState(file=(stat.st_dev, stat.st_ino))
        if stat.st_size == state.good:
            return state.good
        bad_line = 0
        try:
            with open(path, "rb") as handle:
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
                    state.add(record, len(raw))
        except OSError as exc:
            raise storage_error(exc, path, "read") from None
        return state.good

    def _repair_results(self) -> None:
        path = self.path / RESULTS
        if not path.is_file():
            return
        good = self._read_lines()
        try:
            if good < path.stat().st_size:
                with open(path, "r+b") as handle:
                    handle.truncate(good)
        except OSError as exc:
            raise storage_error(exc, path, "repair") from None


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

    def add(self, record: dict[str, Any], size: int) -> None:
        self.first.setdefault(str(record.get("id")), record)
        self.good += size
        self.lines += 1


def _parse_line(raw: bytes) -> dict[str, Any] | None:
    """A whole record line, or None (torn: no newline, not JSON, not an object)."""
    if not raw.endswith(b"\n"):
        return None  # the process died inside this write
    try:
        record: dict[str, Any] = jsonlines.Reader((raw,)).read(type=dict)
    except (jsonlines.InvalidLineError, RecursionError):
        return None
    return record


#: How a results line is encoded: UTF-8 as written, anything else as text (paths, enums).
class GroupCommit:
    """Durable appends for many problems finishing at once: each `append` returns once its line is fsynced
    (the guarantee of `RunDir.append`), but the lines that finish while one fsync runs share the next one,
    and the fsync runs in a thread, so the event loop keeps feeding the engine meanwhile. At GPU rates an
    fsync per problem on the loop was the harness's largest cost after the record's serialisation."""

    def __init__(self, run_dir: RunDir) -> None:
        self._run_dir = run_dir
        self._pending: list[tuple[dict[str, Any], asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None
        self.commits = 0
        """fsyncs done (each for one or more lines)."""

    async def append(self, record: dict[str, Any]) -> None:
        done = asyncio.get_running_loop().create_future()
        self._pending.append((record, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._drain())
        # Shielded: a caller cancelled while waiting leaves its line to be written, never half of a group.
        await asyncio.shield(done)

    async def close(self) -> None:
        """Wait until every line handed over is written (or has failed)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    async def _drain(self) -> None:
        while self._pending:
            group, self._pending = self._pending, []
            try:
                await asyncio.to_thread(self._run_dir.append_many, [record for record, _ in group])
                self.commits += 1
            except Exception as exc:
                for _, done in group:
                    if not done.done():
                        done.set_exception(exc)
                continue
            for _, done in group:
                if not done.done():
                    done.set_result(None)


_dumps = functools.partial(json.dumps, ensure_ascii=False, default=str)
_dumps_ascii = functools.partial(json.dumps, ensure_ascii=True, default=str)


def _utf8(text: str, data: Any, **dump: Any) -> bytes:
    """`text` as UTF-8; text holding lone surrogates (a model's broken bytes) is written with JSON
    escapes instead, which read back to the same string (UTF-8 cannot carry them at all)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        newline = "\n" if text.endswith("\n") else ""
        return (json.dumps(data, ensure_ascii=True, default=str, **dump) + newline).encode("ascii")
