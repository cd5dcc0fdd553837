"""The runner: one strategy over many problems, all in flight at once on one engine.

Each problem is a coroutine with its own ledger; the engine batches whatever the coroutines
have awaited. Each record is handed back as its problem finishes: `ttscale.pipeline`, the one
writer of a run's files, appends it durably, so an interrupted run loses nothing and `resume`
redoes only what was unfinished.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import IO, Any

from ttscale.budget import Budget, BudgetError, Costing, CostMeter, Ledger
from ttscale.engine import ENGINES
from ttscale.engine.base import AsyncEngine, is_fatal
from ttscale.engine.models import ModelError
from ttscale.kit.capabilities import capabilities
from ttscale.kit.context import Context, SeededEngine
from ttscale.kit.params import params_class, parse_params
from ttscale.kit.params import task_defaults as suggested_params
from ttscale.kit.stages import StageStore
from ttscale.messages import one_line
from ttscale.running.progress import Progress
from ttscale.running.run_spec import RunSpec  # defined there with its flags and stored form; the runner's name too
from ttscale.runstore.runs import grade_samples
from ttscale.runstore.storage import StorageError
from ttscale.sandbox.sandbox import in_thread
from ttscale.schema import Answer, Problem, RunRecord
from ttscale.strategies import STRATEGIES

Solver = Callable[[Problem], Awaitable[dict[str, Any]]]
"""Solves one problem and returns its results.jsonl record (in this process, or on a Ray worker)."""


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
    total: Budget | None = None
    """`spec.total_budget` parsed; None without one."""
    pool: Ledger | None = None
    """The ledger of `total`, made by the pipeline for the problems it runs; every problem's ledger draws on it."""
    stages: StageStore | None = None
    """The run's shared stages (stages.jsonl), opened by the pipeline; None = each problem keeps its own."""

    def ledger(self) -> Ledger:
        """A fresh ledger for one problem, metered in the budget's unit and priced in FLOPs and eFLOPs."""
        return Ledger(self.budget, meter=self.meters.budget, costing=self.meters.costing, pool=self.pool)

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
            "engine": self.engine_identity(),
            # Only when set, so that the identity of every run without a total budget stays as it was.
            **({"total_budget": {"limit": self.total.limit, "unit": self.total.unit}} if self.total else {}),
        }

    def engine_identity(self) -> dict[str, Any]:
        server = self.spec.server
        if server is None:
            return self.spec.engine.to_dict()
        # The server's address is left out: a run may resume against the same model served elsewhere.
        return {"backend": self.spec.backend, "model": getattr(server, "model", None),
                "tokenizer": self.spec.model_ref(), "seed": self.spec.seed}


