"""Paired comparisons of two arms (strategies run on the same problems and seeds), with cluster-bootstrap CIs.

An arm is a set of records keyed by (problem id, run seed). Arms A and B are paired by problem and by
repeat: the run seeds of the two arms are matched when they are the same set (repeat r of both ran
with run seed r, so both saw the same problems with the same per-request seeds), else by rank (the
r-th smallest seed of A with the r-th of B). A pair where either side errored is left out, and counted.

Per metric m, with x_A(p, r) and x_B(p, r) the values of the pairs (p, r) kept and K the number of pairs:
- accuracy: the difference of means, in points, Δ = 100 · Σ (x_A − x_B) / K;
- a cost (tokens, KV, eFLOPs, calls, seconds): the ratio of means, ρ = Σ x_A / Σ x_B.

The CI of a cost is a cluster bootstrap over problems: problems are drawn with replacement
(`ttscale.stats.bootstrap`), each drawn problem bringing all its pairs, and the statistic recomputed; the
interval is the percentile interval of B resamples (default 95%, B = 2000, seeded).

The CI of a difference of binary outcomes (accuracy: each pair is right/wrong on each side) is Tango's
score interval for the difference of paired proportions (`ttscale.stats.proportions`), not the bootstrap: with few
discordant pairs (only one side right) a percentile bootstrap is too narrow, and with none it is the single
point 0, which reads as proof of equality; 60 pairs with no discordant pair still leave about ±6 points.
Repeats of a problem are not independent pairs: the counts enter the score interval divided by the design
effect of the clustering (Rao and Scott's adjustment; `ttscale.stats.proportions.paired_proportions`), estimated
from the per-problem sums, never below 1, and at its most (every repeat a copy of the first) when no pair
is discordant, because then nothing tells how alike the repeats are. One pair per problem: the plain score interval.

A CI that excludes 0 (Δ) or 1 (ρ) is a detectable difference; one that covers it is "no detectable
difference" at that confidence, which is not equality: an equality claim needs the whole interval inside a
stated margin.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ttscale.stats.bootstrap import percentile_interval, resample_counts
from ttscale.stats.power import difference_evidence, pilot_accuracy, ratio_evidence
from ttscale.stats.proportions import paired_proportions

Record = Mapping[str, Any]


def _ledger(record: Record, *path: str) -> float | None:
    value: Any = record.get("ledger")
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True, kw_only=True)
class Metric:
    """One quantity compared between arms."""

    name: str
    label: str
    kind: Literal["difference", "ratio"]
    source: str
    """Where it is read in a record (stored in compare.json, so a reader knows what was compared)."""
    read: Callable[[Record], float | None] = field(repr=False)
    fewer: str = "fewer"
    """The word for a ratio below 1 (`fewer` tokens, `less` time)."""


METRICS: tuple[Metric, ...] = (
    Metric(name="accuracy", label="accuracy", kind="difference", source="record.correct",
           read=lambda r: float(bool(r.get("correct")))),
    Metric(name="generated_tokens", label="generated tokens", kind="ratio", source="ledger.generated_tokens",
           read=lambda r: _ledger(r, "generated_tokens")),
    Metric(name="kv_tokens", label="KV", kind="ratio", source="ledger.tree.peak_unique_kv_tokens",
           read=lambda r: _ledger(r, "tree", "peak_unique_kv_tokens")),
    Metric(name="ets_kv", label="KV (ETS reference)", kind="ratio",
           source="ledger.tree.reference_kv_tokens (the ETS paper's per-node KV summed over selection rounds)",
           read=lambda r: _ledger(r, "tree", "reference_kv_tokens")),
    Metric(name="eflops", label="eFLOPs", kind="ratio", source="ledger.eflops", read=lambda r: _ledger(r, "eflops")),
    Metric(name="verifier_calls", label="verifier calls", kind="ratio", source="ledger.verifier.calls",
           read=lambda r: _ledger(r, "verifier", "calls")),
    Metric(name="reward_calls", label="reward calls", kind="ratio", source="ledger.tree.verifier_calls",
           read=lambda r: _ledger(r, "tree", "verifier_calls")),
    Metric(name="reward_evaluations", label="reward evaluations", kind="ratio",
           source="ledger.reward_evaluations (solutions or partial paths a verifier scored; GenRM's chains are "
                  "verifier calls)",
           read=lambda r: _ledger(r, "reward_evaluations")),
    Metric(name="wall_seconds", label="wall time", kind="ratio",
           source="ledger.wall_seconds (per problem: depends on the run's concurrency and the machine's load)",
           read=lambda r: _ledger(r, "wall_seconds"), fewer="less"),
)


@dataclass(frozen=True, kw_only=True)
class Effect:
    """A metric's paired effect of A against B, with its bootstrap CI."""

    metric: str
    label: str
    kind: Literal["difference", "ratio"]
    mean_a: float | None
    mean_b: float | None
    value: float | None
    """Δ in points (accuracy) or ρ = mean A / mean B; None when it is undefined (see `note`)."""
    low: float | None = None
    high: float | None = None
    detectable: bool = False
    note: str | None = None
    undefined_resamples: int = 0
    """Resamples whose ratio was 0/0 (left out of the interval)."""
    fewer: str = "fewer"
    interval: str = "cluster bootstrap"
    """How the CI was computed: `cluster bootstrap` or `Tango score` (binary differences, see the module)."""
    design_effect: float | None = None
    """Tango score on repeats: the design effect the counts were divided by (1: pairs independent)."""
    evidence: str | None = None
    """What its size could detect with 80% power, and what the measured effect would need when it detected nothing
    (`ttscale.stats.power.difference_evidence`, `ratio_evidence`); the verdict line carries it after the effect."""

    def text(self) -> str:
        """`KV 1.62x fewer [1.41, 1.85]`, `accuracy -0.8 pts [-3.1, +1.5] (no detectable difference)`."""
        if self.value is None:
            return f"{self.label} n/a ({self.note})"
        if self.kind == "difference":
            body = f"{self.label} {self.value:+.1f} pts" + (
                f" [{self.low:+.1f}, {self.high:+.1f}]" if self.low is not None and self.high is not None else "")
        else:
            fewer = self.value < 1
            x = 1 / self.value if fewer else self.value
            body = f"{self.label} {_times(x)} {self.fewer if fewer else 'more'}"
            if self.low is not None and self.high is not None:
                lo, hi = (_inv(self.high), _inv(self.low)) if fewer else (self.low, self.high)
                body += f" [{_num(lo)}, {_num(hi)}]"
        if self.low is None:
            return f"{body} ({self.note or 'no interval'})"
        return body if self.detectable else f"{body} (no detectable difference)"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "label": self.label, "kind": self.kind, "mean_a": _round(self.mean_a),
                "mean_b": _round(self.mean_b), "value": _round(self.value),
                "ci": [_round(self.low), _round(self.high)], "detectable": self.detectable, "note": self.note,
                "undefined_resamples": self.undefined_resamples, "interval": self.interval,
                "design_effect": _round(self.design_effect), "evidence": self.evidence, "text": self.text()}


