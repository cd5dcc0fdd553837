"""`ttscale.plan`: how many problems a claim needs, from a pilot comparison or from stated assumptions.

A pilot is a `ttscale compare` directory (run mode's sweep, or read mode's compare.json naming its runs) or two
run directories: its two arms are paired as `ttscale compare` pairs them (ttscale.stats.paired.pair_records),
and it gives what the power depends on (ttscale.stats.power): the accuracy difference Δ, the discordance q, the
repeats R and their design effect D (as `paired_proportions` estimates it), a cost ratio ρ and its spread σ over
problems, and what one (problem, repeat) pair cost in tokens, eFLOPs and wall time, which the planned size
multiplies. Every size is for the interval the verdict itself reads (Tango's score interval with the design
effect; the cluster bootstrap for ratios), at α = 0.05 (a 95% interval), with the pilot's repeats.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ttscale.comparisons.paired import COMPARE, load_arms
from ttscale.stats.claims import ALLOWED, ALLOWED_ACCURACY, claim_spec, parse_claim
from ttscale.stats.designs import RECOMMENDED, Design, Recommendation, parse_design, recommend
from ttscale.stats.paired import METRICS, pair_records
from ttscale.stats.power import (
    Accuracy,
    Claim,
    Ratio,
    accuracy_detectable,
    accuracy_power,
    accuracy_problems,
    ratio_detectable,
    ratio_power,
    ratio_problems,
)
from ttscale.stats.proportions import paired_proportions

MAX_SIMS = 100_000
"""The most simulated experiments per size a plan runs (25x the default 4,000)."""
MAX_REPEATS = 100
"""The most pairs per problem a plan sizes for: the simulation draws each problem's type among (R + 1)(R + 2)/2
(`ttscale.stats.power.problem_types`), so R = 100 takes about 12 s at the default 4,000 experiments on 2 cores,
R = 300 about 45 s, and from R ≈ 1,030 a type's binomial weight no longer fits a float (OverflowError)."""
#: The claims planned when none is named: the verdict rules' own (better, equal within and not worse by the 1-point
#: margin of benchmarks/verdicts.py; a cost cut of any size).
DEFAULT_CLAIMS = ("better:0", "equal:1", "not-worse:1", "ratio:1.1")
"""The default cost claim is turned to 1/1.1 when the pilot's ratio is below 1 (A the cheaper)."""
POWERS = (0.8, 0.9)
_COST_METRICS = tuple(m.name for m in METRICS if m.kind == "ratio")


@dataclass(frozen=True, kw_only=True)
class Compute:
    """What an evaluation of both arms costs, scaled from the pilot's ledgers."""

    generated_tokens: float
    eflops: float | None
    wall_seconds: float | None
    """At the pilot's pace (its runs' elapsed time per problem, concurrency included)."""

    def times(self, pairs: float) -> Compute:
        return Compute(generated_tokens=self.generated_tokens * pairs,
                       eflops=None if self.eflops is None else self.eflops * pairs,
                       wall_seconds=None if self.wall_seconds is None else self.wall_seconds * pairs)

    def text(self) -> str:
        parts = [f"{self.generated_tokens:.3g} tokens"]
        if self.eflops is not None:
            parts.append(f"{self.eflops:.3g} eFLOPs")
        if self.wall_seconds is not None:
            seconds = self.wall_seconds
            parts.append(f"{seconds:.3g} s" if seconds < 120 else f"{seconds / 60:.3g} min" if seconds < 7200
                         else f"{seconds / 3600:.3g} h")
        return ", ".join(parts)


