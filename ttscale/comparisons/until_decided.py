"""`ttscale compare --until-decided CLAIM`: a comparison that adds problems a batch at a time and stops when its
claim is decided (`ttscale.compare(..., until_decided=...)`).

The comparison is the run mode's sweep (ttscale.comparisons.paired) with its limit set to the cap N; look k runs every
cell on the first n_k = k·B problems (N at the last look), then reads the claim off the verdict's own statistic,
Tango's score statistic with the repeats' design effect, against the group-sequential boundary c_k of
ttscale.stats.sequential (Lan-DeMets alpha spending: implemented there with its references; gsDesign is R and the
Python sequential libraries we looked at give confidence sequences for means, not this paired score statistic).
The chance of any false verdict over all looks stays at α = 0.05. Which looks and which spending: a design
(ttscale.stats.designs; `design=`, `--design`), by default the recommended one (Hwang-Shih-DeCani γ = −1, 20
looks, the first at 10 problems, where ten pairs all one way decide); `batch` looks every B problems instead.

Each look is appended to until_decided.json in the compare directory as it is read, with the statistic, the
boundary and the outcome; the look that stopped it is named there with why. A comparison killed anywhere resumes
with `--resume DIR` (`compare(resume=DIR)`): the looks already read stand, finished problems are not run again
(each cell resumes as a run does), and the next look begins where the records end.

One engine serves every look and repeat when the call starts its own (each request's seed comes from the run
seed, problem and request, so the repeats' samples are those a per-seed engine would draw; a sweep's start per
seed per look would cost an engine start at every look).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ttscale.runstore.names import UNTIL_DECIDED
from ttscale.runstore.runfiles import parse_json
from ttscale.runstore.storage import RunDir
from ttscale.stats.claims import ALLOWED_ACCURACY as ALLOWED
from ttscale.stats.claims import parse_claim
from ttscale.stats.designs import LEGACY, RECOMMENDED, Design, design_of, parse_design
from ttscale.stats.power import Claim, accuracy_problems, accuracy_reachable, pilot_accuracy, tango_score
from ttscale.stats.sequential import SequentialPlan, outcome

if TYPE_CHECKING:
    from ttscale.engine.base import AsyncEngine
    from ttscale.sweeps import SweepSpec

FILE = UNTIL_DECIDED  # one of the toolkit's files: no `--out` of any command writes over it
FORMAT = "ttscale.comparisons.until_decided"
VERSION = 2
"""2: the design (spending, looks, first look and its floor) is stored; a version-1 file looked every `batch`
problems with O'Brien-Fleming-like spending, as `LEGACY` does, and resumes so."""
#: The cap when none is given: enough for a 10-point difference at the usual discordance (tests/stats).
DEFAULT_MAX_PROBLEMS = 200
METHOD = ("looks at the design's sizes: the first n_k problems of every cell, the claim read off Tango's score "
          "statistic with the repeats' design effect against group-sequential critical values c_k (Lan and DeMets "
          "1983 alpha spending, ttscale.stats.sequential; the design's spending, ttscale.stats.designs), keeping "
          "the chance of any false verdict over all looks at alpha")


def arguments(*, runs: Sequence[Any], resume: Any, limit: int | None, strategies: Sequence[str],
              claim: str | None, max_problems: int | None, batch: int | None,
              design: str | Design | None = None) -> dict[str, Any] | None:
    """A new sequential comparison's settings from `ttscale.compare`'s arguments (None: a fixed-size one), checked."""
    if claim is None:
        if max_problems is not None or batch is not None or design is not None:
            raise ValueError("max_problems, batch and design apply only with until_decided (a comparison that stops "
                             "when decided); a fixed-size one takes limit")
        return None
    if runs or resume:
        raise ValueError("until_decided applies to a new run of two strategies; "
                         + ("run directories are compared as they are" if runs else
                            "a resumed comparison continues the claim it stored"))
    if limit is not None:
        raise ValueError("until_decided runs up to max_problems, not limit: give max_problems")
    if len(strategies) != 2:
        raise ValueError(f"until_decided tests a claim of one strategy over another: give two, got {len(strategies)}")
    return settle(claim, max_problems, batch, design)


