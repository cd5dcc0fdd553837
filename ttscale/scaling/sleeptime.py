"""Sleep-time compute's measurements, from stored runs: the frontier, the saving at equal accuracy, amortisation.

Lin et al., "Sleep-time Compute: Beyond Inference Scaling at Test-time", arXiv:2504.13171 (2025), §4-§5: the
accuracy against test-time tokens per query with and without sleep-time compute (their Figures 3-4), the
test-time tokens saved at equal accuracy (≈5x on Stateful GSM-Symbolic), and the cost per query as more
queries share one context (their Figure 7: sleep tokens amortised over the queries).

Input: a sweep's `sleep_time` cells, per sleep budget s (s = 0 is the baseline: the raw context) a grid of
test-time settings × seeds over the same problems: the reference's verbosity levels 0-4 (one greedy answer each),
or test-time budgets (votes, or the k of the pass@k baseline: the largest budget runs, the smaller ones are read
from its stored pool). The saving is paired: a bootstrap over problems resamples the same problems, every seed of
each, on both sides. The paper's parallel baseline is pass@k (§5.1, Figures 5-6): a query counts as right when
any of its k samples is (an oracle), read from the graded samples a `test_time=pass_at_k` run stores
(`grid(..., score="pass@k")`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ttscale.stats.bootstrap import percentile_interval, resample_indices

Records = Sequence[Mapping[str, Any]]
TEST_WEIGHT = 10.0
"""t: what a test-time token costs in sleep-time tokens (the paper's §5.3 sets t = 10: latency-optimised inference,
which test time needs, costs about ten times as much)."""


@dataclass(frozen=True)
class Grid:
    """One sleep budget's runs: per problem (rows, ids in order), seed and test-time budget, right and tokens."""

    ids: tuple[str, ...]
    budgets: tuple[int, ...]
    """Test-time settings, ascending: budgets (tokens per query) or verbosity levels."""
    correct: np.ndarray
    """(problems, seeds, budgets): 1 where the run's answer was right."""
    tokens: np.ndarray
    """(problems, seeds, budgets): test-time tokens the query generated."""
    sleep_tokens: np.ndarray
    """(problems, seeds): the sleep tokens of the problem's context (spent once per context, not per query)."""
    context_ids: tuple[str, ...]


def grid(cells: Mapping[int, Sequence[Records]], *, score: Literal["answer", "pass@k"] = "answer") -> Grid:
    """The grid of one sleep budget from its cells: test-time setting (a budget or a verbosity level) → the records
    of each seed's run (a sweep's cells: the largest budget's pool run, the smaller ones derived from it), the same
    problems in each. `score`: `answer` reads each record's own verdict; `pass@k` counts a query right when any of
    its stored samples is (the paper's pass@k baseline, with the oracle no run has)."""
    if score not in ("answer", "pass@k"):
        raise ValueError(f"score must be one of answer, pass@k, got {score!r}")
    if not cells or any(not runs for runs in cells.values()):
        raise ValueError("a grid needs at least one budget with at least one run")
    budgets = tuple(sorted(cells))
    seeds = {len(runs) for runs in cells.values()}
    if len(seeds) != 1:
        raise ValueError(f"every budget needs the same number of seeds, got {sorted(seeds)}")
    by_id = {b: [{str(r["id"]): r for r in run} for run in cells[b]] for b in budgets}
    ids = tuple(sorted(set.intersection(*(set(m) for runs in by_id.values() for m in runs))))
    if not ids:
        raise ValueError("the runs share no problem")
    shape = (len(ids), seeds.pop(), len(budgets))
    correct, tokens, sleep = np.zeros(shape), np.zeros(shape), np.zeros(shape[:2])
    for c, b in enumerate(budgets):
        for j, run in enumerate(by_id[b]):
            for i, pid in enumerate(ids):
                record = run[pid]
                correct[i, j, c] = float(_right(record, score))
                tokens[i, j, c] = float((record.get("ledger") or {}).get("generated_tokens", 0))
                sleep[i, j] = float((record.get("info") or {}).get("sleep_tokens", 0))
    first = by_id[budgets[-1]][0]
    contexts = tuple(str((first[pid].get("info") or {}).get("context_id", pid)) for pid in ids)
    return Grid(ids=ids, budgets=budgets, correct=correct, tokens=tokens, sleep_tokens=sleep, context_ids=contexts)


def _right(record: Mapping[str, Any], score: str) -> bool:
    if score == "answer":
        return bool(record.get("correct"))
    return any(isinstance(s, Mapping) and s.get("correct") is True for s in record.get("samples") or [])


def frontier(g: Grid, rows: np.ndarray | None = None) -> list[tuple[int, float, float]]:
    """(budget, accuracy, mean test-time tokens per query) per test-time budget, over `rows` (default all
    problems) and seeds."""
    rows = np.arange(len(g.ids)) if rows is None else rows
    acc = g.correct[rows].mean(axis=(0, 1))
    tok = g.tokens[rows].mean(axis=(0, 1))
    return [(b, float(a), float(t)) for b, a, t in zip(g.budgets, acc, tok, strict=True)]


