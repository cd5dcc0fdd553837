"""`ttscale sweep`: strategies × hyper-parameters × budgets × seeds over a task, stored like runs, resumable.

A sweep directory holds `sweep.json` (the grid) and one run directory per cell under `cells/`
(config.json, results.jsonl, summary.json: the files of `ttscale run`), so every cell can be read,
resumed or reported like any run. `ttscale sweep --resume DIR` skips finished cells and resumes the rest.

Generate once, evaluate every budget. For the sample-pool strategies (best_of_n, self_consistency, and
genrm with a fixed number V of verifications) only the largest budget is run; each smaller budget b is
*derived* from the stored pool by replaying, on a real `Ledger` of budget b, the requests the strategy
would send (the same n, max_tokens and refill rounds, capped by the same rules) and handing each request
the next samples of the pool, then selecting as the strategy does. The derived record has the samples,
prediction and token counts of a run at b under one assumption: the samples of one prompt are i.i.d.
draws whose distribution depends neither on the request's n nor on other requests in flight (vLLM samples
the n sequences of a request independently), so the first k samples of the pool are distributed as a run's
k samples. A cell is derived only when the replay needs no sample the pool lacks, truncates nothing (a
lowered max_tokens would change the samples) and the scorer costs nothing (verifier tokens are not
replayable); otherwise it is run directly. GenRM (ttscale.routing.replay): the first S solutions and the first V
chains of each, with exact generated tokens; a grid over n and verifications runs only its largest (S, V)
at the largest budget and derives every other (S, V, budget) from it. Token budgets only: a FLOP budget
prices prompts and cache hits, which a replay does not know.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ttscale.budget import Budget
from ttscale.engine.base import Engine, EngineConfig
from ttscale.engine.openai import OpenAIConfig
from ttscale.params import field_names, params_class
from ttscale.routing.policy import candidate_key
from ttscale.routing.replay import (  # noqa: F401
    POOL_STRATEGIES,
    deepconf_derivable,
    derive_cell,
    derive_record,
    genrm_source,
    replay_pool,
    thinking_derivable,
)
from ttscale.runner import Prepared, RunSpec, check_resume, execute, prepare, write_config
from ttscale.schema import Problem
from ttscale.storage import CONFIG, SUMMARY, RunDir
from ttscale.strategies import STRATEGIES

SWEEP = "sweep.json"
#: Run seed of the held-out difficulty pool: requests are seeded by it, so it shares no sample with any candidate cell.
HOLDOUT_SEED = -1
_SAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


@dataclass(frozen=True, kw_only=True)
class GridEntry:
    """One strategy and the values of each hyper-parameter to sweep (the grid is their product)."""

    strategy: str
    """A registered strategy name (or alias)."""
    params: dict[str, list[str]] = field(default_factory=dict)
    """Parameter → its values; one value = fixed for this entry."""

    @classmethod
    def parse(cls, text: str) -> GridEntry:
        """`"self_consistency max_tokens=64 temperature=0.6|1.0"`: a strategy, then key=v1|v2 ..."""
        name, *items = text.split()
        given: list[tuple[str, list[str]]] = []
        for item in items:
            key, sep, values = item.partition("=")
            if not sep or not key or not values:
                raise ValueError(f"grid parameters look like key=value or key=v1|v2, got {item!r} in {text!r}")
            given.append((key, values.split("|")))
        if len({key for key, _ in given}) < len(given):
            raise ValueError(f"a parameter is given twice in {text!r}: give each once (v1|v2 for several values)")
        params = dict(given)
        if name in STRATEGIES:  # `rebase width=16` and `rebase n=16` are one cell, under the field's own name
            params = field_names(params_class(STRATEGIES.get(name)), params)
        return cls(strategy=name, params=params)

    def combos(self) -> list[dict[str, str]]:
        keys = sorted(self.params)
        return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(self.params[k] for k in keys))]


@dataclass(frozen=True, kw_only=True)
class Cell:
    """One point of the grid: a run directory under `cells/`."""

    strategy: str
    """Canonical strategy name."""
    params: dict[str, str]
    """Its hyper-parameters, as given."""
    budget: str
    """Canonical budget string (`1024`, `3e+14flop`)."""
    seed: int
    """Engine seed."""
    source: str | None = None
    """Id of the cell this one is derived from by subsampling; None = run directly."""
    holdout: bool = False
    """The held-out difficulty pool (routing.holdout), not a candidate: run on `seed`'s engine under HOLDOUT_SEED."""

    @property
    def id(self) -> str:
        slug = "-".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        digest = hashlib.sha1(json.dumps(self.params, sort_keys=True).encode()).hexdigest()[:6]
        name = _SAFE.sub("_", f"{self.strategy}-{slug}" if slug else self.strategy)[:80]
        name = f"holdout-{name}" if self.holdout else name
        return f"{name}-{digest}-b{self.budget}-s{self.seed}" if slug else f"{name}-b{self.budget}-s{self.seed}"

    @property
    def candidate(self) -> str:
        return candidate_key(self.strategy, self.params)