def stored_design(state: Mapping[str, Any]) -> Design:
    """A stored comparison's design (version 1, before designs: `LEGACY`)."""
    return design_of(state["design"]) if "design" in state else LEGACY


def plan_of(state: Mapping[str, Any]) -> SequentialPlan:
    """The plan a stored comparison looks by: its design (version 1: `LEGACY`'s spending every `batch`)."""
    design = stored_design(state)
    batch = state.get("batch")
    return design.plan(parse_claim(state["claim"], ratio=False), int(state["max_problems"]),
                       batch=None if batch is None else int(batch))


def settle(claim: str, max_problems: int | None, batch: int | None,
           design: str | Design | None = None) -> dict[str, Any]:
    """The stored settings of a new sequential comparison (checked: bad values raise ValueError in one line)."""
    parsed = parse_claim(claim, ratio=False, what="until_decided")
    cap = DEFAULT_MAX_PROBLEMS if max_problems is None else max_problems
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 2:
        raise ValueError(f"max_problems must be a whole number ≥ 2, got {cap!r}")
    chosen = RECOMMENDED if design is None else design if isinstance(design, Design) else parse_design(design)
    plan = chosen.plan(parsed, cap, batch=batch)
    return {"format": FORMAT, "version": VERSION, "claim": claim, "claim_text": plan.claim.text(),
            "max_problems": cap, "batch": batch, "design": chosen.to_dict(), "design_text": chosen.text(),
            "alpha": plan.alpha, "spending": plan.spending, "method": METHOD, "looks_at": plan.looks,
            "critical_values": [round(float(c), 4) for c in plan.critical_values()],
            "arms": None, "looks": [], "stopped": None}


def load(root: str | Path) -> dict[str, Any] | None:
    """The directory's sequential state; None when it is a fixed-size comparison."""
    path = Path(root) / FILE
    if not path.is_file():
        return None
    try:
        state = parse_json(path.read_text(encoding="utf-8"))
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} file")
        plan_of(state)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    return state


def save(root: str | Path, state: Mapping[str, Any]) -> None:
    RunDir(Path(root)).write_json(FILE, dict(state))


async def run(spec: SweepSpec, root: str | Path, state: dict[str, Any], *, engine: AsyncEngine | None,
              progress: bool = True, log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
              verbose: bool = False) -> dict[str, Any]:
    """Look after look until one decides or the cap is reached; each look saved as it is read. An engine started
    here writes its output to the comparison's engine.log (`verbose`: to this terminal), as a sweep's does."""
    from ttscale.running.launch import start_logged
    from ttscale.runstore.storage import ENGINE_LOG
    from ttscale.sweeps import run_sweep

    plan = plan_of(state)
    own: AsyncEngine | None = None
    try:
        while state["stopped"] is None:
            index = len(state["looks"])
            n = plan.looks[index]
            if engine is None and own is None and _pending(spec, root, n):
                quiet = spec.server is None and not verbose  # a served model's start prints nothing here
                own = await start_logged(spec.server or spec.engine, log=Path(root) / ENGINE_LOG if quiet else None)
            await run_sweep(spec, root, engine=engine or own, progress=progress, log=log, problems=n)
            read = look(spec, root, state, index)
            state["looks"].append(read)
            if read["outcome"] != "continue":
                state["stopped"] = {k: read[k] for k in ("look", "problems", "outcome", "why")}
                state["fixed_size"] = fixed_size(plan.claim, read)
            save(root, state)
            log(f"compare: look {read['look']} of {len(plan.looks)} at {read['problems']} problems: {read['outcome']}")
    finally:
        if own is not None:
            await own.close()
    return state


