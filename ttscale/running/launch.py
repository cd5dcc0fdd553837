"""Starting an engine as a run starts its own: quiet, its output in a log, a failure named with that log.

`start_logged` is how a sweep, a comparison, an allocation search and a shared `ttscale.Engine` start theirs;
`ttscale.pipeline`, which carries out a run, uses `engine_failure`, `keep_engine_log` and `start_error` when a new
run's engine fails before any problem finished (the run's files are discarded, its engine log kept).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ttscale.engine.base import EngineFatalError, environ_defaults
from ttscale.engine.logs import capture_output

if TYPE_CHECKING:
    from ttscale.engine import AsyncEngine


class EngineStartError(RuntimeError):
    """The engine failed before any problem finished; the message names where its log was kept."""


async def start_logged(config: Any, *, log: Path | None) -> AsyncEngine:
    """Start the engine `config` describes (`ttscale.engine.start_engine`) as a run starts its own: what vLLM, torch
    and the engine's processes print goes to `log`, appended (None: to this terminal, `--verbose`), and a start
    that fails raises EngineStartError naming the log. For the engines a sweep, a comparison, an allocation search
    or a shared `ttscale.Engine` start: their processes keep writing to `log` once started."""
    from ttscale.engine import start_engine
    from ttscale.engine.cpu import busy_note

    busy = busy_note(config) if sys.stderr.isatty() else None  # for a person watching, as the progress bar is
    if busy is not None:
        print(busy, file=sys.stderr)
    with environ_defaults({"VLLM_LOGGING_LEVEL": "INFO"}), capture_output(log):
        try:
            started = await start_engine(config)
        except Exception as exc:
            if log is None or not engine_failure(exc):
                raise
            raise start_error(exc, log) from exc
    if log is not None:
        engine_logs_to(log)
    return started


_LOGS: dict[Path, IO[str]] = {}
"""The engine logs the engine's loggers in this process write to (one handle each, kept open while it runs)."""


def engine_logs_to(log: Path) -> None:
    """vLLM's own logger in this process (its requests' warnings, such as a deprecation) writes to the terminal
    once the quiet start is over: its handler holds the stream stdout was when vLLM was imported. Point it at
    `log`, where the engine's processes write, so that `compare`, `sweep`, `allocate` and a shared `ttscale.Engine`
    print nothing of vLLM's without --verbose."""
    terminal = {sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__}
    for handler in logging.getLogger("vllm").handlers:
        # vLLM's own (its logging config names it "vllm"), not a handler the user added.
        if isinstance(handler, logging.StreamHandler) and handler.get_name() == "vllm" and handler.stream in terminal:
            if log not in _LOGS:
                _LOGS[log] = open(log, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
            handler.setStream(_LOGS[log])


def start_error(exc: BaseException, log: Path) -> EngineStartError:
    """The one-line error of an engine that failed with `exc`, naming where its log is."""
    return EngineStartError(f"{' '.join(str(exc).split())[:400]} (the engine's log: {log})")


def engine_failure(exc: BaseException) -> bool:
    """Whether `exc` came from the engine or its libraries rather than from ttscale's own checks or a signal."""
    from ttscale.errors import UsageError
    from ttscale.running.distributed import DistributedError

    ours = (ValueError, OSError, UsageError, EngineFatalError, DistributedError, asyncio.CancelledError)
    return isinstance(exc, Exception) and not isinstance(exc, ours)


def keep_engine_log(log: Path) -> Path | None:
    """Move a non-empty engine log (of a run about to be discarded) to a temporary file; its new path."""
    try:
        if not log.is_file() or log.stat().st_size == 0:
            return None
        handle, name = tempfile.mkstemp(prefix="ttscale-engine-", suffix=".log")
        os.close(handle)
        shutil.move(str(log), name)
    except OSError:
        return None
    return Path(name)


__all__ = ["EngineStartError", "engine_failure", "engine_logs_to", "keep_engine_log", "start_error", "start_logged"]