def prepare(spec: RunSpec, *, task_defaults: bool = True) -> Prepared:
    """Resolve names and validate every input; raises ValueError/KeyError subclasses with one-line messages.

    `task_defaults`: fill the parameters the user left unset with the task's suggestions
    (`ttscale.kit.params.task_defaults`); the returned spec holds them explicitly, so config.json records
    them and `--resume` (which passes False and reuses the stored spec) never re-resolves an old run
    under newer defaults.
    """
    from ttscale.engine.models import resolve_model
    from ttscale.evals import load_task

    name = STRATEGIES.canonical(spec.strategy)
    assert name is not None
    fn = STRATEGIES.get(name)
    budget, total = Budget.parse_with_total(spec.budget, spec.total_budget)
    task = load_task(spec.task, **spec.task_options)
    cls = params_class(fn)
    if task_defaults:
        spec = replace(spec, params={**suggested_params(cls, task=task, budget=budget), **spec.params})
    params = parse_params(cls, spec.params)
    if spec.server is not None and getattr(params, "streams", False):  # refused before anything starts
        raise ValueError(f"{name} with these parameters stops requests mid-stream, which the openai backend does not "
                         "yet: run it on ttscale's vLLM engine (--backend vllm)")
    problems = task.problems()[: spec.limit]
    if not problems:
        raise ValueError(f"task {spec.task!r} has no problems")
    needs = capabilities(fn).check_problems  # what it needs of every problem (sleep-time: a context), up front
    if needs is not None:
        needs(problems)
    # A code task makes its sandbox now: where model-written code cannot be isolated, the run is refused before
    # any engine starts (`SandboxUnavailable`, a ValueError naming the flag that allows it).
    getattr(task, "sandbox", None)
    # A missing model fails here, before any engine or run directory exists.
    try:
        model_path = resolve_model(spec.model_ref())
    except ModelError as exc:
        if spec.server is None:
            raise
        raise ModelError(f"{exc} (the openai backend needs the model's tokenizer here: give --tokenizer)") from None
    meters = build_meters(budget, model_path, hardware=spec.hardware)
    return Prepared(spec, name, fn, params, budget, task, problems, meters, total=total)


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

    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ModelError(f"cannot read the model's {config_file}: {exc}") from None
    if not isinstance(config, dict):
        raise ModelError(f"the model's {config_file} is not a JSON object")
    meter = None if budget.unit == "tokens" else budget.meter(model_config=config, hardware=hardware)
    return Meters(budget=meter, costing=eflop_meter(model_config=config, hardware=hardware))


