"""Reports as text: one self-contained HTML file (inline CSS and SVG, nothing fetched) or Markdown."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ttscale.reporting.allocation_searches import allocation_markdown, allocation_view
from ttscale.reporting.charts import human
from ttscale.reporting.comparisons import comparison_markdown, comparison_view
from ttscale.reporting.figures import accuracy_vs_budget, coverage_vs_samples, pareto_vs_cost
from ttscale.reporting.frames import pass_at_k_table, run_table
from ttscale.reporting.leaderboard import Leaderboard, leaderboard

if TYPE_CHECKING:
    import pandas as pd

def render_html(
    problems: pd.DataFrame, *, title: str = "ttscale report", comparisons: Sequence[dict[str, Any]] = (),
    allocations: Sequence[dict[str, Any]] = (),
) -> str:
    """The whole report as one HTML document: warnings, leaderboard, paired comparisons (compare.json as read by
    `find_comparisons`), allocation searches (`find_allocations`), charts, per-level accuracy, run details."""
    from markupsafe import Markup

    board = leaderboard(problems)
    show_model = board.rows["model"].nunique() > 1  # one model: the subtitle names it, the width goes to numbers
    head = [(h, h in _NUMERIC) for h in _HEAD if show_model or h != "Model"]
    levels = level_table(problems)
    return _template().render(
        title=title,
        subtitle=_subtitle(problems),
        warnings=board.warnings,
        head=head,
        show_model=show_model,
        rows=_leaderboard_rows(board),
        groups=list(board.groups.items()),
        comparisons=[comparison_view(c) for c in comparisons],
        allocations=[{**view, "chart": Markup(view["chart"])} for view in map(allocation_view, allocations)],
        charts=[Markup(svg) for svg in _charts(problems)],  # our own SVG, its labels escaped where it was drawn
        levels=None if levels.empty else {
            "columns": [str(c) for c in levels.columns],
            "rows": [(str(level), [_pct(v) for v in row]) for level, row in levels.iterrows()],
        },
        detail_head=_DETAIL_HEAD,
        details=[{"name": row["run"], "path": str(row["run_dir"]), "cells": _details(row)}
                 for _, row in board.rows.iterrows()],
        generated=time.strftime("%Y-%m-%d %H:%M"),
    )


@lru_cache(maxsize=1)
def _template() -> Any:
    import jinja2

    environment = jinja2.Environment(loader=jinja2.PackageLoader("ttscale.reporting", "templates"), autoescape=True,
                                     undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return environment.get_template("report.html.j2")


def render_markdown(
    problems: pd.DataFrame, *, title: str = "ttscale report", comparisons: Sequence[dict[str, Any]] = (),
    allocations: Sequence[dict[str, Any]] = (),
) -> str:
    """The leaderboard, warnings, paired comparisons, allocation searches, per-level accuracy and run details as
    GitHub-flavoured Markdown."""
    board = leaderboard(problems)
    lines = [f"# {title}", "", _subtitle(problems), ""]
    lines += [f"> **⚠ Warning:** {w}" + "\n>" for w in board.warnings]
    if board.warnings:
        lines[-1] = lines[-1].rstrip("\n>")
        lines.append("")
    lines += ["## Leaderboard", ""]
    head = [
        "group",
        "#",
        "run",
        "strategy",
        "model",
        "budget",
        "accuracy (95% CI)",
        "Δ vs #1 (95% CI)",
        "tokens / problem",
        "FLOPs / problem",
        "eFLOPs / problem",
        "wall time",
    ]
    lines += [_md_row(head), _md_row(["---"] * len(head))]
    for _, row in board.rows.iterrows():
        lines.append(
            _md_row(
                [
                    row["group"],
                    str(row["rank"]),
                    row["run"],
                    row["strategy"],
                    row["model"],
                    f"{row['budget']} ({_other_units(row)})",
                    _acc(row),
                    _delta(row),
                    f"{row['mean_tokens']:.0f}",
                    _sci(row["mean_flops"]),
                    _sci(row["mean_eflops"]),
                    _wall(row),
                ]
            )
        )
    lines += [""] + [f"- **{g}**: {d}" for g, d in board.groups.items()]
    lines += ["", "Ranked by accuracy within each budget-matched group; Δ is paired over the same problems.", ""]
    for comparison in comparisons:
        lines += [comparison_markdown(comparison), "", f"From `{comparison['path']}`.", ""]
    for search in allocations:
        lines += [allocation_markdown(search), "", f"From `{search['path']}`.", ""]
    levels = level_table(problems)
    if not levels.empty:
        lines += ["## Accuracy by difficulty level", "", _md_row(["level", *levels.columns])]
        lines.append(_md_row(["---"] * (len(levels.columns) + 1)))
        for level, row in levels.iterrows():
            lines.append(_md_row([str(level), *(_pct(v) for v in row)]))
        lines.append("")
    passes = pass_at_k_table(problems)
    if not passes.empty:  # runs that kept their sample pools: coverage as Large Language Monkeys measure it
        lines += ["## pass@k (unbiased; 95% CI over problems)", "", _md_row(["run", "k", "pass@k", "95% CI"])]
        lines.append(_md_row(["---"] * 4))
        lines += [_md_row([str(r.run), str(r.k), _pct(r.pass_at_k), f"{_pct(r.ci_low)}–{_pct(r.ci_high)}"])
                  for r in passes.itertuples()]
        lines.append("")
    lines += ["## Runs", "", _md_row(["run", *_DETAIL_HEAD]), _md_row(["---"] * (len(_DETAIL_HEAD) + 1))]
    lines += [_md_row([row["run"], *_details(row)]) for _, row in board.rows.iterrows()]
    return "\n".join(lines) + "\n"


def level_table(problems: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per difficulty level (rows) and run (columns); empty when the task has no levels."""
    rows = problems.dropna(subset=["level"])
    if rows.empty:
        return rows.iloc[0:0]
    table = rows.pivot_table(index="level", columns="run", values="correct", aggfunc="mean", sort=False)
    table.index = [int(v) if float(v).is_integer() else v for v in table.index]
    return table[[r for r in dict.fromkeys(problems["run"]) if r in table.columns]].sort_index()


