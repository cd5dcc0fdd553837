"""The runner: one strategy over many problems, all in flight at once on one engine.

Each problem is a coroutine with its own ledger; the engine batches whatever the coroutines
have awaited. Results stream to the run directory as problems finish, so an interrupted run
loses nothing and `resume` redoes only what was unfinished.
"""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ttscale.budget import Budget, BudgetError, CostMeter, Costing, Ledger
from ttscale.context import Context
from ttscale.engine.base import Engine, EngineConfig
from ttscale.params import params_class, parse_params
from ttscale.storage import CONFIG, SUMMARY, RunDir, RunDirError
from ttscale.summary import summarize
from ttscale.types import Answer, Problem, RunRecord


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """Everything that determines a run's results (stored in config.json, compared on resume)."""

    strategy: str
    """A registered strategy name (or alias)."""
    budget: str = "8k"
    """Per-problem budget, as `Budget.parse` reads it."""
    task: str = "arithmetic"
    """A task spec: `name` or `name:argument`."""
    task_options: dict[str, Any] = field(default_factory=dict)
    """Keyword options of the task factory (data_dir, field names, ...)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Strategy parameters (strings from the CLI or typed values)."""
    limit: int | None = None
    """Only the first `limit` problems of the task."""
    seed: int = 0
    """The engine's sampling seed."""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """The engine settings, model included."""
    concurrency: int = 64
    """Problems in flight at once (the engine batches their requests)."""
    hardware: str = "B200"
    """Hardware profile that prices FLOPs and eFLOPs (budgets in those units, and every run's record)."""

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be ≥ 1, got {self.limit}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be ≥ 1, got {self.concurrency}")


@dataclass
class Prepared:
    """A spec resolved into the objects that run it (validated before any engine starts)."""

    spec: RunSpec
    strategy_name: str
    strategy: Any
    params: Any
    budget: Budget
    task: Any
    problems: list[Problem]
    meters: Meters

    def ledger(self) -> Ledger:
        """A fresh ledger for one problem, metered in the budget's unit and priced in FLOPs and eFLOPs."""
        return Ledger(self.budget, meter=self.meters.budget, costing=self.meters.costing)

    def identity(self) -> dict[str, Any]:
        """The part of config.json that must match for `--resume`."""
        return {
            "strategy": self.strategy_name,
            "params": asdict(self.params),
            "budget": {"limit": self.budget.limit, "unit": self.budget.unit},
            "task": {"spec": self.spec.task, "options": self.spec.task_options, **self.task.config()},
            "limit": self.spec.limit,
            "seed": self.spec.seed,
            "hardware": self.spec.hardware,
            "engine": self.spec.engine.to_dict(),
        }


def prepare(spec: RunSpec) -> Prepared:
    """Resolve names and validate every input; raises ValueError/KeyError subclasses with one-line messages."""
    from ttscale import STRATEGIES
    from ttscale.evals.base import load_task
    from ttscale.models import resolve_model

    name = STRATEGIES.canonical(spec.strategy)
    assert name is not None
    fn = STRATEGIES.get(name)
    params = parse_params(params_class(fn), spec.params)
    budget = Budget.parse(spec.budget)
    task = load_task(spec.task, **spec.task_options)
    problems = task.problems()[: spec.limit]
    if not problems:
        raise ValueError(f"task {spec.task!r} has no problems")
    # A missing model fails here, before any engine or run directory exists.
    meters = build_meters(budget, resolve_model(spec.engine.model), hardware=spec.hardware)
    return Prepared(spec, name, fn, params, budget, task, problems, meters)


@dataclass
class Meters:
    budget: CostMeter | None
    """Meters the budget's unit; None = the unit's default (generated tokens)."""
    costing: Costing | None
    """Prices every request in FLOPs, bytes and eFLOPs; None when the model's shape is unknown."""


def build_meters(budget: Budget, model_path: str, *, hardware: str) -> Meters:
    """Meters from the served model's config.json (a local folder); FLOP budgets need one."""
    config_file = Path(model_path) / "config.json"
    if not config_file.is_file():
        if budget.unit != "tokens":
            raise BudgetError(
                f"a budget in {budget.unit} needs the model's shape: give --model a local folder with config.json"
            )
        return Meters(budget=None, costing=None)
    from ttscale.cost.meter import eflop_meter

    config = json.loads(config_file.read_text())
    meter = None if budget.unit == "tokens" else budget.meter(model_config=config, hardware=hardware)
    return Meters(budget=meter, costing=eflop_meter(model_config=config, hardware=hardware))


