"""The seed papers' findings as paired experiments on the embedded default, each with its verdict and CI.

Every finding runs its strategies on the same problems under the same run seeds (R repeats: run seed r
seeds every request of repeat r, for every strategy), and reads its claim off a 95% percentile bootstrap
interval over problems, each problem's repeats resampled together (`ttscale.scaling._resample`):

- reproduced: the interval is on the claimed side (and "equal" claims: it covers 0 too, see each row);
- not reproduced: the interval is on the other side;
- inconclusive: the interval covers both.

Findings (paper → what is measured here):
F1 Large Language Monkeys: coverage grows log-linearly in k — pass@k from a pool of K samples per problem,
   the fit of coverage(k) = exp(a·k^b) (R² of its log-log line), and coverage@K − coverage@1 > 0.
F2 majority vote plateaus — from the same pools: maj@K − maj@K/4 ≈ 0 while coverage@K − coverage@K/4 > 0.
F3 self-consistency ≥ GenRM at small budgets (Singhi et al.) — accuracy at one small budget.
F4 beam ≥ best-of-N at small budgets on medium levels (Snell et al.) — levels 2-3, the same verifier.
F5 ETS cuts KV at equal accuracy (Hooper et al.) — reference KV ratio REBASE/ETS > 1 at equal width, and
   accuracy within the interval of no difference.
F6 A* reaches best-of-N's accuracy with fewer tokens — tokens ratio < 1, accuracy not lower.
F7 adaptive routing matches best-of-N with fewer tokens (Snell et al.) — from benchmarks/adaptive.py's
   report (`--adaptive-report FILE`; it runs sweeps, so it is its own command).
F8 TTSPM: accuracy saturates — the fitted saturation point N* of coverage(N) lies inside the measured range.

    python benchmarks/findings.py [--problems 30] [--repeats 2] [--pool 32] [--adaptive-report FILE]
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

from ttscale.engine import SyncEngine
from ttscale.evals.metrics import majority_at_k, pass_at_k
from ttscale.runner import RunSpec, prepare, solve
from ttscale.scaling import fit_coverage_from_samples, fit_ttspm
from ttscale.scaling._resample import bootstrap_draws

BOOT = 2000
#: Equivalence margin of "equal accuracy" claims: 1 point, as the ETS goal of the issue states it.
MARGIN = 0.01

Records = list[list[dict[str, Any]]]
"""records[r][i]: repeat r, problem i (the same problems in the same order for every repeat)."""


def run(sync: SyncEngine, *, strategy: str, budget: str, params: dict[str, Any], task: str, limit: int,
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
    return np.array([[metric(rec) for rec in rep] for rep in records]).mean(axis=0)


def interval(values: np.ndarray, weights_fn: Callable[[np.ndarray], float], *, seed: int = 0) -> tuple[float, ...]:
    """(estimate, low, high): `weights_fn(w)` on the full sample (w = 1) and on bootstrap counts w over problems."""
    point = weights_fn(np.ones(len(values)))
    draws = [weights_fn(w) for chunk in bootstrap_draws(len(values), BOOT, np.random.default_rng(seed)) for w in chunk]
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return point, float(low), float(high)


def diff(a: np.ndarray, b: np.ndarray) -> tuple[float, ...]:
    """Paired mean difference a − b over problems."""
    return interval(a - b, lambda w: float(np.average(a - b, weights=w)))


def ratio(a: np.ndarray, b: np.ndarray) -> tuple[float, ...]:
    """Ratio of means a / b over problems (the pairs resampled together)."""
    return interval(a, lambda w: float(np.average(a, weights=w) / max(np.average(b, weights=w), 1e-12)))


def verdict(ci: tuple[float, ...], *, above: float) -> str:
    """Reproduced when the interval lies above `above`, not reproduced when below, else inconclusive."""
    _, low, high = ci
    return "reproduced" if low > above else "not reproduced" if high < above else "inconclusive"


def pts(ci: tuple[float, ...]) -> str:
    return f"{100 * ci[0]:+.1f} pts [{100 * ci[1]:+.1f}, {100 * ci[2]:+.1f}]"


def times(ci: tuple[float, ...]) -> str:
    return f"{ci[0]:.2f}x [{ci[1]:.2f}, {ci[2]:.2f}]"


def correct(rec: dict[str, Any]) -> float:
    return float(bool(rec.get("correct")))


def tokens(rec: dict[str, Any]) -> float:
    return float((rec.get("ledger") or {}).get("generated_tokens", 0))


def reference_kv(rec: dict[str, Any]) -> float:
    return float(((rec.get("ledger") or {}).get("tree") or {}).get("reference_kv_tokens", 0))


def pool_findings(pools: Records, grade: Callable[[str | None, str], bool], k_max: int) -> list[tuple[str, str, str]]:
    """F1, F2, F8 from best-of-N pools: each problem's samples graded by the task's grader."""
    n_right = []
    answers = []
    for rep in pools:
        for rec in rep:
            flags = [grade(s.get("answer"), rec["id"]) for s in rec["samples"]]
            n_right.append((len(flags), sum(flags)))
            answers.append(([s.get("answer") for s in rec["samples"]], flags))
    ns, cs = np.array([n for n, _ in n_right]), np.array([c for _, c in n_right])
    problems = len(pools[0])
    ks = [2**i for i in range(int(math.log2(k_max)) + 1)]
    cover = np.array([[pass_at_k(n=int(n), c=int(c), k=k) for k in ks] for n, c in zip(ns, cs, strict=True)])
    majority = np.array([[majority_at_k(answers=a, correct=f, k=k) for k in ks] for a, f in answers])
    by_problem = lambda m: m.reshape(len(pools), problems, len(ks)).mean(axis=0)  # noqa: E731
    cover, majority = by_problem(cover), by_problem(majority)
    rows = []
    fit = fit_coverage_from_samples(n=ns, correct=cs, k=ks, n_boot=200)
    gain = diff(cover[:, -1], cover[:, 0])
    rows.append(("F1 coverage grows log-linearly in k", verdict(gain, above=0),
                 f"coverage@{ks[-1]} − coverage@1 {pts(gain)}; exp(a·k^b) fit a={fit.params['a']:.3f}, "
                 f"b={fit.params['b']:.3f}, R² {fit.r2:.3f}"))
    quarter = ks.index(max(1, ks[-1] // 4))
    maj_gain, cov_gain = diff(majority[:, -1], majority[:, quarter]), diff(cover[:, -1], cover[:, quarter])
    plateau = ("reproduced" if maj_gain[1] <= 0 <= maj_gain[2] and cov_gain[1] > 0 else
               "not reproduced" if maj_gain[1] > 0 else "inconclusive")
    rows.append(("F2 majority vote plateaus", plateau,
                 f"maj@{ks[-1]} − maj@{ks[quarter]} {pts(maj_gain)} while coverage gains {pts(cov_gain)}"))
    sat = fit_ttspm(budget=ks, accuracy=cover, n_boot=200)
    star, low, high = sat.derived["N_star"]
    inside = "reproduced" if high <= ks[-1] else "not reproduced" if low > ks[-1] else "inconclusive"
    rows.append(("F8 TTSPM saturation point inside the range", inside,
                 f"N* = {star:.1f} [{low:.1f}, {high:.1f}] samples (measured up to {ks[-1]}), "
                 f"F_max {sat.params['F_max']:.3f}"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--pool", type=int, default=32, help="F1/F2/F8: samples per problem (a power of 2)")
    parser.add_argument("--small-budget", default="1k", help="F3/F4/F6: the budget per problem")
    parser.add_argument("--width", type=int, default=16, help="F5: the search width of ETS and REBASE")
    parser.add_argument("--adaptive-report", metavar="FILE", help="F7: benchmark.json of benchmarks/adaptive.py")
    parser.add_argument("--json", metavar="FILE", help="also write the table as JSON")
    args = parser.parse_args()
    began = time.perf_counter()
    tree = {"verifier": "arithmetic", "delimiter": "\\n", "step_tokens": 64, "max_steps": 8, "max_tokens": 256}
    sync = SyncEngine()
    rows: list[tuple[str, str, str]] = []
    try:
        common = {"task": "arithmetic", "limit": args.problems, "repeats": args.repeats}
        pools = run(sync, strategy="best_of_n", budget=str(args.pool * 128),
                    params={"n": args.pool, "max_tokens": 128}, **common)
        task = prepare(RunSpec(strategy="best_of_n", limit=args.problems)).task
        references = {p.id: p for p in task.problems()}
        rows += pool_findings(pools, lambda answer, pid: bool(task.grade(answer, references[pid])), args.pool)

        small = args.small_budget
        sc = run(sync, strategy="self_consistency", budget=small, params={"max_tokens": 128}, **common)
        genrm = run(sync, strategy="genrm", budget=small, params={"max_tokens": 128, "verify_tokens": 128}, **common)
        d = diff(per_problem(sc, correct), per_problem(genrm, correct))
        rows.append(("F3 self-consistency ≥ GenRM at small budgets", verdict(d, above=0),
                     f"at {small}: SC − GenRM accuracy {pts(d)}"))

        medium = {**common, "task": "arithmetic:2-3"}
        beam = run(sync, strategy="beam", budget=small, params=tree, **medium)
        bon = run(sync, strategy="best_of_n", budget=small, params={"max_tokens": 256, "verifier": "arithmetic"},
                  **medium)
        d = diff(per_problem(beam, correct), per_problem(bon, correct))
        rows.append(("F4 beam ≥ best-of-N at small budgets, medium levels", verdict(d, above=0),
                     f"levels 2-3 at {small}: beam − best-of-N accuracy {pts(d)}"))

        wide = {**tree, "n": args.width}
        rebase = run(sync, strategy="rebase", budget="16k", params=wide, **common)
        ets = run(sync, strategy="ets", budget="16k", params=wide, **common)
        kv = ratio(per_problem(rebase, reference_kv), per_problem(ets, reference_kv))
        d = diff(per_problem(ets, correct), per_problem(rebase, correct))
        # "Equal accuracy": the interval of the difference within ±1 point (the margin).
        equal = d[1] >= -MARGIN and d[2] <= MARGIN
        rows.append(("F5 ETS cuts KV at equal accuracy", verdict(kv, above=1) if equal else
                     "not reproduced" if d[2] < -MARGIN or kv[2] < 1 else "inconclusive",
                     f"width {args.width}: REBASE/ETS reference KV {times(kv)}; ETS − REBASE accuracy {pts(d)}"))

        astar = run(sync, strategy="astar", budget=small, params={**tree, "parallel": 4}, **common)
        bon_all = run(sync, strategy="best_of_n", budget=small, params={"max_tokens": 256, "verifier": "arithmetic"},
                      **common)
        t = ratio(per_problem(astar, tokens), per_problem(bon_all, tokens))
        d = diff(per_problem(astar, correct), per_problem(bon_all, correct))
        # "Reaches best-of-N's accuracy": at most 1 point lower anywhere in the interval of the difference.
        rows.append(("F6 A* reaches best-of-N accuracy with fewer tokens",
                     "reproduced" if t[2] < 1 and d[1] >= -MARGIN else
                     "not reproduced" if t[1] > 1 or d[2] < 0 else "inconclusive",
                     f"at {small}: A*/best-of-N tokens {times(t)}; A* − best-of-N accuracy {pts(d)}"))
    finally:
        sync.close()
    rows.append(adaptive_row(args.adaptive_report))
    seconds = time.perf_counter() - began
    print(f"{args.problems} problems × {args.repeats} repeats (run seeds 0..{args.repeats - 1}), embedded model, "
          f"95% paired bootstrap over problems; {seconds / 60:.1f} min\n")
    print("| finding | verdict | measured |\n|---|---|---|")
    for name, result, detail in sorted(rows):
        print(f"| {name} | {result} | {detail} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "seconds": round(seconds, 1), **vars(args)}, indent=1))


def adaptive_row(path: str | None) -> tuple[str, str, str]:
    name = "F7 adaptive routing matches best-of-N with fewer tokens"
    if path is None or not Path(path).is_file():
        return name, "not run", "needs benchmarks/adaptive.py's report: give --adaptive-report FILE"
    report = json.loads(Path(path).read_text())
    live = next(v for k, v in report["policies"].items() if "total budget (live" in k)
    r = live["ratio"]
    low, high = (math.inf if x == "inf" else float(x) for x in (r["ci95_low"], r["ci95_high"]))
    result = "reproduced" if low > 1 else "not reproduced" if high < 1 else "inconclusive"
    return name, result, (f"best-of-N tokens for adaptive's accuracy / adaptive's tokens {r['value']} "
                          f"[{r['ci95_low']}, {r['ci95_high']}] ({report['problems']} held-out problems)")


if __name__ == "__main__":
    main()
