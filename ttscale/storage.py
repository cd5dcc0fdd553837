"""A run directory: config.json, results.jsonl (one flushed line per finished problem), summary.json.

Crash safety: each result line is written whole, flushed and fsynced before the next problem
is reported done, so a `kill -9` loses at most the line being written. A torn last line is
cut off on resume. A lock file refuses a second process writing the same directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

CONFIG = "config.json"
RESULTS = "results.jsonl"
SUMMARY = "summary.json"
_LOCK = ".lock"


class RunDirError(ValueError):
    """A run directory that cannot be used as asked (held by another run, not a run, unreadable)."""


class RunDir:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock: IO[str] | None = None
        self._results: IO[str] | None = None

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
        try:
            self._repair_results()
            self._results = open(self.path / RESULTS, "a", encoding="utf-8")  # noqa: SIM115 - closed in finally
            yield self
        finally:
            if self._results:
                self._results.close()
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()

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
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=self.path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2, sort_keys=True, default=str)
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path / name)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def append(self, record: dict[str, Any]) -> None:
        """Append one result line and make it durable before returning."""
        if self._results is None:
            raise RuntimeError("RunDir.append outside open_for_writing()")
        self._results.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._results.flush()
        os.fsync(self._results.fileno())

    def records(self) -> list[dict[str, Any]]:
        """Finished problems, first record per id (a torn last line is ignored)."""
        seen: dict[str, dict[str, Any]] = {}
        for record in self._read_lines()[0]:
            seen.setdefault(str(record.get("id")), record)
        return list(seen.values())

    def finished_ids(self) -> set[str]:
        return {str(r.get("id")) for r in self.records()}

    # -- internals ------------------------------------------------------------------------------
    def _read_lines(self) -> tuple[list[dict[str, Any]], int]:
        """Parsed complete lines and the byte length they span (anything after is a torn write)."""
        path = self.path / RESULTS
        if not path.is_file():
            return [], 0
        records: list[dict[str, Any]] = []
        good = 0
        with open(path, "rb") as handle:
            for raw in handle:
                if not raw.endswith(b"\n"):
                    break  # torn: the process died inside this write
                try:
                    record = json.loads(raw)
                except ValueError:
                    break
                if not isinstance(record, dict):
                    break
                records.append(record)
                good += len(raw)
        return records, good

    def _repair_results(self) -> None:
        path = self.path / RESULTS
        if not path.is_file():
            return
        _, good = self._read_lines()
        if good < path.stat().st_size:
            with open(path, "r+b") as handle:
                handle.truncate(good)
