"""Sleep-time compute on the embedded model, on its reference's axes: verbosity, pass@k, amortised cost.

Lin et al., "Sleep-time Compute: Beyond Inference Scaling at Test-time", arXiv:2504.13171 (2025), as its code
(letta-ai/sleep-time-compute) runs it: at sleep time the model rethinks each context into its notes (up to 10
greedy passes into a bounded memory: `sleep_tokens` caps them all), at test time it answers each query once at
temperature 0 under one of five verbosity prompts (0 = only the answer ... 4 = reason and re-check): accuracy
against test-time tokens per query with and without notes (sleep_tokens=0: the raw context; the paper's Figure 3),
the test-time tokens saved at equal accuracy (≈5x in the paper) with a paired bootstrap interval, the paper's
parallel baseline pass@k (k samples at verbosity 0 without notes, right when any is: Figure 5), and the cost per
query as queries per context grow (1, 2, 5, 10), a test-time token weighted t = 10 sleep-time tokens (§5.3,
Figure 9).

Two sweeps on `arithmetic_stateful` with Q queries per context: `sleep_time sleep_tokens=S1|S2|... verbosity=0|...|4`
at one test-time budget (one answer of at most `max_tokens`), and `sleep_time sleep_tokens=0 test_time=pass_at_k`
at k × max_tokens (the largest k's pool runs; the smaller are read from it). The sweep directories are kept
(`--out`): run again to finish or re-read them.

    python benchmarks/sleep_time.py [--contexts 6] [--queries 10] [--sleep 0,256,2560] [--verbosity 0,1,2,3,4]
                                    [--max-tokens 256] [--k 1,2,4,8] [--pass-tokens 48] [--seeds 0] [--levels 1]
                                    [--test-weight 10] [--out sweeps/sleep-time] [--json FILE] [--deterministic]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from provenance import provenance, provenance_line

import ttscale
from ttscale.api import read_records
from ttscale.scaling.sleeptime import (
    TEST_WEIGHT,
    Grid,
    accuracy_difference,
    amortised,
    frontier,
    grid,
    paired_saving,
)
from ttscale.sweeps import cell_dir, load_spec


def cells(root: Path, key: str) -> dict[int, dict[int, list[Any]]]:
    """Per sleep budget, the records of each seed's run per value of `key` (a parameter, or `budget`)."""
    spec = load_spec(root)
    out: dict[int, dict[int, list[Any]]] = {}
    for cell in sorted(spec.cells(), key=lambda c: c.seed):
        sleep = int(cell.params["sleep_tokens"])
        value = int(cell.budget) if key == "budget" else int(cell.params[key])
        out.setdefault(sleep, {}).setdefault(value, []).append(read_records(cell_dir(root, cell).path))
    return out


