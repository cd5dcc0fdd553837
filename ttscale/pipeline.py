"""The run pipeline: one run from its `RunSpec` to its finished directory, and the only writer of a run's files.

    spec ─ carry_out ─ open_run (a new run's folder checked, or the stored run's config.json read once: a
             `SpecOver` spec, `--resume`'s flags, goes over its spec) ─ runner.prepare ─ the identity `--resume`
             checks ─ with writer: lock, config.json
             ─ engine (started here, shared, or Ray workers) ─ writer.started (config.json records it)
             ─ runner.solve_problems (strategy, verifiers, ledger per problem) ─ writer.record (durable, each)
             ─ writer.finish (summary.json) ─ Finished

`ttscale run` (ttscale.cli.run) and `ttscale.run` (ttscale.api) are thin callers of `carry_out`; a sweep's cells
(and so `compare` and `allocate`) run through `run_cell`, and a cell replayed from its source's samples is written
through `write_cell`. The run store's write side (`ttscale.runstore.writer`) is reached only through those few
calls; the runner solves problems and hands each record back, and never touches the run store. Order matters and is
kept here once: check everything before any engine starts; lock the run directory and write config.json before the
engine starts (a run killed while its engine starts can be resumed); start the engine with its start-up chatter in
the run's engine.log; run the unfinished problems; shut down what was started. A new run that finished nothing
removes what it created (never a file it found), so the same `out` works again; when the engine itself failed, its
log (the only place vLLM states the cause) is kept and named in an `EngineStartError`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ttscale.runstore.names import ENGINE_LOG
from ttscale.runstore.writer import RunExists

if TYPE_CHECKING:
    from ttscale.engine.base import AsyncEngine
    from ttscale.engine.logs import Terminal
    from ttscale.running.distributed import DistributedConfig
    from ttscale.running.distributed.pool import RayWorkerPool
    from ttscale.running.progress import Progress
    from ttscale.running.run_spec import RunSpec
    from ttscale.running.runner import Prepared, Solver
    from ttscale.running.session import SharedEngine
    from ttscale.running.signals import NoteStops
    from ttscale.runstore.storage import RunDir
    from ttscale.runstore.writer import RunWriter


@dataclass(frozen=True)
class Finished:
    """A finished (or resumed) run: its directory and summary (`ttscale.Run` adds its records as a DataFrame)."""

    path: Path
    summary: dict[str, Any]


#: How a resumed run's spec is made from the stored run's (None: a new run's): `ttscale run --resume DIR` puts the
#: flags given over the stored settings. `carry_out` calls it with the spec its one read of config.json found.
SpecOver = Callable[["RunSpec | None"], "RunSpec"]


def carry_out(
    spec: RunSpec | SpecOver,
    *,
    out: str | Path | None = None,
    engine: SharedEngine | AsyncEngine | None = None,
    resume: bool | None = None,
    distributed: DistributedConfig | None = None,
    progress: bool = False,
    verbose: bool = False,
    argv: list[str] | None = None,
    started: Callable[[Path], None] | None = None,
) -> Finished:
    """Run `spec` into `out` (None: a new folder, `default_out`) and return the run (see the module doc).

    `spec`: the run's spec, or how to make it from the stored one (`SpecOver`: config.json is read once, here,
    and `out` must be given).
    `resume`: None = continue the run `out` holds, if it holds one (`ttscale.run`); False = a new run, refused where
    `out` holds one; True = continue the run `out` holds (`--resume`). A resumed run takes the parameters it was made
    with for those `spec` leaves unset, and must otherwise be the run stored (`check_resume`). Every check is made
    before any engine starts. Then the run on `engine` (as `session.drive` takes it), or on the Ray workers of
    `distributed`; `started(path)` is called first inside the running coroutine, on its loop, with the run's folder
    (the CLI installs its signal handlers there). `verbose`: the engine's output goes to this terminal instead of the
    run's engine.log. `argv`: the command config.json records (None: sys.argv).
    """
    from ttscale.running.run_spec import RunSpec
    from ttscale.running.runner import prepare
    from ttscale.running.session import drive
    from ttscale.runstore.names import CONFIG
    from ttscale.runstore.writer import open_run

    if distributed is not None and engine is not None:
        raise ValueError("distributed= starts an engine on each Ray worker; engine= is for a run in this process")
    if out is None:
        if not isinstance(spec, RunSpec):
            raise ValueError("a spec made over the stored run's needs out= (the run to read it from)")
        out = default_out(spec)

    def prepared(stored: dict[str, Any] | None) -> Prepared:
        made = spec
        if not isinstance(made, RunSpec):  # config.json's one read is `stored`
            where = Path(str(out)) / CONFIG
            made = made(None if stored is None else RunSpec.from_stored(stored.get("spec") or {}, where=where))
        if distributed is not None:
            _check_distributed(made)
        if stored is not None:  # a resumed run: its stored parameters under those given, never today's task defaults
            made = _with_stored_params(made, stored)
        return prepare(made, task_defaults=stored is None)

    writer = open_run(out, resume=resume, prepare=prepared, argv=argv, engine_log=not verbose and engine is None)

    async def work(on: AsyncEngine | None) -> dict[str, Any]:
        if started is not None:
            started(writer.path)
        return await _launch(writer, engine=on, distributed=distributed, progress=progress)

    return Finished(path=writer.path, summary=drive(engine, work))


def default_out(spec: RunSpec) -> Path:
    """Where a new run goes when no folder is given: runs/<strategy>-<task>-<budget>-<time>."""
    from ttscale.running.session import stamp

    task = spec.task.replace(":", "-").replace("/", "_")
    return Path("runs") / f"{spec.strategy}-{task}-{spec.budget}-{stamp()}"


def _check_distributed(spec: RunSpec) -> None:
    """Refuse what Ray workers cannot run (before anything starts)."""
    if spec.total_budget is not None:
        raise ValueError("a total budget needs one process (its pool ledger is in memory): drop distributed=")
    if spec.backend != "vllm":
        raise ValueError("distributed= starts vLLM engines; it does not apply to a served model (backend "
                         f"{spec.backend})")


def _with_stored_params(spec: RunSpec, config: dict[str, Any]) -> RunSpec:
    """`spec` with the parameters its stored run (`config`, its config.json) was made with (the task defaults of that
    day included) under the ones it gives, each under its field's own name (an alias given, `width`, replaces the
    stored `n`)."""
    from ttscale.kit.params import field_names, params_class
    from ttscale.strategies import STRATEGIES

    identity = config.get("identity")
    stored = identity.get("params") if isinstance(identity, dict) else None  # not a dict: check_resume says so
    name = STRATEGIES.canonical(spec.strategy, strict=False)
    if not isinstance(stored, dict) or name is None:  # an unknown strategy: `prepare` says so
        return spec
    cls = params_class(STRATEGIES.get(name))
    settable = {f.name for f in fields(cls) if f.init and not f.name.startswith("_")}  # not derived ones (a digest)
    given = field_names(cls, spec.params)
    return replace(spec, params={**{k: v for k, v in stored.items() if k in settable}, **given})


async def _launch(writer: RunWriter[Prepared], *, engine: AsyncEngine | None, distributed: DistributedConfig | None,
                  progress: bool) -> dict[str, Any]:
    """Run `writer.prepared` with `writer` held open throughout, and return its summary.

    `engine`: a started engine to use (it must run on this loop and is left running); None = start one here
    (or the Ray workers of `distributed`) and close it afterwards, its output in `writer.engine_log`.
    """
    from ttscale.engine.base import environ_defaults
    from ttscale.engine.logs import capture_output
    from ttscale.running.launch import engine_failure, keep_engine_log, start_error
    from ttscale.running.signals import Interrupted, NoteStops

    with writer:  # a new run that finished nothing is removed on the way out of a failure (see RunWriter)
        stops = NoteStops()
        try:
            with environ_defaults({"VLLM_LOGGING_LEVEL": "INFO"}), capture_output(writer.engine_log) as terminal, stops:
                return await _serve(writer, engine=engine, distributed=distributed, progress=progress,
                                    terminal=terminal, stops=stops)
        except BaseException as exc:
            # A failure once a stop signal arrived is that stop: Ctrl-C (or a scheduler's signal to the whole
            # job) also ends vLLM's engine process, and a start then fails with "engine core initialization failed".
            stopped = stops.name is not None and not isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
            # An engine that failed a new run: its log (the only place vLLM states the cause) outlives the run.
            failed = not writer.kept and engine_failure(exc) and stops.name is None
            kept = keep_engine_log(writer.path / ENGINE_LOG) if failed else None
            if stopped:
                raise Interrupted(str(stops.name)) from None
            if kept is None:
                raise
            raise start_error(exc, kept) from exc


async def _serve(writer: RunWriter[Prepared], *, engine: AsyncEngine | None, distributed: DistributedConfig | None,
                 progress: bool, terminal: Terminal, stops: NoteStops) -> dict[str, Any]:
    """Start the engine (or the Ray workers) unless one is given, run the problems, close what was started."""
    from ttscale.engine import start_engine
    from ttscale.engine.cpu import busy_note

    if not writer.todo:
        # A resumed run with nothing left (it had ended, or a sweep asks again): its summary is written again from
        # its records, and no engine or worker is started for it (that took 35 s on 2 cores for the embedded model).
        return await run_problems(writer, _nothing_left, concurrency=1, progress=progress, progress_file=terminal.err)
    if distributed is None:  # one engine in this process: the one given, or one started here for the run
        if engine is None:
            if progress and terminal.err.isatty():  # for a person watching; a log or a pipe gets one line per error
                busy = busy_note(writer.prepared.spec.engine_config())
                if busy is not None:  # before the engine's start, which a busy machine slows as well
                    print(busy, file=terminal.err)
                log = writer.path / ENGINE_LOG
                print(f"starting the engine{f' (its log: {log})' if log.is_file() else ''} ...", file=terminal.err)
            with stops.starting():  # a stop signal ends the start at once (it blocks the loop: ttscale.running.signals)
                own = await start_engine(writer.prepared.spec.engine_config())
        try:
            writer.started((engine or own).describe())
            return await execute(engine or own, writer, progress=progress, progress_file=terminal.err)
        finally:
            if engine is None:
                await own.close()
    # On Ray workers, an engine each: config.json records their engines with the run's summary.
    return await on_workers(writer, distributed, progress=progress, progress_file=terminal.err)


async def _nothing_left(problem: Any) -> dict[str, Any]:
    raise AssertionError(f"problem {problem.id!r} is finished: nothing is left to solve")


def open_cell(prepared: Prepared, run_dir: RunDir, engine: dict[str, Any] | None, *,
              argv: list[str] | None = None) -> RunWriter[Prepared]:
    """A sweep cell's writer, as a run opens its folder: one holding results must be the same run (resumed), else
    it must be new; a new cell's config.json holds `engine`'s description."""
    from ttscale.runstore.writer import open_run

    return open_run(run_dir.path, resume=None, prepare=lambda stored: prepared, argv=argv, engine=engine)


async def run_cell(prepared: Prepared, run_dir: RunDir, engine: AsyncEngine, *, progress: bool = False) -> None:
    """Run a sweep cell's unfinished problems on `engine` (shared by the cells of its seed) into `run_dir`."""
    with open_cell(prepared, run_dir, engine.describe()) as writer:
        await execute(engine, writer, progress=progress)


