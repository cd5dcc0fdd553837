"""The allocation spaces ttscale ships, each evaluated as the cells of one sweep.

A `Study` is a space whose every allocation is a sweep cell: one strategy with fixed parameters, the space's
dimensions as the grid's varied parameters (or as the cell's per-problem budget). `SweepEvaluator` evaluates an
allocation by finishing its cell (`sweeps.run_cell`): read from a stored pool where the sweep's replay can derive
it (GenRM's S × V from the largest S and V; sleep-time's smaller test-time budgets from the largest), run live on
the engine where it cannot (beam), and read back when it is done. So a search pays for each cell once, across
proposers, seeds and restarts, and a derivable space costs its pools and then seconds.

Spaces (per-problem costs in generated tokens, at the caps, so the total budget is checked before anything runs):
- `genrm`: S solutions × V verifications per solution; cost S·T_S + S·V·(T_V + 1) (Singhi et al., 2025);
- `sleep_time`: sleep-time tokens per context × test-time budget per query; cost b + s / q, the sleep tokens
  amortised over the q queries of a context (Lin et al., 2025);
- `beam`: N beams × T step cap; cost N·T·step_tokens.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ttscale.allocsearch.space import Allocation, Dimension, Space, Value
from ttscale.allocsearch.trials import Evaluation


@dataclass(frozen=True, kw_only=True)
class Study:
    """A space and the sweep cells its allocations are."""

    space: Space
    strategy: str
    """The strategy every cell runs."""
    fixed: Mapping[str, Value] = field(default_factory=dict)
    """Its parameters that the search does not vary."""
    budget_dimension: str | None = None
    """The dimension that is the cell's per-problem budget; None = every cell runs at the space's total budget."""

    def entry(self) -> str:
        """The sweep's grid entry: `strategy fixed=v ... varied=v1|v2 ...`."""
        varied = [f"{d.name}={'|'.join(map(str, d.values))}" for d in self.space.dimensions
                  if d.name != self.budget_dimension]
        return " ".join([self.strategy, *(f"{k}={v}" for k, v in self.fixed.items()), *varied])

    def budgets(self) -> tuple[str, ...]:
        if self.budget_dimension is None:
            return (str(int(self.space.total_budget)),)
        dimension = next(d for d in self.space.dimensions if d.name == self.budget_dimension)
        return tuple(str(v) for v in dimension.values)

    def cell_of(self, allocation: Allocation) -> tuple[dict[str, str], str]:
        """(the cell's varied parameters as the grid writes them, its budget)."""
        a = self.space.canonical(allocation)
        params = {**{k: str(v) for k, v in self.fixed.items()},
                  **{k: str(v) for k, v in a.items() if k != self.budget_dimension}}
        budget = str(a[self.budget_dimension]) if self.budget_dimension else self.budgets()[0]
        return params, budget


def _dimension(name: str, values: tuple[int, ...], doc: str, *, setting: str) -> Dimension:
    """The dimension `name` (a strategy parameter) of the values the space's `setting` keyword gave; a refusal names
    that setting, the one the user wrote (`--set solutions=1,1`), beside the dimension."""
    try:
        return Dimension(name=name, values=values, doc=doc)
    except ValueError as exc:
        said = f"dimension {name!r}"
        raise ValueError(str(exc).replace(said, f"setting {setting!r} ({said})", 1)) from None


def genrm_study(*, total_budget: float = 2048, solutions: tuple[int, ...] = (1, 2, 4, 8),
                verifications: tuple[int, ...] = (1, 2, 4), max_tokens: int = 128, verify_tokens: int = 64) -> Study:
    def cost(a: Allocation) -> float:
        s, v = int(a["n"]), int(a["verifications"])
        return s * max_tokens + s * v * (verify_tokens + 1)

    space = Space(name="genrm", total_budget=total_budget, cost=cost,
                  dimensions=(_dimension("n", solutions, "S: solutions per problem", setting="solutions"),
                              _dimension("verifications", verifications, "V: verification chains per solution",
                                         setting="verifications")),
                  doc="GenRM: solve S times, verify each solution V times, answer with the best-verified solution",
                  cost_doc=f"S·{max_tokens} + S·V·{verify_tokens + 1} generated tokens per problem")
    return Study(space=space, strategy="genrm", fixed={"max_tokens": max_tokens, "verify_tokens": verify_tokens})


def sleep_time_study(*, total_budget: float = 400, sleep: tuple[int, ...] = (0, 64, 128, 256),
                     budgets: tuple[int, ...] = (48, 96, 192, 384), queries: int = 5, max_tokens: int = 48) -> Study:
    def cost(a: Allocation) -> float:
        return int(a["budget"]) + int(a["sleep_tokens"]) / queries

    space = Space(name="sleep_time", total_budget=total_budget, cost=cost,
                  dimensions=(_dimension("sleep_tokens", sleep, "tokens the model thinks about a context before "
                                                                "its queries (0 = none)", setting="sleep"),
                              _dimension("budget", budgets, "test-time tokens per query (votes of "
                                                            f"{max_tokens} tokens each)", setting="budgets")),
                  doc=f"sleep-time compute: think about each context once, then answer its {queries} queries",
                  cost_doc=f"budget + sleep_tokens / {queries} tokens per query")
    # The test-time budget is a number of votes (`test_time=vote`): the reference's single answer has no budget axis.
    return Study(space=space, strategy="sleep_time", fixed={"max_tokens": max_tokens, "test_time": "vote"},
                 budget_dimension="budget")