# -- pieces ----------------------------------------------------------------------------------------


def _charts(problems: pd.DataFrame) -> list[str]:
    charts = [str(accuracy_vs_budget(problems, unit=u)) for u in dict.fromkeys(problems["budget_unit"])]
    charts.append(str(pareto_vs_cost(problems)))
    coverage = coverage_vs_samples(problems)
    if coverage is not None:
        charts.append(str(coverage))
    return charts


def _subtitle(problems: pd.DataFrame) -> str:
    runs = run_table(problems)
    versions = sorted({str(v) for v in runs["ttscale_version"].dropna()})
    return (
        f"{len(runs)} runs · {problems['id'].nunique()} distinct problems · tasks: {', '.join(runs['task'].unique())}"
        f" · models: {', '.join(runs['model'].unique())}" + (f" · ttscale {', '.join(versions)}" if versions else "")
    )


_HEAD = ("Group", "#", "Run", "Model", "Budget / problem", "Accuracy (95% CI)", "Δ vs #1 (95% CI)", "pass@1",
         "Tokens / problem", "Compute / problem", "Wall time")
_NUMERIC = {"#", "pass@1", "Tokens / problem", "Compute / problem", "Wall time"}


def _leaderboard_rows(board: Leaderboard) -> list[dict[str, Any]]:
    """The leaderboard's cells as text (the template lays them out)."""
    rows, previous = [], None
    for _, row in board.rows.iterrows():
        low, high, value = (100 * float(row[k]) for k in ("ci_low", "ci_high", "accuracy"))
        delta = _delta(row)
        rows.append({
            "first": previous is not None and row["group"] != previous,
            "group": row["group"], "rank": row["rank"], "run": row["run"], "params": str(row["params"]),
            "strategy": row["strategy"], "model": row["model"], "budget": row["budget"],
            "other_units": [u for u in _other_units(row).split(" · ") if u],
            "accuracy": f"{row['accuracy']:.1%}", "ci": f"[{row['ci_low']:.1%}, {row['ci_high']:.1%}]",
            "ci_left": f"{low:.1f}", "ci_width": f"{max(high - low, 1):.1f}", "ci_mark": f"{value:.1f}",
            "problems": row["problems"],
            "significant": math.isfinite(row["delta_high"]) and (row["delta_high"] < 0 or row["delta_low"] > 0),
            "delta": delta.split(" [", 1)[0], "delta_ci": "[" + delta.split(" [", 1)[1] if " [" in delta else "",
            "pass1": _pct(row.get("pass@1", math.nan)),
            "tokens": f"{row['mean_tokens']:.0f}", "prompt_tokens": f"{row['mean_prompt_tokens']:.0f}",
            "flops": _sci(row["mean_flops"]), "eflops": _sci(row["mean_eflops"]),
            "wall": _seconds(row["run_wall_seconds"]), "latency": _seconds(row["mean_wall_seconds"]),
        })
        previous = row["group"]
    return rows


def _other_units(row: Any) -> str:
    """The budget in the units it is not set in, converted at the run's cost per unit (≈)."""
    names = {"tokens": "tokens", "flops": "FLOPs", "eflops": "eFLOPs"}
    own = {"tokens": "tokens", "flop": "flops", "eflop": "eflops"}.get(str(row["budget_unit"]))
    parts = [f"{_sci(row[f'budget_{u}'])} {name}" for u, name in names.items() if u != own]
    return " · ".join(f"≈ {p}" for p in parts if not p.startswith("—"))


_DETAIL_HEAD = ("task", "parameters", "seed", "grader (cross-check disagreement)", "versions", "created")


def _details(row: Any) -> list[str]:
    rate = row["grader_disagreement_rate"]
    grader = f"{row['grader']} ({_pct(rate)})" if math.isfinite(rate) else str(row["grader"])
    versions = ", ".join(
        f"{name} {row[key]}"
        for name, key in (
            ("ttscale", "ttscale_version"),
            ("vLLM", "vllm_version"),
            ("torch", "torch_version"),
            ("Python", "python"),
        )
        if _present(row[key])
    )
    return [
        str(row["task"]),
        str(row["params"]) or "-",
        str(row["seed"]),
        grader,
        versions or "-",
        str(row["created"] or "-"),
    ]


def _acc(row: Any) -> str:
    return f"{row['accuracy']:.1%} [{row['ci_low']:.1%}, {row['ci_high']:.1%}]  n={row['problems']}"


def _delta(row: Any) -> str:
    if not math.isfinite(row["delta"]):
        return "—"
    return f"{100 * row['delta']:+.1f} pts [{100 * row['delta_low']:+.1f}, {100 * row['delta_high']:+.1f}]"


def _wall(row: Any) -> str:
    return f"{_seconds(row['run_wall_seconds'])} (latency {_seconds(row['mean_wall_seconds'])})"


def _seconds(value: Any) -> str:
    return f"{float(value):.1f} s" if _present(value) else "—"


def _sci(value: Any) -> str:
    return human(float(value)) if _present(value) else "—"


def _pct(value: Any) -> str:
    return f"{float(value):.1%}" if _present(value) else "—"


def _present(value: Any) -> bool:
    if value is None:
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return bool(str(value))


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