def write_cell(prepared: Prepared, run_dir: RunDir, records: list[dict[str, Any]], *, engine: dict[str, Any],
               argv: list[str], done: bool, **extra: Any) -> None:
    """A sweep cell's records made without an engine (replayed from its source's samples: `ttscale.sweeps.replay`),
    written as a run writes them: each durable in turn (a full disk keeps those before it), those of problems
    already finished left out; then, when the cell is `done`, its summary (with `extra`; else the sweep runs the
    rest into the folder, as a resume does)."""
    from ttscale.verifiers import cross_check

    with open_cell(prepared, run_dir, engine, argv=argv) as writer:
        left = {p.id for p in writer.todo}
        for record in records:
            if record["id"] in left:
                writer.append(record)
        if done:
            writer.finish(wall_seconds=0.0, cross_check=cross_check, resumed=False, **extra)


async def execute(engine: AsyncEngine, writer: RunWriter[Prepared], *, progress: bool = True,
                  progress_file: IO[str] | None = None) -> dict[str, Any]:
    """Run every unfinished problem of `writer.prepared` on `engine` (in this process), append each record as it
    finishes, and write summary.json; `writer` is held open by the caller."""
    from ttscale.running.runner import engine_solver

    solver, on_progress = engine_solver(writer.prepared, engine)
    return await run_problems(writer, solver, concurrency=writer.prepared.spec.concurrency, progress=progress,
                              progress_file=progress_file, on_progress=on_progress)