def tokens_for(curve: Sequence[tuple[int, float, float]], accuracy: float) -> float:
    """Test-time tokens at which `curve` first reaches `accuracy`, linear in log tokens between its points: the
    curve's first point when that is already at least as accurate only bounds it from above, so it is NaN (below
    the curve's range); +inf when the curve never reaches it (above its range)."""
    points = sorted((t, a) for _, a, t in curve)
    best_t, best_a = points[0]
    if best_a >= accuracy:
        return math.nan
    for t, a in points[1:]:
        if a >= accuracy:  # the first point at or above: interpolate from the best point below it
            share = (accuracy - best_a) / (a - best_a)
            if share == 1:
                return t  # exactly there: no round trip through logarithms
            return float(np.exp(np.log(best_t) + share * (np.log(t) - np.log(best_t))))
        if a > best_a:
            best_t, best_a = t, a
    return math.inf


def saving(base: Grid, sleep: Grid, rows: np.ndarray | None = None, *, budget: int) -> float:
    """Test-time tokens the baseline needs for the accuracy sleep-time reaches at test-time `budget`, over what
    sleep-time spends there (> 1: sleep-time saves). +inf when the baseline never reaches that accuracy within its
    largest budget; NaN when the baseline is that accurate already at its smallest budget (how few tokens it would
    need is not measured), or when sleep-time is right on no query there (0% is no accuracy to match)."""
    _, accuracy, spent = frontier(sleep, rows)[sleep.budgets.index(budget)]
    if accuracy <= 0 or spent <= 0:
        return math.nan
    return tokens_for(frontier(base, rows), accuracy) / spent


@dataclass(frozen=True)
class Saving:
    """The saving at equal accuracy with its paired bootstrap interval."""

    budget: int
    """The sleep-time side's test-time budget the saving is read at."""
    ratio: float
    """`saving` on all queries (+inf or NaN as it says)."""
    interval: tuple[float, float] | None
    """Percentile interval over the resamples where the saving is a number (None when fewer than half are)."""
    above: float
    """Share of resamples where the baseline never reached sleep-time's accuracy (a saving larger than the
    baseline's budgets can show)."""
    below: float
    """Share of resamples where the baseline was that accurate already at its smallest budget, or sleep-time
    right on no query (no saving can be read)."""

    def text(self) -> str:
        ratio = ("baseline never reaches it" if math.isinf(self.ratio) else "not measurable" if math.isnan(self.ratio)
                 else f"{self.ratio:.2f}x")
        ci = f"[{self.interval[0]:.2f}, {self.interval[1]:.2f}]" if self.interval else "no interval"
        return (f"{ratio} {ci} (resamples: {100 * self.above:.0f}% baseline never reaches it, "
                f"{100 * self.below:.0f}% not measurable)")


def paired_saving(base: Grid, sleep: Grid, *, budget: int, resamples: int = 2000, seed: int = 0,
                  confidence: float = 0.95) -> Saving:
    """`saving` with a bootstrap over problems (the same rows drawn on both sides: the comparison is paired)."""
    if base.ids != sleep.ids:
        raise ValueError("the baseline and sleep-time runs must cover the same problems")
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for chunk in resample_indices(len(base.ids), resamples, rng):
        values.extend(saving(base, sleep, rows, budget=budget) for rows in chunk)
    finite = [v for v in values if math.isfinite(v)]
    interval = percentile_interval(finite, confidence=confidence) if len(finite) >= resamples / 2 else None
    return Saving(budget=budget, ratio=saving(base, sleep, budget=budget), interval=interval,
                  above=sum(math.isinf(v) for v in values) / resamples,
                  below=sum(math.isnan(v) for v in values) / resamples)


def accuracy_difference(base: Grid, sleep: Grid, *, budget: int, resamples: int = 2000, seed: int = 0,
                        confidence: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Sleep-time − baseline accuracy at the same test-time budget, with a paired bootstrap interval over problems
    (every seed of a problem drawn together)."""
    if base.ids != sleep.ids or budget not in base.budgets or budget not in sleep.budgets:
        raise ValueError("the baseline and sleep-time runs must cover the same problems and the budget")
    diff = (sleep.correct[:, :, sleep.budgets.index(budget)] - base.correct[:, :, base.budgets.index(budget)]).mean(1)
    rng = np.random.default_rng(seed)
    draws = np.concatenate([diff[chunk].mean(axis=1) for chunk in resample_indices(len(diff), resamples, rng)])
    return float(diff.mean()), percentile_interval(draws, confidence=confidence)


def amortised(g: Grid, *, queries: Sequence[int], budget: int,
              test_weight: float = TEST_WEIGHT) -> list[tuple[int, float, float, float]]:
    """(q, accuracy, test tokens per query, cost per query) at test-time setting `budget` when only the first q
    queries of each context are asked: the context's sleep tokens are paid once and shared by its q queries, and a
    test-time token costs `test_weight` sleep-time tokens (the paper's t = 10, §5.3), so the cost per query is
    t × test tokens + sleep tokens / queries, in sleep-time tokens (t = 1: plain tokens per query)."""
    if not math.isfinite(test_weight) or test_weight <= 0:
        raise ValueError(f"test_weight must be > 0, got {test_weight!r}")
    index = g.budgets.index(budget)
    order: dict[str, list[int]] = {}
    for row, cid in enumerate(g.context_ids):
        order.setdefault(cid, []).append(row)
    out = []
    for q in queries:
        rows = [r for members in order.values() for r in members[:q]]
        if not rows:
            continue
        asked = {cid: min(q, len(members)) for cid, members in order.items()}
        sleep_total = sum(g.sleep_tokens[members[0]].mean() for members in order.values())
        test = float(g.tokens[rows, :, index].mean())
        per_query = test_weight * test + sleep_total / sum(asked.values())
        out.append((q, float(g.correct[rows, :, index].mean()), test, float(per_query)))
    return out