@dataclass(frozen=True, kw_only=True)
class PairResult:
    """Arm A against arm B: how they were paired, what was left out, and each metric's effect."""

    a: str
    b: str
    paired_by: str
    problems: int
    """Problems with at least one pair kept (the bootstrap's units)."""
    pairs: int
    """(problem, repeat) pairs kept."""
    errored: int
    """(problem, repeat) pairs left out because A, B or both errored."""
    errored_problems: int
    """Problems with at least one errored pair."""
    unpaired: int
    """(problem, repeat) entries present in one arm only."""
    effects: dict[str, Effect]

    @property
    def verdict(self) -> str:
        if not self.pairs:
            return f"{self.a} vs {self.b}: no paired problems"
        # Effects that could not be computed (a metric one arm lacks, zero in both) are in the table, not here.
        return f"{self.a} vs {self.b}: " + "; ".join(e.text() + (f" — {e.evidence}" if e.evidence else "")
                                                     for e in self.effects.values() if e.value is not None)

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "paired_by": self.paired_by, "problems": self.problems,
                "pairs": self.pairs, "excluded": {"errored_pairs": self.errored,
                                                  "errored_problems": self.errored_problems,
                                                  "unpaired": self.unpaired},
                "effects": {k: e.to_dict() for k, e in self.effects.items()}, "verdict": self.verdict}


