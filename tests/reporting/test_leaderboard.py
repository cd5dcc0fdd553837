"""The leaderboard ranks within budget-matched groups and warns about every comparison that is not."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.reporting.report_synthetic import make_run
from ttscale.reporting import budget_matched, leaderboard, load_runs


def test_matched_runs_form_one_group_ranked_by_accuracy_without_warnings(tmp_path: Path) -> None:
    make_run(tmp_path, "weak", problems=20, skill=(0.3,) * 5)
    make_run(tmp_path, "strong", strategy="best_of_n", problems=20, skill=(0.9,) * 5)
    board = leaderboard(load_runs(tmp_path))
    assert board.warnings == ()
    assert list(board.groups) == ["A"]
    rows = board.rows.set_index("run")
    assert rows.loc["strong", "rank"] == 1 and rows.loc["weak", "rank"] == 2
    assert rows.loc["strong", "accuracy"] > rows.loc["weak", "accuracy"]
    assert rows["ci_low"].le(rows["accuracy"]).all() and rows["ci_high"].ge(rows["accuracy"]).all()


def test_the_paired_difference_to_the_leader_has_an_interval_that_excludes_zero_when_it_should(tmp_path: Path) -> None:
    make_run(tmp_path, "never", problems=30, skill=(0.0,) * 5)
    make_run(tmp_path, "always", problems=30, skill=(1.0,) * 5)
    rows = leaderboard(load_runs(tmp_path)).rows.set_index("run")
    assert math.isnan(rows.loc["always", "delta"])
    assert rows.loc["never", "delta"] == pytest.approx(-1.0)
    assert rows.loc["never", "delta_high"] < 0


def test_unmatched_budgets_split_into_groups_and_carry_a_warning(sweep: Path) -> None:
    board = leaderboard(load_runs(sweep))
    assert len(board.groups) == 4  # 256, 512, 1k, 2k tokens
    assert len(board.warnings) == 1 and "Not budget-matched" in board.warnings[0]
    # Ranks restart in every group; each group shares one budget.
    for _, group in board.rows.groupby("group"):
        assert group["rank"].tolist() == list(range(1, len(group) + 1))
        assert group["budget"].nunique() == 1
        assert group["accuracy"].is_monotonic_decreasing
    # Groups read from small to large budgets.
    assert board.rows.drop_duplicates("group")["budget_limit"].tolist() == [128, 256, 1000, 2000]


def test_flop_budgets_priced_on_different_hardware_are_not_matched(tmp_path: Path) -> None:
    make_run(tmp_path, "b200", budget="3e11eflop", problems=4, hardware="B200")
    make_run(tmp_path, "h100", budget="3e11eflop", problems=4, hardware="H100")
    make_run(tmp_path, "tokens-b200", budget="1k", problems=4, hardware="B200")
    make_run(tmp_path, "tokens-h100", budget="1k", problems=4, hardware="H100")
    runs = load_runs(tmp_path, per="run").set_index("run")
    assert not budget_matched(runs.loc[["b200", "h100"]])
    # A token is a token on any hardware.
    assert budget_matched(runs.loc[["tokens-b200", "tokens-h100"]])
    assert not budget_matched(runs)
    board = leaderboard(load_runs(tmp_path))
    assert len(board.groups) == 3 and board.warnings


def test_different_problems_at_the_same_budget_are_not_compared(tmp_path: Path) -> None:
    make_run(tmp_path, "ten", problems=10)
    make_run(tmp_path, "five", problems=5)
    make_run(tmp_path, "easy", problems=5, levels="1")
    board = leaderboard(load_runs(tmp_path))
    assert len(board.groups) == 3
    assert (board.rows["rank"] == 1).all()
    assert "Not budget-matched" in board.warnings[0]


def test_errors_and_overspending_are_warned_about(tmp_path: Path) -> None:
    make_run(tmp_path, "flaky", problems=4, error_ids=("arith-L1-0000",))
    board = leaderboard(load_runs(tmp_path))
    assert any("flaky: 1 problem(s) ended in an error" in w for w in board.warnings)
    problems = load_runs(tmp_path)
    problems.loc[0, "spent"] = 5000.0  # a budget the ledger would never let pass: must be flagged
    assert any("spent more than the budget" in w for w in leaderboard(problems).warnings)


def test_the_paired_interval_is_the_package_bootstrap_and_resamples_are_validated(tmp_path: Path) -> None:
    make_run(tmp_path, "weak", problems=40, skill=(0.3,) * 5)
    make_run(tmp_path, "strong", problems=40, skill=(0.8,) * 5)
    problems = load_runs(tmp_path)
    rows = leaderboard(problems, resamples=500, seed=3).rows.set_index("run")
    # The same draws, by hand: the weak run's per-problem differences to the leader, resampled with seed 3.
    weak = problems[problems["run"] == "weak"].set_index("id")["correct"].astype(float)
    strong = problems[problems["run"] == "strong"].set_index("id")["correct"].astype(float)
    diff = (weak - strong.loc[weak.index]).to_numpy()
    draws = np.random.default_rng(3).integers(0, diff.size, size=(500, diff.size))
    low, high = np.quantile(diff[draws].mean(axis=1), [0.025, 0.975])
    assert rows.loc["weak", "delta"] == pytest.approx(diff.mean())
    assert rows.loc["weak", "delta_low"] == pytest.approx(low)
    assert rows.loc["weak", "delta_high"] == pytest.approx(high)
    with pytest.raises(ValueError, match="resamples must be an integer ≥ 1, got 0"):
        leaderboard(problems, resamples=0)
