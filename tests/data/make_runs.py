"""Writes tests/data/real_runs: real run directories, as `ttscale run` writes them on the embedded model.

The readers of runs (fit, report, load_runs) are tested on these instead of hand-written records, so a change
to what a run holds shows up in their tests. Run again after such a change (about a minute per run on 2 cores):

    python tests/data/make_runs.py

Self-consistency with 4, 8 and 16 samples of at most 100 tokens on 12 arithmetic problems, seed 0.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "real_runs"
#: budget → run name: self-consistency draws n = budget / max_tokens samples.
RUNS = {400: "sc-n4", 800: "sc-n8", 1600: "sc-n16"}
MAX_TOKENS = 100


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for budget, name in RUNS.items():
        out = HERE / name
        shutil.rmtree(out, ignore_errors=True)
        argv = ["run", "--strategy", "self_consistency", "--budget", str(budget), "--param", f"max_tokens={MAX_TOKENS}",
                "--task", "arithmetic", "--limit", "12", "--seed", "0", "--out", str(out), "--no-progress"]
        subprocess.run([sys.executable, "-m", "ttscale.cli", *argv], check=True)
        for name in ("engine.log", ".lock"):  # the machine's start-up lines and the writer's lock: not fixture
            (out / name).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
