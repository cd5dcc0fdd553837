"""`ttscale.load_runs`: the problem frame and the run frame, on SYNTHETIC run directories."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

import ttscale
from tests.reporting.report_synthetic import make_run
from ttscale.budget import Budget, Ledger
from ttscale.reporting import RunLoadError, load_runs, pass_at_k_table, run_table
from ttscale.schema import RunRecord
from ttscale.stats.metrics import pass_at_k, wilson_interval


def test_the_synthetic_runs_have_the_real_layout(sweep: Path) -> None:
    # If the runner's record or ledger grows a field, the synthetic builder must follow it.
    record = json.loads((sweep / "sc-1k" / "results.jsonl").read_text().splitlines()[0])
    assert set(record) == {f.name for f in fields(RunRecord)} - {"unfinished"}  # written only when True
    assert set(Ledger(Budget.parse("1k")).to_dict()) <= set(record["ledger"])
    assert {"flops", "eflops", "memory_bytes", "wall_seconds"} <= set(record["ledger"])
    config = json.loads((sweep / "sc-1k" / "config.json").read_text())
    assert {"identity", "spec", "environment", "command", "created"} <= set(config)


def test_one_row_per_run_and_problem_with_the_ledger_in_every_unit(sweep: Path) -> None:
    problems = load_runs(sweep)
    assert len(problems) == 6 * 20 and problems["run"].nunique() == 6
    assert not problems.duplicated(["run", "id"]).any()
    row = problems[(problems["run"] == "sc-1k") & (problems["id"] == "arith-L1-0000")].iloc[0]
    record = json.loads((sweep / "sc-1k" / "results.jsonl").read_text().splitlines()[0])
    assert row["generated_tokens"] == record["ledger"]["generated_tokens"]
    assert row["eflops"] == pytest.approx(record["ledger"]["eflops"])
    assert row["flops"] == pytest.approx(record["ledger"]["flops"])
    assert row["n_samples"] == len(record["samples"])
    assert row["n_correct"] == sum(s["answer"] == record["reference"] for s in record["samples"])
    assert (row["strategy"], row["budget"], row["budget_unit"], row["model"]) == (
        "self_consistency",
        "1k tokens",
        "tokens",
        "embedded",
    )
    assert row["vllm_version"] == "0.32.0" and row["grader"] == "arithmetic grader"


def test_run_frame_accuracy_ci_and_pass_at_k_match_the_metrics(sweep: Path) -> None:
    problems = load_runs(sweep)
    runs = load_runs(sweep, per="run").set_index("run")
    mine = problems[problems["run"] == "sc-256"]
    correct = int(mine["correct"].sum())
    assert runs.loc["sc-256", "accuracy"] == correct / 20
    assert (runs.loc["sc-256", "ci_low"], runs.loc["sc-256", "ci_high"]) == pytest.approx(wilson_interval(correct, 20))
    expected = sum(
        pass_at_k(n=int(n), c=int(c), k=4) for n, c in zip(mine["n_samples"], mine["n_correct"], strict=True)
    )
    assert runs.loc["sc-256", "pass@4"] == pytest.approx(expected / 20)
    # The same pool size for every problem of a token budget: k goes up to it and stops there.
    smallest = int(mine["n_samples"].min())
    ks = pass_at_k_table(mine)["k"].tolist()
    assert ks[-1] <= smallest < 2 * ks[-1] and ks[0] == 1


def test_the_budget_is_given_in_every_unit(sweep: Path, tmp_path: Path) -> None:
    make_run(tmp_path, "eflop-run", budget="3e11eflop", problems=5)
    runs = load_runs([sweep / "sc-1k", tmp_path / "eflop-run"], per="run").set_index("run")
    tokens_run, eflop_run = runs.loc["sc-1k"], runs.loc["eflop-run"]
    assert tokens_run["budget_tokens"] == 1000
    # Converted at the run's own price: the limit times eFLOPs per token spent.
    per_token = tokens_run["mean_eflops"] / tokens_run["mean_spent"]
    assert tokens_run["budget_eflops"] == pytest.approx(1000 * per_token)
    assert eflop_run["budget_eflops"] == 3e11 and eflop_run["budget"] == "3e+11 eflop"
    assert eflop_run["budget_tokens"] == pytest.approx(3e11 * eflop_run["mean_tokens"] / eflop_run["mean_spent"])
    assert eflop_run["mean_spent"] <= 3e11


def test_unpriced_runs_have_no_compute_means(tmp_path: Path) -> None:
    make_run(tmp_path, "plain", problems=4, priced=False)
    runs = load_runs(tmp_path, per="run")
    assert math.isnan(runs.loc[0, "mean_eflops"]) and math.isnan(runs.loc[0, "budget_flops"])
    assert runs.loc[0, "budget_tokens"] == 1000


def test_folders_are_searched_and_same_named_runs_get_distinct_labels(tmp_path: Path) -> None:
    make_run(tmp_path / "a", "run", problems=3)
    make_run(tmp_path / "b", "run", problems=3)
    problems = load_runs(tmp_path)
    assert sorted(problems["run"].unique()) == ["a/run", "b/run"]
    # The same directory named twice is read once.
    assert len(load_runs([tmp_path / "a" / "run", tmp_path / "a" / "run"])) == 3


def test_a_torn_last_line_and_a_missing_config_are_tolerated(tmp_path: Path) -> None:
    folder = make_run(tmp_path, "partial", problems=4)
    (folder / "config.json").unlink()
    (folder / "summary.json").unlink()
    with (folder / "results.jsonl").open("a") as handle:
        handle.write('{"id": "arith-L5-0000", "correct": tr')  # a run killed mid-write
    from ttscale.runstore.runs import TornTailWarning

    with pytest.warns(TornTailWarning, match="torn last line was left out"):
        problems = load_runs(folder)
    assert len(problems) == 4
    assert problems["budget"].iloc[0] == "1k tokens" and problems["strategy"].iloc[0] == "self_consistency"
    assert math.isnan(run_table(problems).loc[0, "run_wall_seconds"])


def test_errors_count_as_wrong_and_are_counted(tmp_path: Path) -> None:
    make_run(tmp_path, "flaky", problems=4, skill=(1.0,) * 5, error_ids=("arith-L2-0000",))
    runs = load_runs(tmp_path, per="run")
    assert runs.loc[0, "errors"] == 1 and runs.loc[0, "correct"] == 3


@pytest.mark.parametrize("make", ["missing", "empty-dir", "empty-results"])
def test_paths_that_are_not_runs_raise_one_line_errors(tmp_path: Path, make: str) -> None:
    path = tmp_path / "x"
    if make == "empty-dir":
        path.mkdir()
    elif make == "empty-results":
        path.mkdir()
        (path / "results.jsonl").write_text("")
    with pytest.raises(RunLoadError) as info:
        load_runs(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(RunLoadError):
        load_runs([])
    with pytest.raises(ValueError, match="per must be"):
        load_runs(path, per="level")  # type: ignore[arg-type]


def test_load_runs_is_exported_lazily_and_import_ttscale_stays_light(sweep: Path) -> None:
    assert ttscale.load_runs is load_runs
    code = (
        "import sys, ttscale; print(sorted(m for m in ('pandas', 'matplotlib', 'vllm', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ttscale.nope
