"""Calibrate ETS's clustering threshold for the encoder ttscale ships (all-MiniLM-L6-v2).

The ETS reference merges steps closer than 0.05 cosine distance, a cut chosen for its math-tuned BERT
encoder; distances depend on the encoder, so the same number means something else for ours. This script
measures what the cut should separate, on the steps the embedded model really writes in a search:

1. sibling steps — for each problem, 16 samples of the first step (stop at the step delimiter), and 16
   samples of the second step after one first step: the candidates one ETS round clusters;
2. pairs of siblings labelled by their mathematical content, the multiset of numbers they state:
   the same multiset = a *paraphrase* (same content, other words: "3 + 4 = 7" / "Adding 3 and 4 gives 7"),
   another multiset = *distinct*. Identical texts are left out (no cut is needed to merge them) and so
   are steps that state no number (nothing to label them by);
3. cosine distances of each pair under the encoder, their distributions per label, and the share of each
   label a cut at t would merge (distance ≤ t, the pairwise view of average linkage).

The chosen threshold is the largest cut on the grid that merges at most 5% of distinct pairs (merging
distinct steps is what costs ETS accuracy), reported with the paraphrase share it merges.

    python benchmarks/ets_threshold.py [--problems 24] [--task arithmetic|gsm8k] [--data-dir ../shared/data]
                                       [--deterministic] [--json FILE]

The output ends with a provenance line (command, mode, dtype, CPU flags, versions: benchmarks/provenance.py),
recorded in the JSON as `provenance`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from provenance import provenance, provenance_line

from ttscale.engine import BlockingEngine
from ttscale.evals import load_task
from ttscale.schema import SamplingParams
from ttscale.verifiers.embeddings import embed

NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
GRID = (0.02, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25, 0.3, 0.4)
DISTINCT_MERGED_AT_MOST = 0.05


def content(step: str) -> tuple[str, ...] | None:
    """The multiset of numbers a step states (sorted), or None when it states none."""
    numbers = sorted(str(float(x)) for x in NUMBER.findall(step.replace(",", "")))
    return tuple(numbers) if numbers else None


def sibling_sets(
    engine: Any, loop: Any, problems: list[Any], task: Any, *, n: int, step_tokens: int
) -> list[list[str]]:
    """For each problem: the first steps of `n` samples, then `n` second steps after the first first step."""

    async def one(problem: Any) -> list[list[str]]:
        prompt = engine.chat_prompt(task.messages(problem))
        params = SamplingParams(n=n, temperature=1.0, max_tokens=step_tokens, stop=("\n\n",))
        first = await engine.generate(prompt, params, seed=hash(problem.id) % 2**31)
        steps = [c.text.strip() for c in first.completions if c.text.strip()]
        sets = [steps]
        if steps:
            parent = [*prompt, *first.completions[0].token_ids]
            second = await engine.generate(parent, params, seed=(hash(problem.id) + 1) % 2**31)
            sets.append([c.text.strip() for c in second.completions if c.text.strip()])
        return sets

    async def every() -> list[list[list[str]]]:
        import asyncio

        return await asyncio.gather(*(one(p) for p in problems))

    return [s for sets in loop.run(every()) for s in sets]


def labelled_pairs(sets: list[list[str]]) -> dict[str, list[tuple[str, str]]]:
    pairs: dict[str, list[tuple[str, str]]] = {"paraphrase": [], "distinct": []}
    for steps in sets:
        for a, b in itertools.combinations(steps, 2):
            ca, cb = content(a), content(b)
            if a == b or ca is None or cb is None:
                continue
            pairs["paraphrase" if ca == cb else "distinct"].append((a, b))
    return pairs


def distances(pairs: list[tuple[str, str]]) -> np.ndarray:
    if not pairs:
        return np.zeros(0)
    texts = sorted({t for pair in pairs for t in pair})
    index = {t: i for i, t in enumerate(texts)}
    vectors = embed(texts)  # unit norm: cosine distance = 1 - dot
    return np.array([1.0 - float(vectors[index[a]] @ vectors[index[b]]) for a, b in pairs])


def choose_threshold(distinct: np.ndarray, *, grid: tuple[float, ...] = GRID,
                     at_most: float = DISTINCT_MERGED_AT_MOST) -> float | None:
    """The largest cut on `grid` that merges at most `at_most` of the distinct pairs; None when none does."""
    meeting = [t for t in grid if float(np.mean(distinct <= t)) <= at_most]
    return max(meeting) if meeting else None


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", type=int, default=24)
    ap.add_argument("--task", default="arithmetic:2-3")
    ap.add_argument("--data-dir", default=None, help="local dataset copies, e.g. ../shared/data")
    ap.add_argument("--n", type=int, default=16, help="siblings per step (the ETS width of one round)")
    ap.add_argument("--step-tokens", type=int, default=96)
    ap.add_argument("--json", metavar="FILE", help="also write the distributions as JSON")
    ap.add_argument("--deterministic", action="store_true",
                    help="samples independent of the batch (EngineConfig.deterministic; float32 on a CPU)")
    return ap


def main() -> None:
    args = parser().parse_args()

    task = load_task(args.task, **({"data_dir": args.data_dir} if args.data_dir else {}))
    problems = list(task.problems())[: args.problems]
    start = time.perf_counter()
    sync = BlockingEngine(deterministic=args.deterministic)
    try:
        origin = provenance(engine=sync)  # while the engine runs: a closed one no longer knows its dtype
        sets = sibling_sets(sync.engine, sync.loop, problems, task, n=args.n, step_tokens=args.step_tokens)
    finally:
        sync.close()
    sampled = time.perf_counter() - start
    pairs = labelled_pairs(sets)
    dist = {label: distances(p) for label, p in pairs.items()}
    steps = sum(len(s) for s in sets)
    print(f"task {args.task}: {len(problems)} problems, {len(sets)} sibling sets, {steps} steps "
          f"({len(set(itertools.chain(*sets)))} distinct texts), sampled in {sampled:.1f} s")
    labels = Counter({k: len(v) for k, v in pairs.items()})
    print(f"pairs: {labels['paraphrase']} paraphrase (same numbers, other words), {labels['distinct']} distinct")
    if not labels["paraphrase"] or not labels["distinct"]:
        print("not enough labelled pairs to calibrate: sample more problems")
        print(provenance_line(origin))
        return
    quantiles = (5, 10, 25, 50, 75, 90, 95)
    print("\ncosine distance quantiles (%)  " + "  ".join(f"{q:>5}" for q in quantiles))
    for label, d in dist.items():
        print(f"{label:<28}  " + "  ".join(f"{np.percentile(d, q):5.3f}" for q in quantiles))
    print("\ncut t   paraphrase pairs merged   distinct pairs merged")
    for t in GRID:
        para, dist_merged = float(np.mean(dist["paraphrase"] <= t)), float(np.mean(dist["distinct"] <= t))
        mark = " (reference)" if t == 0.05 else ""
        print(f"{t:<6}  {para:24.1%}  {dist_merged:22.1%}{mark}")
    chosen = choose_threshold(dist["distinct"])
    if chosen is None:
        print(f"\nno cut on the grid merges at most {DISTINCT_MERGED_AT_MOST:.0%} of distinct pairs "
              f"(the smallest, {GRID[0]}, merges {float(np.mean(dist['distinct'] <= GRID[0])):.1%}): no threshold")
    else:
        para_at = float(np.mean(dist["paraphrase"] <= chosen))
        print(f"\nchosen threshold: {chosen} (merges {para_at:.1%} of paraphrase pairs and "
              f"{float(np.mean(dist['distinct'] <= chosen)):.1%} of distinct ones, at most "
              f"{DISTINCT_MERGED_AT_MOST:.0%})")
    print(provenance_line(origin))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "task": args.task, "problems": len(problems), "pairs": dict(labels), "chosen": chosen,
            "distances": {k: [round(float(x), 5) for x in v] for k, v in dist.items()}, "provenance": origin,
        }, indent=1))


if __name__ == "__main__":
    main()
