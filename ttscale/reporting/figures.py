"""The report's charts, from a problem frame: accuracy vs budget, the Pareto frontier vs eFLOPs, coverage.

Fitted laws (`ttscale.scaling`) are drawn over the data whenever the data can carry them: the
saturating power law needs ≥ 4 budgets of one strategy, the Kinetics frontier fit ≥ 4 frontier
points, the coverage law samples per problem. A fit that cannot be made is left out with a note,
never allowed to stop the report.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ttscale.evals.metrics import wilson_interval
from ttscale.reporting.frames import pass_at_k_table, run_table
from ttscale.reporting.svg import PALETTE, Chart, Svg

if TYPE_CHECKING:
    import pandas as pd

FIT_RESAMPLES = 200
"""Bootstrap resamples of the overlaid fits: bands for the eye, cheap enough for a report."""


def series_labels(problems: pd.DataFrame) -> dict[str, str]:
    """run → the curve it belongs to: its strategy, plus model / task / parameters when those vary."""
    runs = problems.drop_duplicates("run")
    several = {c: runs[c].nunique() > 1 for c in ("model", "task")}
    out = {}
    for _, row in runs.iterrows():
        parts = [str(row["strategy"])]
        parts += [str(row[c]) for c in ("model", "task") if several[c]]
        same_strategy = runs[runs["strategy"] == row["strategy"]]
        if same_strategy["params"].nunique() > 1 and row["params"]:
            parts.append(str(row["params"]))
        out[str(row["run"])] = " · ".join(parts)
    return out


def colors(labels: dict[str, str]) -> dict[str, str]:
    """Series label → colour, stable in order of first appearance (the same in every chart)."""
    names = list(dict.fromkeys(labels.values()))
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def accuracy_vs_budget(problems: pd.DataFrame, *, unit: str | None = None) -> Svg:
    """Accuracy (95% Wilson band) against the budget limit, one curve per strategy, for one budget unit."""
    unit = unit or str(problems["budget_unit"].mode().iloc[0])
    data = problems[problems["budget_unit"] == unit]
    if data.empty:
        raise ValueError(f"no run has a budget in {unit}")
    labels = series_labels(problems)
    palette = colors(labels)
    chart = Chart(title=f"Accuracy vs budget ({unit})", x_label=f"budget per problem ({unit}, log scale)")
    fitted = False
    for name, color in palette.items():
        rows = data[data["run"].map(labels) == name]
        if rows.empty:
            continue
        xs, acc, low, high = [], [], [], []
        for limit, group in rows.groupby("budget_limit"):
            n, c = len(group), int(group["correct"].sum())
            lo, hi = wilson_interval(c, n)
            xs.append(float(limit))
            acc.append(c / n)
            low.append(lo)
            high.append(hi)
        if len(xs) > 1:
            chart.band(x=xs, low=low, high=high, color=color)
            chart.line(x=xs, y=acc, color=color, label=name)
            chart.points(x=xs, y=acc, color=color)
        else:  # one budget: no curve to draw, but the interval still shows
            chart.points(x=xs, y=acc, low=low, high=high, color=color, label=name)
        fitted |= _overlay_power_law(chart, rows, color)
    chart.note(
        "Bands and bars: 95% Wilson intervals over problems."
        + (
            " Dashed: fitted acc(C) = A − B·C^(−α) with its 95% bootstrap band."
            if fitted
            else " A fitted A − B·C^(−α) appears once a strategy has ≥ 4 budgets that determine it."
        )
    )
    return chart.render()


def pareto_vs_cost(problems: pd.DataFrame) -> Svg:
    """Each run at (mean cost per problem, accuracy ± 95% CI), the Pareto frontier, and a Kinetics fit.

    Cost is eFLOPs when every run was priced by the cost model, else generated tokens (said in the title).
    """
    runs = run_table(problems)
    labels = series_labels(problems)
    palette = colors(labels)
    priced = bool(runs["mean_eflops"].notna().all() and (runs["mean_eflops"] > 0).all())
    column, unit = ("mean_eflops", "eFLOPs") if priced else ("mean_tokens", "generated tokens")
    title = (
        "Pareto frontier: accuracy vs eFLOPs" if priced else "Pareto frontier: accuracy vs tokens (no eFLOPs priced)"
    )
    chart = Chart(title=title, x_label=f"mean {unit} per problem (log scale)")
    for name, color in palette.items():
        chart.legend(name, color=color)
    from ttscale.scaling import pareto_frontier

    costs, accs = runs[column].to_numpy(dtype=float), runs["accuracy"].to_numpy(dtype=float)
    usable = np.flatnonzero(np.isfinite(costs) & (costs > 0))
    front = usable[pareto_frontier(cost=costs[usable], accuracy=accs[usable])]
    if front.size >= 2:
        chart.line(x=costs[front], y=accs[front], color="#222222", step=True, width=1.5, label="Pareto frontier")
    for name, color in palette.items():  # after the frontier, so that no line hides a run
        mine = runs[runs["run"].map(labels) == name]
        chart.points(x=mine[column], y=mine["accuracy"], low=mine["ci_low"], high=mine["ci_high"], color=color)
    note = "Frontier: no cheaper run is as accurate (step line)."
    if priced and _overlay_kinetics(chart, problems, labels):
        note += " Dashed: Kinetics fit A − B·C^(−α) of the frontier."
    elif priced:
        note += " The Kinetics fit needs ≥ 4 frontier points."
    chart.note(note)
    return chart.render()


def coverage_vs_samples(problems: pd.DataFrame) -> Svg | None:
    """pass@k (coverage) against k with the fitted exp(a·k^b); None when no run kept sample pools.

    One curve per series, from its run with the largest pools: a smaller budget's pool shows the same
    curve over fewer k (generate once, evaluate every k ≤ n).
    """
    table = pass_at_k_table(problems)
    table = table[table.groupby("run")["k"].transform("count") >= 2]
    if table.empty:
        return None
    labels = series_labels(problems)
    palette = colors(labels)
    deepest: dict[str, str] = {}
    for run, rows in table.groupby("run", sort=False):
        name = labels[str(run)]
        if name not in deepest or rows["k"].max() > table.loc[table["run"] == deepest[name], "k"].max():
            deepest[name] = str(run)
    chart = Chart(title="Coverage: pass@k vs samples k", x_label="samples k (log scale)", y_label="pass@k")
    fitted = False
    for name, run in deepest.items():
        rows = table[table["run"] == run]
        color = palette[name]
        chart.line(x=rows["k"], y=rows["pass_at_k"], color=color, label=f"{name} ({run})")
        chart.points(x=rows["k"], y=rows["pass_at_k"], color=color)
        fitted |= _overlay_coverage(chart, problems[problems["run"] == run], color)
    chart.note(
        "Unbiased pass@k from each problem's samples (Chen et al. 2021), from each strategy's largest pools."
        + (" Dashed: fitted coverage(k) = exp(a·k^b) (Large Language Monkeys)." if fitted else "")
    )
    return chart.render()


# -- fits ------------------------------------------------------------------------------------------


def _overlay_power_law(chart: Chart, rows: pd.DataFrame, color: str) -> bool:
    if rows["budget_limit"].nunique() < 4:
        return False
    from ttscale.scaling import fit_power

    fit = _try(
        lambda: fit_power(
            budget=rows["budget_limit"].to_numpy(float),
            accuracy=rows["correct"].to_numpy(float),
            problem=rows["id"].to_numpy(str),
            n_boot=FIT_RESAMPLES,
        )
    )
    return fit is not None and _draw_fit(chart, fit, rows["budget_limit"].min(), rows["budget_limit"].max(), color)


def _overlay_kinetics(chart: Chart, problems: pd.DataFrame, labels: dict[str, str]) -> bool:
    from ttscale.scaling import fit_kinetics

    rows = problems.dropna(subset=["eflops"])
    rows = rows[rows["eflops"] > 0]
    if rows.empty:
        return False
    fit = _try(
        lambda: fit_kinetics(
            model=rows["run"].map(labels).to_numpy(str),
            cost=rows["eflops"].to_numpy(float),
            accuracy=rows["correct"].to_numpy(float),
            query=rows["id"].to_numpy(str),
            config=rows["run"].to_numpy(str),
            scope="dataset",
            n_boot=FIT_RESAMPLES,
        )
    )
    if fit is None:
        return False
    frontier = fit.details.get("frontier") or []
    costs = [p["cost"] for p in frontier]
    return bool(costs) and _draw_fit(chart, fit, min(costs), max(costs), "#222222")


def _overlay_coverage(chart: Chart, rows: pd.DataFrame, color: str) -> bool:
    from ttscale.scaling import fit_coverage_from_samples

    graded = rows.dropna(subset=["n_correct"])
    graded = graded[graded["n_samples"] > 0]
    if graded.empty:
        return False
    fit = _try(
        lambda: fit_coverage_from_samples(
            n=graded["n_samples"].to_numpy(float), correct=graded["n_correct"].to_numpy(float), n_boot=FIT_RESAMPLES
        )
    )
    top = float(2 ** math.floor(math.log2(graded["n_samples"].min())))
    return fit is not None and _draw_fit(chart, fit, 1.0, top, color)


def _draw_fit(chart: Chart, fit: Any, low: float, high: float, color: str, *, band: bool = True) -> bool:
    # A fit with warnings (a parameter at the edge of its range) has no trustworthy curve: leave it out.
    if fit.warnings or not (math.isfinite(fit.r2) and low > 0 and high > low):
        return False
    grid = np.geomspace(low, high, 60)
    mean, lo, hi = fit.predict(grid, interval=True)
    if band and np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)):
        chart.band(x=grid, low=np.clip(lo, 0, 1), high=np.clip(hi, 0, 1), color=color, opacity=0.08)
    chart.line(x=grid, y=np.clip(mean, 0, 1), color=color, dash=True, width=1.5)
    # One grey legend entry for all fitted curves: each curve already has its series' colour.
    chart.legend(f"fit: {fit.formula}", color="#666666", dash=True)
    return True


def _try(make: Any) -> Any:
    from ttscale.scaling import FitInputError

    try:
        with np.errstate(all="ignore"):
            return make()
    except (FitInputError, ValueError, np.linalg.LinAlgError, FloatingPointError):
        return None  # too few or degenerate points: the chart says a fit needs more data