@dataclass(frozen=True, kw_only=True)
class ClaimPlan:
    """One claim's planned sizes."""

    claim: Claim
    metric: str
    """accuracy, or the cost metric of a ratio claim."""
    repeats: int
    problems: dict[float, int | None]
    """Power → the fewest problems (each with `repeats` pairs); None: no size decides it (see `note`)."""
    size: int | None
    """The size `power_now` and `detectable` are for (the pilot's problems, or the one asked for)."""
    power_now: float | None
    detectable: float | None
    """The smallest effect `size` problems detect with 80% power: Δ (better), the tightest margin (equal,
    not_worse), the true ratio (ratio); None: none in range."""
    compute: dict[float, Compute | None] = field(default_factory=dict)
    note: str | None = None
    sequential: Recommendation | None = None
    """The recommended sequential design for an accuracy claim (`compare --until-decided`): its cap and expected
    problems by simulation (ttscale.stats.designs.recommend); None: a ratio, or no size decides it."""

    def detectable_text(self) -> str:
        if self.detectable is None:
            return "none in range"
        if self.claim.kind == "ratio":
            return f"ratio {self.detectable:.3g}x"
        return (f"Δ {100 * self.detectable:+.1f} pts" if self.claim.kind == "better"
                else f"margin {100 * self.detectable:.1f} pts")

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim.kind, "value": self.claim.value, "text": self.claim.text(),
                "metric": self.metric, "repeats": self.repeats,
                "problems": {f"{p:g}": n for p, n in self.problems.items()}, "size": self.size,
                "power_at_size": None if self.power_now is None else round(self.power_now, 4),
                "detectable_at_size": self.detectable, "detectable_text": self.detectable_text(),
                "compute": {f"{p:g}": None if c is None else {"generated_tokens": c.generated_tokens,
                                                               "eflops": c.eflops, "wall_seconds": c.wall_seconds}
                            for p, c in self.compute.items()},
                "note": self.note,
                "sequential": None if self.sequential is None else self.sequential.to_dict()}

    def sequential_row(self) -> str | None:
        """This claim's row of the sequential table (`Plan.to_markdown`)."""
        rec = self.sequential
        if rec is None:
            return None
        fixed = rec.fixed_problems

        def expected(name: str) -> str:
            found = rec.at.get(name)
            return "—" if found is None else f"{found.expected_problems:.1f} ({found.expected_problems / fixed:.0%})"

        return (f"| {self.claim.text()} | {fixed} | {rec.max_problems} ({rec.max_problems / fixed:.2f}x) | "
                f"{expected('line')} | {expected('half')} | {expected('planned')} | {expected('twice')} | "
                f"{100 * rec.power:.0f}% | {_percent(rec.false_verdicts())} |")


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{100 * share:.1f}%"


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Every claim's plan, and what it assumed."""

    source: str
    accuracy: Accuracy | None
    ratio: Ratio | None
    per_pair: Compute | None
    claims: tuple[ClaimPlan, ...]

    def to_dict(self) -> dict[str, Any]:
        acc, ratio = self.accuracy, self.ratio
        return {"format": "ttscale.plan", "source": self.source, "alpha": 0.05,
                "accuracy": None if acc is None else {"difference": acc.difference, "discordance": acc.discordance,
                                                      "repeats": acc.repeats, "design_effect": acc.design_effect},
                "ratio": None if ratio is None else {"ratio": ratio.ratio, "spread": ratio.spread},
                "claims": [c.to_dict() for c in self.claims]}

    def to_markdown(self) -> str:
        lines = [f"## Plan ({self.source})", "", "Sizes for the verdict's own 95% interval (Tango's score interval "
                 "with the design effect; the cluster bootstrap for ratios), at α = 0.05."]
        if self.accuracy is not None:
            a = self.accuracy
            lines.append(f"Assumed: accuracy Δ {100 * a.difference:+.1f} pts, discordance {100 * a.discordance:.1f}%, "
                         f"{a.repeats} repeat{'s' if a.repeats > 1 else ''}, design effect {a.design_effect:.2f}.")
        if self.ratio is not None:
            lines.append(f"Assumed: ratio {self.ratio.ratio:.3g}x, spread σ {self.ratio.spread:.3g}.")
        lines += ["", "| claim | problems × repeats for 80% | for 90% | compute for 90% | power now | "
                  "detectable at that size (80%) | note |", "|---|---:|---:|---|---:|---|---|"]
        for c in self.claims:
            sizes = [f"{n} × {c.repeats}" if n is not None else "—" for n in c.problems.values()]
            top = c.compute.get(POWERS[-1])
            now = "—" if c.power_now is None else f"{100 * c.power_now:.0f}% at {c.size}"
            lines.append(f"| {c.metric}: {c.claim.text()} | {sizes[0]} | {sizes[-1]} | "
                         f"{top.text() if top else '—'} | {now} | {c.detectable_text()} | {c.note or ''} |")
        rows = [(c, row) for c in self.claims if (row := c.sequential_row()) is not None]
        if rows:
            design = rows[0][0].sequential.design  # type: ignore[union-attr]
            lines += ["", f"Sequential (`compare --until-decided`, recommended design: {design.text()}): the cap for "
                      "the fixed design's 80% power, and the expected problems by simulation of the verdict at the "
                      "claim's line (no effect for better:0), half, the whole and twice the assumed Δ.", "",
                      "| claim | fixed, 80% | cap | expected at the line | at half | at the assumed Δ | at twice | "
                      "power | false verdicts at the line |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
                      *(row for _, row in rows), ""]
            for c, _ in rows:
                rec = c.sequential
                assert rec is not None
                lines.append(f"    ttscale compare --until-decided {claim_spec(c.claim)} --max-problems "
                             f"{rec.max_problems} --design {rec.design.spec()} ...")
        return "\n".join(lines)


