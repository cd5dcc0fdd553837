"""Sleep-time compute on the embedded model: the frontier with and without it, the saving, the amortisation.

Lin et al., "Sleep-time Compute: Beyond Inference Scaling at Test-time", arXiv:2504.13171 (2025): accuracy against
test-time tokens per query with sleep-time compute (the model thought about the context before the query) and
without (the raw context: sleep_tokens=0), the test-time tokens saved at equal accuracy (≈5x in the paper) with a
paired bootstrap interval, and the tokens per query as queries per context grow (1, 2, 5, 10).

One sweep: `sleep_time sleep_tokens=S1|S2|...` × test-time budgets × seeds on `arithmetic_stateful` with Q queries
per context; each sleep budget's pool runs at the largest test-time budget and the smaller ones are read from it
(N = budget / max_tokens votes). The sweep directory is kept (`--out`): run again to finish or re-read it.

    python benchmarks/sleep_time.py [--contexts 6] [--queries 10] [--sleep 0,64,128,256]
                                    [--budgets 48,96,192,384,768] [--max-tokens 48] [--seeds 0,1,2]
                                    [--levels 1] [--out sweeps/sleep-time] [--json FILE] [--deterministic]
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
from ttscale.scaling.sleeptime import Grid, accuracy_difference, amortised, frontier, grid, paired_saving
from ttscale.sweeps import cell_dir, load_spec


def grids(root: Path) -> dict[int, Grid]:
    """Per sleep budget, its grid of test-time budgets × seeds, read from the sweep's cells."""
    spec = load_spec(root)
    cells: dict[int, dict[int, list[Any]]] = {}
    for cell in sorted(spec.cells(), key=lambda c: c.seed):
        sleep = int(cell.params["sleep_tokens"])
        cells.setdefault(sleep, {}).setdefault(int(cell.budget), []).append(read_records(cell_dir(root, cell).path))
    return {s: grid(by_budget) for s, by_budget in sorted(cells.items())}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", type=int, default=6)
    ap.add_argument("--queries", type=int, default=10, help="queries per context (amortisation reads 1..Q of them)")
    ap.add_argument("--sleep", default="0,64,128,256", help="sleep budgets (0 = the baseline), comma-separated")
    ap.add_argument("--budgets", default="48,96,192,384,768", help="test-time budgets per query")
    ap.add_argument("--max-tokens", type=int, default=48, help="tokens per test-time sample")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--levels", default="1", help="arithmetic_stateful levels")
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
    budgets = [int(b) for b in args.budgets.split(",")]
    started = time.perf_counter()
    with ttscale.Engine(deterministic=args.deterministic) as engine:
        ttscale.sweep(strategies=[f"sleep_time sleep_tokens={'|'.join(map(str, sleeps))} max_tokens={args.max_tokens}"],
                      budgets=budgets, seeds=[int(s) for s in args.seeds.split(",")],
                      task=f"arithmetic_stateful:{args.levels}", task_options={"queries": args.queries,
                                                                                 "per_level": args.contexts},
                      limit=args.contexts * args.queries * len(args.levels.split(",")), engine=engine,
                      out=args.out, progress=False)
        prov = provenance(engine=engine.start(), argv=sys.argv)
    wall = time.perf_counter() - started
    by_sleep = grids(Path(args.out))
    base = by_sleep[0]
    out: dict[str, Any] = {"wall_seconds": round(wall, 1), "problems": len(base.ids), "seeds": base.correct.shape[1],
                           "frontier": {}, "saving": {}, "amortised": {}, "provenance": prov}
    print(f"Sleep-time frontier: accuracy (test-time tokens per query) over {len(base.ids)} queries × "
          f"{base.correct.shape[1]} seeds ({wall:.0f} s)")
    print("| sleep tokens | " + " | ".join(f"budget {b}" for b in base.budgets) + " |")
    print("|---" * (len(base.budgets) + 1) + "|")
    for s, g in by_sleep.items():
        curve = frontier(g)
        out["frontier"][s] = [{"budget": b, "accuracy": a, "test_tokens": t} for b, a, t in curve]
        print(f"| {s} | " + " | ".join(f"{100 * a:.1f}% ({t:.0f})" for _, a, t in curve) + " |")
    low = base.budgets[0]
    print("\nPer sleep budget and test-time budget b: sleep-time − baseline accuracy at b, and the test-time tokens "
          "saved at equal accuracy (the baseline's tokens for the accuracy sleep-time reaches at b, over sleep-time's "
          "tokens there); paired bootstrap over queries, 95%:")
    for s, g in by_sleep.items():
        if s == 0:
            continue
        for b in g.budgets:
            saved = paired_saving(base, g, budget=b)
            out["saving"].setdefault(s, {})[b] = {"ratio": saved.ratio, "interval": saved.interval,
                                                   "above": saved.above, "below": saved.below}
            delta, (low_d, high_d) = accuracy_difference(base, g, budget=b)
            out["saving"][s][b].update(accuracy_difference=delta, accuracy_interval=(low_d, high_d))
            print(f"- sleep {s}, budget {b}: Δ accuracy {100 * delta:+.1f} pts [{100 * low_d:+.1f}, "
                  f"{100 * high_d:+.1f}]; saving {saved.text()}")
    print(f"\nAmortisation at test-time budget {low}: q queries per context share its sleep tokens")
    print("| sleep tokens | q | accuracy | test tokens/query | total tokens/query |")
    print("|---|---|---|---|---|")
    for s, g in by_sleep.items():
        rows = amortised(g, queries=[q for q in (1, 2, 5, 10) if q <= args.queries], budget=low)
        out["amortised"][s] = [{"q": q, "accuracy": a, "test_tokens": t, "total_tokens": c} for q, a, t, c in rows]
        for q, a, t, c in rows:
            print(f"| {s} | {q} | {100 * a:.1f}% | {t:.1f} | {c:.1f} |")
    print("\n" + provenance_line(prov))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
