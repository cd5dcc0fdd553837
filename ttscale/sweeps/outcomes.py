"""A finished sweep read back: each cell's records, a table per cell, the outcomes a policy learns from, and the
best cell of each strategy at each compute level.

Snell et al., arXiv:2408.03314 (2024), §5 choose a strategy per difficulty bin and budget from sweep data: an
outcome is one (candidate, budget, problem) with its correctness and spend, averaged over the seeds whose cell
finished every problem.

`best_at_compute` is the paper's comparison ("when to solve, when to verify", Singhi et al.,
arXiv:2504.01005, §4): at each compute level L, the best cell of each strategy whose mean ledger tokens
per problem (policy + verifier generated tokens actually spent) are ≤ L.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ttscale.budget import Budget
from ttscale.routing.policy import Outcome
from ttscale.runstore.runs import read_run
from ttscale.schema import Problem
from ttscale.stats.metrics import wilson_interval
from ttscale.sweeps.grid import Cell, SweepSpec, cell_dir, load_spec


@dataclass
class SweepResults:
    """A sweep directory read back: its spec, task, problems and the records of every finished cell."""

    root: Path
    """The sweep directory."""
    spec: SweepSpec
    """Its grid, from sweep.json."""
    cells: list[Cell]
    """Every planned cell, finished or not."""
    task: Any
    """The task, loaded from the spec (it grades the stored answers)."""
    problems: list[Problem]
    """The problems every cell runs."""
    records: dict[str, dict[str, dict[str, Any]]]
    """cell id → problem id → record, for the cells that hold every problem."""


def load_results(root: str | Path) -> SweepResults:
    from ttscale.evals import load_task

    spec = load_spec(root)
    task = load_task(spec.task, **spec.task_options)
    problems = task.problems()[: spec.limit]
    wanted = {p.id for p in problems}
    records = {}
    for cell in spec.cells():
        run_dir = cell_dir(root, cell).path
        found = ({str(r["id"]): r for r in read_run(run_dir, finished=False, tasks=load_task).records}
                 if run_dir.is_dir() else {})
        if wanted <= set(found):
            records[cell.id] = found
    return SweepResults(Path(root), spec, spec.cells(), task, problems, records)


def outcomes(results: SweepResults) -> tuple[list[Outcome], dict[str, dict[str, Any]]]:
    """One `Outcome` per (candidate, budget, problem), averaged over the seeds whose cell is finished."""
    groups: dict[tuple[str, float], list[Cell]] = {}
    for cell in results.cells:
        if cell.id in results.records:
            groups.setdefault((cell.candidate, _limit(cell.budget)), []).append(cell)
    rows, candidates = [], {}
    for (key, budget), cells in groups.items():
        candidates[key] = {"strategy": cells[0].strategy, "params": dict(cells[0].params)}
        for problem in results.problems:
            recs = [results.records[c.id][problem.id] for c in cells]
            rows.append(
                Outcome(
                    candidate=key,
                    budget=budget,
                    problem=problem.id,
                    correct=sum(bool(r.get("correct")) for r in recs) / len(recs),
                    spent=sum(float((r.get("ledger") or {}).get("spent", 0.0)) for r in recs) / len(recs),
                )
            )
    return rows, candidates


def _limit(budget: str) -> float:
    return Budget.parse(budget).limit


def sweep_table(results: SweepResults) -> list[dict[str, Any]]:
    """One row per finished cell: candidate, budget, seed, accuracy, mean spend, and where it came from."""
    rows = []
    for cell in results.cells:
        recs = results.records.get(cell.id)
        if recs is None:
            continue
        picked = [recs[p.id] for p in results.problems]
        correct = sum(bool(r.get("correct")) for r in picked)
        derived = sum(1 for r in picked if isinstance(r.get("info"), dict) and r["info"].get("derived_from"))
        rows.append(
            {
                "cell": cell.id,
                "strategy": cell.strategy,
                "candidate": cell.candidate,
                "budget": cell.budget,
                "seed": cell.seed,
                "accuracy": correct / len(picked),
                "correct": correct,
                "problems": len(picked),
                "mean_spent": sum(float(r["ledger"].get("spent", 0)) for r in picked) / len(picked),
                # Matched compute is on the ledger's generated tokens (policy + verifier), whatever the budget's unit.
                "mean_tokens": sum(float(r["ledger"].get("generated_tokens", 0)) for r in picked) / len(picked),
                # What happened, read from the records, not what was planned: a cell the replay could not serve
                # was run (and logged so), and a budget-forcing cell may replay some problems and run the others.
                "derived_from": cell.source if derived else None,
                "derived_problems": derived,
            }
        )
    return rows


def best_at_compute(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per compute level (every cell's mean ledger tokens per problem), the best cell of each strategy within it.

    `rows` need strategy, candidate, budget, seed, mean_tokens, correct (count) and problems. The best is
    the highest accuracy (ties: fewer tokens); its 95% Wilson interval comes with it. A strategy with no cell
    within a level is absent there. Levels are the cells' own token counts, so every comparison is at ≤ L.
    """
    for row in rows:
        if row["problems"] < 1 or not 0 <= row["correct"] <= row["problems"] or row["mean_tokens"] < 0:
            raise ValueError(f"best_at_compute needs 0 ≤ correct ≤ problems, problems ≥ 1, tokens ≥ 0; got {dict(row)}")
    levels = sorted({round(float(r["mean_tokens"]), 1) for r in rows})
    out = []
    for level in levels:
        best: dict[str, dict[str, Any]] = {}
        for r in sorted(rows, key=lambda r: (r["mean_tokens"], str(r["candidate"]), r["seed"])):
            if round(float(r["mean_tokens"]), 1) > level:
                continue
            accuracy = r["correct"] / r["problems"]
            held = best.get(r["strategy"])
            if held is None or accuracy > held["accuracy"]:
                low, high = wilson_interval(int(r["correct"]), int(r["problems"]))
                best[r["strategy"]] = {"candidate": r["candidate"], "budget": r["budget"], "seed": r["seed"],
                                       "accuracy": accuracy, "ci95": [round(low, 4), round(high, 4)],
                                       "mean_tokens": round(float(r["mean_tokens"]), 1)}
        out.append({"tokens": level, "best": best})
    return out
