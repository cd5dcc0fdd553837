"""`make demo`'s run as a new user meets it: the Makefile's command, timed from the shell, on this CPU.

Runs the demo's `ttscale run` command (read from the Makefile, as `make demo` runs it after set-up) in a fresh
process, `--repeats` times, and splits each run's wall-clock time into the engine's start and end (the process's
time outside the run) and the run itself (summary.json's `wall_seconds`), with the generated tokens per second of
the run. One JSON row per machine kind is what README's CPU table and tests/test_demo.py's bound read
(benchmarks/results/demo.json: `--record` adds this machine's row there, replacing an older row of the same
command, CPU model and flags).

    python benchmarks/demo.py [--repeats 1] [--json FILE] [--record]

The output ends with a provenance line (command, mode, dtype, CPU flags, versions: benchmarks/provenance.py) of the
engine the demo's run recorded in its config.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from provenance import provenance, provenance_line

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "demo.json"


def demo_command(makefile: Path = REPO / "Makefile") -> list[str]:
    """The `ttscale run ...` words of the Makefile's demo target (`make demo` runs them after `prepare`)."""
    found = re.search(r"^demo:.*\n\t\$\(VENV\)/bin/(ttscale .*)$", makefile.read_text(encoding="utf-8"), re.M)
    if found is None:
        raise SystemExit("the Makefile's demo target is not one ttscale command")
    return shlex.split(found.group(1))


class _Recorded:
    """The engine a finished run recorded (config.json's environment.engine), as provenance reads an engine."""

    def __init__(self, described: dict[str, Any]) -> None:
        self._described = described

    def describe(self) -> dict[str, Any]:
        return self._described


def measure(command: list[str], out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """One demo run in a fresh process: its timings, and the engine it recorded."""
    ttscale = Path(sys.executable).with_name("ttscale")
    started = time.monotonic()
    subprocess.run([str(ttscale), *command[1:], "--out", str(out), "--no-progress"], check=True,
                   stdout=subprocess.DEVNULL)
    total = time.monotonic() - started
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    config = json.loads((out / "config.json").read_text(encoding="utf-8"))
    run = float(summary["wall_seconds"])
    tokens = int(summary["total_generated_tokens"])
    return ({"total_s": round(total, 1), "run_s": round(run, 1), "outside_run_s": round(total - run, 1),
             "generated_tokens": tokens, "tokens_per_s": round(tokens / run, 1), "accuracy": summary["accuracy"],
             "per_level": {k: v["accuracy"] for k, v in summary["per_level"].items()}},
            config["environment"]["engine"])


def record(row: dict[str, Any], path: Path = RESULTS) -> None:
    """Add `row` to the results file, replacing a row of the same command on the same CPU model and flags."""
    rows = json.loads(path.read_text(encoding="utf-8"))["rows"] if path.is_file() else []
    key = (row["command"], row["provenance"]["cpu"], tuple(row["provenance"]["cpu_flags"]))
    rows = [r for r in rows if (r["command"], r["provenance"]["cpu"], tuple(r["provenance"]["cpu_flags"])) != key]
    path.write_text(json.dumps({"rows": [*rows, row]}, indent=1) + "\n", encoding="utf-8")


def parser() -> argparse.ArgumentParser:
    flags = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    flags.add_argument("--repeats", type=int, default=1, help="demo runs, each in a fresh process (default 1)")
    flags.add_argument("--json", type=Path, help="also write the row here")
    flags.add_argument("--record", action="store_true", help=f"add the row to {RESULTS.relative_to(REPO)}")
    return flags


def main() -> None:
    args = parser().parse_args()
    command = demo_command()
    runs, engine = [], {}
    with tempfile.TemporaryDirectory(prefix="ttscale-demo-") as root:
        for i in range(args.repeats):
            timing, engine = measure(command, Path(root) / f"run{i}")
            runs.append(timing)
            print(f"run {i + 1}: {timing['total_s']:.1f} s in all (engine start and end "
                  f"{timing['outside_run_s']:.1f} s, run {timing['run_s']:.1f} s: {timing['generated_tokens']} "
                  f"tokens, {timing['tokens_per_s']:.1f} tok/s), accuracy {timing['accuracy']:.3f}", flush=True)
    found = provenance(engine=_Recorded(engine), argv=sys.argv)
    row = {"command": shlex.join(command), "date": datetime.date.today().isoformat(), "runs": runs,
           "median_total_s": statistics.median(r["total_s"] for r in runs),
           "slowest": max(runs, key=lambda r: r["total_s"]), "provenance": found}
    print(provenance_line(found))
    if args.json:
        args.json.write_text(json.dumps(row, indent=1) + "\n", encoding="utf-8")
    if args.record:
        record(row)


if __name__ == "__main__":
    main()
