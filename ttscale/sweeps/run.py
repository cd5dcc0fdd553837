"""Running a sweep: its directory, each cell run, derived from its source, or read back when finished."""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, replace
from pathlib import Path

from ttscale.engine.base import AsyncEngine
from ttscale.pipeline import run_cell as run_into
from ttscale.routing.policy import candidate_key
from ttscale.running.runner import Prepared, prepare
from ttscale.runstore.names import folder_entries, refuse_folder
from ttscale.runstore.run_config import redact_argv
from ttscale.runstore.storage import CONFIG, ENGINE_LOG, SUMMARY, RunDir
from ttscale.schema import Problem
from ttscale.sweeps.grid import SWEEP, Cell, SweepSpec, cell_dir
from ttscale.sweeps.holdout import holdout_cells
from ttscale.sweeps.replay import derive_cell
from ttscale.version import __version__


def create_sweep(spec: SweepSpec, root: str | Path, *, command: list[str] | None = None,
                 what: str = "a ttscale sweep") -> None:
    """Start a new sweep directory (`what` it is for the messages: a comparison runs as a sweep); refuses one that
    already holds a sweep, a run, or anything else: a new sweep needs a new or empty folder."""
    path = Path(root)
    entries = [e for e in folder_entries(path, what=what) if not e.startswith(f".{SWEEP}.")]  # a write cut off
    if SWEEP in entries:
        raise ValueError(f"{str(path)!r} already holds a sweep: continue it with --resume, or pick another --out")
    if entries:  # a run (`compare RUN` would then read the sweep's cell), or someone's files
        refuse_folder(path, entries, what=what)
    made: dict[tuple[str, str, int, bool], Cell] = {}
    for cell in spec.cells() + holdout_cells(spec):  # every parameter checked before any engine starts
        prepared = prepare_cell(spec, cell, root)
        # Two cells whose runs are the same once prepared (`sc n=4` beside `self_consistency n=2|4`; `sc` beside
        # `sc n=8`, 8 its default or the task's suggestion) would spend the engine twice on one run, and count twice
        # in every table and fit made of the sweep.
        run = candidate_key(prepared.strategy_name, asdict(prepared.params))
        key = (run, cell.budget, cell.seed, cell.holdout)
        if key in made:
            raise ValueError(f"grid cells {_label(made[key])!r} and {_label(cell)!r} run the same ({run}, budget "
                             f"{cell.budget}, seed {cell.seed}): each cell must differ; drop one from the grid")
        made[key] = cell
    path.mkdir(parents=True, exist_ok=True)
    RunDir(path).write_json(SWEEP, {"spec": spec.to_dict(), "cells": [c.id for c in spec.cells()],
                                    "ttscale_version": __version__, "command": redact_argv(command or sys.argv),
                                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


def _label(cell: Cell) -> str:
    """A cell as its grid gives it: `strategy k=v ...`."""
    return candidate_key(cell.strategy, cell.params)


def prepare_cell(spec: SweepSpec, cell: Cell, root: str | Path) -> Prepared:
    """The cell's run, as `ttscale run` would prepare it: task defaults for a new cell; a cell that already
    has a config keeps the parameters stored with it (as `--resume` does), whatever the task suggests today."""
    run_dir = cell_dir(root, cell)
    stored = (run_dir.read_config().get("spec") or {}).get("params") if (run_dir.path / CONFIG).is_file() else None
    if isinstance(stored, dict):
        return prepare(replace(spec.run_spec(cell), params=stored), task_defaults=False)
    return prepare(spec.run_spec(cell), task_defaults=spec.task_defaults)


def _complete(run_dir: RunDir, problems: list[Problem]) -> bool:
    return (run_dir.path / SUMMARY).is_file() and {p.id for p in problems} <= run_dir.finished_ids()


async def run_sweep(spec: SweepSpec, root: str | Path, *, engine: AsyncEngine | None = None, progress: bool = True,
                    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
                    problems: int | None = None, verbose: bool = False) -> None:
    """Run (or finish) every cell. Each seed gets its own engine, started only if a cell needs it.

    An `engine` given by the caller is used for every seed as it is (tests, notebooks): the seed is then
    only the cell's label. An engine started here writes its output to the sweep's engine.log, as a run's does
    (`verbose`: to this terminal). `problems`: only the first that many of each cell's problems (a comparison
    that stops when decided grows its cells a batch at a time; their identity keeps the spec's limit, its cap).
    """
    cells = spec.cells()
    for seed in spec.seeds:
        own: AsyncEngine | None = None

        async def engine_for(s: int = seed) -> AsyncEngine:
            nonlocal own
            if engine is not None:
                return engine
            if own is None:
                from ttscale.running.launch import start_logged

                quiet = spec.server is None and not verbose  # a served model's start prints nothing here
                own = await start_logged(spec.server or replace(spec.engine, seed=s),
                                         log=Path(root) / ENGINE_LOG if quiet else None)
            return own

        try:
            for cell in (c for c in cells + holdout_cells(spec) if c.seed == seed):
                await run_cell(spec, root, cell, cells, engine_for, progress=progress, log=log, problems=problems)
        finally:
            if own is not None:
                from ttscale.engine.logs import capture_output

                # vLLM logs its shutdown too: into the same log as its start.
                with capture_output(Path(root) / ENGINE_LOG if spec.server is None and not verbose else None):
                    await own.close()


async def run_cell(spec: SweepSpec, root: str | Path, cell: Cell, cells: list[Cell],
                   engine_for: Callable[[], Awaitable[AsyncEngine]], *, progress: bool = False,
                   log: Callable[[str], None] = lambda line: None, problems: int | None = None) -> Path:
    """Finish one cell (its source first, when it is derived from one): read from the source's stored pool where
    the replay can, run on `engine_for()` where not, nothing when it is complete. Returns its directory.
    `problems`: only its first that many problems count (as `run_sweep`'s)."""
    prepared = prepare_cell(spec, cell, root)
    if problems is not None:
        prepared.problems = prepared.problems[:problems]
    run_dir = cell_dir(root, cell)
    if _complete(run_dir, prepared.problems):
        return run_dir.path
    if cell.source:
        await run_cell(spec, root, _source(cells, cell), cells, engine_for, progress=progress, log=log,
                       problems=problems)
    why = derive_cell(prepared, run_dir, cell, cell_dir(root, _source(cells, cell))) if cell.source \
        else "runs directly"
    if why is not None:
        if cell.source:
            log(f"sweep: {cell.id} cannot be derived ({why}); running it")
        log(f"sweep: running {cell.id}")
        await run_into(prepared, run_dir, await engine_for(), progress=progress)  # the run pipeline's cell path
    else:
        log(f"sweep: derived {cell.id} from {cell.source}")
    return run_dir.path


def _source(cells: list[Cell], cell: Cell) -> Cell:
    return next(c for c in cells if c.id == cell.source)

