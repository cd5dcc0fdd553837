"""Looking at results: run directories as DataFrames, a budget-matched leaderboard, charts and reports.

    >>> import ttscale
    >>> problems = ttscale.load_runs(["runs/sc", "runs/bon"])          # one row per (run, problem)
    >>> runs = ttscale.load_runs(["runs/sc", "runs/bon"], per="run")   # one row per run
    >>> from ttscale.reporting import accuracy_vs_budget, leaderboard, render_html
    >>> board = leaderboard(problems)      # ranked within budget-matched groups, with warnings
    >>> accuracy_vs_budget(problems)       # a chart (matplotlib, as inline SVG); new_chart/to_svg for your own

Needs pandas and matplotlib (the `report` extra); nothing here is imported by `import ttscale`.
"""

from ttscale.reporting.charts import PALETTE, Svg, new_chart, to_svg
from ttscale.reporting.comparisons import find_comparisons
from ttscale.reporting.figures import accuracy_vs_budget, coverage_vs_samples, pareto_vs_cost, series_labels
from ttscale.reporting.frames import load_runs, pass_at_k_table, run_table
from ttscale.reporting.leaderboard import Leaderboard, budget_matched, leaderboard
from ttscale.reporting.render import level_table, render_html, render_markdown
from ttscale.runstore.runs import RunLoadError, find_runs

__all__ = [
    "PALETTE",
    "Leaderboard",
    "RunLoadError",
    "Svg",
    "accuracy_vs_budget",
    "budget_matched",
    "coverage_vs_samples",
    "find_comparisons",
    "find_runs",
    "leaderboard",
    "level_table",
    "load_runs",
    "new_chart",
    "pareto_vs_cost",
    "pass_at_k_table",
    "render_html",
    "render_markdown",
    "run_table",
    "series_labels",
    "to_svg",
]