@dataclass(frozen=True, kw_only=True)
class SweepSpec:
    """Everything that determines a sweep's cells (stored in sweep.json)."""

    grid: tuple[GridEntry, ...]
    """The strategies and their hyper-parameter values."""
    budgets: tuple[str, ...]
    """Per-problem budgets (every cell of the grid at each)."""
    seeds: tuple[int, ...] = (0,)
    """Engine seeds: each is a replicate of the whole grid (one engine start each)."""
    task: str = "arithmetic"
    """A task spec, as for `ttscale run`."""
    task_options: dict[str, Any] = field(default_factory=dict)
    """Keyword options of the task factory."""
    limit: int | None = None
    """Only the first `limit` problems."""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """Engine settings (the seed is set per replicate)."""
    backend: str = "vllm"
    """`vllm`: an engine in this process per seed; `openai`: a served model (`server`), every request seeded."""
    server: OpenAIConfig | None = None
    """Backend `openai` only: the server, the served model's name and where its tokenizer is."""
    concurrency: int = 64
    """Problems in flight at once within a cell."""
    hardware: str = "B200"
    """Hardware profile pricing FLOPs in the records."""
    subsample: bool = True
    """Derive the smaller budgets of sample-pool strategies from the largest one's stored pool."""
    holdout: int = 0
    """Samples per problem of a held-out difficulty pool (probe + p̂₁, see ttscale.routing.holdout); 0 = none."""
    task_defaults: bool = True
    """Cells get the task's suggested parameters (`ttscale.params.task_defaults`); False for sweeps made before
    them (sweep.json without the key), so a resumed sweep's new cells run as its first ones did."""

    def __post_init__(self) -> None:
        if not self.grid:
            raise ValueError("grid must name at least one strategy")
        if self.backend not in ("vllm", "openai") or (self.backend == "openai") != (self.server is not None):
            raise ValueError(f"backend must be vllm, or openai with a server; got {self.backend!r} with "
                             f"{'a' if self.server else 'no'} server")
        if not self.budgets:
            raise ValueError("budgets must hold at least one budget")
        canonical = tuple(_canonical_budget(b) for b in self.budgets)
        if len(set(canonical)) != len(canonical):
            raise ValueError(f"budgets must be distinct, got {', '.join(self.budgets)}")
        object.__setattr__(self, "budgets", tuple(sorted(canonical, key=lambda b: Budget.parse(b).limit)))
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and at least one, got {list(self.seeds)}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be ≥ 1, got {self.limit}")
        if self.holdout < 0 or (self.holdout and HOLDOUT_SEED in self.seeds):
            raise ValueError(f"holdout must be ≥ 0 and seeds must not hold {HOLDOUT_SEED} (the held-out pool's), got "
                             f"holdout {self.holdout}, seeds {list(self.seeds)}")

    def cells(self) -> list[Cell]:
        """Every cell, sources before the cells derived from them."""
        out: list[Cell] = []
        for entry, seed in itertools.product(self.grid, self.seeds):
            name = STRATEGIES.canonical(entry.strategy)
            assert name is not None
            combos = entry.combos()
            # Cells that feed others first: a GenRM (S, V) is derived from the entry's largest S and V.
            for params in sorted(combos, key=lambda c: genrm_source(name, entry, c) != c):
                if self._derivable(name, entry):
                    top = Cell(strategy=name, params=genrm_source(name, entry, params), budget=self.budgets[-1],
                               seed=seed)
                    if top.params == params:
                        out.append(top)
                    out.extend(replace(top, params=params, budget=b, source=top.id) for b in self.budgets
                               if (params, b) != (top.params, top.budget))
                else:
                    out.extend(Cell(strategy=name, params=params, budget=b, seed=seed) for b in self.budgets)
        return out

    def run_spec(self, cell: Cell) -> RunSpec:
        return RunSpec(strategy=cell.strategy, budget=cell.budget, task=self.task, task_options=self.task_options,
                       params=dict(cell.params), limit=self.limit, seed=HOLDOUT_SEED if cell.holdout else cell.seed,
                       engine=replace(self.engine, seed=cell.seed), concurrency=self.concurrency,
                       hardware=self.hardware, backend=self.backend, server=self.server)

    def _derivable(self, strategy: str, entry: GridEntry) -> bool:
        if not self.subsample or any(Budget.parse(b).unit != "tokens" for b in self.budgets):
            return False
        if strategy == "genrm":  # every chain is stored: a smaller S, V or budget replays (or is refused)
            return len(self.budgets) > 1 or any(len(entry.params.get(k, ())) > 1 for k in ("n", "verifications"))
        if strategy == "budget_forcing":  # thinking budgets: chains that ended within a budget replay
            return thinking_derivable(entry)
        if strategy == "deepconf":  # offline: every η and score re-scores one stored pool
            return deepconf_derivable(entry, len(self.budgets))
        return strategy in POOL_STRATEGIES and len(self.budgets) > 1

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["grid"] = [asdict(e) for e in self.grid]
        return json.loads(json.dumps(data, default=str))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepSpec:
        values = dict(data)
        values["grid"] = tuple(GridEntry(**e) for e in values["grid"])
        values["budgets"], values["seeds"] = tuple(values["budgets"]), tuple(values["seeds"])
        values.setdefault("task_defaults", False)  # written before task defaults existed
        # Settings an older or newer EngineConfig does not know are dropped, as `ttscale run --resume` does.
        known = {f.name for f in fields(EngineConfig)}
        values["engine"] = EngineConfig(**{k: v for k, v in values.get("engine", {}).items() if k in known})
        if isinstance(values.get("server"), dict):
            server_known = {f.name for f in fields(OpenAIConfig)}
            values["server"] = OpenAIConfig(**{k: v for k, v in values["server"].items() if k in server_known})
        return cls(**values)


