"""Reading a law's variables from a CSV of points or from run directories (results.jsonl).

CSV columns, by law (names are case-insensitive; the first of each alias list is the canonical one):
    coverage    k, coverage                       [problem]
    saturation  budget, accuracy                  [problem]
    kinetics    model, cost, accuracy             [query] [config]
    genrm       S, V, accuracy                    [problem]

Run directories are read through `ttscale.runstore.runs` (as report and compare read them): one record per problem
(`ttscale.schema.RunRecord`: `id`, `correct`, `ledger`, `samples`, `info`), a torn last line left out,
errored problems kept as wrong answers, each sample's correctness by the run's own task grader.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ttscale.runstore.runs import RunData, RunLoadError
from ttscale.runstore.runs import read_runs as read_run_dirs
from ttscale.scaling._resample import FitInputError

#: canonical column → accepted names (the Kinetics tables' own names included).
_ALIASES: dict[str, tuple[str, ...]] = {
    "k": ("k", "samples", "n"),
    "coverage": ("coverage", "pass_at_k", "pass@k"),
    "budget": ("budget", "n", "cost", "tokens"),
    "accuracy": ("accuracy", "acc", "coverage", "correct"),
    "model": ("model",),
    "cost": ("cost", "total_cost", "eflops", "flops"),
    "S": ("s", "solutions", "num_solutions"),
    "V": ("v", "verifications", "num_verifications"),
    "problem": ("problem", "problem_id", "id"),
    "query": ("query", "query_id", "problem", "problem_id", "id"),
    "config": ("config", "trial", "strategy"),
}
COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "coverage": (("k", "coverage"), ("problem",)),
    "saturation": (("budget", "accuracy"), ("problem",)),
    "kinetics": (("model", "cost", "accuracy"), ("query", "config")),
    "genrm": (("S", "V", "accuracy"), ("problem",)),
}
_TEXT = {"model", "problem", "query", "config"}


def read_points(path: str | Path, *, law: str) -> dict[str, Any]:
    """The law's columns from a CSV file, as arrays keyed by canonical name (optional ones if present)."""
    required, optional = COLUMNS[law]
    file = Path(path)
    try:
        with file.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = {name.strip().lower(): name for name in (reader.fieldnames or [])}
            rows = list(reader)
    except OSError as exc:
        raise FitInputError(f"cannot read {str(file)!r}: {exc.strerror}") from None
    chosen: dict[str, str] = {}
    for column in (*required, *optional):
        found = next(
            (header[a] for a in _ALIASES[column] if a in header and header[a] not in chosen.values()), None
        )
        if found is not None:
            chosen[column] = found
        elif column in required:
            raise FitInputError(
                f"{file.name}: the {law} law needs columns {', '.join(required)} "
                f"(optional: {', '.join(optional)}); found {', '.join(reader.fieldnames or []) or 'none'}"
            )
    if not rows:
        raise FitInputError(f"{file.name} has no rows")
    out: dict[str, Any] = {}
    for column, name in chosen.items():
        values = [row[name] for row in rows]
        out[column] = np.array(values) if column in _TEXT else _floats(values, name, file.name)
    return out


def points_from_runs(paths: list[str | Path], *, law: str, x: str = "budget") -> dict[str, Any]:
    """The law's variables from run directories (see the module doc); `x` picks the saturation budget:
    `budget` (the ledger's limit), `spent`, or `samples`."""
    runs = _load(paths)
    data = _variables(runs, law=law, x=x)
    data["notes"] = notes(runs)
    return data