def check_resume(run_dir: RunDir, prepared: Prepared) -> None:
    """Refuse to resume a run whose stored identity differs from the one asked for."""
    stored = run_dir.read_config().get("identity")
    current = json.loads(json.dumps(prepared.identity(), default=str))
    if stored != current:
        diffs = [k for k in sorted(set(current) | set(stored or {})) if (stored or {}).get(k) != current.get(k)]
        detail = "; ".join(
            f"{k}: stored {json.dumps((stored or {}).get(k))} vs now {json.dumps(current.get(k))}" for k in diffs
        )
        raise RunDirError(f"cannot resume {str(run_dir.path)!r}: the run differs in {detail}")


async def execute(prepared: Prepared, engine: Engine, run_dir: RunDir, *, progress: bool = True) -> dict[str, Any]:
    """Run every unfinished problem, append its record as it finishes, and write summary.json."""
    spec = prepared.spec
    todo = [p for p in prepared.problems if p.id not in run_dir.finished_ids()]
    semaphore = asyncio.Semaphore(spec.concurrency)
    bar = _progress_bar(len(prepared.problems), len(prepared.problems) - len(todo), enabled=progress)
    started = time.perf_counter()

    async def one(problem: Problem) -> None:
        async with semaphore:
            record = await solve(prepared, engine, problem)
        run_dir.append(record.to_json())
        bar.update(1)

    try:
        await asyncio.gather(*(one(p) for p in todo))
    finally:
        bar.close()
    wanted = {p.id for p in prepared.problems}
    records = [r for r in run_dir.records() if r.get("id") in wanted]
    summary = summarize(records, budget=prepared.budget, wall_seconds=time.perf_counter() - started)
    summary.update(
        strategy=prepared.strategy_name,
        task=spec.task,
        budget=str(prepared.budget),
        resumed=len(todo) < len(prepared.problems),
    )
    run_dir.write_json(SUMMARY, summary)
    return summary


async def solve(prepared: Prepared, engine: Engine, problem: Problem) -> RunRecord:
    """One problem through the strategy, graded; a strategy error is recorded, never fatal to the run."""
    ledger = prepared.ledger()
    ctx = Context(problem=problem, task=prepared.task, engine=engine, ledger=ledger)
    started = time.perf_counter()
    error = None
    try:
        answer: Answer = await prepared.strategy(problem, ctx, prepared.params)
    except Exception as exc:  # one bad problem must not sink a long run
        answer, error = Answer(prediction=None), f"{type(exc).__name__}: {exc}"
    # Grading may meet hostile model output; keep it off the event loop so the engine keeps streaming.
    correct = await asyncio.to_thread(prepared.task.grade, answer.prediction, problem)
    ledger.extra["wall_seconds"] = round(time.perf_counter() - started, 4)
    return RunRecord(
        id=problem.id,
        strategy=prepared.strategy_name,
        prediction=answer.prediction,
        reference=problem.reference,
        correct=bool(correct),
        ledger=ledger.to_dict(),
        samples=[asdict(s) for s in answer.samples],
        level=problem.level,
        info=answer.info,
        error=error,
    )


def write_config(run_dir: RunDir, prepared: Prepared, engine: Engine, argv: list[str] | None = None) -> None:
    from ttscale import __version__

    run_dir.write_json(
        CONFIG,
        {
            "identity": json.loads(json.dumps(prepared.identity(), default=str)),
            "spec": json.loads(json.dumps(asdict(prepared.spec), default=str)),
            "environment": {
                "ttscale_version": __version__,
                "python": platform.python_version(),
                "platform": platform.platform(),
                "engine": engine.describe(),
            },
            "command": argv if argv is not None else sys.argv,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        },
    )


def default_out(spec: RunSpec) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    task = spec.task.replace(":", "-").replace("/", "_")
    return Path("runs") / f"{spec.strategy}-{task}-{spec.budget}-{stamp}"


def _progress_bar(total: int, initial: int, *, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc="problems", unit="pb", disable=not enabled, file=sys.stderr)
