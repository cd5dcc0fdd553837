"""The leaderboard: runs ranked by accuracy *within* groups of matched budget, with honest intervals.

Two runs are budget-matched when they share the budget's unit and limit (and, for FLOP-type units,
the hardware that prices them), and were asked the same problems of the same task. Accuracy is
only ranked inside such a group; comparing across groups mixes the strategy's effect with the
budget's, so every such comparison in a report carries a warning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ttscale.reporting.frames import run_table
from ttscale.stats.bootstrap import percentile_interval, resample_indices

if TYPE_CHECKING:
    import pandas as pd

_FLOP_UNITS = ("flop", "eflop")


@dataclass(frozen=True, kw_only=True)
class Leaderboard:
    """Ranked runs (`rows`: run_table columns plus group, rank and the paired difference to the leader)."""

    rows: pd.DataFrame
    """One row per run, sorted by budget group, then rank."""
    warnings: tuple[str, ...] = ()
    """Comparisons in `rows` that are not like for like, in words."""
    groups: dict[str, str] = field(default_factory=dict)
    """Group letter → what its runs share (budget, task)."""


def leaderboard(problems: pd.DataFrame, *, resamples: int = 2000, seed: int = 0) -> Leaderboard:
    """Rank the runs of a problem frame (see `ttscale.load_runs`).

    Each group of budget-matched runs on the same problems gets a letter; ranks restart in each
    group. `delta`, `delta_low`, `delta_high`: accuracy minus the group leader's, with a 95% paired
    bootstrap interval over the shared problems (NaN for the leader itself).
    """
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise ValueError(f"resamples must be an integer ≥ 1, got {resamples!r}")
    runs = run_table(problems)
    runs["match_key"] = [_match_key(row) for _, row in runs.iterrows()]
    runs["problem_set"] = [_problem_set(problems, run) for run in runs["run"]]
    order = _group_order(runs)
    letters = {key: _letter(i) for i, key in enumerate(order)}
    runs["group"] = [letters[(m, p)] for m, p in zip(runs["match_key"], runs["problem_set"], strict=True)]
    # Ties: fewer tokens spent ranks first (the same accuracy for less is the better result).
    runs = runs.sort_values(["group", "accuracy", "mean_tokens"], ascending=[True, False, True], kind="stable")
    runs["rank"] = runs.groupby("group").cumcount() + 1
    deltas = [_paired_delta(problems, row, runs, resamples=resamples, seed=seed) for _, row in runs.iterrows()]
    runs["delta"], runs["delta_low"], runs["delta_high"] = (list(col) for col in zip(*deltas, strict=True))
    groups = {letters[key]: _describe_group(runs[runs["group"] == letters[key]].iloc[0]) for key in order}
    rows = runs.drop(columns=["match_key", "problem_set"]).reset_index(drop=True)
    return Leaderboard(rows=rows, warnings=tuple(_warnings(rows, groups)), groups=groups)


def budget_matched(runs: pd.DataFrame) -> bool:
    """Whether the runs (rows of `run_table`) all spent the same budget: unit, limit and, for FLOP-type
    units, the hardware that priced it. Problems are not compared here (the leaderboard's groups do that)."""
    return len({_match_key(row)[1:] for _, row in runs.iterrows()}) <= 1


def _match_key(row: Any) -> tuple[Any, ...]:
    unit = str(row["budget_unit"])
    limit = float(row["budget_limit"])
    hardware = str(row.get("hardware")) if unit in _FLOP_UNITS else ""
    # Round so that 1e15 written two ways is one budget; 12 significant digits is far finer than any budget step.
    return (str(row["task"]), unit, float(f"{limit:.12g}") if math.isfinite(limit) else math.nan, hardware)


def _problem_set(problems: pd.DataFrame, run: str) -> frozenset[str]:
    return frozenset(problems.loc[problems["run"] == run, "id"].astype(str))


def _group_order(runs: pd.DataFrame) -> list[tuple[Any, frozenset[str]]]:
    keys = list(dict.fromkeys(zip(runs["match_key"], runs["problem_set"], strict=True)))
    # Task, then unit, then budget ascending: the table reads from small to large budgets.
    return sorted(keys, key=lambda k: (k[0][0], k[0][1], k[0][2], k[0][3], -len(k[1]), sorted(k[1])[:1]))


def _letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"G{i + 1}"


def _describe_group(row: Any) -> str:
    priced = f" on {row['hardware']}" if row["budget_unit"] in _FLOP_UNITS else ""
    return f"{row['budget']}{priced} per problem · task {row['task']} · {row['problems']} problems"


def _paired_delta(
    problems: pd.DataFrame, row: Any, runs: pd.DataFrame, *, resamples: int, seed: int
) -> tuple[float, float, float]:
    if row["rank"] == 1:
        return math.nan, math.nan, math.nan
    leader = runs[(runs["group"] == row["group"]) & (runs["rank"] == 1)].iloc[0]
    mine = problems[problems["run"] == row["run"]].set_index("id")["correct"]
    theirs = problems[problems["run"] == leader["run"]].set_index("id")["correct"]
    shared = mine.index.intersection(theirs.index)
    diff = mine.loc[shared].astype(float).to_numpy() - theirs.loc[shared].astype(float).to_numpy()
    if diff.size == 0:
        return math.nan, math.nan, math.nan
    # Paired over problems: both runs saw the same problem, so its difficulty cancels out of the interval.
    rng = np.random.default_rng(seed)
    means = np.concatenate([diff[picks].mean(axis=1) for picks in resample_indices(diff.size, resamples, rng)])
    low, high = percentile_interval(means, confidence=0.95)
    return float(diff.mean()), float(low), float(high)


def _warnings(rows: pd.DataFrame, groups: dict[str, str]) -> list[str]:
    out = []
    if len(groups) > 1:
        listing = "; ".join(
            f"{letter}: {', '.join(rows.loc[rows['group'] == letter, 'run'])} ({groups[letter]})" for letter in groups
        )
        out.append(
            f"Not budget-matched: these runs fall into {len(groups)} groups that differ in budget, task or "
            f"problems — {listing}. Ranks and Δ are within a group; a difference between groups mixes the "
            "strategy's effect with the budget's."
        )
    over = rows[rows["over_budget"] > 0]
    for _, row in over.iterrows():
        out.append(f"{row['run']}: {row['over_budget']} problem(s) spent more than the budget ({row['budget']}).")
    errored = rows[rows["errors"] > 0]
    for _, row in errored.iterrows():
        out.append(f"{row['run']}: {row['errors']} problem(s) ended in an error and count as wrong.")
    return out
