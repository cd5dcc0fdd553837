"""The run store's write side, as the run pipeline (its one writer) calls it: a run's values cross into the store
three times.

    writer = open_run(path, resume=..., prepare=...)
                              before anything starts (`RunDir.stored`, one call): a new run's folder must be absent,
                              empty or what a cut-off start left; a resumed run's config.json is read, once (today's
                              shape, whatever version wrote it), the caller prepares the run from it, and the run
                              prepared must be the run stored
    with writer:              the folder made and locked, a torn last line cut off, config.json written (a new run:
                              `run_config.new_config`'s content, stamped with its format by `RunDir.write_config`),
                              what is left to run read (`writer.todo`, `writer.spent`); a new run that finished
                              nothing removes what it created on the way out, never a file it found
        writer.started(info)  config.json records the engine that started (once; through `RunDir.write_config` too)
        await writer.record(record)   (handed to the runner) one problem's record, durable before it counts as done
        writer.finish(...)    summary.json, from the run's records

What a run file needs (regular files only, the lock, whole lines, atomic writes, format versions) happens inside
these calls, each entering `ttscale.runstore.storage` (`RunDir`) once: `runfiles`, `runformat`, `run_config` (what
config.json holds) and `summary` are their parts; records handed over while one is made durable share its fsync
(`GroupCommit`, here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, TypeVar

from ttscale.runstore.names import ENGINE_LOG, STAGES, SUMMARY
from ttscale.runstore.run_config import Prepared, check_resume, new_config
from ttscale.runstore.storage import RunDir, RunExists
from ttscale.runstore.summary import CrossCheck, spent, summarize

P = TypeVar("P", bound=Prepared)
"""The prepared run (`ttscale.running.runner.Prepared`): the writer hands back what `prepare` made, as it is."""


def open_run(path: str | Path, *, resume: bool | None, prepare: Callable[[dict[str, Any] | None], P],
             argv: list[str] | None = None, engine: dict[str, Any] | None = None,
             engine_log: bool = False) -> RunWriter[P]:
    """The writer of a run in the folder `path`, checked and not yet entered (see the module doc).

    `resume`: None = continue the run the folder holds, if it holds one; False = a new run, refused (`RunExists`)
    where it holds one; True = continue the run it holds (refused in one line where it holds none). `prepare`: the
    run prepared from the resumed run's config.json (None for a new run); a resumed run must be the run stored
    (`check_resume`). Entering the writer writes a new run's config.json, with `engine`'s description when known
    and `argv` as its command (None: sys.argv). `engine_log`: the engine's output goes to the run's engine.log
    (`writer.engine_log`), which a discarded run removes.
    """
    run_dir = RunDir(path)
    stored = run_dir.stored(resume=resume)  # config.json's one read (a resumed run's)
    prepared = prepare(stored)
    if stored is not None:
        check_resume(run_dir, prepared, config=stored)
    return RunWriter(run_dir, prepared, stored=stored, argv=argv, engine=engine, engine_log=engine_log)


class RunWriter(Generic[P]):
    """A run's folder held open for writing (a context manager): its records, engine and summary."""

    def __init__(self, run_dir: RunDir, prepared: P, *, stored: dict[str, Any] | None,
                 argv: list[str] | None = None, engine: dict[str, Any] | None = None,
                 engine_log: bool = False) -> None:
        """`stored`: the resumed run's config.json (None: a new run, whose config.json entering writes)."""
        self.path = run_dir.path
        self.prepared = prepared
        """The run, as `open_run`'s `prepare` made it."""
        self.new = stored is None
        """A new run (not a resumed one): one that finished nothing is removed on a failure."""
        self.engine_log: Path | None = run_dir.path / ENGINE_LOG if engine_log else None
        """Where the engine's output goes (None: this terminal, or no engine started here)."""
        self.stages = run_dir.path / STAGES
        """The run's shared stages (`ttscale.kit.stages`)."""
        self.todo: list[Any] = []
        """The run's problems that have no record yet (read on entering)."""
        self.spent = 0.0
        """What the run's finished problems, and its attempts a server fault cut short, spent (read on entering)."""
        self._dir = run_dir
        self._config = stored
        self._recorded = engine is not None or bool(((stored or {}).get("environment") or {}).get("engine"))
        self._argv = argv
        self._engine = engine
        self._held = ExitStack()
        self._made = False
        self._commit: GroupCommit | None = None
        self._earlier_wall = 0.0  # read on entering

    def __enter__(self) -> RunWriter[P]:
        made = not self.path.exists()
        self._held.enter_context(self._dir.open_for_writing())
        try:
            if self.new:  # before any engine starts: a run killed while its engine starts can be resumed
                self._config = new_config(self.prepared, self._engine, argv=self._argv)
                self._dir.write_config(self._config)
            for name, path in ((ENGINE_LOG, self.engine_log), (STAGES, self.stages)):
                if path is not None and not path.exists():
                    self._dir.claim(name)  # made by this run, if at all: a discarded run removes it
            # A resumed run's wall time is the sum of its parts: the earlier ones' as their summary recorded it.
            self._earlier_wall = 0.0 if self.new else self._dir.stored_wall_seconds()
            records, cut_short = self._results()
            done = {str(r.get("id")) for r in records}
            self.todo = [p for p in self.prepared.problems if p.id not in done]
            self.spent = spent(records + cut_short)
        except BaseException:
            self._close(failed=True, made=made)
            raise
        self._made = made
        self._commit = GroupCommit(self._dir)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._close(failed=kind is not None, made=self._made)

    @property
    def kept(self) -> bool:
        """Whether the run is kept on a failure: a resumed run, or one that finished a problem."""
        return not self.new or bool(self._dir.records())

    def started(self, description: dict[str, Any]) -> None:
        """config.json records the engine the run started (its versions and settings), unless it records one
        already (a resumed run's, or one written with its engine)."""
        if not self._recorded:
            # config.json as this run wrote or read it (today's shape; an older version's is written back in
            # today's version: it was read in it), not read again.
            config = self._config if self._config is not None else {}
            config.setdefault("environment", {})["engine"] = description
            self._dir.write_config(config)
            self._recorded = True

    async def record(self, record: dict[str, Any]) -> None:
        """Append one problem's record; it is durable (fsynced) when this returns. Records handed over while an
        fsync runs share the next one, written in a thread (`GroupCommit`)."""
        if self._commit is None:
            raise RuntimeError("RunWriter.record outside `with writer:`")
        await self._commit.append(record)

    def append(self, record: dict[str, Any]) -> None:
        """Append one record from synchronous code (a replayed sweep cell's), durable when this returns."""
        self._dir.append(record)

    async def flush(self) -> None:
        """Wait until every record handed over is written (or has failed)."""
        if self._commit is not None:
            await self._commit.close()

    def finish(self, *, wall_seconds: float, cross_check: CrossCheck, faults: dict[str, str] | None = None,
               resumed: bool | None = None, engine: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
        """Write summary.json from the run's records of its problems, and return it; its wall time adds this part's
        `wall_seconds` to what the run's earlier parts recorded. `faults`: the problems a passing
        server fault left unfinished, and the fault (others without a record are "not run"); `resumed` (None: whether
        the run held finished problems when entered); `engine`: the engines config.json records now (Ray workers',
        known once they ran; see `started`); `extra`: more keys (a replayed cell's `derived_from`)."""
        if engine is not None:
            self.started(engine)
        prepared = self.prepared
        records, cut_short = self._results()
        done = {str(r.get("id")) for r in records}
        unfinished = {p.id: (faults or {}).get(p.id, "not run") for p in prepared.problems if p.id not in done}
        summary = summarize(records, budget=prepared.budget, wall_seconds=self._earlier_wall + wall_seconds,
                            unfinished=unfinished,
                            cross_check=cross_check)
        summary.update(strategy=prepared.strategy_name, task=prepared.spec.task, budget=str(prepared.budget),
                       resumed=len(self.todo) < len(prepared.problems) if resumed is None else resumed, **extra)
        if prepared.total is not None:
            summary.update(total_budget=str(prepared.total), total_spent=spent(records + cut_short))
        self._dir.write_json(SUMMARY, summary)
        return summary

    def _results(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The records of the run's problems (first per id), and the attempts at them a server fault cut short."""
        wanted = {p.id for p in self.prepared.problems}
        records = [r for r in self._dir.records() if r.get("id") in wanted]
        return records, [r for r in self._dir.unfinished_attempts() if r.get("id") in wanted]

    def _close(self, *, failed: bool, made: bool) -> None:
        try:
            if failed and self.new and not self.kept:  # so that the same folder works again
                self._dir.discard(remove_dir=made)
        finally:
            self._held.close()


class GroupCommit:
    """Durable appends for many problems finishing at once: each `append` returns once its line is fsynced, but lines
    that finish while one fsync runs share the next, in a thread, so the event loop keeps feeding the engine (at GPU
    rates an fsync per problem on the loop was the harness's largest cost after the record's serialisation)."""

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


__all__ = ["GroupCommit", "RunExists", "RunWriter", "open_run"]
