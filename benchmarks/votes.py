"""Votes on real sample pools: what grouping by equivalence changes, and what it costs.

    python benchmarks/votes.py [--data-dir ../shared/data] [--pool 256]

The pools are Qwen2.5-Math's 8 answers per MATH problem (equivalence/qwen25math_math_cot_100.jsonl,
100 problems). For three ways of keying votes — the canonical string only, canonical + exact value
(`normalize_answer`, the fast path), and that plus the symbolic merge of `ttscale.kit.selection` — it prints
maj@8 accuracy (graded by the task grader against the reference) with a paired bootstrap CI of the
difference, the number of vote groups, and the time to count a `--pool`-sample pool (the 8 answers
repeated) per problem: median and max, both sides side by side in one run. The last line is the provenance
(command, CPU flags, versions: benchmarks/provenance.py) for under a README table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from provenance import provenance, provenance_line

from ttscale.answers.canonical import canonical
from ttscale.kit import selection
from ttscale.schema import Sample
from ttscale.verifiers import math_equal

REPO = Path(__file__).resolve().parents[1]


def canonical_only(answers: list[str]) -> tuple[str | None, int]:
    """The vote before exact values: canonical strings, ties to the first seen."""
    keys = [canonical(a) for a in answers if a and canonical(a)]
    if not keys:
        return None, 0
    counts = Counter(keys)
    best = min(counts, key=lambda k: (-counts[k], keys.index(k)))
    return next(a for a in answers if a and canonical(a) == best), len(counts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--pool", type=int, default=256, help="samples per timed pool (the 8 answers repeated)")
    parser.add_argument("--resamples", type=int, default=2000)
    args = parser.parse_args(argv)
    path = args.data_dir / "equivalence" / "qwen25math_math_cot_100.jsonl"
    if not path.is_file():
        print(f"votes benchmark: no {path} (pass --data-dir)", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    math_equal("1", "1")  # the grader's workers start off the clock
    fast_off = selection.SymbolicMerge(groups=0)
    correct: dict[str, list[float]] = {"canonical": [], "exact value": [], "symbolic": []}
    groups: dict[str, list[int]] = {k: [] for k in correct}
    timing: dict[str, list[float]] = {"exact value": [], "symbolic": []}
    for row in rows:
        answers = [str(a) for a in row["pred"]]
        reference = str(row["gt"])
        prediction, n = canonical_only(answers)
        correct["canonical"].append(float(prediction is not None and math_equal(prediction, reference)))
        groups["canonical"].append(n)
        for mode, settings in (("exact value", fast_off), ("symbolic", selection.SymbolicMerge())):
            selection.SYMBOLIC = settings
            prediction, votes = selection.majority_vote([Sample(text="", answer=a, num_tokens=1) for a in answers])
            correct[mode].append(float(prediction is not None and math_equal(prediction, reference)))
            groups[mode].append(len(votes))
            pool = [Sample(text="", answer=answers[i % len(answers)], num_tokens=1) for i in range(args.pool)]
            start = time.perf_counter()
            selection.majority_vote(pool)
            timing[mode].append(time.perf_counter() - start)
    rng = np.random.default_rng(0)
    base = np.asarray(correct["canonical"])
    print(f"{len(rows)} MATH problems, Qwen2.5-Math, 8 answers each")
    for mode, values in correct.items():
        acc = np.asarray(values)
        diffs = [float((acc[i] - base[i]).mean()) for i in rng.integers(0, len(acc), (args.resamples, len(acc)))]
        lo, hi = np.percentile(diffs, [2.5, 97.5])
        print(f"  maj@8 keyed by {mode:<12} accuracy {acc.mean():.3f}  vs canonical {acc.mean() - base.mean():+.3f} "
              f"[{lo:+.3f}, {hi:+.3f}]  vote groups/problem {statistics.mean(groups[mode]):.2f}")
    for mode, seconds in timing.items():
        print(f"  {args.pool}-sample pool, {mode:<12} median {1e3 * statistics.median(seconds):.2f} ms  "
              f"max {1e3 * max(seconds):.1f} ms")
    ratio = statistics.median(timing["symbolic"]) / statistics.median(timing["exact value"])
    print(f"  symbolic / exact-value median time: {ratio:.2f}x")
    # The worst case the merge allows: 16 distinct expressions; the 8 most voted compared (28 pairs), none equal.
    worst = [Sample(text="", answer=f"x^{{{i % 16 + 2}}} + {i % 16}x", num_tokens=1) for i in range(args.pool)]
    for mode, settings in (("exact value", fast_off), ("symbolic", selection.SymbolicMerge())):
        selection.SYMBOLIC = settings
        start = time.perf_counter()
        selection.majority_vote(worst)
        elapsed = 1e3 * (time.perf_counter() - start)
        print(f"  {args.pool}-sample pool of 16 distinct expressions, {mode:<12} {elapsed:.1f} ms")
    print(provenance_line(provenance(argv=None if argv is None else [sys.argv[0], *argv])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