def pair_records(
    a: Mapping[tuple[str, int], Record], b: Mapping[tuple[str, int], Record]
) -> tuple[dict[str, list[tuple[Record, Record]]], str, dict[str, int]]:
    """Pairs by problem (sorted ids) and repeat, the pairing rule used, and the counts left out."""
    seeds_a, seeds_b = sorted({s for _, s in a}), sorted({s for _, s in b})
    if seeds_a == seeds_b:
        match, how = {s: s for s in seeds_a}, "problem and run seed"
    else:
        match = dict(zip(seeds_a, seeds_b, strict=False))
        how = (f"problem and repeat order (run seeds differ: {_seeds(seeds_a)} vs {_seeds(seeds_b)}; the r-th "
               "smallest of each is paired)")
    paired: dict[str, list[tuple[Record, Record]]] = {}
    counts = {"errored": 0, "errored_problems": 0, "unpaired": 0}
    errored_problems: set[str] = set()
    for key_a, rec_a in a.items():
        problem, seed = key_a
        rec_b = b.get((problem, match[seed])) if seed in match else None
        if rec_b is None:
            counts["unpaired"] += 1
        elif rec_a.get("error") or rec_b.get("error"):
            counts["errored"] += 1
            errored_problems.add(problem)
        else:
            paired.setdefault(problem, []).append((rec_a, rec_b))
    matched_b = {(p, match[s]) for p, s in a if s in match}
    counts["unpaired"] += sum(1 for key in b if key not in matched_b)
    counts["errored_problems"] = len(errored_problems)
    return {p: paired[p] for p in sorted(paired)}, how, counts


def compare_pair(
    label_a: str, a: Mapping[tuple[str, int], Record], label_b: str, b: Mapping[tuple[str, int], Record], *,
    confidence: float = 0.95, resamples: int = 2000, seed: int = 0, metrics: Sequence[Metric] = METRICS,
) -> PairResult:
    """A against B on every metric both recorded, with cluster-bootstrap CIs over problems."""
    paired, how, counts = pair_records(a, b)
    n_pairs = sum(len(v) for v in paired.values())
    effects: dict[str, Effect] = {}
    columns: dict[str, tuple[Metric, np.ndarray, np.ndarray]] = {}
    binary: dict[str, tuple[Metric, list[list[tuple[float, float]]]]] = {}
    size = np.array([len(v) for v in paired.values()], dtype=float)
    for metric in metrics:
        values = [[(metric.read(ra), metric.read(rb)) for ra, rb in v] for v in paired.values()]
        flat = [x for v in values for x in v]
        missing_a, missing_b = (sum(x[i] is None for x in flat) for i in (0, 1))
        if not flat or missing_a == missing_b == len(flat):
            continue  # neither arm records it: not part of this comparison
        if missing_a or missing_b:
            who = ", ".join(lab + ("" if m == len(flat) else f" ({m} of {len(flat)} pairs)")
                            for lab, m in ((label_a, missing_a), (label_b, missing_b)) if m)
            effects[metric.name] = Effect(metric=metric.name, label=metric.label, kind=metric.kind, mean_a=None,
                                          mean_b=None, value=None, note=f"not recorded by {who}", fewer=metric.fewer)
            continue
        if metric.kind == "difference" and all(x in (0.0, 1.0) and y in (0.0, 1.0) for x, y in flat):
            binary[metric.name] = (metric, [[(float(x or 0.0), float(y or 0.0)) for x, y in v] for v in values])
            continue  # its interval is the score interval, not the bootstrap
        sums_a = np.array([sum(x or 0.0 for x, _ in v) for v in values])  # none is None here
        sums_b = np.array([sum(y or 0.0 for _, y in v) for v in values])
        columns[metric.name] = (metric, sums_a, sums_b)
    boot: dict[str, list[np.ndarray]] = {name: [] for name in columns}
    if len(paired) >= 2 and columns:
        for counts_matrix in resample_counts(len(paired), resamples, np.random.default_rng(seed)):
            n = counts_matrix @ size
            for name, (metric, sums_a, sums_b) in columns.items():
                boot[name].append(_statistic(metric.kind, counts_matrix @ sums_a, counts_matrix @ sums_b, n))
    for name, (metric, sums_a, sums_b) in columns.items():
        effects[name] = _effect(metric, sums_a, sums_b, size, boot[name], label_a, label_b, confidence)
    tokens = columns.get("generated_tokens")  # what deciding an undetected difference would cost, per pair
    per_pair = None if tokens is None else float(tokens[1].sum() + tokens[2].sum()) / float(size.sum())
    for name, (metric, pairs_by_problem) in binary.items():
        effects[name] = _binary_effect(metric, pairs_by_problem, confidence, tokens_per_pair=per_pair)
    return PairResult(a=label_a, b=label_b, paired_by=how, problems=len(paired), pairs=n_pairs,
                      errored=counts["errored"], errored_problems=counts["errored_problems"],
                      unpaired=counts["unpaired"],
                      effects={m.name: effects[m.name] for m in metrics if m.name in effects})