def _canonical_budget(text: str) -> str:
    budget = Budget.parse(text)
    return str(int(budget.limit)) if budget.unit == "tokens" else f"{budget.limit:g}{budget.unit}"


# -- the sweep directory --------------------------------------------------------------------------


def create_sweep(spec: SweepSpec, root: str | Path, *, command: list[str] | None = None) -> None:
    """Start a new sweep directory; refuses one that already holds a sweep."""
    from ttscale.routing.holdout import holdout_cells
    from ttscale.run_config import redact_argv
    from ttscale.version import __version__

    path = Path(root)
    if (path / SWEEP).exists():
        raise ValueError(f"{str(path)!r} already holds a sweep: continue it with --resume, or pick another --out")
    for cell in spec.cells() + holdout_cells(spec):  # every parameter checked before any engine starts
        prepare_cell(spec, cell, root)
    path.mkdir(parents=True, exist_ok=True)
    RunDir(path).write_json(SWEEP, {"spec": spec.to_dict(), "cells": [c.id for c in spec.cells()],
                                    "ttscale_version": __version__, "command": redact_argv(command or sys.argv),
                                    "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


def load_spec(root: str | Path) -> SweepSpec:
    path = Path(root) / SWEEP
    try:
        return SweepSpec.from_dict(json.loads(path.read_text(encoding="utf-8"))["spec"])
    except FileNotFoundError:
        raise ValueError(f"{str(root)!r} is not a ttscale sweep: no {SWEEP}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None


def cell_dir(root: str | Path, cell: Cell) -> RunDir:
    return RunDir(Path(root) / "cells" / cell.id)


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


async def run_sweep(spec: SweepSpec, root: str | Path, *, engine: Engine | None = None, progress: bool = True,
                    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr)) -> None:
    """Run (or finish) every cell. Each seed gets its own engine, started only if a cell needs it.

    An `engine` given by the caller is used for every seed as it is (tests, notebooks): the seed is then
    only the cell's label.
    """
    from ttscale.routing.holdout import holdout_cells
    cells = spec.cells()
    for seed in spec.seeds:
        own: Engine | None = None

        async def engine_for(s: int = seed) -> Engine:
            nonlocal own
            if engine is not None:
                return engine
            if own is None:
                from ttscale.engine import start_engine

                own = await start_engine(spec.server or replace(spec.engine, seed=s))
            return own

        try:
            for cell in (c for c in cells + holdout_cells(spec) if c.seed == seed):
                await run_cell(spec, root, cell, cells, engine_for, progress=progress, log=log)
        finally:
            if own is not None:
                await own.close()


async def run_cell(spec: SweepSpec, root: str | Path, cell: Cell, cells: list[Cell],
                   engine_for: Callable[[], Awaitable[Engine]], *, progress: bool = False,
                   log: Callable[[str], None] = lambda line: None) -> Path:
    """Finish one cell (its source first, when it is derived from one): read from the source's stored pool where
    the replay can, run on `engine_for()` where not, nothing when it is complete. Returns its directory."""
    prepared = prepare_cell(spec, cell, root)
    run_dir = cell_dir(root, cell)
    if _complete(run_dir, prepared.problems):
        return run_dir.path
    if cell.source:
        await run_cell(spec, root, _source(cells, cell), cells, engine_for, progress=progress, log=log)
    why = derive_cell(prepared, run_dir, cell, cell_dir(root, _source(cells, cell))) if cell.source \
        else "runs directly"
    if why is not None:
        if cell.source:
            log(f"sweep: {cell.id} cannot be derived ({why}); running it")
        log(f"sweep: running {cell.id}")
        await _run_cell(prepared, run_dir, await engine_for(), progress=progress)
    else:
        log(f"sweep: derived {cell.id} from {cell.source}")
    return run_dir.path


def _source(cells: list[Cell], cell: Cell) -> Cell:
    return next(c for c in cells if c.id == cell.source)


async def _run_cell(prepared: Prepared, run_dir: RunDir, engine: Engine, *, progress: bool) -> None:
    if run_dir.has_results():
        check_resume(run_dir, prepared)
    else:
        run_dir.check_new()
    with run_dir.open_for_writing():
        if not (run_dir.path / CONFIG).is_file():
            write_config(run_dir, prepared, engine.describe())
        await execute(prepared, engine, run_dir, progress=progress)
