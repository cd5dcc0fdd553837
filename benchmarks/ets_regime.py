"""ETS against REBASE in the ETS paper's own terms: a λ_s × threshold sweep and the KV-vs-accuracy curve.

Hooper et al. (ETS, arXiv:2502.13575) report ETS holding ~1.8x fewer KV tokens than REBASE at equal width with
accuracy unchanged. KV here is the paper's metric (`global_kv_size` of the reference code, summed over selection
rounds: `ledger.tree.reference_kv_tokens`). Every configuration runs on the same problems under the same run
seeds (repeat r: run seed r) through `ttscale.compare`, so REBASE and each ETS setting are paired per problem and
seed; intervals are 95% cluster-bootstrap over problems (`ttscale.stats.paired`).

Per width, the arms are REBASE and ETS at λ_s ∈ LAMBDA_S × threshold ∈ THRESHOLDS (λ_c = 1, the reference's),
plus λ_s = 0 (no semantic term: the threshold is unused) at λ_c ∈ LAMBDA_C — the strongest pruning the ILP
allows. Printed per arm: the reference KV ratio REBASE/ETS [CI], accuracy and its paired difference [CI], and
the selection per round: the share of candidates kept after the ILP and clusters K per candidates N, and the
verdict of F5's rule (benchmarks/verdicts.py, the rule benchmarks/findings.py applies): "reproduced" when the KV
ratio's interval is at or above √1.8 = 1.34x (half the paper's cut on the log scale; wholly between 1 and 1.34x:
"direction reproduced, magnitude not") and the accuracy difference's interval lies within ±1 point (equality
needs the whole interval inside the margin; one that merely covers 0 is not equality). The accuracy interval is
`ttscale compare`'s: Tango's score interval for paired proportions, the repeats through their design effect.
The last line names the settings that reproduce the claim by that rule.

    python benchmarks/ets_regime.py [--widths 16,64] [--full-grid 16] [--problems 60] [--repeats 3]
                                    [--task arithmetic] [--task-seed 0] [--ets SETTINGS ...]
                                    [--out runs/ets-regime] [--json FILE] [--deterministic]

The compare directories are resumable: run the same command again to finish a cut-off run. The tables end with a
provenance line (command, mode, dtype, CPU flags, versions: benchmarks/provenance.py); `--json` writes
{"rows": [...], "provenance": {...}}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from provenance import provenance, provenance_line
from verdicts import MARGIN, PAPER_KV_FACTOR, REPRODUCED, kv_at_equal_accuracy

import ttscale
from ttscale.comparisons.paired import Comparison
from ttscale.sweeps import GridEntry, load_spec

LAMBDA_S = (0.5, 1.5)
THRESHOLDS = (0.05, 0.15, 0.3)
LAMBDA_C = (1.0, 2.0, 4.0)


def arms(width: int, tree: str, *, full: bool, chosen: list[str] | None = None) -> list[str]:
    """REBASE first (every pair is REBASE vs one ETS setting), then the ETS settings: `chosen` ones, or the grid
    (`full`: λ_s × threshold; else only the default), then λ_s = 0 at each λ_c."""
    base = f"n={width} {tree}"
    if chosen is not None:
        return [f"rebase {base}", *(f"ets {base} {setting}".rstrip() for setting in chosen)]
    grid = ([f"ets {base} lambda_s={s} threshold={t}" for s in LAMBDA_S for t in THRESHOLDS] if full
            else [f"ets {base}"])
    grid += [f"ets {base} lambda_s=0 lambda_c={c}" for c in LAMBDA_C]
    return [f"rebase {base}", *grid]


def selection(records: list[dict[str, Any]]) -> tuple[float, float, float]:
    """Mean over records of: rounds, kept / candidates and clusters / candidates per round."""
    rounds = [r.get("info", {}).get("rounds") or [] for r in records]
    kept = [x["kept"] / x["candidates"] for rs in rounds for x in rs if x.get("candidates")]
    clusters = [x["clusters"] / x["candidates"] for rs in rounds for x in rs if x.get("candidates")]
    depth = [len(r["ledger"].get("tree", {}).get("nodes_per_depth") or []) for r in records]
    mean = statistics.fmean
    return (mean(depth) if depth else 0.0, mean(kept) if kept else 1.0, mean(clusters) if clusters else 1.0)


def short(label: str, shared: str) -> str:
    """The arm's label without the parameters every arm shares."""
    common = set(shared.split())
    return " ".join(word for word in label.split() if word not in common) or "(defaults)"


