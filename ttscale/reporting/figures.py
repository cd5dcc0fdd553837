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

from ttscale.reporting.charts import INK, PALETTE, Svg, legend_entry, new_chart, to_svg
from ttscale.reporting.frames import pass_at_k_table, run_table
from ttscale.stats.metrics import wilson_interval

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from ttscale.reporting.charts import LegendEntry

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
    fig, ax = new_chart(title=f"Accuracy vs budget ({unit})", x_label=f"budget per problem ({unit}, log scale)")
    legend: list[LegendEntry] = []
    fitted = False
    for k, (name, color) in enumerate(palette.items()):
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
        legend.append(legend_entry(name, color=color))
        if len(xs) > 1:
            ax.fill_between(xs, low, high, color=color, alpha=0.18, linewidth=0, gid=f"band-{k}")
            ax.plot(xs, acc, color=color, linewidth=2, gid=f"curve-{k}")
            _points(ax, xs, acc, color=color, gid=f"points-{k}")
        else:  # one budget: no curve to draw, but the interval still shows
            _points(ax, xs, acc, low=low, high=high, color=color, gid=f"points-{k}")
        fitted |= _overlay_power_law(ax, legend, rows, color, gid=f"fit-{k}")
    note = "Bands and bars: 95% Wilson intervals over problems." + (
        " Dashed: fitted acc(C) = A − B·C^(−α) with its 95% bootstrap band."
        if fitted
        else " A fitted A − B·C^(−α) appears once a strategy has ≥ 4 budgets that determine it."
    )
    return to_svg(fig, legend=legend, note=note)


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
    fig, ax = new_chart(title=title, x_label=f"mean {unit} per problem (log scale)")
    legend = [legend_entry(name, color=color) for name, color in palette.items()]
    from ttscale.scaling import pareto_frontier

    costs, accs = runs[column].to_numpy(dtype=float), runs["accuracy"].to_numpy(dtype=float)
    usable = np.flatnonzero(np.isfinite(costs) & (costs > 0))
    front = usable[pareto_frontier(cost=costs[usable], accuracy=accs[usable])]
    if front.size >= 2:
        # A frontier holds its level until the next point: a step after each run on it.
        ax.plot(costs[front], accs[front], color=INK, linewidth=1.5, drawstyle="steps-post", gid="frontier")
        legend.append(legend_entry("Pareto frontier", color=INK))
    for k, (name, color) in enumerate(palette.items()):  # after the frontier, so that no line hides a run
        mine = runs[runs["run"].map(labels) == name]
        _points(
            ax, mine[column], mine["accuracy"], low=mine["ci_low"], high=mine["ci_high"], color=color, gid=f"points-{k}"
        )
    note = "Frontier: no cheaper run is as accurate (step line)."
    if priced and _overlay_kinetics(ax, legend, problems, labels):
        note += " Dashed: Kinetics fit A − B·C^(−α) of the frontier."
    elif priced:
        note += " The Kinetics fit needs ≥ 4 frontier points."
    return to_svg(fig, legend=legend, note=note)


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
    fig, ax = new_chart(title="Coverage: pass@k vs samples k", x_label="samples k (log scale)", y_label="pass@k")
    legend: list[LegendEntry] = []
    fitted = False
    for k, (name, run) in enumerate(deepest.items()):
        rows = table[table["run"] == run]
        color = palette[name]
        ax.plot(rows["k"], rows["pass_at_k"], color=color, linewidth=2, gid=f"curve-{k}")
        _points(ax, rows["k"], rows["pass_at_k"], color=color, gid=f"points-{k}")
        legend.append(legend_entry(f"{name} ({run})", color=color))
        fitted |= _overlay_coverage(ax, legend, problems[problems["run"] == run], color, gid=f"fit-{k}")
    note = "Unbiased pass@k from each problem's samples (Chen et al. 2021), from each strategy's largest pools." + (
        " Dashed: fitted coverage(k) = exp(a·k^b) (Large Language Monkeys)." if fitted else ""
    )
    return to_svg(fig, legend=legend, note=note)


def _points(ax: Axes, x: Any, y: Any, *, color: str, gid: str, low: Any = None, high: Any = None) -> None:
    """Markers (SVG group `gid`), with vertical error bars from `low` to `high` (group `gid`-bars) when given.

    Points that a log axis cannot show (cost 0, NaN) are left out rather than drawn at its edge.
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(xs) & np.isfinite(ys) & (xs > 0)
    style: dict[str, Any] = {"color": color, "markersize": 6, "markeredgewidth": 1.5, "zorder": 3}
    if low is None or high is None:
        ax.plot(xs[keep], ys[keep], linestyle="none", marker="o", gid=gid, **style)
        return
    spread = np.clip([ys - np.asarray(low, dtype=float), np.asarray(high, dtype=float) - ys], 0, None)
    drawn = ax.errorbar(
        xs[keep], ys[keep], yerr=spread[:, keep], fmt="o", capsize=4, elinewidth=1.5, capthick=1.5, **style
    )
    data, caps, bars = drawn.lines
    assert data is not None  # fmt="o" draws the markers
    data.set_gid(gid)
    for i, part in enumerate((*bars, *caps)):
        part.set_gid(f"{gid}-bars-{i}")


# -- fits ------------------------------------------------------------------------------------------


def _overlay_power_law(ax: Axes, legend: list[LegendEntry], rows: pd.DataFrame, color: str, *, gid: str) -> bool:
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
    low, high = rows["budget_limit"].min(), rows["budget_limit"].max()
    return fit is not None and _draw_fit(ax, legend, fit, low, high, color, gid=gid)


def _overlay_kinetics(
    ax: Axes, legend: list[LegendEntry], problems: pd.DataFrame, labels: dict[str, str]
) -> bool:
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
    return bool(costs) and _draw_fit(ax, legend, fit, min(costs), max(costs), INK, gid="fit-frontier")


def _overlay_coverage(ax: Axes, legend: list[LegendEntry], rows: pd.DataFrame, color: str, *, gid: str) -> bool:
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
    return fit is not None and _draw_fit(ax, legend, fit, 1.0, top, color, gid=gid)


def _draw_fit(
    ax: Axes, legend: list[LegendEntry], fit: Any, low: float, high: float, color: str, *, gid: str
) -> bool:
    """The fitted curve, dashed (SVG group `gid`), over its bootstrap band (`gid`-band)."""
    # A fit with warnings (a parameter at the edge of its range) has no trustworthy curve: leave it out.
    if fit.warnings or not (math.isfinite(fit.r2) and low > 0 and high > low):
        return False
    grid = np.geomspace(low, high, 60)
    mean, lo, hi = fit.predict(grid, interval=True)
    if np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)):
        ax.fill_between(
            grid, np.clip(lo, 0, 1), np.clip(hi, 0, 1), color=color, alpha=0.08, linewidth=0, gid=f"{gid}-band"
        )
    ax.plot(grid, np.clip(mean, 0, 1), color=color, linewidth=1.5, linestyle=(0, (4, 2.7)), gid=gid)
    # One grey legend entry for all fitted curves: each curve already has its series' colour.
    entry = f"fit: {fit.formula}"
    if all(label != entry for _, label in legend):
        legend.append(legend_entry(entry, color="#666666", dashed=True))
    return True


def _try(make: Any) -> Any:
    from ttscale.scaling import FitInputError

    try:
        with np.errstate(all="ignore"):
            return make()
    except (FitInputError, ValueError, np.linalg.LinAlgError, FloatingPointError):
        return None  # too few or degenerate points: the chart says a fit needs more data
