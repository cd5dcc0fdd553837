"""Carry out a prepared run — the one path shared by `ttscale run` and `ttscale.run`.

Order matters and is kept here once: lock the run directory; write config.json before the engine starts (a run
killed while its engine starts can be resumed); start the engine (or use a shared one, or Ray workers) with its
start-up chatter in the run's engine.log; run the unfinished problems; shut down what was started. A new run that
finished nothing removes what it created (never a file it found), so the same `out` works again; when the engine
itself failed, its log (the only place vLLM states the cause) is kept and named in an `EngineStartError`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ttscale.engine.base import EngineFatalError, environ_defaults
from ttscale.logs import Terminal, capture_output
from ttscale.runstore.run_config import record_engine, write_config
from ttscale.runstore.storage import ENGINE_LOG, RunDir
from ttscale.signals import Interrupted, NoteStops

if TYPE_CHECKING:
    from ttscale.distributed import DistributedConfig
    from ttscale.engine import EngineClient
    from ttscale.runner import Prepared
    from ttscale.schema import Problem


class EngineStartError(RuntimeError):
    """The engine failed before any problem finished; the message names where its log was kept."""


async def launch(
    prepared: Prepared,
    run_dir: RunDir,
    *,
    resuming: bool,
    engine: EngineClient | None = None,
    distributed: DistributedConfig | None = None,
    progress: bool = False,
    log: bool = True,
    argv: list[str] | None = None,
) -> dict[str, Any]:
    """Run `prepared` into `run_dir` and return its summary (see the module doc).

    `engine`: a started engine to use (it must run on this loop and is left running); None = start one here
    (or the Ray workers of `distributed`) and close it afterwards. `log`: the engine's output goes to the run's
    engine.log (False: to this terminal). `argv`: the command stored in config.json (default sys.argv).
    """
    created = not run_dir.path.exists()
    with run_dir.open_for_writing():
        log_path = run_dir.path / ENGINE_LOG if log and engine is None else None
        stops = NoteStops()
        try:
            if not resuming:  # in the clean-up: a config cut off (a full disk) leaves no half-made run behind
                write_config(run_dir, prepared, argv=argv)
            if log_path is not None and not log_path.exists():
                run_dir.claim(ENGINE_LOG)
            with environ_defaults({"VLLM_LOGGING_LEVEL": "INFO"}), capture_output(log_path) as terminal, stops:
                return await _serve(prepared, run_dir, engine=engine, distributed=distributed, progress=progress,
                                    terminal=terminal, stops=stops)
        except BaseException as exc:
            # A failure once a stop signal arrived is that stop: Ctrl-C (or a scheduler's signal to the whole
            # job) also ends vLLM's engine process, and a start then fails with "engine core initialization failed".
            stopped = stops.name is not None and not isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
            if resuming or run_dir.records():
                if stopped:
                    raise Interrupted(str(stops.name)) from None
                raise
            kept = _keep_engine_log(run_dir) if _engine_failure(exc) and stops.name is None else None
            run_dir.discard(remove_dir=created)
            if stopped:
                raise Interrupted(str(stops.name)) from None
            if kept is None:
                raise
            raise EngineStartError(f"{' '.join(str(exc).split())[:400]} (the engine's log: {kept})") from exc


async def _serve(
    prepared: Prepared,
    run_dir: RunDir,
    *,
    engine: EngineClient | None,
    distributed: DistributedConfig | None,
    progress: bool,
    terminal: Terminal,
    stops: NoteStops,
) -> dict[str, Any]:
    """Start the engine (or the Ray workers) unless one is given, run the problems, close what was started."""
    from ttscale.engine import start_engine
    from ttscale.runner import execute, run_problems

    finished = run_dir.finished_ids()
    if all(p.id in finished for p in prepared.problems):
        # A resumed run with nothing left (it had ended, or a sweep asks again): its summary is written again from
        # its records, and no engine or worker is started for it (that took 35 s on 2 cores for the embedded model).
        async def nothing_left(problem: Problem) -> dict[str, Any]:
            raise AssertionError(f"problem {problem.id!r} is finished: nothing is left to solve")

        return await run_problems(prepared, run_dir, nothing_left, concurrency=1, progress=progress,
                                  progress_file=terminal.err)
    unrecorded = not (run_dir.read_config().get("environment") or {}).get("engine")
    if distributed is not None:
        from ttscale.distributed import run_distributed

        summary, engines = await run_distributed(
            prepared, run_dir, distributed, progress=progress, progress_file=terminal.err
        )
        if unrecorded:
            record_engine(run_dir, {"workers": engines})
        return summary
    if engine is not None:
        if unrecorded:
            record_engine(run_dir, engine.describe())
        return await execute(prepared, engine, run_dir, progress=progress, progress_file=terminal.err)
    if progress and terminal.err.isatty():  # for a person watching; a log or a pipe gets one line per error
        log = run_dir.path / ENGINE_LOG
        print(f"starting the engine{f' (its log: {log})' if log.is_file() else ''} ...", file=terminal.err)
    with stops.starting():  # a stop signal ends the start at once (it blocks the loop; see ttscale.signals)
        started = await start_engine(prepared.spec.engine_config())
    try:
        if unrecorded:
            record_engine(run_dir, started.describe())
        return await execute(prepared, started, run_dir, progress=progress, progress_file=terminal.err)
    finally:
        await started.close()


async def start_logged(config: Any, *, log: Path | None) -> EngineClient:
    """Start the engine `config` describes (`ttscale.engine.start_engine`) as a run starts its own: what vLLM, torch
    and the engine's processes print goes to `log`, appended (None: to this terminal, `--verbose`), and a start
    that fails raises EngineStartError naming the log. For the engines a sweep, a comparison, an allocation search
    or a shared `ttscale.Engine` start: their processes keep writing to `log` once started."""
    from ttscale.engine import start_engine

    with environ_defaults({"VLLM_LOGGING_LEVEL": "INFO"}), capture_output(log):
        try:
            return await start_engine(config)
        except Exception as exc:
            if log is None or not _engine_failure(exc):
                raise
            raise EngineStartError(f"{' '.join(str(exc).split())[:400]} (the engine's log: {log})") from exc


def _engine_failure(exc: BaseException) -> bool:
    """Whether `exc` came from the engine or its libraries rather than from ttscale's own checks or a signal."""
    from ttscale.distributed import DistributedError
    from ttscale.errors import UsageError

    ours = (ValueError, OSError, UsageError, EngineFatalError, DistributedError, asyncio.CancelledError)
    return isinstance(exc, Exception) and not isinstance(exc, ours)


def _keep_engine_log(run_dir: RunDir) -> Path | None:
    """Move a non-empty engine log of a discarded run to a temporary file; its new path."""
    log = run_dir.path / ENGINE_LOG
    try:
        if not log.is_file() or log.stat().st_size == 0:
            return None
        handle, name = tempfile.mkstemp(prefix="ttscale-engine-", suffix=".log")
        os.close(handle)
        shutil.move(str(log), name)
    except OSError:
        return None
    return Path(name)


__all__ = ["EngineStartError", "launch", "start_logged"]
