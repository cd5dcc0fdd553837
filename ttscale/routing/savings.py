"""Tokens saved at equal accuracy (P4): what the best fixed baseline needs to match an adaptive policy.

Snell et al., arXiv:2408.03314 (2024), §5 compare compute-optimal routing with best-of-N weighted (a
verifier-weighted vote) and report up to 4x less compute for the same accuracy. Here the baseline is
self_consistency with a verifier (the weighted vote) when the sweep has such cells, else the best fixed
candidate of any kind.

Symbols: per budget b of the baseline, the baseline candidate with the best accuracy on the problems at
hand (chosen on those same problems: an advantage to the baseline, so the ratio errs low), its mean spend
S_b and accuracy A_b; points sorted by S, envelope Â_i = max_{j ≤ i} A_j. The policy at a budget has
held-out accuracy A and mean tokens T (its strategy's spend plus the probe's). The baseline's tokens for A,
interpolated in log tokens (scaling curves are near-linear in log compute), i the first point with Â_i ≥ A:
T* = exp(log S_{i−1} + (A − Â_{i−1}) / (Â_i − Â_{i−1}) · (log S_i − log S_{i−1})); P4 = T* / T. When A is
below the first point, T* ≤ S_1 and the ratio is an upper bound ("at_most"); when no point reaches A,
T* > S_last and the ratio is a lower bound ("at_least"). The 95% interval is a percentile bootstrap over
problems (both sides recomputed on each resample); an at_least resample counts as +∞ and an at_most one as
0, so censoring widens the interval instead of hiding in it (a None end is unbounded).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from ttscale.stats.bootstrap import resample_indices

Bound = Literal["exact", "at_most", "at_least"]


def baseline_tokens(points: Sequence[tuple[float, float]], target: float) -> tuple[float, Bound]:
    """T*: the tokens a baseline curve of (mean tokens, accuracy) points needs for `target` accuracy, and its kind."""
    if not points:
        raise ValueError("baseline_tokens needs at least one (tokens, accuracy) point")
    pts = sorted((max(float(s), 1e-9), float(a)) for s, a in points)
    envelope = list(np.maximum.accumulate([a for _, a in pts]))
    if target <= envelope[0]:
        return pts[0][0], "exact" if target == envelope[0] else "at_most"
    for i in range(1, len(pts)):
        if envelope[i] >= target:
            (s0, _), (s1, _) = pts[i - 1], pts[i]
            a0, a1 = envelope[i - 1], envelope[i]
            frac = (target - a0) / (a1 - a0)
            return math.exp(math.log(s0) + frac * (math.log(s1) - math.log(s0))), "exact"
    return pts[-1][0], "at_least"


def baseline_of(candidates: Mapping[str, Mapping[str, Any]]) -> tuple[str, set[str]]:
    """The baseline's name and its candidates: the verifier-weighted votes, else every candidate."""
    weighted = {k for k, c in candidates.items() if c.get("strategy") == "self_consistency"
                and str((c.get("params") or {}).get("verifier") or "none").lower() != "none"}
    if weighted:
        return "verifier-weighted best-of-N (self_consistency with a verifier)", weighted
    return "best fixed candidate (the sweep has no verifier-weighted cell)", set(candidates)


def tokens_saved(table: Any, held: Mapping[float, np.ndarray], probe_spent: np.ndarray, *,
                 candidates: Mapping[str, Mapping[str, Any]], resamples: int, seed: int) -> dict[str, Any]:
    """P4 at every policy budget. `table` is policy's `_Table` (budgets, candidates, correct, spent per budget);
    `held[b]` the policy's held-out (correct, spent) rows over problems; `probe_spent` each problem's probe tokens."""
    name, keys = baseline_of(candidates)
    base = {}
    for b in table.budgets:
        rows = [j for j, c in enumerate(table.candidates[b]) if c in keys]
        if rows:
            base[b] = (table.correct[b][rows], table.spent[b][rows], [table.candidates[b][j] for j in rows])
    if not base:
        return {"baseline": name, "note": "no baseline candidate was measured on every problem"}

    def curve(rows: np.ndarray) -> list[tuple[float, float, str, float]]:
        out = []
        for b, (correct, spent, names) in base.items():
            acc, cost = correct[:, rows].mean(axis=1), spent[:, rows].mean(axis=1)
            j = min(range(len(acc)), key=lambda c: (-acc[c], cost[c], names[c]))
            out.append((float(cost[j]), float(acc[j]), names[j], b))
        return out

    def ratio(b: float, rows: np.ndarray) -> tuple[float | None, Bound, float, float, float]:
        accuracy = float(held[b][0, rows].mean())
        tokens = float(held[b][1, rows].mean() + probe_spent[rows].mean())
        needed, bound = baseline_tokens([(s, a) for s, a, _, _ in curve(rows)], accuracy)
        return (needed / tokens if tokens > 0 else None), bound, accuracy, tokens, needed

    n = len(probe_spent)
    everyone = np.arange(n)
    draws = [row for chunk in resample_indices(n, resamples, np.random.default_rng(seed)) for row in chunk]
    out: dict[str, Any] = {
        "baseline": name,
        "baseline_curve": [{"tokens": round(s, 1), "accuracy": round(a, 4), "candidate": c, "budget": b}
                           for s, a, c, b in sorted(curve(everyone))],
        "method": "P4 = baseline tokens for the policy's held-out accuracy (log-token interpolation on the "
                  "baseline's best-per-budget envelope) / the policy's mean tokens (strategy + probe); 95% "
                  "percentile bootstrap over problems",
        "budgets": {},
    }
    for b in held:
        value, bound, accuracy, tokens, needed = ratio(b, everyone)
        boot = []
        for draw in draws:
            r, kind, *_ = ratio(b, draw)
            boot.append(math.inf if kind == "at_least" or r is None else 0.0 if kind == "at_most" else r)
        # No interpolation between resamples: it would turn ±∞ neighbours into NaN.
        low, high = float(np.percentile(boot, 2.5, method="lower")), float(np.percentile(boot, 97.5, method="higher"))
        out["budgets"][_fmt(b)] = {
            "policy_accuracy": round(accuracy, 4), "policy_tokens": round(tokens, 1),
            "probe_tokens": round(float(probe_spent.mean()), 1), "baseline_tokens": round(needed, 1),
            "bound": bound, "ratio": None if value is None else round(value, 3),
            "ci95": [_finite(low), _finite(high)],
            "censored_share": round(sum(x in (0.0, math.inf) for x in boot) / len(boot), 4),
        }
    return out


def _finite(x: float) -> float | None:
    return round(x, 3) if math.isfinite(x) else None


def _fmt(b: float) -> str:
    return str(int(b)) if float(b).is_integer() else f"{b:g}"