def _variables(runs: list[RunData], *, law: str, x: str) -> dict[str, Any]:
    records = [(run, rec) for run in runs for rec in run.records]
    if law == "coverage":
        per_problem: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for run, rec in records:
            for sample in rec.get("samples") or []:
                per_problem[str(rec["id"])][0] += 1
                per_problem[str(rec["id"])][1] += int(run.sample_correct(sample, rec))
        if not per_problem:
            raise FitInputError("the runs hold no samples to compute coverage from")
        counts = np.array(list(per_problem.values()), dtype=float)
        return {"n": counts[:, 0], "correct": counts[:, 1]}
    if law == "saturation":
        if x not in ("budget", "spent", "samples", "thinking_budget", "thinking_tokens"):
            raise FitInputError(f"--x must be budget, spent, samples, thinking_budget or thinking_tokens, got {x!r}")
        if x == "thinking_budget" and any("thinking_budget" not in (rec.get("info") or {}) for _, rec in records):
            raise FitInputError("--x thinking_budget needs runs of a sequential strategy (budget_forcing)")
        return {
            "budget": np.array([float((rec.get("info") or {})["thinking_budget"] if x == "thinking_budget"
                                      else rec["ledger"].get(x, 0)) for _, rec in records]),
            "accuracy": np.array([float(bool(rec["correct"])) for _, rec in records]),
            "problem": np.array([str(rec["id"]) for _, rec in records]),
        }
    if law == "kinetics":
        return {
            "model": np.array([str(rec.get("info", {}).get("model") or _model_label(run)) for run, rec in records]),
            "cost": np.array([_eflops(rec) for _, rec in records]),
            "accuracy": np.array([float(bool(rec["correct"])) for _, rec in records]),
            "query": np.array([str(rec["id"]) for _, rec in records]),
            "config": np.array(
                [f"{rec.get('strategy')}@{rec['ledger'].get('budget')}" for _, rec in records]
            ),
        }
    if law == "genrm":
        return {
            "S": np.array([_info(rec, ("S", "num_solutions", "n_solutions")) for _, rec in records]),
            "V": np.array([_info(rec, ("V", "num_verifications", "n_verifications")) for _, rec in records]),
            "accuracy": np.array([float(bool(rec["correct"])) for _, rec in records]),
            "problem": np.array([str(rec["id"]) for _, rec in records]),
        }
    raise FitInputError(f"unknown law {law!r}")


def _load(paths: list[str | Path]) -> list[RunData]:
    try:
        from ttscale.evals import load_task

        return [_fittable(run) for run in read_run_dirs(paths, tasks=load_task)]
    except RunLoadError as exc:
        raise FitInputError(str(exc)) from None


def _fittable(run: RunData) -> RunData:
    if not any("ledger" in r for r in run.records):
        raise FitInputError(f"{str(run.path)!r} holds no records with a ledger: not a ttscale run")
    return run


def notes(runs: list[RunData]) -> list[str]:
    """What reading the runs counted specially: errored problems (kept, as wrong answers, as in summary.json)
    and torn last lines (left out, as --resume leaves them)."""
    out = []
    for run in runs:
        if run.errored:
            out.append(f"{run.label}: {len(run.errored)} of {len(run.records)} problems errored (counted as wrong)")
        if run.torn_tail:
            out.append(f"{run.label}: a torn last line of results.jsonl left out (a run cut off or still writing)")
    return out


def _model_label(run: RunData) -> str:
    """The run's model from config.json; the run's label when config.json does not say."""
    return run.label if run.model == "?" else run.model


def _eflops(record: dict[str, Any]) -> float:
    ledger = record["ledger"]
    if "eflops" in ledger:
        return float(ledger["eflops"])
    if ledger.get("unit") == "eflop":
        return float(ledger["spent"])
    raise FitInputError("kinetics needs eFLOPs per record: run with an eflop budget, or give --points")


def _info(record: dict[str, Any], keys: tuple[str, ...]) -> float:
    info = record.get("info") or {}
    for key in keys:
        if key in info:
            return float(info[key])
    raise FitInputError(
        f"genrm needs info.{keys[0]} in every record (the strategy's {keys[0]}); or give --points"
    )


def _floats(values: list[str], name: str, file: str) -> np.ndarray:
    try:
        out = np.array([float(v) for v in values])
    except ValueError:
        bad = next(v for v in values if not _is_float(v))
        raise FitInputError(f"{file}: column {name!r} must be numbers, found {bad!r}") from None
    if not np.all(np.isfinite(out)):
        raise FitInputError(f"{file}: column {name!r} has non-finite values")
    return out


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