def plan(
    *,
    pilot: str | Path | Sequence[str | Path] | None = None,
    claims: Sequence[Claim | str] = DEFAULT_CLAIMS,
    difference: float | None = None,
    accuracy_a: float | None = None,
    accuracy_b: float | None = None,
    discordance: float | None = None,
    repeats: int | None = None,
    design_effect: float | None = None,
    ratio: float | None = None,
    ratio_spread: float | None = None,
    metric: str = "generated_tokens",
    size: int | None = None,
    sims: int = 4000,
    seed: int = 0,
    design: str | Design | None = None,
) -> Plan:
    """The problems each claim needs for 80% and 90% power, from a `pilot` (a compare directory, or two run
    directories) or from stated assumptions (`difference` or `accuracy_a`/`accuracy_b`, `discordance`,
    `repeats`, `design_effect`; `ratio`, `ratio_spread`); a stated value overrides the pilot's. `size`: the
    problems the power now and the smallest detectable effect are for (default the pilot's). `design`: the
    sequential design planned for each accuracy claim (ttscale.stats.designs.parse_design; default the recommended
    one). Bad input raises ValueError with a one-line message."""
    if isinstance(claims, str | Claim):  # one claim given as such, not its characters
        claims = [claims]
    parsed = [c if isinstance(c, Claim) else parse_claim(c) for c in claims]
    if metric not in _COST_METRICS:
        raise ValueError(f"metric must be one of {', '.join(_COST_METRICS)}, got {metric!r}")
    found: dict[str, Any] = read_pilot(pilot, metric=metric) if pilot is not None else {}
    cost = _ratio(found, ratio, ratio_spread)
    if tuple(claims) == DEFAULT_CLAIMS and cost is not None and cost.ratio < 1:
        # The default cost claim points the way the pilot's ratio does: A cheaper reads as ρ ≤ 1/1.1.
        parsed = [Claim(kind="ratio", value=1 / c.value) if c.kind == "ratio" else c for c in parsed]
    if not parsed:
        raise ValueError("give at least one claim")
    if isinstance(sims, bool) or not isinstance(sims, int) or not 100 <= sims <= MAX_SIMS:
        # Bounded above: each size's simulations are held in memory, and 1e8 of them ran past 90 s.
        raise ValueError(f"sims must be a whole number in [100, {MAX_SIMS:,}], got {sims!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a whole number ≥ 0, got {seed!r}")
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int)
                                or not 1 <= repeats <= MAX_REPEATS):
        raise ValueError(f"repeats must be a whole number in [1, {MAX_REPEATS:,}], got {repeats!r}")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 2):
        raise ValueError(f"size must be a whole number ≥ 2, got {size!r}")
    chosen = RECOMMENDED if design is None else design if isinstance(design, Design) else parse_design(design)
    source = found.get("source", "stated assumptions")
    if accuracy_a is not None or accuracy_b is not None:
        if accuracy_a is None or accuracy_b is None or difference is not None:
            raise ValueError("give both accuracy_a and accuracy_b, or difference, not a mix")
        for name, p in (("accuracy_a", accuracy_a), ("accuracy_b", accuracy_b)):
            if not 0 <= p <= 1:
                raise ValueError(f"{name} must be in [0, 1] (a proportion), got {p}")
        difference = accuracy_a - accuracy_b
        if discordance is None:  # independent outcomes: the largest discordance these accuracies allow but one
            discordance = accuracy_a * (1 - accuracy_b) + accuracy_b * (1 - accuracy_a)
    acc = _accuracy(found, difference, discordance, repeats, design_effect)
    reps = acc.repeats if acc is not None else int(repeats or found.get("repeats") or 1)
    at = size if size is not None else found.get("problems")
    per_pair: Compute | None = found.get("per_pair")
    out = []
    for claim in parsed:
        if claim.kind == "ratio":
            if cost is None:
                raise ValueError(f"claim {claim.text()}: give ratio and ratio_spread, or a pilot that records "
                                 f"{metric}")
            problems = {p: ratio_problems(claim, cost, p) for p in POWERS}
            now = ratio_power(claim, cost, at) if at else None
            detect = ratio_detectable(claim, cost.spread, at) if at else None
            note = (None if problems[POWERS[0]]
                    else f"the assumed ratio {cost.ratio:.3g}x is not beyond {claim.value:g}x")
            name = metric
            sequential = None
        else:
            if acc is None:
                raise ValueError(f"claim {claim.text()}: give difference (or accuracy_a and accuracy_b) and "
                                 "discordance, or a pilot")
            problems = {p: accuracy_problems(claim, acc, p, sims=sims, seed=seed) for p in POWERS}
            now = accuracy_power(claim, acc, at, sims=sims, seed=seed) if at else None
            detect = accuracy_detectable(claim, acc, at, sims=min(sims, 2000), seed=seed) if at else None
            note = None if problems[POWERS[0]] else _accuracy_note(claim, acc)
            name = "accuracy"
            sequential = (recommend(claim, acc, design=chosen, power=POWERS[0], sims=min(sims, 2000), seed=seed,
                                    fixed=problems[POWERS[0]]) if problems[POWERS[0]] else None)
        compute = {p: None if n is None or per_pair is None else per_pair.times(n * reps) for p, n in problems.items()}
        out.append(ClaimPlan(claim=claim, metric=name, repeats=reps, problems=problems, size=at, power_now=now,
                             detectable=detect, compute=compute, note=note,
                             sequential=sequential))
    return Plan(source=source, accuracy=acc, ratio=cost, per_pair=per_pair, claims=tuple(out))


