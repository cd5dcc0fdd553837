"""Looking at results: run directories as DataFrames, a budget-matched leaderboard, charts and reports.

    >>> import ttscale
    >>> problems = ttscale.load_runs(["runs/sc", "runs/bon"])          # one row per (run, problem)
    >>> runs = ttscale.load_runs(["runs/sc", "runs/bon"], per="run")   # one row per run
    >>> from ttscale.reporting import leaderboard, render_html
    >>> board = leaderboard(problems)      # ranked within budget-matched groups, with warnings

Needs pandas (the `report` extra); nothing here is imported by `import ttscale`.
"""

from ttscale.reporting.comparisons import find_comparisons
from ttscale.reporting.figures import accuracy_vs_budget, coverage_vs_samples, pareto_vs_cost, series_labels
from ttscale.reporting.frames import load_runs, pass_at_k_table, run_table
from ttscale.reporting.leaderboard import Leaderboard, budget_matched, leaderboard
from ttscale.reporting.render import level_table, render_html, render_markdown
from ttscale.reporting.svg import Chart, Svg
from ttscale.runs import RunLoadError, find_runs

__all__ = [
    "Chart",
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
    "pareto_vs_cost",
    "pass_at_k_table",
    "render_html",
    "render_markdown",
    "run_table",
    "series_labels",
]