async def on_workers(writer: RunWriter[Prepared], config: DistributedConfig, *, progress: bool = True,
                     progress_file: IO[str] | None = None) -> dict[str, Any]:
    """Run every unfinished problem on a pool of Ray workers (one engine each), append the records, and write
    config.json's engines (the workers') and summary.json; `writer` is held open by the caller."""
    from ttscale.running.distributed.pool import RayWorkerPool

    async with RayWorkerPool(prepared=writer.prepared, config=config) as pool:
        return await run_problems(writer, pool.solve, concurrency=pool.capacity, progress=progress,
                                  progress_file=progress_file, workers=pool)


async def run_problems(
    writer: RunWriter[Prepared],
    solver: Solver,
    *,
    concurrency: int,
    progress: bool = True,
    progress_file: IO[str] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    workers: RayWorkerPool | None = None,
) -> dict[str, Any]:
    """Solve the problems `writer.prepared` has left with `solver` (`runner.solve_problems`), at most `concurrency`
    at once; this process alone appends their records (`writer.record`: each durable before its problem counts as
    done), then writes summary.json and returns it (with the Ray `workers`' stats, their engines recorded in
    config.json). `writer` is held open by the caller."""
    from ttscale.budget import Ledger
    from ttscale.kit.stages import StageStore
    from ttscale.running.runner import solve_problems
    from ttscale.verifiers import cross_check  # here, not at import: the summary is the only reader

    prepared = writer.prepared
    if prepared.total is not None:
        # One pool for the problems this call runs; a resumed run's finished problems keep their spend counted,
        # and so do attempts a server fault cut short: their tokens were generated, and the total is never passed.
        prepared.pool = Ledger(prepared.total, meter=prepared.meters.budget)
        prepared.pool.spent = writer.spent
        prepared.pool.extra["problems"] = len(writer.todo)  # what an allocator (strategy adaptive) plans for
    prepared.stages = StageStore(writer.stages)
    started = time.perf_counter()
    try:
        faults = await solve_problems(prepared, writer.todo, solver, keep=writer.record, concurrency=concurrency,
                                      progress=progress, progress_file=progress_file, on_progress=on_progress)
    finally:
        await writer.flush()  # records handed over are written before the directory closes
    summary = writer.finish(wall_seconds=time.perf_counter() - started, cross_check=cross_check, faults=faults,
                            engine=None if workers is None else {"workers": workers.engines})
    if workers is not None:
        summary["workers"] = workers.stats()  # returned, not stored
    return summary


__all__ = ["Finished", "RunExists", "SpecOver", "carry_out", "execute", "open_cell", "run_cell", "run_problems",
           "write_cell"]
