"""Issue 59, end to end: `ttscale run --task code` on a simulated model whose every answer is a wrong function behind
a program that forged a pass while the tests ran in the candidate's own process (26 of 30 such answers scored
correct then, accuracy 0.867, exit 0). Now none may pass."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.hostile.stop_script import FORGERIES

SCRIPT = Path(__file__).with_name("stop_script.py")


def test_a_run_whose_every_answer_targets_the_harness_scores_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [sys.executable, str(SCRIPT), "forged", "--", "run", "--strategy", "self_consistency", "--budget", "64k",
            "--param", "n=5", "--param", "max_tokens=1024", "--task", "code:1", "--limit", "6", "--out", str(out),
            "--no-progress", "--task-option", "timeout=3"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    samples = [sample for record in records for sample in record["samples"]]
    assert len(records) == 6 and len(samples) == 30
    statuses = [sample["execution"]["status"] for sample in samples]
    assert statuses.count("passed") == 0, statuses
    assert not any(sample["correct"] for sample in samples) and not any(record["correct"] for record in records)
    # Every forgery was tried (each answer names its program), and each wrong function was called and failed.
    assert len(FORGERIES) == 5 and statuses.count("timeout") == 6  # the fd-3 read waits for requests that never come
    assert json.loads((out / "summary.json").read_text())["accuracy"] == 0.0
