"""findings.py --until-decided: a finding's accuracy claim tested after every batch of problems, stopped at a
verdict, at the cap or at a time cap (a helper of findings.py; run as a script it prints this).

The looks and their boundaries are `ttscale compare --until-decided`'s (ttscale.comparisons.until_decided.read_look:
Tango's score statistic with the repeats' design effect against Lan-DeMets alpha-spending boundaries, by default the
recommended design's (ttscale.stats.designs), so the chance of a false verdict over all looks stays at 5%).
Arithmetic problems are generated, so their number is no limit; the time cap is: a finding stops before a look that
would, at the pace of the looks so far, end past it. A stop for time says nothing either way (it only gives up the
chance of a verdict), so it keeps the error rate. Each row says whether the claim was decided, the problems and
generated tokens it used, the size a fixed-size plan would need at the Δ measured (80% power, ttscale.stats.power),
and, undecided, how long that would take here.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from ttscale.comparisons.until_decided import fixed_size, read_look
from ttscale.running.runner import RunSpec, prepare, solve
from ttscale.stats.designs import RECOMMENDED, Design
from ttscale.stats.power import Claim

Records = list[list[dict[str, Any]]]


@dataclass(frozen=True, kw_only=True)
class Side:
    """One configuration of a finding."""

    strategy: str
    budget: str
    params: dict[str, Any] = field(default_factory=dict)
    task: str = "arithmetic"


def run_range(sync: Any, side: Side, *, start: int, stop: int, repeats: int) -> Records:
    """Problems start..stop−1 of `side`'s task under run seeds 0..repeats−1, through the real runner."""
    out: Records = []
    for seed in range(repeats):
        prepared = prepare(RunSpec(strategy=side.strategy, budget=side.budget, task=side.task, limit=stop,
                                   params=side.params, seed=seed))

        async def every(prepared: Any = prepared) -> list[Any]:
            chosen = prepared.problems[start:stop]
            return list(await asyncio.gather(*(solve(prepared, sync.engine, p) for p in chosen)))

        out.append([record.to_json() for record in sync.loop.run(every())])
    return out


def _right(record: dict[str, Any]) -> float:
    return float(bool(record.get("correct")))


def _tokens(records: Records) -> float:
    return sum(float((r.get("ledger") or {}).get("generated_tokens", 0)) for rep in records for r in rep)


def decide(sync: Any, *, a: Side, b: Side, claim: Claim, max_problems: int, batch: int | None, repeats: int,
           seconds: float, design: Design = RECOMMENDED) -> dict[str, Any]:
    """Looks at `design`'s sizes (or after every `batch` problems) of A and B (claim: A's over B's) up to
    `max_problems`, within `seconds`."""
    plan = design.plan(claim, max_problems, batch=batch)
    began = time.perf_counter()
    runs: tuple[Records, Records] = ([[] for _ in range(repeats)], [[] for _ in range(repeats)])
    reads: list[dict[str, Any]] = []
    stop = "cap"
    for index, n in enumerate(plan.looks):
        spent = time.perf_counter() - began
        if index and spent + spent / index > seconds:  # the next look, at the pace so far, would end past the cap
            stop = "time"
            break
        done = len(runs[0][0])
        for records, side in zip(runs, (a, b), strict=True):
            for repeat, new in zip(records, run_range(sync, side, start=done, stop=n, repeats=repeats), strict=True):
                repeat.extend(new)
        problems = len(runs[0][0])
        rows = [[(_right(runs[0][r][i]), _right(runs[1][r][i])) for r in range(repeats)
                 if not runs[0][r][i].get("error") and not runs[1][r][i].get("error")] for i in range(problems)]
        reads.append(read_look(plan, index, [row for row in rows if row], problems=problems))
        if reads[-1]["outcome"] != "continue":
            stop = "verdict" if reads[-1]["outcome"] != "inconclusive" else "cap"
            break
    last = reads[-1]
    seconds_used = time.perf_counter() - began
    outcome = last["outcome"] if stop != "time" else "undecided at the time cap"
    fixed = fixed_size(claim, last) or {}
    needed = fixed.get("problems_80")
    return {"claim": claim.text(), "outcome": outcome, "decided": last["outcome"] in ("reproduced", "not reproduced"),
            "stopped_by": stop, "look": last["look"], "looks": len(plan.looks), "problems": last["problems"],
            "repeats": repeats, "tokens": _tokens(runs[0]) + _tokens(runs[1]), "seconds": round(seconds_used, 1),
            "difference": last.get("difference"), "ci95": last.get("ci95"), "why": last["why"],
            "fixed_size_80": needed, "fixed_size_verdict": fixed.get("verdict"),
            "hours_for_fixed_size": None if needed is None else
            round(seconds_used / last["problems"] * needed / 3600, 2), "reads": reads}


def row_text(found: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """(decided, problems used, tokens, the fixed-size plan's size, detail) for the findings table."""
    r = found["repeats"]
    diff = found["difference"]
    measured = "no pairs"
    if diff is not None:
        low, high = found["ci95"]
        measured = f"Δ {100 * diff:+.1f} pts [{100 * low:+.1f}, {100 * high:+.1f}] (95%, fixed-size reading)"
    decided = f"yes: {found['outcome']}" if found["decided"] else f"no: {found['outcome']}"
    needed = found["fixed_size_80"]
    fixed = (f"{needed} × {r} ({found['fixed_size_verdict']})" if needed is not None else "none at the measured Δ")
    detail = f"{found['claim']}; {measured}; stopped by the {found['stopped_by']} at look {found['look']} of " \
             f"{found['looks']} ({found['seconds'] / 60:.1f} min)"
    if not found["decided"]:
        detail += ("; no size decides it at the measured Δ" if needed is None else
                   f"; deciding it needs {needed} × {r} problems, about {found['hours_for_fixed_size']:.2g} h here")
    return decided, f"{found['problems']} × {r}", f"{found['tokens']:.3g}", fixed, detail


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print(__doc__)