def table(result: Comparison, width: int, shared: str) -> tuple[list[str], list[dict[str, Any]]]:
    rebase = result.arms[0]
    lines = [f"width {width}: {len(rebase.records)} (problem, seed) records per arm",
             "| arm | reference KV (mean) | REBASE/ETS KV [95% CI] | accuracy | ETS − REBASE [95% CI] | depth "
             "| kept/N | K/N | F5 verdict |", "|---|---:|---|---:|---|---:|---:|---:|---|"]
    depth, kept, clusters = selection(list(rebase.records.values()))
    kv_rebase = statistics.fmean(r["ledger"]["tree"]["reference_kv_tokens"] for r in rebase.records.values())
    accuracy = statistics.fmean(bool(r.get("correct")) for r in rebase.records.values())
    lines.append(f"| {short(rebase.label, shared)} | {kv_rebase:.0f} | — | {100 * accuracy:.1f}% | — | {depth:.1f} "
                 "| — | — | — |")
    rows = []
    for pair, arm in zip(result.pairs[:len(result.arms) - 1], result.arms[1:], strict=True):
        kv, acc = pair.effects["ets_kv"], pair.effects["accuracy"]
        depth, kept, clusters = selection(list(arm.records.values()))
        # The pair is REBASE − ETS: turn the difference around to read "ETS − REBASE".
        d, lo, hi = -(acc.value or 0.0), -(acc.high or 0.0), -(acc.low or 0.0)
        if None in (kv.value, kv.low, kv.high, acc.low, acc.high):
            verdict = "inconclusive"  # no interval (a zero mean, one problem): the effect's text says why
        else:
            verdict = kv_at_equal_accuracy((kv.value or 0.0, kv.low or 0.0, kv.high or 0.0),
                                           (d / 100, lo / 100, hi / 100)).verdict
        rows.append({"arm": arm.label, "width": width, "kv_ratio": kv.value, "kv_low": kv.low, "kv_high": kv.high,
                     "ets_kv_mean": kv.mean_b, "accuracy": acc.mean_b, "delta_pts": d, "delta_low": lo,
                     "delta_high": hi, "accuracy_interval": acc.interval, "design_effect": acc.design_effect,
                     "depth": depth, "kept_share": kept, "clusters_share": clusters, "verdict": verdict,
                     "met": verdict == REPRODUCED})
        ratio = (f"{kv.value:.2f}x [{kv.low:.2f}, {kv.high:.2f}]" if None not in (kv.value, kv.low, kv.high)
                 else kv.text())  # undefined (a zero mean, one problem): the effect says why
        lines.append(f"| {short(arm.label, shared)} | {kv.mean_b or 0:.0f} | {ratio} | {100 * (acc.mean_b or 0):.1f}% "
                     f"| {d:+.1f} pts [{lo:+.1f}, {hi:+.1f}] | {depth:.1f} | {kept:.2f} | {clusters:.2f} | {verdict} |")
    return lines, rows


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="16,64")
    parser.add_argument("--problems", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--task", default="arithmetic")
    parser.add_argument("--tree", default="verifier=arithmetic delimiter=\\n step_tokens=64 max_steps=8 max_tokens=256",
                        help="parameters every arm shares")
    parser.add_argument("--budget", default="64k", help="per problem; large enough that the width binds")
    parser.add_argument("--out", default="runs/ets-regime")
    parser.add_argument("--full-grid", default="16", help="widths that run the whole λ_s × threshold grid")
    parser.add_argument("--ets", action="append", metavar="SETTINGS",
                        help="ETS settings to run instead of the grid, e.g. 'lambda_s=0 lambda_c=4' ('' = the "
                             "defaults; repeatable): to confirm a setting the grid chose, on other problems")
    parser.add_argument("--task-seed", type=int, default=0,
                        help="seed of the generated problems (a confirmation takes problems the grid never saw)")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--deterministic", action="store_true",
                        help="samples independent of the batch (EngineConfig.deterministic; float32 on a CPU)")
    return parser


def main() -> None:
    args = parser().parse_args()
    full = set(args.full_grid.split(","))
    began = time.perf_counter()
    out, rows = Path(args.out), []
    with ttscale.Engine(deterministic=args.deterministic) as engine:
        origin = provenance(engine=engine.start())  # while it runs: a closed engine no longer knows its dtype
        for width in (int(w) for w in args.widths.split(",")):
            root = out / f"width-{width}"
            wanted = arms(width, args.tree, full=str(width) in full, chosen=args.ets)
            if (root / "sweep.json").exists():
                spec = load_spec(root)
                if list(spec.grid) != [GridEntry.parse(a) for a in wanted] or spec.task_options != {
                        "seed": args.task_seed}:
                    raise SystemExit(f"{root} holds another experiment (other ETS settings or problems): give "
                                     "another --out, or the same options to resume it")
                result = ttscale.compare(resume=root, engine=engine, progress=False)
            else:
                result = ttscale.compare(strategies=wanted,
                                         repeats=args.repeats, budget=args.budget, task=args.task,
                                         task_options={"seed": args.task_seed}, limit=args.problems, out=root,
                                         engine=engine, progress=False)
            lines, found = table(result, width, f"n={width} {args.tree}")
            rows += found
            print("\n".join(lines), flush=True)
            print(f"({time.perf_counter() - began:.0f} s so far)\n", flush=True)
    best = [r for r in rows if r["met"]]
    print(f"F5's rule (paper {PAPER_KV_FACTOR:g}x: REBASE/ETS reference KV interval ≥ {PAPER_KV_FACTOR ** 0.5:.2f}x, "
          f"ETS − REBASE accuracy interval within ±{100 * MARGIN:g} point): "
          + (f"reproduced by {', '.join(r['arm'] + ' @' + str(r['width']) for r in best)}" if best
             else "reproduced by no setting"))
    print(f"wall time {time.perf_counter() - began:.0f} s")
    print(provenance_line(origin))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "provenance": origin}, indent=1))


if __name__ == "__main__":
    main()