def _ids(spec: SweepSpec, root: str | Path, n: int | None = None) -> list[str]:
    """The ids of the task's first `n` problems (None: all of them), in the task's order."""
    from ttscale.sweeps.run import prepare_cell

    return [p.id for p in prepare_cell(spec, spec.cells()[0], root).problems[:n]]


def _pending(spec: SweepSpec, root: str | Path, n: int) -> bool:
    from ttscale.sweeps import cell_dir

    wanted = set(_ids(spec, root, n))
    return any(not wanted <= cell_dir(root, cell).finished_ids() for cell in spec.cells())


def look(spec: SweepSpec, root: str | Path, state: dict[str, Any], index: int) -> dict[str, Any]:
    """Look `index` (0-based) on the records of the first n_k problems: its statistic, boundary and outcome."""
    from ttscale.stats.paired import pair_records
    from ttscale.sweeps import cell_dir

    plan = plan_of(state)
    every = _ids(spec, root)
    ids = set(every[: plan.looks[index]])
    # Arms by grid entry (each strategy as given), keyed as compare pairs them: (problem id, run seed).
    arms: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
    for cell in spec.cells():
        records = arms.setdefault(cell.candidate, {})
        records.update({(str(r["id"]), cell.seed): r for r in cell_dir(root, cell).records() if str(r["id"]) in ids})
    (name_a, a), (name_b, b) = list(arms.items())[:2]
    state["arms"] = [name_a, name_b]
    paired, _, excluded = pair_records(a, b)
    rows = [[(float(bool(x.get("correct"))), float(bool(y.get("correct")))) for x, y in v] for v in paired.values()]
    # The task may hold no more problems than the look asks for: that look is then the last.
    read = read_look(plan, index, rows, problems=len(ids), names=(name_a, name_b), task_problems=len(every))
    return {**read, "excluded": excluded}


def read_look(plan: SequentialPlan, index: int, rows: list[list[tuple[float, float]]], *, problems: int,
              names: tuple[str, str] = ("A", "B"), task_problems: int | None = None) -> dict[str, Any]:
    """Look `index` (0-based) of `plan` on `rows` (per problem, its pairs of right/wrong outcomes of A and B) from
    `problems` problems. A look that reads the task's last problem before the cap (fewer problems than the look's
    size, or all `task_problems` the task has) is the last, and its boundary spends all the error left."""
    from ttscale.stats.proportions import paired_proportions

    ran_out = problems < plan.looks[index] or (task_problems is not None and problems >= task_problems)
    early = ran_out and problems < plan.max_problems
    last = index == len(plan.looks) - 1 or early
    z = plan.critical_at_end(index, problems) if early else float(plan.critical_values()[index])
    read: dict[str, Any] = {"look": index + 1, "problems": problems, "paired_problems": len(rows),
                            "critical": round(z, 4)}
    if not rows:
        return {**read, "outcome": "inconclusive" if last else "continue", "statistic": {},
                "why": f"look {index + 1}: no pair without an error among {problems} problems"}
    found = paired_proportions(rows)
    design = found.design_effect
    b_, c_, k_ = (np.array([x / design]) for x in (found.only_a, found.only_b, found.pairs))
    claim = plan.claim
    deltas = [claim.value] if claim.kind == "better" else [-claim.value] if claim.kind == "not_worse" \
        else [-claim.value, claim.value]
    statistic = {f"T({100 * d:+g} pts)": round(float(tango_score(b_, c_, k_, d)[0]), 4) for d in deltas}
    result = str(outcome(claim, b_, c_, k_, z, last=last)[0])
    read.update(pairs=found.pairs, difference=found.estimate, ci95=[found.low, found.high], only_a=found.only_a,
                only_b=found.only_b, design_effect=design, statistic=statistic, outcome=result)
    shown = ", ".join(f"{k} = {v:.2f}" for k, v in statistic.items())
    where = f"look {index + 1} of {len(plan.looks)} at {problems} problems ({found.pairs} pairs)"
    if early:  # the boundary spent the error left: say why this look is the last
        where += f", the task's last problem (it has {problems}, the cap was {plan.max_problems})"
    if result == "continue":
        read["why"] = f"{where}: {shown} inside ±{z:.2f}"
    elif result == "inconclusive":
        cap = ", the cap" if problems == plan.max_problems else ""
        read["why"] = f"{where}{cap}: {shown} inside ±{z:.2f}, no verdict either way"
    else:
        read["why"] = f"{where}: {shown} crossed the boundary ±{z:.2f}: {names[0]} vs {names[1]}, " \
                      f"{claim.text()} {result}"
    return read