def stage_use(by_level: dict[int, list[Any]]) -> tuple[float, float]:
    """(sleep tokens, rethink passes) per context, the mean over the contexts of the first cell."""
    first = next(iter(by_level.values()))[0]
    per_context = {(r.get("info") or {}).get("context_id"): r.get("info") or {} for r in first}
    if not per_context:
        return 0.0, 0.0
    tokens = [float(i.get("sleep_tokens", 0)) for i in per_context.values()]
    passes = [float(i.get("rethink_passes", 0)) for i in per_context.values()]
    return sum(tokens) / len(tokens), sum(passes) / len(passes)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", type=int, default=6)
    ap.add_argument("--queries", type=int, default=10, help="queries per context (amortisation reads 1..Q of them)")
    ap.add_argument("--sleep", default="0,256,2560", help="sleep budgets (0 = the baseline), comma-separated")
    ap.add_argument("--verbosity", default="0,1,2,3,4", help="verbosity prompts of the single answer (0-4)")
    ap.add_argument("--max-tokens", type=int, default=256, help="tokens of the single answer at most")
    ap.add_argument("--k", default="1,2,4,8", help="pass@k baseline: samples per query")
    ap.add_argument("--pass-tokens", type=int, default=48, help="tokens per pass@k sample")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--levels", default="1", help="arithmetic_stateful levels")
    ap.add_argument("--test-weight", type=float, default=TEST_WEIGHT, help="t: a test-time token in sleep tokens")
    ap.add_argument("--out", default="sweeps/sleep-time")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--deterministic", action="store_true",
                    help="samples independent of batching (float32 on a CPU: slower); see EngineConfig.deterministic")
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    sleeps = [int(s) for s in args.sleep.split(",")]
    if 0 not in sleeps:
        ap.error("--sleep must hold 0, the baseline")
    levels = [int(v) for v in args.verbosity.split(",")]
    ks = [int(k) for k in args.k.split(",")]
    root = Path(args.out)
    common: dict[str, Any] = {
        "seeds": [int(s) for s in args.seeds.split(",")], "task": f"arithmetic_stateful:{args.levels}",
        "task_options": {"queries": args.queries, "per_level": args.contexts},
        "limit": args.contexts * args.queries * len(args.levels.split(",")), "progress": False}
    started = time.perf_counter()
    with ttscale.Engine(deterministic=args.deterministic) as engine:
        ttscale.sweep(strategies=[f"sleep_time sleep_tokens={'|'.join(map(str, sleeps))} "
                                  f"verbosity={'|'.join(map(str, levels))} max_tokens={args.max_tokens}"],
                      budgets=[args.max_tokens], engine=engine, out=root / "verbosity", **common)
        ttscale.sweep(strategies=[f"sleep_time sleep_tokens=0 test_time=pass_at_k verbosity=0 "
                                  f"max_tokens={args.pass_tokens}"],
                      budgets=[k * args.pass_tokens for k in ks], engine=engine, out=root / "pass_at_k", **common)
        prov = provenance(engine=engine.start(), argv=sys.argv)
    wall = time.perf_counter() - started
    by_sleep: dict[int, Grid] = {s: grid(c) for s, c in sorted(cells(root / "verbosity", "verbosity").items())}
    use = {s: stage_use(c) for s, c in cells(root / "verbosity", "verbosity").items()}
    base = by_sleep[0]
    out: dict[str, Any] = {"wall_seconds": round(wall, 1), "problems": len(base.ids), "seeds": base.correct.shape[1],
                           "frontier": {}, "pass_at_k": [], "saving": {}, "amortised": {}, "provenance": prov}
    print(f"Sleep-time frontier: accuracy (test-time tokens per query) per verbosity prompt, one greedy answer, over "
          f"{len(base.ids)} queries × {base.correct.shape[1]} seeds ({wall:.0f} s)")
    print("| sleep tokens (used per context; rethink passes) | " +
          " | ".join(f"verbosity {v}" for v in base.budgets) + " | Δ accuracy vs none at verbosity 0 |")
    print("|---" * (len(base.budgets) + 2) + "|")
    for s, g in by_sleep.items():
        curve = frontier(g)
        out["frontier"][s] = {"used": use[s][0], "passes": use[s][1],
                              "points": [{"verbosity": v, "accuracy": a, "test_tokens": t} for v, a, t in curve]}
        delta = "—"
        if s:
            d, (low, high) = accuracy_difference(base, g, budget=base.budgets[0])
            delta = f"{100 * d:+.1f} pts [{100 * low:+.1f}, {100 * high:+.1f}]"
            out["frontier"][s]["accuracy_difference"] = (d, low, high)
        label = "0 (raw context)" if not s else f"{s} ({use[s][0]:.0f}; {use[s][1]:.1f})"
        print(f"| {label} | " + " | ".join(f"{100 * a:.1f}% ({t:.0f})" for _, a, t in curve) + f" | {delta} |")
    passes = grid(cells(root / "pass_at_k", "budget")[0], score="pass@k")
    answers = grid(cells(root / "pass_at_k", "budget")[0])
    print(f"\nParallel baseline, no notes, verbosity 0 at temperature 0.8, {args.pass_tokens} tokens per sample: "
          "pass@k (right when any of k is: an oracle) and the majority of the k, (test-time tokens per query)")
    print("| k | " + " | ".join(str(b // args.pass_tokens) for b in passes.budgets) + " |")
    print("|---" * (len(passes.budgets) + 1) + "|")
    rows = list(zip(frontier(passes), frontier(answers), strict=True))
    out["pass_at_k"] = [{"k": b // args.pass_tokens, "pass_at_k": a, "majority": m, "test_tokens": t}
                        for (b, a, t), (_, m, _) in rows]
    print("| pass@k | " + " | ".join(f"{100 * a:.1f}% ({t:.0f})" for (_, a, t), _ in rows) + " |")
    print("| majority | " + " | ".join(f"{100 * m:.1f}%" for _, (_, m, _) in rows) + " |")
    print("\nPer sleep budget and verbosity v: the test-time tokens the baseline needs (over its verbosity levels) for "
          "the accuracy sleep-time reaches at v, over sleep-time's tokens there; paired bootstrap over queries, 95%:")
    for s, g in by_sleep.items():
        if s == 0:
            continue
        for v in g.budgets:
            saved = paired_saving(base, g, budget=v)
            out["saving"].setdefault(s, {})[v] = {"ratio": saved.ratio, "interval": saved.interval,
                                                   "above": saved.above, "below": saved.below}
            print(f"- sleep {s}, verbosity {v}: saving {saved.text()}")
    low = base.budgets[0]
    print(f"\nAmortisation at verbosity {low}: q queries per context share its sleep tokens; cost per query = "
          f"{args.test_weight:g} × test tokens + sleep tokens / q (sleep-time tokens; the paper's t = 10)")
    print("| sleep tokens | q | accuracy | test tokens/query | cost/query |")
    print("|---|---|---|---|---|")
    for s, g in by_sleep.items():
        table = amortised(g, queries=[q for q in (1, 2, 5, 10) if q <= args.queries], budget=low,
                          test_weight=args.test_weight)
        out["amortised"][s] = [{"q": q, "accuracy": a, "test_tokens": t, "cost": c} for q, a, t, c in table]
        for q, a, t, c in table:
            print(f"| {s} | {q} | {100 * a:.1f}% | {t:.1f} | {c:.1f} |")
    print("\n" + provenance_line(prov))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