def beam_study(*, total_budget: float = 2048, beams: tuple[int, ...] = (4, 8, 16), steps: tuple[int, ...] = (2, 4, 8),
               step_tokens: int = 32, width: int = 4) -> Study:
    def cost(a: Allocation) -> float:
        return int(a["n"]) * int(a["max_steps"]) * step_tokens

    space = Space(name="beam", total_budget=total_budget, cost=cost,
                  dimensions=(_dimension("n", beams, "N: beams kept per step", setting="beams"),
                              _dimension("max_steps", steps, "T: steps at most", setting="steps")),
                  doc=f"step-level beam search with the arithmetic step verifier, {width} children per beam",
                  cost_doc=f"N·T·{step_tokens} generated tokens per problem")
    return Study(space=space, strategy="beam", fixed={"width": width, "step_tokens": step_tokens,
                                                      "verifier": "arithmetic", "max_tokens": 8 * step_tokens})


STUDIES: dict[str, Callable[..., Study]] = {"genrm": genrm_study, "sleep_time": sleep_time_study, "beam": beam_study}
"""The shipped spaces by name (`ttscale allocate --space NAME`)."""


def study_sweep(study: Study, *, task: str, limit: int | None, seed: int, engine_config: Any,
                task_options: dict[str, Any] | None = None, concurrency: int = 64) -> Any:
    """The `SweepSpec` whose cells are the study's allocations."""
    from ttscale.sweeps import GridEntry, SweepSpec

    return SweepSpec(grid=(GridEntry.parse(study.entry()),), budgets=study.budgets(), seeds=(seed,), task=task,
                     task_options=dict(task_options or {}), limit=limit, engine=engine_config, concurrency=concurrency)


def check_cells(study: Study, *, root: str | Path, task: str, limit: int | None, seed: int, engine_config: Any,
                task_options: dict[str, Any] | None = None) -> None:
    """Prepare every cell of the study's sweep as its run would be (parameters, task, task options, what the
    strategy needs of the problems), creating nothing; the first cell that cannot run raises its one line."""
    from ttscale.sweeps.run import prepare_cell

    spec = study_sweep(study, task=task, limit=limit, seed=seed, engine_config=engine_config,
                       task_options=task_options)
    for cell in spec.cells():
        try:
            prepare_cell(spec, cell, root)
        except ValueError as exc:  # which point of the space, not only what the strategy refused in it
            point = " ".join([cell.strategy, *(f"{k}={v}" for k, v in sorted(cell.params.items()))])
            raise ValueError(f"space {study.space.name}: its cell `{point}` (budget {cell.budget}) cannot run: "
                             f"{exc}") from None


class SweepEvaluator:
    """Evaluates an allocation as its sweep cell (see the module docstring); the sweep lives under `root`."""

    def __init__(self, study: Study, *, root: str | Path, task: str, limit: int | None, seed: int,
                 engine_for: Callable[[], Awaitable[Any]], engine_config: Any,
                 task_options: dict[str, Any] | None = None, concurrency: int = 64) -> None:
        from ttscale.sweeps import SWEEP, create_sweep, load_spec

        self.study, self.root, self._engine_for = study, Path(root), engine_for
        spec = study_sweep(study, task=task, limit=limit, seed=seed, engine_config=engine_config,
                           task_options=task_options, concurrency=concurrency)
        if (self.root / SWEEP).is_file():
            stored = load_spec(self.root)
            if stored.cells() != spec.cells():
                raise ValueError(f"{str(self.root)!r} holds the sweep of another search (its cells differ): use "
                                 "another directory")
            spec = stored
        else:
            create_sweep(spec, self.root, command=["ttscale.allocate", study.space.name])
        self.spec = spec
        self._cells = spec.cells()

    async def __call__(self, allocation: Allocation) -> Evaluation:
        from ttscale.evals import load_task
        from ttscale.runstore.runs import read_run
        from ttscale.stats.metrics import wilson_interval
        from ttscale.sweeps import run_cell

        params, budget = self.study.cell_of(allocation)
        cell = next((c for c in self._cells if c.params == params and c.budget == budget), None)
        if cell is None:
            raise ValueError(f"no cell of the sweep is {self.study.space.render(allocation)}")
        path = await run_cell(self.spec, self.root, cell, self._cells, self._engine_for)
        records = read_run(path, finished=False, tasks=load_task).records  # as ttscale.read_records reads them
        right = sum(bool(r.get("correct")) for r in records)
        low, high = wilson_interval(right, len(records))
        spent = [float((r.get("ledger") or {}).get("generated_tokens", 0))
                 + float((r.get("ledger") or {}).get("sleep_tokens_amortised", 0)) for r in records]
        return Evaluation(accuracy=right / len(records), ci_low=min(low, right / len(records)),
                          ci_high=max(high, right / len(records)), cost=sum(spent) / len(spent), n=len(records))