def _statistic(kind: str, total_a: np.ndarray, total_b: np.ndarray, n: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "difference":
            return np.asarray(100 * (total_a - total_b) / n)
        return np.asarray(total_a / total_b)  # x/0 = inf, 0/0 = nan (undefined, counted)


def _effect(metric: Metric, sums_a: np.ndarray, sums_b: np.ndarray, size: np.ndarray, boot: list[np.ndarray],
            label_a: str, label_b: str, confidence: float) -> Effect:
    pairs = float(size.sum())
    mean_a, mean_b = float(sums_a.sum()) / pairs, float(sums_b.sum()) / pairs
    base: dict[str, Any] = {"metric": metric.name, "label": metric.label, "kind": metric.kind, "mean_a": mean_a,
                            "mean_b": mean_b, "fewer": metric.fewer}
    if metric.kind == "ratio" and (mean_a == 0 or mean_b == 0):
        zero = "both" if mean_a == mean_b == 0 else label_a if mean_a == 0 else label_b
        return Effect(**base, value=None, note=f"zero in {zero}: no ratio")
    value = float(_statistic(metric.kind, sums_a.sum(), sums_b.sum(), np.asarray(pairs)))
    if not boot:
        return Effect(**base, value=value, note="one problem: no interval")
    draws = np.concatenate(boot)
    undefined = int(np.isnan(draws).sum())
    if undefined == draws.size:
        return Effect(**base, value=value, note="every resample was 0/0: no interval", undefined_resamples=undefined)
    low, high = percentile_interval(draws[~np.isnan(draws)], confidence=confidence)
    if metric.kind == "difference" and low == high:
        # Every resample gave the same difference (no pair differs, or all differ alike): a point is no
        # interval, and printed as one it would read as proof of equality.
        return Effect(**base, value=value, note="every resample gave the same difference: no interval",
                      undefined_resamples=undefined)
    null = 0.0 if metric.kind == "difference" else 1.0
    detectable = not low <= null <= high
    evidence = None
    if metric.kind == "ratio" and confidence == 0.95:  # the planner's power is that of the 95% interval
        evidence = ratio_evidence(sums_a / size, sums_b / size, detectable=detectable)
    return Effect(**base, value=value, low=low, high=high, detectable=detectable, undefined_resamples=undefined,
                  evidence=evidence)


def _binary_effect(metric: Metric, pairs_by_problem: list[list[tuple[float, float]]], confidence: float, *,
                   tokens_per_pair: float | None = None) -> Effect:
    """A difference of binary outcomes: Tango's score interval on the (design-effect adjusted) counts, in points."""
    flat = [pair for pairs in pairs_by_problem for pair in pairs]
    mean_a, mean_b = (sum(pair[i] for pair in flat) / len(flat) for i in (0, 1))
    base: dict[str, Any] = {"metric": metric.name, "label": metric.label, "kind": metric.kind, "mean_a": mean_a,
                            "mean_b": mean_b, "fewer": metric.fewer, "interval": "Tango score"}
    if len(pairs_by_problem) < 2:
        # One problem: how alike its repeats are cannot be told from it, so no interval (as for the bootstrap).
        return Effect(**base, value=100 * (mean_a - mean_b), note="one problem: no interval")
    found = paired_proportions(pairs_by_problem, confidence=confidence)
    low, high = 100 * found.low, 100 * found.high
    detectable = not low <= 0 <= high
    evidence = None
    if confidence == 0.95:  # the planner's power is that of the 95% interval
        measured = pilot_accuracy(only_a=found.only_a, only_b=found.only_b, pairs=found.pairs,
                                  problems=found.problems, design_effect=found.design_effect)
        evidence = difference_evidence(measured, found.problems, detectable=detectable,
                                       tokens_per_pair=tokens_per_pair)
    return Effect(**base, value=100 * found.estimate, low=low, high=high, detectable=detectable,
                  design_effect=found.design_effect, evidence=evidence)


def _times(x: float) -> str:
    return f"{x:.2f}x"


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.2f}"


def _inv(x: float) -> float:
    return math.inf if x == 0 else 1 / x


def _round(x: float | None) -> float | None:
    """For JSON: None for a missing value, and for an infinite CI end (unbounded)."""
    return None if x is None or not math.isfinite(x) else round(x, 6)


def _seeds(seeds: Sequence[int]) -> str:
    return ",".join(map(str, seeds))


__all__ = ["METRICS", "Effect", "Metric", "PairResult", "compare_pair", "pair_records"]