def fixed_size(claim: Claim, read: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a fixed-size comparison would need for 80% power to decide the claim at the Δ measured where it stopped:
    "reproduced" where the measured Δ is on the claim's side, else "not reproduced" (None: neither, Δ on the
    line)."""
    if "pairs" not in read:
        return None
    acc = pilot_accuracy(only_a=read["only_a"], only_b=read["only_b"], pairs=read["pairs"],
                         problems=read["paired_problems"], design_effect=read["design_effect"])
    at = (f"the measured Δ {100 * acc.difference:+.1f} pts, discordance {acc.discordance:.2f}, "
          f"design effect {acc.design_effect:.2f}")
    if accuracy_reachable(claim, acc):
        return {"problems_80": accuracy_problems(claim, acc, 0.8, sims=2000), "verdict": "reproduced", "at": at}
    # "Not reproduced" is the mirror image's "better": the interval wholly beyond the line on the other side.
    d = acc.difference
    line = -claim.value if claim.kind == "better" else claim.value
    mirrored = replace(acc, difference=abs(d) if claim.kind == "equal" else -d)
    opposite = Claim(kind="better", value=line)
    if not accuracy_reachable(opposite, mirrored):
        return {"problems_80": None, "verdict": None, "at": at}
    return {"problems_80": accuracy_problems(opposite, mirrored, 0.8, sims=2000), "verdict": "not reproduced", "at": at}


def markdown_lines(state: Mapping[str, Any]) -> list[str]:
    """compare's words on a sequential comparison: the claim, the looks, what stopped it and what it saved."""
    looks = state.get("looks") or []
    design = stored_design(state)
    looks_at = [int(n) for n in state.get("looks_at") or []]
    shown = ", ".join(map(str, looks_at)) if len(looks_at) <= 8 else \
        f"{', '.join(map(str, looks_at[:4]))}, ..., {looks_at[-1]}"
    batch = f", a look every {state['batch']} problems" if state.get("batch") else ""
    lines = [f"Until decided: {state['claim_text']} ({state['claim']}), {len(looks_at)} looks at {shown} problems "
             f"(the cap), group-sequential boundaries ({design.text()}{batch}; α = {state['alpha']:g} over all "
             f"looks)."]
    stopped = state.get("stopped")
    if stopped is None:
        return [*lines, f"Not decided yet: {len(looks)} look(s) read; `ttscale compare --resume DIR` continues."]
    lines.append(f"Stopped at {stopped['why']}.")
    fixed = (state.get("fixed_size") or {}).get("problems_80")
    used = stopped["problems"]
    saving = (f"{state['max_problems'] - used} of the cap's {state['max_problems']} problems never ran"
              if used < state["max_problems"] else "it ran to the cap")
    if fixed is not None:
        saving += (f"; a fixed-size comparison deciding it ({state['fixed_size']['verdict']}) at 80% power would need "
                   f"{fixed} ({state['fixed_size']['at']})")
    return [*lines, f"Problems used: {used}; {saving}."]


__all__ = ["ALLOWED", "DEFAULT_MAX_PROBLEMS", "FILE", "arguments", "fixed_size", "load", "look", "markdown_lines",
           "read_look", "run", "settle"]
