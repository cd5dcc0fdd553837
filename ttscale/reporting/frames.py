"""Run directories as pandas DataFrames: one row per (run, problem), and one row per run.

The problem frame carries every run-level fact (model, task, budget, versions, ...) on each of its
rows, so that any subset of it (one level, a few runs) can be summarised again by `run_table`
without going back to the files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ttscale.evals import load_task
from ttscale.runstore.runs import RunData, RunLoadError, read_runs
from ttscale.runstore.storage import CONFIG, SUMMARY
from ttscale.stats.metrics import pass_at_k, wilson_interval

if TYPE_CHECKING:
    import pandas as pd

#: Run-level columns, repeated on every problem row (`run_table` takes the first of each).
RUN_COLUMNS = (
    "run", "run_dir", "model", "task", "strategy", "params", "budget", "budget_limit", "budget_unit",
    "seed", "hardware", "grader", "ttscale_version", "vllm_version", "torch_version", "python", "created",
    "run_wall_seconds", "grader_disagreement_rate",
)  # fmt: skip


def load_runs(paths: str | Path | Iterable[str | Path], *, per: Literal["problem", "run"] = "problem") -> pd.DataFrame:
    """Read run directories into a DataFrame.

    `paths`: run directories (holding results.jsonl), or folders searched recursively for them.
    `per="problem"` gives one row per (run, problem) with correctness, the ledger in every unit
    (generated tokens, FLOPs, eFLOPs), sample counts for pass@k and the run's metadata;
    `per="run"` gives `run_table` of that frame: one row per run with accuracy, its 95% CI and pass@k.
    """
    import pandas as pd

    if per not in ("problem", "run"):
        raise ValueError(f"per must be 'problem' or 'run', got {per!r}")
    rows: list[dict[str, Any]] = []
    for run in read_runs(paths, tasks=load_task):
        rows.extend(_problem_rows(run))
    frame = pd.DataFrame(rows)
    return run_table(frame) if per == "run" else frame


def run_table(problems: pd.DataFrame) -> pd.DataFrame:
    """One row per run of a problem frame: accuracy with its 95% Wilson CI, pass@k, spend in every unit."""
    import pandas as pd

    if problems.empty:
        raise RunLoadError("no problems to summarise")
    out = []
    for _, group in problems.groupby("run", sort=False):
        first = group.iloc[0]
        n = len(group)
        correct = int(group["correct"].sum())
        low, high = wilson_interval(correct, n)
        row: dict[str, Any] = {column: first[column] for column in RUN_COLUMNS if column in group}
        row.update(
            problems=n,
            correct=correct,
            accuracy=correct / n,
            ci_low=low,
            ci_high=high,
            errors=int(group["error"].notna().sum()),
            over_budget=int((group["spent"] > group["budget_limit"] * (1 + 1e-9)).sum()),
            mean_tokens=float(group["generated_tokens"].mean()),
            mean_prompt_tokens=float(group["prompt_tokens"].mean()),
            mean_spent=float(group["spent"].mean()),
            mean_samples=float(group["n_samples"].mean()),
            mean_wall_seconds=float(group["wall_seconds"].mean()),
            levels=",".join(str(v) for v in sorted(group["level"].dropna().unique())),
        )
        for key in ("flops", "eflops", "memory_bytes"):
            # A mean over some problems only would look comparable and is not: all priced, or none.
            row[f"mean_{key}"] = float(group[key].mean()) if group[key].notna().all() else math.nan
        row.update(_budget_in_units(row))
        row.update(_pass_columns(group))
        out.append(row)
    return pd.DataFrame(out)


def pass_at_k_table(
    problems: pd.DataFrame, *, ks: Sequence[int] | None = None, confidence: float = 0.95, resamples: int = 2000
) -> pd.DataFrame:
    """Mean unbiased pass@k per run (rows) for k = 1, 2, 4, ... up to the smallest sample pool.

    `ci_low`, `ci_high`: a percentile interval at `confidence` from a bootstrap over problems (seeded, so a
    table is the same on every read): pass@k is estimated without bias per problem, and what varies is which
    problems the task drew.
    """
    import numpy as np
    import pandas as pd

    from ttscale.stats.bootstrap import percentile_interval, resample_counts

    rows = []
    for run, group in problems.groupby("run", sort=False):
        graded = group.dropna(subset=["n_correct"])
        graded = graded[graded["n_samples"] > 0]
        if graded.empty:
            continue
        smallest = int(graded["n_samples"].min())
        chosen = [k for k in (ks or _powers_of_two(smallest)) if k <= smallest]
        for k in chosen:
            values = [
                pass_at_k(n=int(n), c=int(c), k=k)
                for n, c in zip(graded["n_samples"], graded["n_correct"], strict=True)
            ]
            per = np.asarray(values)
            means = np.concatenate(
                [counts @ per / len(per) for counts in resample_counts(len(per), resamples, np.random.default_rng(0))]
            )
            low, high = percentile_interval(means, confidence=confidence)
            rows.append({"run": run, "k": k, "pass_at_k": float(per.mean()), "ci_low": low, "ci_high": high,
                         "problems": len(values)})
    return pd.DataFrame(rows, columns=["run", "k", "pass_at_k", "ci_low", "ci_high", "problems"])


def _budget_in_units(row: dict[str, Any]) -> dict[str, float]:
    """The limit in tokens, FLOPs and eFLOPs: exact in its own unit, else converted at the run's observed
    cost per unit of spend (so `≈`: a budget of 1k tokens is about 1k × the FLOPs this run paid per token)."""
    own = {"tokens": "tokens", "flop": "flops", "eflop": "eflops"}.get(str(row["budget_unit"]))
    limit, spent = float(row["budget_limit"]), float(row["mean_spent"])
    out = {}
    for unit in ("tokens", "flops", "eflops"):
        if unit == own:
            out[f"budget_{unit}"] = limit
        else:
            per = float(row[f"mean_{unit}"]) / spent if spent > 0 else math.nan
            out[f"budget_{unit}"] = limit * per if math.isfinite(per) and per > 0 else math.nan
    return out


def _pass_columns(group: pd.DataFrame) -> dict[str, float]:
    table = pass_at_k_table(group)
    return {f"pass@{int(k)}": float(v) for k, v in zip(table["k"], table["pass_at_k"], strict=True)}


def _powers_of_two(top: int) -> list[int]:
    return [2**i for i in range(int(math.log2(top)) + 1)] if top >= 1 else []


# -- reading one run ---------------------------------------------------------------------------------


def _problem_rows(run: RunData) -> list[dict[str, Any]]:
    meta = _run_meta(run)
    rows = []
    for record in run.records:
        ledger = record.get("ledger") or {}
        samples = record.get("samples") or []
        rows.append(
            {
                **meta,
                "id": str(record.get("id")),
                "level": record.get("level"),
                "correct": bool(record.get("correct")),
                "prediction": record.get("prediction"),
                "reference": record.get("reference"),
                "error": record.get("error") or None,
                "spent": float(ledger.get("spent", math.nan)),
                "generated_tokens": int(ledger.get("generated_tokens", 0)),
                "prompt_tokens": int(ledger.get("prompt_tokens", 0)),
                "cached_prompt_tokens": int(ledger.get("cached_prompt_tokens", 0)),
                "calls": int(ledger.get("calls", 0)),
                "flops": float(ledger.get("flops", math.nan)),
                "eflops": float(ledger.get("eflops", math.nan)),
                "memory_bytes": float(ledger.get("memory_bytes", math.nan)),
                "wall_seconds": float(ledger.get("wall_seconds", math.nan)),
                "engine_seconds": float(ledger.get("engine_seconds", math.nan)),
                "n_samples": len(samples),
                # Correct samples, for pass@k, by the run's own task grader (NaN: no samples).
                "n_correct": sum(run.sample_correct(s, record) for s in samples) if samples else math.nan,
            }
        )
    return rows


def _run_meta(run: RunData) -> dict[str, Any]:
    config, summary, first = run.config, run.summary, run.records[0]
    conf, summ = _Fields(run.path / CONFIG), _Fields(run.path / SUMMARY)
    identity = conf.get(config, "identity", "object") or {}
    environment = conf.get(config, "environment", "object") or {}
    engine_env = conf.get(environment, "environment.engine", "object") or {}
    ledger = first.get("ledger") or {}
    # A run without config.json (copied results only) still says its budget in every ledger.
    budget = conf.get(identity, "identity.budget", "object") or {"limit": ledger.get("budget"),
                                                                    "unit": ledger.get("unit", "tokens")}
    limit = conf.get(budget, "identity.budget.limit", "number")
    limit = math.nan if limit is None else float(limit)
    unit = str(conf.get(budget, "identity.budget.unit", "text") or "tokens")
    task = conf.get(identity, "identity.task", "object") or {}
    cross = summ.get(summary, "grader_cross_check", "object") or {}
    rate, wall = summ.get(cross, "grader_cross_check.rate", "number"), summ.get(summary, "wall_seconds", "number")
    return {
        "run": run.label,
        "run_dir": str(run.path),
        "model": run.model,
        "task": str(task.get("spec") or summary.get("task") or "?"),
        "strategy": str(identity.get("strategy") or first.get("strategy") or "?"),
        "params": _params_label(conf.get(identity, "identity.params", "object") or {}),
        "budget": format_budget(limit=limit, unit=unit),
        "budget_limit": limit,
        "budget_unit": unit,
        "seed": conf.get(identity, "identity.seed", "whole"),
        "hardware": conf.get(identity, "identity.hardware", "text"),
        "grader": str(task.get("grading") or f"{task.get('name') or 'task'} grader"),
        "ttscale_version": environment.get("ttscale_version"),
        "vllm_version": engine_env.get("vllm_version"),
        "torch_version": engine_env.get("torch_version"),
        "python": environment.get("python"),
        "created": config.get("created"),
        "run_wall_seconds": math.nan if wall is None else float(wall),
        "grader_disagreement_rate": math.nan if rate is None else float(rate),
    }


class _Fields:
    """The fields of one of a run's JSON files that the frame reads: absent (or null) is None; a value of another
    type is a one-line RunLoadError naming the file and the field, never an internal exception or a silent NaN."""

    _KINDS: ClassVar[dict[str, tuple[str, Callable[[Any], bool]]]] = {
        "object": ("a JSON object", lambda v: isinstance(v, dict)),
        "text": ("a string", lambda v: isinstance(v, str)),
        "number": ("a finite number", lambda v: _real(v) and math.isfinite(v)),
        "whole": ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    }

    def __init__(self, file: Path) -> None:
        self.file = file

    def get(self, data: dict[str, Any], name: str, kind: str) -> Any:
        """`data`'s field `name` (dotted from the file's top: the last part is the key in `data`)."""
        value = data.get(name.rpartition(".")[2])
        what, accepts = self._KINDS[kind]
        if value is None or accepts(value):
            return value
        shown = json.dumps(value, default=str)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise RunLoadError(f"{self.file}: {name} is {shown}; it must be {what} (the file was edited or not "
                           "written by ttscale)")


def _real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def format_budget(*, limit: float, unit: str) -> str:
    """`1000, tokens` → `1k tokens`; `3e14, eflop` → `3e+14 eflop`."""
    if not math.isfinite(limit):
        return "?"
    if unit == "tokens":
        for size, suffix in ((1e6, "M"), (1e3, "k")):
            if limit >= size and (limit / size) == int(limit / size):
                return f"{int(limit / size)}{suffix} tokens"
        return f"{int(limit)} tokens"
    return f"{limit:.3g} {unit}"


def _params_label(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()) if v is not None)
