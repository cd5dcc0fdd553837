"""The run pipeline: one run from its `RunSpec` to its finished directory, and the only writer of a run's files.

    spec ─ carry_out ─┬─ the directory checked (a new run, or the one to resume) ─ runner.prepare
                      └─ run store opened once (lock) ─ config.json ─ engine (started here, shared, or Ray workers)
                           ─ runner.solve_problems (strategy, verifiers, ledger per problem) ─ records appended
                           ─ summary.json ─ Finished

`ttscale run` (ttscale.cli.run) and `ttscale.run` (ttscale.api) are thin callers of `carry_out`; a sweep's cells
(and so `compare` and `allocate`) run through `run_cell`. The runner solves problems and hands each record back;
it never touches the run store. Order matters and is kept here once: lock the run directory; write config.json
before the engine starts (a run killed while its engine starts can be resumed); start the engine with its
start-up chatter in the run's engine.log; run the unfinished problems; shut down what was started. A new run that
finished nothing removes what it created (never a file it found), so the same `out` works again; when the engine
itself failed, its log (the only place vLLM states the cause) is kept and named in an `EngineStartError`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ttscale.runstore.storage import RunDirError

if TYPE_CHECKING:
    from ttscale.engine.base import AsyncEngine
    from ttscale.engine.logs import Terminal
    from ttscale.running.distributed import DistributedConfig
    from ttscale.running.progress import Progress
    from ttscale.running.run_spec import RunSpec
    from ttscale.running.runner import Prepared, Solver
    from ttscale.running.session import SharedEngine
    from ttscale.running.signals import NoteStops
    from ttscale.runstore.storage import RunDir


@dataclass(frozen=True)
class Finished:
    """A finished (or resumed) run: its directory and summary (`ttscale.Run` adds its records as a DataFrame)."""

    path: Path
    summary: dict[str, Any]


class RunExists(RunDirError):
    """A new run was asked for (`resume=False`) in a directory that holds one."""


def stored_spec(folder: str | Path) -> RunSpec:
    """The spec the run in `folder` was made with (config.json), for `--resume` to put the flags given on."""
    from ttscale.running.run_spec import RunSpec
    from ttscale.runstore.storage import CONFIG, RunDir

    stored = RunDir(folder)
    return RunSpec.from_stored(stored.read_config().get("spec") or {}, where=stored.path / CONFIG)


def carry_out(
    spec: RunSpec,
    *,
    out: str | Path | None = None,
    engine: SharedEngine | AsyncEngine | None = None,
    resume: bool | None = None,
    distributed: DistributedConfig | None = None,
    progress: bool = False,
    verbose: bool = False,
    argv: list[str] | None = None,
    started: Callable[[], None] | None = None,
) -> Finished:
    """Run `spec` into `out` (None: `default_out`) and return the run (see the module doc).

    `resume`: None = continue the run `out` holds, if it holds one (`ttscale.run`); False = a new run, refused where
    `out` holds one; True = continue the run `out` holds (`--resume`). A resumed run takes the parameters it was made
    with for those `spec` leaves unset, and must otherwise be the run stored (`check_resume`). Every check is made
    before any engine starts. Then the run on `engine` (as `session.drive` takes it), or on the Ray workers of
    `distributed`; `started()` is called first inside the running coroutine, on its loop (the CLI installs its signal
    handlers there). `verbose`: the engine's output goes to this terminal instead of the run's engine.log. `argv`:
    the command config.json records (None: sys.argv).
    """
    from ttscale.running.runner import prepare
    from ttscale.running.session import drive
    from ttscale.runstore.run_config import check_resume, default_out
    from ttscale.runstore.storage import RunDir

    if distributed is not None:
        if engine is not None:
            raise ValueError("distributed= starts an engine on each Ray worker; engine= is for a run in this process")
        if spec.total_budget is not None:
            raise ValueError("a total budget needs one process (its pool ledger is in memory): drop distributed=")
        if spec.backend != "vllm":
            raise ValueError("distributed= starts vLLM engines; it does not apply to a served model (backend "
                             f"{spec.backend})")
    run_dir = RunDir(out if out is not None else default_out(spec))
    resuming = run_dir.has_results() if resume is None else bool(resume)
    stored = run_dir.read_config() if resuming else None  # a folder that holds no run is refused here
    if stored is not None:
        spec = _with_stored_params(spec, stored)
    elif run_dir.has_results():
        raise RunExists(f"{str(run_dir.path)!r} already holds a run: continue it with --resume, or pick another --out")
    else:  # never a run mixed into someone's files (a failed start would then clean up among them)
        run_dir.check_new()
    prepared = prepare(spec, task_defaults=not resuming)  # a resumed run never takes today's task defaults
    if stored is not None:
        check_resume(run_dir, prepared, config=stored)
    recorded = bool(((stored or {}).get("environment") or {}).get("engine"))  # a new run's engine: once started

    async def work(on: AsyncEngine | None) -> dict[str, Any]:
        if started is not None:
            started()
        return await _launch(prepared, run_dir, resuming=resuming, recorded=recorded, engine=on,
                             distributed=distributed, progress=progress, log=not verbose, argv=argv)

    return Finished(path=run_dir.path, summary=drive(engine, work))


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


async def _launch(prepared: Prepared, run_dir: RunDir, *, resuming: bool, recorded: bool, engine: AsyncEngine | None,
                  distributed: DistributedConfig | None, progress: bool, log: bool,
                  argv: list[str] | None) -> dict[str, Any]:
    """Run `prepared` into `run_dir`, held open for writing throughout, and return its summary.

    `engine`: a started engine to use (it must run on this loop and is left running); None = start one here
    (or the Ray workers of `distributed`) and close it afterwards. `log`: the engine's output goes to the run's
    engine.log (False: to this terminal). `argv`: the command stored in config.json (default sys.argv).
    `recorded`: config.json already describes the run's engine (a resumed run's), which is then left as it is.
    """
    from ttscale.engine.base import environ_defaults
    from ttscale.engine.logs import capture_output
    from ttscale.running.launch import engine_failure, keep_engine_log, start_error
    from ttscale.running.signals import Interrupted, NoteStops
    from ttscale.runstore.run_config import write_config
    from ttscale.runstore.storage import ENGINE_LOG

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
                                    terminal=terminal, stops=stops, unrecorded=not recorded)
        except BaseException as exc:
            # A failure once a stop signal arrived is that stop: Ctrl-C (or a scheduler's signal to the whole
            # job) also ends vLLM's engine process, and a start then fails with "engine core initialization failed".
            stopped = stops.name is not None and not isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
            if resuming or run_dir.records():
                if stopped:
                    raise Interrupted(str(stops.name)) from None
                raise
            failed = engine_failure(exc) and stops.name is None
            kept = keep_engine_log(run_dir.path / ENGINE_LOG) if failed else None
            run_dir.discard(remove_dir=created)
            if stopped:
                raise Interrupted(str(stops.name)) from None
            if kept is None:
                raise
            raise start_error(exc, kept) from exc


async def _serve(prepared: Prepared, run_dir: RunDir, *, engine: AsyncEngine | None,
                 distributed: DistributedConfig | None, progress: bool, terminal: Terminal,
                 stops: NoteStops, unrecorded: bool) -> dict[str, Any]:
    """Start the engine (or the Ray workers) unless one is given, run the problems, close what was started."""
    from ttscale.engine import start_engine
    from ttscale.runstore.run_config import record_engine
    from ttscale.runstore.storage import ENGINE_LOG

    if all(p.id in run_dir.finished_ids() for p in prepared.problems):
        # A resumed run with nothing left (it had ended, or a sweep asks again): its summary is written again from
        # its records, and no engine or worker is started for it (that took 35 s on 2 cores for the embedded model).
        return await run_problems(prepared, run_dir, _nothing_left, concurrency=1, progress=progress,
                                  progress_file=terminal.err)
    if distributed is not None:
        summary, engines = await on_workers(prepared, run_dir, distributed, progress=progress,
                                            progress_file=terminal.err)
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
    with stops.starting():  # a stop signal ends the start at once (it blocks the loop; see ttscale.running.signals)
        started = await start_engine(prepared.spec.engine_config())
    try:
        if unrecorded:
            record_engine(run_dir, started.describe())
        return await execute(prepared, started, run_dir, progress=progress, progress_file=terminal.err)
    finally:
        await started.close()


async def _nothing_left(problem: Any) -> dict[str, Any]:
    raise AssertionError(f"problem {problem.id!r} is finished: nothing is left to solve")


@contextmanager
def writing_cell(run_dir: RunDir, prepared: Prepared, engine: dict[str, Any] | None, *,
                 argv: list[str] | None = None) -> Iterator[None]:
    """A sweep cell's directory open for writing as a run opens it: one holding results must be the same run
    (resumed), else it must be new; config.json (with `engine`'s description) is written once."""
    from ttscale.runstore.run_config import check_resume, write_config
    from ttscale.runstore.storage import CONFIG

    if run_dir.has_results():
        check_resume(run_dir, prepared)
    else:
        run_dir.check_new()
    with run_dir.open_for_writing():
        if not (run_dir.path / CONFIG).is_file():
            write_config(run_dir, prepared, engine, argv=argv)
        yield


async def run_cell(prepared: Prepared, run_dir: RunDir, engine: AsyncEngine, *, progress: bool = False) -> None:
    """Run a sweep cell's unfinished problems on `engine` (shared by the cells of its seed) into `run_dir`."""
    with writing_cell(run_dir, prepared, engine.describe()):
        await execute(prepared, engine, run_dir, progress=progress)


async def execute(prepared: Prepared, engine: AsyncEngine, run_dir: RunDir, *, progress: bool = True,
                  progress_file: IO[str] | None = None) -> dict[str, Any]:
    """Run every unfinished problem on `engine` (in this process), append its record as it finishes, and write
    summary.json; `run_dir` is held open for writing by the caller."""
    from ttscale.running.runner import engine_solver

    solver, on_progress = engine_solver(prepared, engine)
    return await run_problems(prepared, run_dir, solver, concurrency=prepared.spec.concurrency, progress=progress,
                              progress_file=progress_file, on_progress=on_progress)


async def on_workers(prepared: Prepared, run_dir: RunDir, config: DistributedConfig, *, progress: bool = True,
                     progress_file: IO[str] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run every unfinished problem on a pool of Ray workers (one engine each), append the records and write
    summary.json; returns the summary and the workers' engine descriptions. `run_dir` is held open by the caller."""
    from ttscale.running.distributed.pool import RayWorkerPool

    async with RayWorkerPool(prepared=prepared, config=config) as pool:
        summary = await run_problems(prepared, run_dir, pool.solve, concurrency=pool.capacity, progress=progress,
                                     progress_file=progress_file)
        summary["workers"] = pool.stats()
        return summary, pool.engines


async def run_problems(
    prepared: Prepared,
    run_dir: RunDir,
    solver: Solver,
    *,
    concurrency: int,
    progress: bool = True,
    progress_file: IO[str] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> dict[str, Any]:
    """Solve the unfinished problems with `solver` (`runner.solve_problems`), at most `concurrency` at once; this
    process alone appends their records (a group commit: each durable before its problem counts as done), then
    writes summary.json and returns it. `run_dir` is held open for writing by the caller."""
    from ttscale.budget import Ledger
    from ttscale.kit.stages import StageStore
    from ttscale.running.runner import solve_problems
    from ttscale.runstore.storage import STAGES, GroupCommit

    finished = run_dir.finished_ids()
    todo = [p for p in prepared.problems if p.id not in finished]
    wanted = {p.id for p in prepared.problems}
    if prepared.total is not None:
        # One pool for the problems this call runs; a resumed run's finished problems keep their spend counted,
        # and so do attempts a server fault cut short: their tokens were generated, and the total is never passed.
        prepared.pool = Ledger(prepared.total, meter=prepared.meters.budget)
        prepared.pool.spent = _spent(run_dir.records() + run_dir.unfinished_attempts(), wanted)
        prepared.pool.extra["problems"] = len(todo)  # what an allocator (strategy adaptive) plans for
    if not (run_dir.path / STAGES).exists():
        run_dir.claim(STAGES)  # made by this run if a stage is computed: `discard` may remove it
    prepared.stages = StageStore(run_dir.path / STAGES)
    started = time.perf_counter()
    commit = GroupCommit(run_dir)
    try:
        faults = await solve_problems(prepared, todo, solver, keep=commit.append, concurrency=concurrency,
                                      progress=progress, progress_file=progress_file, on_progress=on_progress)
    finally:
        await commit.close()  # lines handed over are written before the directory closes
    return _write_summary(prepared, run_dir, resumed=len(todo) < len(prepared.problems), faults=faults,
                          wall_seconds=time.perf_counter() - started)


def _write_summary(prepared: Prepared, run_dir: RunDir, *, resumed: bool, faults: dict[str, str],
                   wall_seconds: float) -> dict[str, Any]:
    """summary.json from the run's records of `prepared`'s problems (written, and returned)."""
    from ttscale.runstore.storage import SUMMARY
    from ttscale.runstore.summary import summarize
    from ttscale.verifiers import cross_check  # here, not at import: the summary is the only reader

    wanted = {p.id for p in prepared.problems}
    records = [r for r in run_dir.records() if r.get("id") in wanted]
    done = {str(r.get("id")) for r in records}
    unfinished = {p.id: faults.get(p.id, "not run") for p in prepared.problems if p.id not in done}
    summary = summarize(records, budget=prepared.budget, wall_seconds=wall_seconds, unfinished=unfinished,
                        cross_check=cross_check)
    summary.update(strategy=prepared.strategy_name, task=prepared.spec.task, budget=str(prepared.budget),
                   resumed=resumed)
    if prepared.total is not None:
        summary.update(total_budget=str(prepared.total),
                       total_spent=_spent(records + run_dir.unfinished_attempts(), wanted))
    run_dir.write_json(SUMMARY, summary)
    return summary


def _spent(records: list[dict[str, Any]], wanted: set[str]) -> float:
    """What the records of the problems `wanted` spent (their ledgers' `spent`)."""
    return sum(float((r.get("ledger") or {}).get("spent", 0.0)) for r in records if r.get("id") in wanted)


__all__ = ["Finished", "RunExists", "carry_out", "execute", "run_cell", "run_problems", "stored_spec",
           "writing_cell"]