def _accuracy_note(claim: Claim, acc: Accuracy) -> str:
    side = {"better": f"above {100 * claim.value:+g} pts", "equal": f"inside ±{100 * claim.value:g} pts",
            "not_worse": f"above {-100 * claim.value:+g} pts"}[claim.kind]
    return f"the assumed Δ {100 * acc.difference:+.1f} pts is not {side}: no size reproduces it"


def _accuracy(found: dict[str, Any], difference: float | None, discordance: float | None, repeats: int | None,
              design_effect: float | None) -> Accuracy | None:
    d = difference if difference is not None else found.get("difference")
    q = discordance if discordance is not None else found.get("discordance")
    if d is None or q is None:
        return None
    r = repeats if repeats is not None else int(found.get("repeats") or 1)
    if design_effect is not None:
        de = design_effect
    elif "copy" in found and r > 1:  # the pilot's correlation, carried to another number of repeats
        de = 1 + (r - 1) * found["copy"]
    else:
        de = float(r) if found.get("copy") is None and r > 1 else 1.0  # unknown correlation: as if copies
    if discordance is None and found and q == 0:
        # No discordant pair in K says only that disagreements are rare: the rule of three's 95% upper bound, 3/K,
        # not 0 (with which every simulated experiment would be the pilot again).
        q = min(1.0, 3 / int(found["pairs"]))
    return Accuracy(difference=float(d), discordance=float(q), repeats=int(r), design_effect=float(de))


def _ratio(found: dict[str, Any], ratio: float | None, spread: float | None) -> Ratio | None:
    rho = ratio if ratio is not None else found.get("ratio")
    sigma = spread if spread is not None else found.get("spread")
    if rho is None or sigma is None:
        return None
    return Ratio(ratio=float(rho), spread=float(sigma))


# -- reading a pilot ---------------------------------------------------------------------------------------


