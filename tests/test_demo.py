"""`make demo` stays a 3-minute first run on every CPU kind (issue 64): its planned work, the most tokens its command
lets the run generate (its total budget, or its budget per problem times its problems), must fit in what 3 minutes
allow at the slowest rate measured for that command (benchmarks/results/demo.json, `python benchmarks/demo.py
--record`), after the slowest measured engine start and end. A demo that grows, or a new command nobody measured,
fails here instead of on a user's first hour."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ttscale.budget import Budget
from ttscale.cli import parse_args

REPO = Path(__file__).resolve().parents[1]
FIRST_RUN_SECONDS = 180.0


def _benchmark() -> Any:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("benchmark_demo", REPO / "benchmarks" / "demo.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


demo = _benchmark()


def planned_tokens(command: list[str]) -> float:
    """The most generated tokens the run of `command` (`ttscale run ...`) may spend: its total budget, else its
    budget per problem times its problems (`--limit`)."""
    args = parse_args(command[1:])
    each, whole = Budget.parse_with_total(args.budget, args.total_budget)
    assert each.unit == "tokens", f"the demo's budget must be in tokens to be bounded in time, got {each.unit}"
    if args.limit is None:
        raise AssertionError("the demo must name its problems (--limit): the task has hundreds")
    per_problem = each.limit * args.limit
    return per_problem if whole is None else min(whole.limit, per_problem)


def time_bound(rows: list[dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    """The tokens 3 minutes allow at the slowest measured rate after the slowest measured engine start and end; and
    the row that set the rate."""
    slowest = min(rows, key=lambda r: r["slowest"]["tokens_per_s"])
    outside = max(r["slowest"]["outside_run_s"] for r in rows)
    return (FIRST_RUN_SECONDS - outside) * slowest["slowest"]["tokens_per_s"], slowest


def measured_rows(command: list[str]) -> list[dict[str, Any]]:
    rows = json.loads(demo.RESULTS.read_text(encoding="utf-8"))["rows"]
    return [r for r in rows if r["command"] == " ".join(command)]


def test_the_demo_s_planned_work_fits_three_minutes_at_the_slowest_measured_cpu() -> None:
    command = demo.demo_command()
    rows = measured_rows(command)
    assert rows, (f"`{' '.join(command)}` was measured on no CPU: run `python benchmarks/demo.py --record` on the "
                  "slowest machine you have (an AVX2-only one computes float32)")
    bound, slowest = time_bound(rows)
    planned = planned_tokens(command)
    assert planned <= bound, (
        f"the demo may generate {planned:,.0f} tokens, but 3 minutes allow {bound:,.0f} at "
        f"{slowest['slowest']['tokens_per_s']} tok/s ({slowest['provenance']['cpu']}, {slowest['date']})")
    # Each measured run came in under 3 minutes as well, engine start included.
    assert all(run["total_s"] <= FIRST_RUN_SECONDS for row in rows for run in row["runs"])


def test_the_rule_refuses_the_demo_that_took_14_minutes_on_avx2() -> None:
    # main at 420efe1: beam search at 8k on 20 problems of every level, no total (13 m 39 s on an AVX2-only EPYC).
    old = ["ttscale", "run", "--strategy", "beam", "--budget", "8k", "--task", "arithmetic", "--limit", "20"]
    assert planned_tokens(old) == 160_000
    bound, _ = time_bound(measured_rows(demo.demo_command()))
    assert planned_tokens(old) > bound
    # A total budget bounds the run whatever its problems, and a larger total than the problems' budgets changes
    # nothing.
    assert planned_tokens([*old, "--total-budget", "10k"]) == 10_000
    assert planned_tokens([*old, "--total-budget", "1000k"]) == 160_000


def test_the_rule_needs_a_limit() -> None:
    with pytest.raises(AssertionError, match="--limit"):
        planned_tokens(["ttscale", "run", "--strategy", "beam", "--budget", "8k"])
