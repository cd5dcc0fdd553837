"""Sandboxed executions per second vs the same harness in a bare subprocess, side by side in one run.

Two workloads: a trivial program (one function, one assert) and HumanEval's 164 reference solutions (prompt +
canonical_solution, the dataset's test, check(entry_point)). Two sides: the sandbox as `Sandbox` runs it
(namespaces where the machine has them, rlimits, the guarded harness) and a bare subprocess running the same
harness without namespaces or rlimits. Each at 1 and at 2 executions at once. Rounds alternate which side
goes first, so drift of the machine falls on both; each number is the best round. Also reports how many
reference solutions pass on each side (all of them should).

    python benchmarks/sandbox.py [--trivial 200] [--rounds 2] [--humaneval PATH] [--json PATH]

Goals (issue 28): the sandbox at most 1.5x a bare subprocess; at least 40 trivial executions/s on 2 cores.
The table ends with a provenance line (command, CPU flags, versions: benchmarks/provenance.py), recorded in the
JSON as `provenance`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import queue
import threading
import time
from pathlib import Path
from typing import Any

from provenance import provenance, provenance_line

from ttscale.sandbox import Limits, Sandbox
from ttscale.sandbox.sandbox import execute

REPO = Path(__file__).resolve().parents[1]
HUMANEVAL = REPO.parent / "shared" / "data" / "humaneval" / "HumanEval.jsonl.gz"
TRIVIAL = {"program": "def solve(x):\n    return x + 1\n", "test": "def check(c):\n    assert c(1) == 2\n",
           "entry_point": "solve"}

Job = dict[str, Any]


def humaneval_jobs(path: Path) -> list[Job]:
    with gzip.open(path, "rt") as lines:
        problems = [json.loads(line) for line in lines]
    return [{"program": p["prompt"] + p["canonical_solution"], "test": p["test"], "entry_point": p["entry_point"]}
            for p in problems]


def measure(side: str, jobs: list[Job], parallel: int, limits: Limits) -> tuple[float, int]:
    """Executions per second for `jobs` run `parallel` at a time, and how many passed."""
    sandbox = Sandbox(limits=limits, max_parallel=parallel) if side == "sandbox" else None
    todo: queue.SimpleQueue[Job] = queue.SimpleQueue()
    for job in jobs:
        todo.put(job)
    passed = [0] * parallel

    def worker(index: int) -> None:
        while True:
            try:
                job = todo.get_nowait()
            except queue.Empty:
                return
            if sandbox is not None:
                execution = sandbox.run(**job)
            else:
                execution = execute("bare", limits, job["program"], job["test"], job["entry_point"])
            passed[index] += execution.passed

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(index,)) for index in range(parallel)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(jobs) / (time.perf_counter() - started), sum(passed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trivial", type=int, default=200, help="trivial executions per measurement")
    parser.add_argument("--rounds", type=int, default=2, help="rounds (each side measured once per round)")
    parser.add_argument("--humaneval", type=Path, default=HUMANEVAL, help="HumanEval.jsonl.gz")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()

    limits = Limits()
    sandbox = Sandbox(limits=limits)
    workloads = {"trivial": [TRIVIAL] * args.trivial}
    if args.humaneval.is_file():
        workloads["humaneval"] = humaneval_jobs(args.humaneval)
    else:
        print(f"{args.humaneval} not found: trivial programs only")
    cpus = len(os.sched_getaffinity(0))
    print(f"{platform.processor() or platform.machine()}, {cpus} CPUs; sandbox isolation: {sandbox.isolation}")
    for side in ("bare", "sandbox"):  # warm-up: first runs pay for page cache and the sandbox's probe
        measure(side, [TRIVIAL] * 10, 1, limits)

    results: list[dict[str, Any]] = []
    print(f"{'workload':10} {'at once':>7} {'bare /s':>9} {'sandbox /s':>10} {'ratio':>6}  passed (bare, sandbox)")
    for name, jobs in workloads.items():
        for parallel in (1, 2):
            best = {"bare": 0.0, "sandbox": 0.0}
            passed = {"bare": 0, "sandbox": 0}
            for round_ in range(args.rounds):
                sides = ("bare", "sandbox") if round_ % 2 == 0 else ("sandbox", "bare")
                for side in sides:
                    rate, ok = measure(side, jobs, parallel, limits)
                    best[side] = max(best[side], rate)
                    passed[side] = ok
            ratio = best["bare"] / best["sandbox"]
            results.append({"workload": name, "parallel": parallel, "executions": len(jobs),
                            "bare_per_second": round(best["bare"], 2), "sandbox_per_second": round(best["sandbox"], 2),
                            "time_ratio": round(ratio, 3), "passed_bare": passed["bare"],
                            "passed_sandbox": passed["sandbox"]})
            print(f"{name:10} {parallel:7d} {best['bare']:9.1f} {best['sandbox']:10.1f} {ratio:5.2f}x  "
                  f"{passed['bare']}/{len(jobs)}, {passed['sandbox']}/{len(jobs)}")

    trivial_two = next(r for r in results if r["workload"] == "trivial" and r["parallel"] == 2)
    worst = max(r["time_ratio"] for r in results)
    print(f"goals: sandbox <= 1.5x bare: {'met' if worst <= 1.5 else 'NOT met'} (worst {worst:.2f}x); "
          f">= 40 trivial executions/s at 2 at once: {'met' if trivial_two['sandbox_per_second'] >= 40 else 'NOT met'} "
          f"({trivial_two['sandbox_per_second']:.1f}/s)")
    origin = provenance()  # no engine: mode n/a
    print(provenance_line(origin))
    if args.json:
        args.json.write_text(json.dumps({"isolation": sandbox.isolation, "cpus": cpus, "results": results,
                                         "provenance": origin}, indent=2) + "\n")


if __name__ == "__main__":
    main()
