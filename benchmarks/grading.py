"""Grading throughput: gradings per second on the MATH-500 references (self-equivalence).

    python benchmarks/grading.py [--data-dir ../shared/data] [--workers 2] [--rounds 4]

Prints one line per measurement; the first is the headline number (the default grader:
fast path on, as runs use it, with the verdict cache off so that every pair is graded).
Also measured: each reference against the `\\boxed{}` answer extracted from its solution, and
every pair through math-verify in the worker pool (fast path off; one pass over the 500
distinct references with fresh workers). The last line is the provenance (command, CPU flags, versions:
benchmarks/provenance.py) for under a README table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from provenance import provenance, provenance_line

from ttscale.answers.extract import last_boxed
from ttscale.verifiers import Grader, GraderConfig

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=4, help="passes over the 500 references")
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args(argv)
    path = args.data_dir / "math500" / "test.jsonl"
    if not path.is_file():
        print(f"grading benchmark: no {path} (pass --data-dir)", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    references = [row["answer"] for row in rows]
    boxed = [last_boxed(row["solution"]) or "" for row in rows]

    cases = [
        ("self-equivalence, default grader", [(r, r) for r in references] * args.rounds, True),
        (
            "reference vs boxed(solution), default",
            list(zip(boxed, references, strict=True)) * args.rounds,
            True,
        ),
        # One pass with fresh workers: no parse is served from a worker's cache.
        ("self-equivalence, math-verify only (cold)", [(r, r) for r in references], False),
    ]
    for label, pairs, fast in cases:
        config = GraderConfig(workers=args.workers, fast_path=fast, cache_size=0)
        with Grader(config) as grader:
            grader.start()  # worker start-up is not grading time
            began = time.perf_counter()
            verdicts = grader.equal_many(pairs, timeout=args.timeout)
            elapsed = time.perf_counter() - began
            stats = grader.stats()
        rate = len(pairs) / elapsed
        print(
            f"{label}: {rate:,.0f} gradings/s ({len(pairs)} pairs in {elapsed:.2f} s, "
            f"{args.workers} workers; {sum(verdicts)}/{len(pairs)} equal; "
            f"fast {stats.fast}, math-verify {stats.worker}, timeouts {stats.timeouts})"
        )
    print(provenance_line(provenance(argv=None if argv is None else [sys.argv[0], *argv])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
