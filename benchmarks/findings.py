"""The seed papers' findings as paired experiments on the embedded default, each with its verdict and CI.

Every finding runs its strategies on the same problems under the same run seeds (R repeats: run seed r
seeds every request of repeat r, for every strategy). This file only collects the records; the verdicts are
the rules of benchmarks/verdicts.py (pure functions, tested in tests/test_verdicts.py), which state them
exactly. In short, with 95% intervals over problems and a margin m of 1 point:

F1 Large Language Monkeys: coverage grows log-linearly in k — coverage(k) = exp(a·k^b) and a ceiling
   s·(1 − (1 − p)^k), both fitted on k ≤ K/4 of a K-sample pool (the repeats' pools merged per problem),
   predict the held-out k = K/2, K; the ceiling's held-out RMSE minus the law's, with its interval from refitting
   both on every bootstrap resample of problems: wholly above m → reproduced, wholly below −m (the ceiling predicts
   better) → not reproduced, else (as well as each other) inconclusive.
F2 majority vote plateaus — from the same pools, the votes grouped by equivalence (12, 12.0 and 12.00 are one
   vote, as `ttscale.kit.selection.majority_vote` counts them): maj@K − maj@K/4 with its interval inside ±m, while
   coverage still grows (coverage@K − coverage@K/4 > m) and the vote wins somewhere (maj@K/4 > m) → reproduced;
   the interval wholly outside ±m → not reproduced.
F3 self-consistency ≥ GenRM at small budgets (Singhi et al.) — accuracy at one small budget.
F4 beam ≥ best-of-N at small budgets on medium levels (Snell et al.) — levels 2-3, the same verifier.
F5 ETS cuts KV at equal accuracy (Hooper et al., 1.8x) — the reference KV ratio REBASE/ETS at equal width by the
   magnitude rule (reproduced: interval ≥ √1.8 = 1.34x, half the paper's cut on the log scale; "direction
   reproduced, magnitude not": above 1 but wholly below 1.34x), and the accuracy difference inside ±m.
F6 A* reaches best-of-N's accuracy with fewer tokens (Chatziveroglou, up to 3x) — best-of-N/A* tokens by the
   magnitude rule (≥ √3 = 1.73x), A* at most m lower; at the paper's one pop per round and at parallel=4.
F7 adaptive routing matches best-of-N with fewer tokens (Snell et al.) — from benchmarks/adaptive.py's
   report (`--adaptive-report FILE`; it runs sweeps, so it is its own command).
F8 TTSPM: accuracy saturates — the fitted saturation point N* of coverage(N) lies inside the measured range and
   the last doubling's gain is within ±m; N* beyond the range or a gain above m (still rising) → not reproduced.
F9 DeepConf-low online reaches self-consistency's accuracy with fewer tokens (Fu et al., 52.9% fewer at 256 traces:
   2.12x) — self-consistency/DeepConf tokens at the same N traces per problem by the magnitude rule (≥ √2.12 =
   1.46x), DeepConf at most m lower; its window is 16 tokens (the paper's 2,048 is longer than this model's whole
   answers, which would never be stopped) and its warm-up N/4 traces.

Accuracy differences (F3-F6) are Tango's score interval for paired proportions, as `ttscale compare` reports
them: a bootstrap over problems gave a zero-width interval when no pair differed, which read as equality.

F3-F6 and F9 end with their evidence in brackets (benchmarks/verdicts.py's accuracy_evidence and cost_evidence,
through the planner ttscale.stats.power): the size, the smallest effect it detects with 80% power, the power at
the paper's effect, and, when undecided, the problems that would decide it.

    python benchmarks/findings.py [--problems 30] [--repeats 2] [--pool 32] [--adaptive-report FILE]
                                  [--deterministic] [--only F3,F9] [--json FILE]
    python benchmarks/findings.py --until-decided [--only F3,F4] [--max-problems 400] [--design D | --batch 20]
        [--time-cap 5]

--until-decided runs F3-F6 and F9's accuracy claims a batch at a time until decided (benchmarks/decided.py): per
finding, decided or not, the problems and tokens used, and the fixed-size plan's size beside them.

The table ends with a provenance line (command, mode, dtype, CPU flags, versions: benchmarks/provenance.py),
recorded in the JSON as `provenance`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from decided import Side, decide, row_text
from provenance import provenance, provenance_line
from verdicts import (
    PAPER_DEEPCONF_FACTOR,
    above,
    accuracy_difference,
    accuracy_evidence,
    coverage_law,
    fewer_tokens_at_matching_accuracy,
    grouped_majority,
    kv_at_equal_accuracy,
    plateau,
    pts,
    ratio_of_means,
    saturation,
)

from ttscale.engine import BlockingEngine
from ttscale.running.runner import RunSpec, prepare, solve
from ttscale.stats.designs import RECOMMENDED, parse_design
from ttscale.stats.metrics import pass_at_k
from ttscale.stats.power import Claim

Records = list[list[dict[str, Any]]]
"""records[r][i]: repeat r, problem i (the same problems in the same order for every repeat)."""


#: F3 and F4's claim: the first is better (Δ > 0); their papers give no Δ to compute power at.
BETTER = Claim(kind="better", value=0.0)
#: The per-problem arrays the pool findings were read from, kept in --json so that what would decide F1, F2 and F8
#: (benchmarks/deciding.py) can be computed again from the file without the engine.
POOL_ARRAYS: dict[str, Any] = {}
FINDINGS = ("F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9")

def run(sync: BlockingEngine, *, strategy: str, budget: str, params: dict[str, Any], task: str, limit: int,
        repeats: int) -> Records:
    """One configuration on `limit` problems, once per run seed 0..repeats-1, through the real runner."""
    out: Records = []
    for seed in range(repeats):
        prepared = prepare(RunSpec(strategy=strategy, budget=budget, task=task, limit=limit, params=params,
                                   seed=seed))

        async def every(prepared: Any = prepared) -> list[Any]:
            return list(await asyncio.gather(*(solve(prepared, sync.engine, p) for p in prepared.problems)))

        out.append([record.to_json() for record in sync.loop.run(every())])
    return out


def per_problem(records: Records, metric: Callable[[dict[str, Any]], float]) -> np.ndarray:
    """(problems,) means over repeats of `metric` (errored records count as they were recorded)."""
    return by_problem(records, metric).mean(axis=1)


def by_problem(records: Records, metric: Callable[[dict[str, Any]], float]) -> np.ndarray:
    """(problems, repeats) values of `metric`: repeat r of one configuration pairs with repeat r of another."""
    return np.array([[metric(rec) for rec in rep] for rep in records]).T


def correct(rec: dict[str, Any]) -> float:
    return float(bool(rec.get("correct")))


def tokens(rec: dict[str, Any]) -> float:
    return float((rec.get("ledger") or {}).get("generated_tokens", 0))


def reference_kv(rec: dict[str, Any]) -> float:
    return float(((rec.get("ledger") or {}).get("tree") or {}).get("reference_kv_tokens", 0))


def graded_by(grade: Callable[[str | None, str], bool], pid: str) -> Callable[[str], bool]:
    """The grader of one problem."""
    return lambda answer: grade(answer, pid)


def pool_findings(pools: Records, grade: Callable[[str | None, str], bool], k_max: int) -> list[tuple[str, str, str]]:
    """F1, F2, F8 from best-of-N pools: each problem's samples graded by the task's grader."""
    problems = len(pools[0])
    ks = [2**i for i in range(int(math.log2(k_max)) + 1)]
    samples, right = np.zeros(problems), np.zeros(problems)
    cover = np.zeros((len(pools), problems, len(ks)))
    majority = np.zeros_like(cover)
    for r, rep in enumerate(pools):
        for i, rec in enumerate(rep):
            answers = [s.get("answer") for s in rec["samples"]]
            flags = [grade(a, rec["id"]) for a in answers]
            samples[i] += len(flags)
            right[i] += sum(flags)
            cover[r, i] = [pass_at_k(n=len(flags), c=sum(flags), k=k) for k in ks]
            majority[r, i] = grouped_majority(answers, graded_by(grade, rec["id"]), ks)
    cover, majority = cover.mean(axis=0), majority.mean(axis=0)
    POOL_ARRAYS.update(ks=ks, samples=samples.tolist(), right=right.tolist(), coverage=cover.tolist(),
                       majority=majority.tolist())
    # F1 pools each problem's repeats (independent samples of one problem): pass@k stays unbiased for k ≤ K.
    rows = [("F1 coverage grows log-linearly in k", *coverage_law(samples, right, k_max)),
            ("F2 majority vote plateaus", *plateau(majority, cover, ks))]
    rows.append(("F8 TTSPM saturation point inside the range", *saturation(cover, ks)))
    return rows


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--pool", type=int, default=32, help="F1/F2/F8: samples per problem (a power of 2)")
    parser.add_argument("--small-budget", default="1k", help="F3/F4/F6: the budget per problem")
    parser.add_argument("--width", type=int, default=16, help="F5: the search width of ETS and REBASE")
    parser.add_argument("--adaptive-report", metavar="FILE", help="F7: benchmark.json of benchmarks/adaptive.py")
    parser.add_argument("--json", metavar="FILE", help="also write the table as JSON")
    parser.add_argument("--only", default=",".join(FINDINGS),
                        help="the findings to run, e.g. F9 or F3,F6 (default all)")
    parser.add_argument("--deterministic", action="store_true",
                        help="samples independent of the batch (EngineConfig.deterministic; float32 on a CPU)")
    parser.add_argument("--until-decided", action="store_true",
                        help="F3-F6, F9: test the accuracy claim at the design's looks and stop when decided, "
                        "at --max-problems or at --time-cap (benchmarks/decided.py)")
    parser.add_argument("--max-problems", type=int, default=400, help="--until-decided: the cap (default 400)")
    parser.add_argument("--batch", type=int, help="--until-decided: a look every B problems (default: the design's "
                        "looks)")
    parser.add_argument("--design", default=None, help="--until-decided: the sequential design, as `compare "
                        "--design` takes it (default the recommended one, ttscale.stats.designs)")
    parser.add_argument("--time-cap", type=float, default=5.0, help="--until-decided: minutes per finding (default 5)")
    return parser


def decided_sides(args: argparse.Namespace) -> dict[str, tuple[Side, Side, Claim]]:
    """--until-decided: each finding's two sides and its accuracy claim (A's over B's), as the fixed-size rows run
    them; the cost halves of F5, F6 and F9 are not sequential (a ratio claim has no boundary here)."""
    tree = {"verifier": "arithmetic", "delimiter": "\\n", "step_tokens": 64, "max_steps": 8, "max_tokens": 256}
    small, bon = args.small_budget, {"max_tokens": 256, "verifier": "arithmetic"}
    deepconf = {"mode": "online", "n": args.pool, "max_tokens": 128, "warmup": max(4, args.pool // 4), "window": 16,
                "eta": 0.1, "sampling": "adaptive"}
    return {
        "F3 self-consistency ≥ GenRM at small budgets": (
            Side(strategy="self_consistency", budget=small, params={"max_tokens": 128}),
            Side(strategy="genrm", budget=small, params={"max_tokens": 128, "verify_tokens": 128}), BETTER),
        "F4 beam ≥ best-of-N at small budgets, medium levels": (
            Side(strategy="beam", budget=small, params=tree, task="arithmetic:2-3"),
            Side(strategy="best_of_n", budget=small, params=bon, task="arithmetic:2-3"), BETTER),
        "F5 ETS cuts KV at equal accuracy (its accuracy half)": (
            Side(strategy="ets", budget="16k", params={**tree, "n": args.width}),
            Side(strategy="rebase", budget="16k", params={**tree, "n": args.width}), Claim(kind="equal", value=0.01)),
        "F6 A* reaches best-of-N accuracy with fewer tokens (parallel=4; its accuracy half)": (
            Side(strategy="astar", budget=small, params={**tree, "parallel": 4}),
            Side(strategy="best_of_n", budget=small, params=bon), Claim(kind="not_worse", value=0.01)),
        "F9 DeepConf-low reaches self-consistency's accuracy with fewer tokens (its accuracy half)": (
            Side(strategy="deepconf", budget=str(args.pool * 128), params=deepconf),
            Side(strategy="self_consistency", budget=str(args.pool * 128), params={"n": args.pool, "max_tokens": 128}),
            Claim(kind="not_worse", value=0.01)),
    }


def main_until_decided(args: argparse.Namespace, wanted: set[str]) -> None:
    """The findings table's decided columns: each finding run until its accuracy claim is decided."""
    began = time.perf_counter()
    sync = BlockingEngine(deterministic=args.deterministic)
    rows: list[tuple[str, dict[str, Any]]] = []
    try:
        origin = provenance(engine=sync)
        for name, (a, b, claim) in decided_sides(args).items():
            if name.split()[0] in wanted:
                rows.append((name, decide(sync, a=a, b=b, claim=claim, max_problems=args.max_problems,
                                          batch=args.batch, repeats=args.repeats, seconds=60 * args.time_cap,
                                          design=parse_design(args.design) if args.design else RECOMMENDED)))
                if args.json:  # after every finding: a run stopped part-way keeps the findings it decided
                    Path(args.json).write_text(json.dumps({"rows": rows, **vars(args), "provenance": origin,
                                                           "partial": True}, indent=1))
    finally:
        sync.close()
    looks = f"looks every {args.batch} problems" if args.batch else "the design's looks"
    print(f"until decided: {looks} × {args.repeats} repeats up to {args.max_problems}, "
          f"{args.time_cap:g} min per finding; {(time.perf_counter() - began) / 60:.1f} min\n")
    print("| finding | decided | problems used | tokens | fixed-size plan (80%) | detail |\n|---|---|---|---|---|---|")
    for name, found in rows:
        print(f"| {name} | {' | '.join(row_text(found))} |")
    print(f"\n{provenance_line(origin)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, **vars(args), "provenance": origin}, indent=1))


def main() -> None:
    args = parser().parse_args()
    wanted = {name.strip().upper() for name in args.only.split(",") if name.strip()}
    if not wanted <= set(FINDINGS):
        raise SystemExit(f"--only: unknown findings {', '.join(sorted(wanted - set(FINDINGS)))}; "
                         f"known: {', '.join(FINDINGS)}")
    if args.until_decided:
        main_until_decided(args, wanted)
        return
    began = time.perf_counter()
    tree = {"verifier": "arithmetic", "delimiter": "\\n", "step_tokens": 64, "max_steps": 8, "max_tokens": 256}
    sync = BlockingEngine(deterministic=args.deterministic)
    rows: list[tuple[str, str, str]] = []
    origin: dict[str, Any] = {}

    def save(*, partial: bool) -> None:
        # Written after every finding, so a run stopped part-way (a time limit on a shared machine) keeps the rows
        # it finished; "partial" says the file is not the whole of --only.
        if args.json:
            Path(args.json).write_text(json.dumps({"rows": rows, "seconds": round(time.perf_counter() - began, 1),
                                                   **vars(args), "provenance": origin, "partial": partial,
                                                   "pool_arrays": POOL_ARRAYS or None}, indent=1))

    try:
        origin = provenance(engine=sync)  # while the engine runs: a closed one no longer knows its dtype
        common = {"task": "arithmetic", "limit": args.problems, "repeats": args.repeats}
        if wanted & {"F1", "F2", "F8"}:
            pools = run(sync, strategy="best_of_n", budget=str(args.pool * 128),
                        params={"n": args.pool, "max_tokens": 128}, **common)
            task = prepare(RunSpec(strategy="best_of_n", limit=args.problems)).task
            references = {p.id: p for p in task.problems()}
            rows += pool_findings(pools, lambda answer, pid: bool(task.grade(answer, references[pid])), args.pool)
            save(partial=True)

        small = args.small_budget
        if "F3" in wanted:
            sc = run(sync, strategy="self_consistency", budget=small, params={"max_tokens": 128}, **common)
            genrm = run(sync, strategy="genrm", budget=small, params={"max_tokens": 128, "verify_tokens": 128},
                        **common)
            d = accuracy_difference(by_problem(sc, correct), by_problem(genrm, correct))
            rows.append(("F3 self-consistency ≥ GenRM at small budgets", above(d, 0),
                         f"at {small}: SC − GenRM accuracy {pts(d)} [{accuracy_evidence(d, BETTER)}]"))
            save(partial=True)

        if "F4" in wanted:
            medium = {**common, "task": "arithmetic:2-3"}
            beam = run(sync, strategy="beam", budget=small, params=tree, **medium)
            bon = run(sync, strategy="best_of_n", budget=small,
                      params={"max_tokens": 256, "verifier": "arithmetic"}, **medium)
            d = accuracy_difference(by_problem(beam, correct), by_problem(bon, correct))
            rows.append(("F4 beam ≥ best-of-N at small budgets, medium levels", above(d, 0),
                         f"levels 2-3 at {small}: beam − best-of-N accuracy {pts(d)} [{accuracy_evidence(d, BETTER)}]"))
            save(partial=True)

        if "F5" in wanted:
            wide = {**tree, "n": args.width}
            rebase = run(sync, strategy="rebase", budget="16k", params=wide, **common)
            ets = run(sync, strategy="ets", budget="16k", params=wide, **common)
            found = kv_at_equal_accuracy(
                ratio_of_means(per_problem(rebase, reference_kv), per_problem(ets, reference_kv)),
                accuracy_difference(by_problem(ets, correct), by_problem(rebase, correct)))
            rows.append(("F5 ETS cuts KV at equal accuracy", found.verdict, f"width {args.width}: {found.measured}"))
            save(partial=True)

        if "F6" in wanted:
            bon_all = run(sync, strategy="best_of_n", budget=small,
                          params={"max_tokens": 256, "verifier": "arithmetic"}, **common)
            # The paper's A* pops one state per round; parallel=4 is this package's batched variant (fewer rounds).
            for parallel, setting in ((1, "parallel=1, the paper's one pop per round"), (4, "parallel=4")):
                astar = run(sync, strategy="astar", budget=small, params={**tree, "parallel": parallel}, **common)
                found = fewer_tokens_at_matching_accuracy(
                    ratio_of_means(per_problem(bon_all, tokens), per_problem(astar, tokens)),
                    accuracy_difference(by_problem(astar, correct), by_problem(bon_all, correct)))
                rows.append((f"F6 A* reaches best-of-N accuracy with fewer tokens ({setting})", found.verdict,
                             f"at {small}: {found.measured}"))
                save(partial=True)

        if "F9" in wanted:
            rows.append(deepconf_row(sync, traces=args.pool, common=common))
    finally:
        sync.close()
    if "F7" in wanted:
        rows.append(adaptive_row(args.adaptive_report))
    seconds = time.perf_counter() - began
    print(f"{args.problems} problems × {args.repeats} repeats (run seeds 0..{args.repeats - 1}), embedded model; "
          "95% intervals over problems (accuracy differences: Tango's score interval for paired proportions, "
          "repeats through their design effect; other means and ratios: percentile bootstrap); margin 1 point; "
          f"rules in benchmarks/verdicts.py; {seconds / 60:.1f} min\n")
    print("| finding | verdict | measured |\n|---|---|---|")
    for name, result, detail in sorted(rows):
        print(f"| {name} | {result} | {detail} |")
    print(f"\n{provenance_line(origin)}")
    save(partial=False)


def deepconf_row(sync: BlockingEngine, *, traces: int, common: dict[str, Any]) -> tuple[str, str, str]:
    """F9: N traces per problem either way; DeepConf-low online (η = 10%) stops the traces whose 16-token window
    falls below the warm-up's 90th percentile and, as the paper's adaptive sampling (`sampling=adaptive`; the
    reference code has no such stop), stops sampling at a 95% consensus of every warm-up trace and the final traces
    above the threshold. Warm-up N/4 (at least 4): the paper's 16 of 256 would leave 2 of 32 traces to set a
    percentile by."""
    budget = str(traces * 128)
    sc = run(sync, strategy="self_consistency", budget=budget, params={"n": traces, "max_tokens": 128}, **common)
    online = {"mode": "online", "n": traces, "max_tokens": 128, "warmup": max(4, traces // 4), "window": 16,
              "eta": 0.1, "sampling": "adaptive"}
    dc = run(sync, strategy="deepconf", budget=budget, params=online, **common)
    found = fewer_tokens_at_matching_accuracy(
        ratio_of_means(per_problem(sc, tokens), per_problem(dc, tokens)),
        accuracy_difference(by_problem(dc, correct), by_problem(sc, correct)),
        paper=PAPER_DEEPCONF_FACTOR, names=("self-consistency", "DeepConf"))
    infos = [record.get("info") or {} for repeat in dc for record in repeat]  # an errored problem has none
    threshold = sum(i.get("stopped", {}).get("threshold", 0) for i in infos)
    consensus = sum(i.get("stopped", {}).get("consensus", 0) for i in infos)
    ended = sum(bool(i.get("consensus_stop")) for i in infos)
    return ("F9 DeepConf-low reaches self-consistency's accuracy with fewer tokens", found.verdict,
            f"{traces} traces, {online['warmup']} warm-up: {found.measured}; traces aborted by confidence "
            f"{threshold}, at consensus {consensus}; consensus ended sampling in {ended} of {len(infos)} runs")


def adaptive_row(path: str | None) -> tuple[str, str, str]:
    name = "F7 adaptive routing matches best-of-N with fewer tokens"
    if path is None or not Path(path).is_file():
        return name, "not run", "needs benchmarks/adaptive.py's report: give --adaptive-report FILE"
    report = json.loads(Path(path).read_text())
    live = next(v for k, v in report["policies"].items() if "total budget (live" in k)
    r = live["ratio"]
    low, high = (math.inf if x == "inf" else float(x) for x in (r["ci95_low"], r["ci95_high"]))
    result = "reproduced" if low > 1 else "not reproduced" if high < 1 else "inconclusive"
    value = float(r["value"])

    def bound(x: float) -> str:  # an infinite upper bound: best-of-N's largest budget fell short
        return "> max" if math.isinf(x) else f"{x:.2f}"

    return name, result, (f"best-of-N tokens for adaptive's accuracy / adaptive's tokens {value:.2f}x "
                          f"[{bound(low)}, {bound(high)}] ({report['problems']} held-out problems)")


if __name__ == "__main__":
    main()
