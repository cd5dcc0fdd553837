"""Adaptive routing vs best-of-N: the tokens best-of-N needs to reach the policy's accuracy, side by side.

Snell et al. (arXiv:2408.03314) report that choosing the strategy per prompt difficulty needs up to 4x less
compute than best-of-N for the same accuracy. This measures that ratio here, in one run:

1. a sweep on training problems (arithmetic, task seed 0) and policies learned from it, with predicted
   bins (a probe) and with oracle bins (the true pass@1: an upper bound, it needs the answers);
2. the same sweep on held-out problems (task seed 1): best-of-N's accuracy-vs-tokens curve there, and the
   data on which the oracle-bin policy is evaluated (offline, from the stored records);
3. `--strategy adaptive` run live on the held-out problems with the predicted-bin policy, under a total
   budget (the pool ledger) and per problem.

For each policy: its accuracy and mean tokens per problem (probe included), the tokens best-of-N needs for
that accuracy (linear interpolation on its curve, anchored at 0 tokens = 0 accuracy; "> max" when even its
largest budget falls short), and their ratio, each with a 95% paired bootstrap interval over problems.
Best-of-N is the `best_of_n` strategy (mean-log-prob selection); self-consistency is shown too.

    python benchmarks/adaptive.py [--problems 30] [--budgets 64,128,256,512,1024] [--average 256] [--out DIR]
                                  [--deterministic]

benchmark.json records `provenance` (command, mode, dtype, CPU flags, versions: benchmarks/provenance.py), and the
report ends with the same as one line for under a README table.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from provenance import provenance, provenance_line

from ttscale.budget import Budget
from ttscale.engine import BlockingEngine, EngineConfig
from ttscale.pipeline import execute
from ttscale.routing.policy import LearnOptions, Policy, candidate_key
from ttscale.routing.total_budget import Allocator, with_total_budget
from ttscale.running.runner import RunSpec, prepare
from ttscale.runstore.storage import RunDir
from ttscale.runstore.writer import RunWriter
from ttscale.sweeps import SWEEP, GridEntry, SweepSpec, create_sweep, run_sweep
from ttscale.sweeps.holdout import difficulty, learn_from_sweep
from ttscale.sweeps.outcomes import load_results, outcomes

BOOTSTRAP = 2000


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=30, help="problems per sweep (train and held-out)")
    parser.add_argument("--budgets", default="64,128,256,512,1024", help="sweep budgets per problem")
    parser.add_argument("--average", type=int, default=256, help="the policy's budget per problem (total = P × this)")
    parser.add_argument("--probe-n", type=int, default=4, help="probe samples")
    parser.add_argument("--task", default="arithmetic", help="task spec (levels mixed by default)")
    parser.add_argument("--out", default="runs/bench-adaptive", help="where sweeps, policies and runs go (resumable)")
    parser.add_argument("--deterministic", action="store_true",
                        help="samples independent of the batch (EngineConfig.deterministic; float32 on a CPU)")
    return parser


def main() -> None:
    args = parser().parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    grid = (GridEntry.parse("best_of_n max_tokens=64"),
            GridEntry.parse("self_consistency max_tokens=64 temperature=0.4|1.0"))
    # The mode goes into the sweeps' and runs' own specs too, so their stored configs say how they were sampled.
    config = EngineConfig(deterministic=args.deterministic)
    train = SweepSpec(grid=grid, budgets=tuple(args.budgets.split(",")), task=args.task, limit=args.problems,
                      task_options={"seed": 0}, engine=config)
    test = replace(train, task_options={"seed": 1})
    sync = BlockingEngine(config)
    try:
        origin = provenance(engine=sync)  # while the engine runs: a closed one no longer knows its dtype
        for name, spec in (("train", train), ("heldout", test)):
            if not (out / name / SWEEP).exists():
                create_sweep(spec, out / name, command=["benchmarks/adaptive.py"])
            sync.loop.run(run_sweep(spec, out / name, engine=sync.engine, progress=False))
        paths = {}
        for bins in ("predicted", "oracle"):
            policy = learn_from_sweep(out / "train", options=LearnOptions(bins=bins), probe_n=args.probe_n)
            paths[bins] = out / f"policy-{bins}.json"
            paths[bins].write_text(json.dumps(policy, indent=2) + "\n")
        held = load_results(out / "heldout")
        total = args.average * len(held.problems)
        live = {mode: run_live(sync, test, paths["predicted"], out / f"live-{mode}", args.average,
                               total if mode == "total" else None) for mode in ("total", "per_problem")}
    finally:
        sync.close()
    report = compare(held, paths, live, average=args.average, probe_n=args.probe_n)
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["provenance"] = origin
    (out / "benchmark.json").write_text(json.dumps(report, indent=2) + "\n")
    print(format_report(report))
    print(provenance_line(origin))
    print(f"details: {out / 'benchmark.json'}")


def run_live(sync: BlockingEngine, test: SweepSpec, policy: Path, where: Path, average: int,
             total: int | None) -> dict[str, np.ndarray]:
    """`--strategy adaptive` on the held-out problems; per-problem correctness and spend (probe included)."""
    spec = RunSpec(strategy="adaptive", budget=str(4 * average if total else average), task=test.task,
                   task_options=test.task_options, limit=test.limit, params={"policy": str(policy)},
                   engine=test.engine)
    prepared = prepare(spec)
    run_dir = RunDir(where)
    if not (where / "summary.json").exists():
        if where.exists():  # a total budget cannot resume half-spent without its pool's history: start over
            for f in where.iterdir():
                f.unlink()
        if total is not None:
            prepared = with_total_budget(prepared, Budget(limit=total), problems=len(prepared.problems))

        async def go() -> None:
            with RunWriter(run_dir, prepared, stored={}) as writer:
                await execute(sync.engine, writer, progress=False)

        sync.loop.run(go())
    records = {r["id"]: r for r in run_dir.records()}
    ids = [p.id for p in prepared.problems]
    return {"correct": np.asarray([float(records[i]["correct"]) for i in ids]),
            "spent": np.asarray([float(records[i]["ledger"]["spent"]) for i in ids]),
            "bin": np.asarray([records[i]["info"].get("bin") or 0 for i in ids]),
            "level": np.asarray([records[i].get("level") or 0 for i in ids])}


def simulate(policy: Policy, held: Any, table: dict[tuple[str, float, str], Any], diff: dict[str, Any],
             probe_tokens: dict[str, float], *, bins: str, total: float) -> dict[str, np.ndarray]:
    """A policy under a total budget, offline on the held-out records (the probe = the first samples of the pool)."""
    settings = policy.probe
    alloc = Allocator(curves=policy.curves(), prior=policy.prior(), problems=len(held.problems), available=total,
                      probe_reserve=settings.n * settings.max_tokens)
    correct, spent = [], []
    for problem in held.problems:
        d = diff[problem.id]
        k = policy.bin_of_pass1(d.pass1) if bins == "oracle" else policy.bin_of(d.features)
        probe = probe_tokens[problem.id]
        b = alloc.grant(k=k, probe_spent=probe, cap=math.inf)
        if b == 0:
            correct.append(float(d.probe_correct or 0.0))
            spent.append(probe)
            continue
        strategy, params = policy.choice(k, b)
        o = table[candidate_key(strategy, params), b, problem.id]
        alloc.release(granted=b, spent=o.spent)
        correct.append(o.correct)
        spent.append(probe + o.spent)
    return {"correct": np.asarray(correct), "spent": np.asarray(spent)}


def compare(held: Any, paths: dict[str, Path], live: dict[str, dict[str, np.ndarray]], *, average: int,
            probe_n: int) -> dict[str, Any]:
    rows, _ = outcomes(held)
    table = {(o.candidate, o.budget, o.problem): o for o in rows}
    diff, _, meta = difficulty(held, probe_n=probe_n)
    source = held.records[meta["probe_source_cell"]]
    probe_tokens = {p.id: float(sum(s["num_tokens"] for s in source[p.id]["samples"][:probe_n])) for p in held.problems}
    ids = [p.id for p in held.problems]
    budgets = sorted({o.budget for o in rows})
    baselines = {}
    for name in sorted({o.candidate for o in rows}):
        baselines[name] = {"correct": np.asarray([[table[name, b, i].correct for i in ids] for b in budgets]),
                           "spent": np.asarray([[table[name, b, i].spent for i in ids] for b in budgets])}
    total = float(average * len(ids))
    policies = {
        "adaptive, predicted bins, total budget (live run)": live["total"],
        "adaptive, predicted bins, per-problem budget (live run)": live["per_problem"],
        "predicted-bin policy, total budget (offline, held-out records)":
            simulate(Policy.load(paths["predicted"]), held, table, diff, probe_tokens, bins="predicted", total=total),
        "oracle-bin policy, total budget (offline, held-out records)":
            simulate(Policy.load(paths["oracle"]), held, table, diff, probe_tokens, bins="oracle", total=total),
    }
    bon = next(n for n in baselines if n.startswith("best_of_n"))
    rng = np.random.default_rng(0)
    samples = [rng.integers(0, len(ids), len(ids)) for _ in range(BOOTSTRAP)]
    oracle = Policy.load(paths["oracle"])
    out: dict[str, Any] = {"problems": len(ids), "average_budget": average, "budgets": budgets, "baselines": {},
                           "policies": {}, "reference": bon,
                           "bin_shares_heldout_oracle": _shares([oracle.bin_of_pass1(diff[i].pass1) for i in ids])}
    for name, data in baselines.items():
        out["baselines"][name] = [{"budget": b, "accuracy": float(data["correct"][j].mean()),
                                   "mean_spent": float(data["spent"][j].mean())} for j, b in enumerate(budgets)]
    for name, pol in policies.items():
        stats: dict[str, list[float]] = {"accuracy": [], "used": [], "needed": [], "ratio": []}
        for idx in [np.arange(len(ids)), *samples]:
            acc, used = float(pol["correct"][idx].mean()), float(pol["spent"][idx].mean())
            curve = [(float(baselines[bon]["spent"][j][idx].mean()), float(baselines[bon]["correct"][j][idx].mean()))
                     for j in range(len(budgets))]
            needed = tokens_to_reach(acc, curve)
            for key, value in (("accuracy", acc), ("used", used), ("needed", needed), ("ratio", needed / used)):
                stats[key].append(value)
        out["policies"][name] = {key: _interval(values) for key, values in stats.items()}
        if "level" in pol:  # where a live run spent its tokens: mean spend (probe included) per level
            out["policies"][name]["mean_spent_by_level"] = {
                str(v): round(float(pol["spent"][pol["level"] == v].mean()), 1) for v in sorted(set(pol["level"]))}
            out["policies"][name]["accuracy_by_level"] = {
                str(v): round(float(pol["correct"][pol["level"] == v].mean()), 3) for v in sorted(set(pol["level"]))}
    return out


def tokens_to_reach(target: float, curve: list[tuple[float, float]]) -> float:
    """Tokens at which the (tokens, accuracy) curve first reaches `target`; inf when it never does."""
    previous = (0.0, 0.0)
    for tokens, acc in curve:
        if acc >= target:
            if acc == previous[1]:
                return tokens
            return previous[0] + (target - previous[1]) / (acc - previous[1]) * (tokens - previous[0])
        previous = (tokens, acc) if acc > previous[1] else previous
    return math.inf


def _interval(values: list[float]) -> dict[str, float | str]:
    """The first value and the percentile interval of the rest (order statistics: an inf stays inf, never nan)."""
    point, rest = values[0], np.sort(np.asarray(values[1:]))
    low, high = rest[int(0.025 * (rest.size - 1))], rest[math.ceil(0.975 * (rest.size - 1))]
    return {"value": _num(point), "ci95_low": _num(float(low)), "ci95_high": _num(float(high))}


def _num(x: float) -> float | str:
    return "inf" if math.isinf(x) else round(x, 4)


def _shares(bins: list[int]) -> dict[str, float]:
    return {str(k): round(bins.count(k) / len(bins), 3) for k in sorted(set(bins))}


def format_report(report: dict[str, Any]) -> str:
    lines = [f"held-out problems: {report['problems']}; policy budget {report['average_budget']} tokens/problem on "
             f"average; oracle bins of the held-out problems: {report['bin_shares_heldout_oracle']}",
             "baselines (held-out; accuracy / mean tokens per problem at each budget):"]
    for name, points in report["baselines"].items():
        lines.append(f"  {name:<50} " + "  ".join(f"{p['budget']:g}: {p['accuracy']:.2f}/{p['mean_spent']:.0f}"
                                                   for p in points))
    lines.append(f"policies vs {report['reference']} (value [95% CI]):")
    lines.append(f"  {'':<62} {'accuracy':<20} {'tokens used':<22} {'BoN tokens needed':<24} needed/used")
    for name, s in report["policies"].items():
        lines.append(f"  {name:<62} {_fmt(s['accuracy'], 2):<20} {_fmt(s['used'], 0):<22} "
                     f"{_fmt(s['needed'], 0):<24} {_fmt(s['ratio'], 2)}")
        if "mean_spent_by_level" in s:
            by_level = f"tokens by level {s['mean_spent_by_level']}, accuracy by level {s['accuracy_by_level']}"
            lines.append(f"      {by_level}")
    lines.append(f"wall time {report['seconds']} s")
    return "\n".join(lines)


def _fmt(s: dict[str, Any], digits: int) -> str:
    def one(x: Any) -> str:
        return "> max" if x == "inf" else f"{x:.{digits}f}"

    return f"{one(s['value'])} [{one(s['ci95_low'])}, {one(s['ci95_high'])}]"


if __name__ == "__main__":
    main()
