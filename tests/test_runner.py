"""The runner on the real engine: run files, budgets, resume only what is unfinished."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ttscale.pipeline import execute
from ttscale.running.runner import RunSpec, prepare
from ttscale.runstore.storage import RESULTS, RunDirError
from ttscale.runstore.writer import open_run

pytestmark = pytest.mark.slow


def run(sync_engine: Any, spec: RunSpec, out: Path, *, resume: bool = False) -> dict[str, Any]:
    prepared = prepare(spec)
    # As the run pipeline opens it: a resumed run's identity checked, a new run's config.json with its engine.
    writer = open_run(out, resume=resume, prepare=lambda stored: prepared, argv=["test"],
                      engine=sync_engine.engine.describe())

    async def go() -> dict[str, Any]:
        with writer:
            return await execute(sync_engine.engine, writer, progress=False)

    result: dict[str, Any] = sync_engine.loop.run(go())
    return result


SPEC = RunSpec(
    strategy="self_consistency", budget="600", task="arithmetic", limit=5, params={"max_tokens": "96"}
)


def test_run_writes_config_results_and_summary(sync_engine: Any, tmp_path: Path) -> None:
    summary = run(sync_engine, SPEC, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["identity"]["strategy"] == "self_consistency"
    assert config["identity"]["budget"] == {"limit": 600.0, "unit": "tokens"}
    assert config["environment"]["engine"]["vllm_version"]
    records = [json.loads(line) for line in (tmp_path / RESULTS).read_text().splitlines()]
    assert sorted(r["id"] for r in records) == sorted(p.id for p in prepare(SPEC).problems)
    for r in records:
        assert r["ledger"]["generated_tokens"] <= 600
        assert r["ledger"]["generated_tokens"] == sum(s["num_tokens"] for s in r["samples"])
        assert len(r["samples"]) == 6  # 600 // 96
        assert r["correct"] == (r["prediction"] is not None and int(r["prediction"]) == int(r["reference"]))
    assert summary["problems"] == 5 and summary["over_budget"] == 0
    assert summary["correct"] == sum(r["correct"] for r in records)
    lo, hi = summary["accuracy_ci95"]
    assert lo <= summary["accuracy"] <= hi
    assert json.loads((tmp_path / "summary.json").read_text())["problems"] == 5


def test_resume_runs_only_unfinished_problems(sync_engine: Any, tmp_path: Path) -> None:
    run(sync_engine, SPEC, tmp_path)
    lines = (tmp_path / RESULTS).read_text().splitlines(keepends=True)
    kept = lines[:2]
    (tmp_path / RESULTS).write_text("".join(kept) + lines[2][:15])  # two finished, one torn mid-write
    summary = run(sync_engine, SPEC, tmp_path, resume=True)
    records = [json.loads(line) for line in (tmp_path / RESULTS).read_text().splitlines()]
    assert len(records) == 5 and len({r["id"] for r in records}) == 5
    assert [json.dumps(r) for r in records[:2]] == [json.dumps(json.loads(line)) for line in kept]
    assert summary["resumed"] is True and summary["problems"] == 5


def test_resume_refuses_a_different_run(sync_engine: Any, tmp_path: Path) -> None:
    run(sync_engine, SPEC, tmp_path)
    other = RunSpec(
        strategy="self_consistency", budget="700", task="arithmetic", limit=5, params={"max_tokens": "96"}
    )
    with pytest.raises(RunDirError, match=r"differs in budget: stored \{\"limit\": 600.0"):
        open_run(tmp_path, resume=True, prepare=lambda stored: prepare(other))  # before anything is locked


def test_a_failing_strategy_is_recorded_not_fatal(
    sync_engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ttscale.strategies import STRATEGIES

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    STRATEGIES.register("broken_for_test", "helpers_broken:broken")
    try:
        summary = run(sync_engine, RunSpec(strategy="broken_for_test", budget="100", limit=2), tmp_path)
    finally:
        STRATEGIES._targets.pop("broken_for_test")
    records = [json.loads(line) for line in (tmp_path / RESULTS).read_text().splitlines()]
    assert summary["errors"] == 2 and all(r["error"] == "RuntimeError: boom" for r in records)
    assert all(r["correct"] is False for r in records)