async def solve_problems(
    prepared: Prepared,
    todo: list[Problem],
    solver: Solver,
    *,
    keep: Callable[[dict[str, Any]], Awaitable[None]],
    concurrency: int,
    progress: bool = True,
    progress_file: IO[str] | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> dict[str, str]:
    """Solve `todo`, at most `concurrency` at once, and hand each record to `keep` as it finishes (the pipeline
    appends it durably: a problem counts as done only once `keep` returns). Returns the problems a passing server
    fault left unfinished, with the fault. The runner writes no run file: `ttscale.pipeline` does.

    `on_progress` receives the live progress tracker, for solvers that report each request to it;
    without one, a problem's tokens are counted when its record comes back.
    """
    semaphore = asyncio.Semaphore(concurrency)
    most = _token_budget(prepared, len(todo))
    tracker = Progress(
        problems=len(prepared.problems),
        done=len(prepared.problems) - len(todo),
        token_budget=most,
        enabled=progress,
        file=progress_file,
    )
    live = on_progress is not None
    if on_progress is not None:
        on_progress(tracker)
    warned = False
    faults: dict[str, str] = {}  # the problems a passing server fault left unfinished, and what it was

    async def one(problem: Problem) -> None:
        nonlocal warned
        async with semaphore:
            tracker.problem_started()
            record = await solver(problem)
        await keep(record)  # durable before the problem counts as done
        if record.get("unfinished"):
            faults[problem.id] = str(record.get("error"))
        cut = int((record.get("ledger") or {}).get("cut_samples", 0))
        if cut and not warned and progress_file is not None:  # once per CLI run (the terminal); summary counts all
            warned = True
            samples = len(record.get("samples") or ())
            print(f"ttscale: warning: {cut} of {samples} final samples of problem {problem.id} stopped at a length "
                  f"limit (max_tokens or max_model_len), so their answers may be cut; summary.json counts them "
                  f"(cut_samples)", file=progress_file, flush=True)
        tokens = int((record.get("ledger") or {}).get("generated_tokens", 0))
        if not live:  # the solver ran elsewhere (a Ray worker): its tokens are counted when it is done
            tracker.add_tokens(tokens)
        tracker.problem_done(generated_tokens=tokens)

    tasks = [asyncio.ensure_future(one(p)) for p in todo]
    try:
        await asyncio.gather(*tasks)
    finally:
        # A fatal error leaves the other problems running: stop them before the run directory closes.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        tracker.close()
    return faults


def engine_solver(prepared: Prepared, engine: AsyncEngine) -> tuple[Solver, Callable[[Progress], None]]:
    """A solver of `prepared`'s problems on `engine` in this process, and the hook that hands it the live progress
    tracker (it reports each request's tokens as they come)."""
    tracker: Progress | None = None

    async def solver(problem: Problem) -> dict[str, Any]:
        return (await solve(prepared, engine, problem, progress=tracker)).to_json()

    def started(live: Progress) -> None:
        nonlocal tracker
        tracker = live

    return solver, started


async def solve(
    prepared: Prepared, engine: AsyncEngine, problem: Problem, *, progress: Progress | None = None
) -> RunRecord:
    """One problem through the strategy, graded; a strategy error is recorded, never fatal to the run.

    An engine that is gone (`is_fatal`) stops the run instead: recorded, the problem would count as finished.
    A passing server fault that outlived its retries (`is_transient`) is recorded as `unfinished`: `--resume`
    runs the problem again.
    """
    ledger = prepared.ledger()
    seeded = SeededEngine(engine, run_seed=prepared.spec.seed, problem_id=problem.id, progress=progress)
    ctx = Context(problem=problem, task=prepared.task, engine=seeded, ledger=ledger, stages=prepared.stages)
    started = time.perf_counter()
    error = None
    unfinished = False
    try:
        answer: Answer = await prepared.strategy(problem, ctx, prepared.params)
    except Exception as exc:  # one bad problem must not sink a long run
        if is_fatal(exc) or isinstance(exc, StorageError):  # the engine gone; a run file (stages.jsonl) not written
            raise
        answer, error = Answer(prediction=None), f"{type(exc).__name__}: {one_line(exc)}"
        unfinished = ENGINES.get(prepared.spec.backend).is_transient(exc)
    # Every sample's verdict, once per distinct answer, so coverage and pass@k read the task's own grading;
    # a code task's executions leave their detail (passed, failed, timeout, crashed, refused: why) per sample.
    # Grading may meet hostile model output; it stays off the event loop so the engine keeps streaming.
    executions: dict[str, Any] = {}
    answers = [s.answer for s in answer.samples]
    # `in_thread`: a stop signal ends the executions in flight rather than waiting them out.
    verdicts = await in_thread(grade_samples, prepared.task, problem, answers, details=executions)
    try:
        if answer.prediction in executions:  # the chosen program already ran: once is the verdict
            correct = verdicts[answer.prediction]
        else:
            correct = await in_thread(prepared.task.grade, answer.prediction, problem)
    except Exception as exc:  # a grader that chokes on an answer marks it wrong, with the reason
        correct, error = False, error or f"grading failed: {type(exc).__name__}: {one_line(exc)}"
    ledger.extra["wall_seconds"] = round(time.perf_counter() - started, 4)
    # Final samples that stopped at a length limit (max_tokens or the context): their answers may be missing.
    ledger.extra["cut_samples"] = sum(s.finish_reason == "length" for s in answer.samples)
    return RunRecord(
        id=problem.id,
        strategy=prepared.strategy_name,
        prediction=answer.prediction,
        reference=problem.reference,
        correct=bool(correct),
        ledger=ledger.to_dict(),
        samples=[
            {**s.to_dict(), "correct": verdicts[s.answer], **_execution(executions, s.answer)} for s in answer.samples
        ],
        level=problem.level,
        info=answer.info,
        error=error,
        unfinished=unfinished,
    )


def _execution(executions: dict[str, Any], answer: str | None) -> dict[str, Any]:
    """The sample record's `execution` entry, when its answer ran in a sandbox."""
    return {"execution": executions[answer]} if answer in executions else {}


def _token_budget(prepared: Prepared, problems: int) -> float | None:
    """The most tokens `problems` problems may generate, when the budget is in tokens (else None)."""
    if prepared.budget.unit != "tokens":
        return None
    most = prepared.budget.limit * problems
    return min(most, prepared.total.limit) if prepared.total is not None else most