def read_pilot(pilot: str | Path | Sequence[str | Path], *, metric: str = "generated_tokens") -> dict[str, Any]:
    """What a pilot says: difference, discordance, repeats, copy (the repeats' correlation), ratio, spread,
    problems, pairs and per_pair (a Compute); each absent when the pilot cannot say it."""
    paths = [Path(pilot)] if isinstance(pilot, str | Path) else [Path(p) for p in pilot]
    if not paths:
        raise ValueError("pilot: give a compare directory or two run directories")
    for path in paths:
        if not path.exists():
            raise ValueError(f"pilot: {str(path)!r} does not exist")
    if len(paths) == 1 and (paths[0] / COMPARE).is_file() and not (paths[0] / "sweep.json").is_file():
        paths = _compare_sources(paths[0])  # read mode's compare.json names the runs it compared
    arms = load_arms(paths)
    if len(arms) != 2:
        raise ValueError(f"pilot: a plan compares two arms, the pilot has {len(arms)} "
                         f"({', '.join(a.label for a in arms)}); give a compare directory of two, or two runs")
    a, b = arms
    paired, _, _ = pair_records(a.records, b.records)
    if len(paired) < 2:
        raise ValueError(f"pilot: {a.label} and {b.label} share {len(paired)} problem(s); a plan needs at least 2")
    source = f"pilot: {a.label} vs {b.label}, {len(paired)} problems"
    rows = [[(float(bool(x.get("correct"))), float(bool(y.get("correct")))) for x, y in v] for v in paired.values()]
    counts = paired_proportions(rows)
    sizes = sorted(len(v) for v in rows)
    repeats = sizes[len(sizes) // 2]
    found: dict[str, Any] = {"source": source, "problems": len(paired), "pairs": counts.pairs, "repeats": repeats,
                             "difference": counts.estimate,
                             "discordance": (counts.only_a + counts.only_b) / counts.pairs}
    if repeats > 1:
        found["copy"] = (counts.design_effect - 1) / (repeats - 1)
    read = next(m for m in METRICS if m.name == metric).read
    costs = [[(read(x), read(y)) for x, y in v] for v in paired.values()]
    if all(u is not None and w is not None for v in costs for u, w in v):
        mean_a = [sum(u or 0.0 for u, _ in v) / len(v) for v in costs]
        mean_b = [sum(w or 0.0 for _, w in v) / len(v) for v in costs]
        total_a, total_b = sum(mean_a) / len(mean_a), sum(mean_b) / len(mean_b)
        if total_a > 0 and total_b > 0:
            deviations = [x / total_a - y / total_b for x, y in zip(mean_a, mean_b, strict=True)]
            centre = sum(deviations) / len(deviations)
            spread = math.sqrt(sum((d - centre) ** 2 for d in deviations) / (len(deviations) - 1))
            found["ratio"] = sum(u or 0.0 for v in costs for u, _ in v) / sum(w or 0.0 for v in costs for _, w in v)
            found["spread"] = max(spread, 1e-6)
    found["per_pair"] = _per_pair(a.records, a.info, b.records, b.info, paired)
    return found


def _compare_sources(root: Path) -> list[Path]:
    try:
        data = json.loads((root / COMPARE).read_text())
        sources = [Path(s) for arm in data["arms"] for s in arm.get("sources", [])]
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(f"pilot: {root / COMPARE} is not a compare.json this version reads") from None
    if not sources:
        raise ValueError(f"pilot: {root / COMPARE} names no run directories")
    return sources


def _per_pair(records_a: dict[Any, Any], info_a: dict[str, Any], records_b: dict[Any, Any], info_b: dict[str, Any],
              paired: dict[str, list[tuple[Any, Any]]]) -> Compute:
    """Tokens and eFLOPs of one (problem, repeat) pair, both arms; wall time from each arm's runs' elapsed time."""
    pairs = [pair for v in paired.values() for pair in v]

    def mean(key: str) -> float | None:
        values = [((x.get("ledger") or {}).get(key), (y.get("ledger") or {}).get(key)) for x, y in pairs]
        numbers = [float(u) + float(w) for u, w in values if isinstance(u, int | float) and isinstance(w, int | float)]
        return sum(numbers) / len(numbers) if numbers and len(numbers) == len(values) else None

    def pace(records: dict[Any, Any], info: dict[str, Any]) -> float | None:
        seconds = 0.0
        for source in info.get("sources", []):
            try:
                seconds += float(json.loads((Path(source) / "summary.json").read_text())["wall_seconds"])
            except (OSError, ValueError, KeyError, TypeError):
                return None  # a run with no summary (unfinished): no pace to scale
        return seconds / len(records) if records else None

    wall_a, wall_b = pace(records_a, info_a), pace(records_b, info_b)
    return Compute(generated_tokens=mean("generated_tokens") or 0.0, eflops=mean("eflops"),
                   wall_seconds=None if wall_a is None or wall_b is None else wall_a + wall_b)


__all__ = ["ALLOWED", "ALLOWED_ACCURACY", "DEFAULT_CLAIMS", "POWERS", "ClaimPlan", "Compute", "Plan", "parse_claim",
           "plan", "read_pilot"]
