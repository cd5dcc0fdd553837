"""Expected (weighted) majority-vote accuracy over all size-k subsets of a sample pool.

Exact methods:

* unweighted — a dynamic programme over answer classes. For the correct class `a` drawing `j`
  votes, every other class must draw at most `j`, and a class drawing exactly `j` ties. Classes
  with fewer than `j` samples can never tie, so they merge with the abstentions into one free
  pool; only the few classes with ≥ j samples are tracked, with the number of ties `t` as a
  second index (a tie among `t + 1` answers counts `1 / (t + 1)`). Probabilities are carried as
  hypergeometric conditionals (numbers in [0, 1]), so nothing overflows for large n.
* weighted — enumeration of all C(n, k) subsets (votes depend on which samples are drawn).

When the exact work exceeds the limits in `SubsampleOptions`, a seeded Monte Carlo estimate
over random subsets is used instead (with the same tie rule).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, kw_only=True)
class SubsampleOptions:
    """When to compute majority@k exactly and how to estimate it otherwise."""

    max_exact_work: int = 20_000_000
    """Unweighted: largest dynamic-programme size (array elements touched) computed exactly."""
    max_exact_subsets: int = 200_000
    """Weighted: largest C(n, k) enumerated exactly."""
    samples: int = 20_000
    """Monte Carlo: random subsets drawn."""
    seed: int = 0
    """Monte Carlo: the random seed (same seed, same estimate)."""

    def __post_init__(self) -> None:
        for name in ("max_exact_work", "max_exact_subsets", "samples"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0 or (name == "samples" and value < 1):
                kind = "a positive" if name == "samples" else "a non-negative"
                raise ValueError(f"{name} must be {kind} integer, got {value!r}")
        if not isinstance(self.seed, int):
            raise ValueError(f"seed must be an integer, got {self.seed!r}")


def majority_expectation(
    *,
    answers: Sequence[Hashable | None],
    correct: Sequence[bool],
    weights: Sequence[float] | None,
    k: int,
    options: SubsampleOptions | None = None,
) -> float:
    """E[vote is correct] over size-k subsets (see `metrics.majority_at_k`)."""
    options = options or SubsampleOptions()
    classes, is_correct, n = _classes(answers, correct)
    if weights is not None and len(weights) != n:
        raise ValueError(f"weights has {len(weights)} entries for {n} samples")
    if not isinstance(k, int) or not 1 <= k <= n:
        raise ValueError(f"k must be an integer in [1, n={n}], got {k!r}")
    if not any(is_correct):
        return 0.0
    if weights is None:
        counts = np.bincount(classes[classes >= 0], minlength=len(is_correct))
        if _dp_work(counts, k) <= options.max_exact_work:
            abstain = int((classes < 0).sum())
            return _exact_unweighted([int(c) for c in counts], is_correct, abstain, k)
        return _monte_carlo(classes, is_correct, None, k, options)
    w = np.asarray(weights, dtype=float)
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("weights must be finite and ≥ 0")
    if math.comb(n, k) <= options.max_exact_subsets:
        return _exact_weighted(classes, is_correct, w, k)
    return _monte_carlo(classes, is_correct, w, k, options)


def _classes(answers: Sequence[Hashable | None], correct: Sequence[bool]) -> tuple[np.ndarray, list[bool], int]:
    """Class index per sample (-1 abstains) and each class's correctness, checked for consistency."""
    if len(answers) != len(correct):
        raise ValueError(f"answers has {len(answers)} entries but correct has {len(correct)}")
    if not answers:
        raise ValueError("the sample pool is empty")
    index: dict[Hashable, int] = {}
    is_correct: list[bool] = []
    classes = np.empty(len(answers), dtype=np.int64)
    for i, (answer, right) in enumerate(zip(answers, correct, strict=True)):
        if answer is None:
            classes[i] = -1
            continue
        if answer not in index:
            index[answer] = len(is_correct)
            is_correct.append(bool(right))
        elif is_correct[index[answer]] != bool(right):
            raise ValueError(f"answer {answer!r} is marked both correct and incorrect")
        classes[i] = index[answer]
    return classes, is_correct, len(answers)


def _dp_work(counts: np.ndarray, k: int) -> int:
    """Array elements the dynamic programme touches (to choose exact vs Monte Carlo)."""
    sizes = np.sort(counts)[::-1]
    work = 0
    for j in range(1, min(int(sizes[0]), k) + 1):
        big = int((sizes >= j).sum())
        work += big * (j + 1) * (k - j + 1) * (big + 1)
    return work


def _exact_unweighted(counts: list[int], is_correct: list[bool], abstain: int, k: int) -> float:
    n = sum(counts) + abstain
    log_fact = _log_factorials(n)
    total = 0.0
    for a, m_a in enumerate(counts):
        if not is_correct[a]:
            continue
        others = [m for i, m in enumerate(counts) if i != a]
        for j in range(1, min(m_a, k) + 1):
            p_j = _hypergeom(log_fact, j, n, m_a, k)  # P(class a draws exactly j)
            if p_j == 0.0:
                continue
            free = abstain + sum(m for m in others if m < j)
            big = [m for m in others if m >= j]
            dist = _others_at_most(free, big, j, k - j, log_fact)
            total += p_j * float((dist / np.arange(1, dist.size + 1)).sum())
    return min(1.0, max(0.0, total))


def _others_at_most(free: int, big: list[int], j: int, draw: int, log_fact: np.ndarray) -> np.ndarray:
    """P(every big class draws ≤ j, with t of them exactly j) for t = 0.., when `draw` samples
    are taken from the other classes and the free pool together (hypergeometric conditionals)."""
    size = draw + 1
    s = np.arange(size)
    # p[s, t]: probability, given s drawn from the pool so far, of the tie/limit event.
    p = np.zeros((size, len(big) + 1))
    p[: min(free, draw) + 1, 0] = 1.0
    pool = free
    for m in big:
        new_pool = pool + m
        q = np.zeros_like(p)
        for x in range(0, min(j, m, draw) + 1):
            # h(x; new_pool, m, s) = C(m, x) C(pool, s - x) / C(new_pool, s)
            h = _hypergeom_vector(log_fact, x, new_pool, m, s)
            shifted = np.zeros_like(p)
            shifted[x:] = p[: size - x]
            if x == j:
                shifted = np.roll(shifted, 1, axis=1)
                shifted[:, 0] = 0.0
            q += h[:, None] * shifted
        p, pool = q, new_pool
    return p[draw]


def _log_factorials(n: int) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=float)))))


def _hypergeom_vector(log_fact: np.ndarray, x: int, population: int, successes: int, draws: np.ndarray) -> np.ndarray:
    """P(x successes in `draws` draws without replacement), for each entry of `draws` (0 where impossible)."""
    failures = draws - x
    possible = (0 <= x <= successes) & (failures >= 0) & (failures <= population - successes) & (draws <= population)
    f = np.where(possible, failures, 0)
    d = np.where(possible, draws, 0)
    log_p = (
        (log_fact[successes] - log_fact[x] - log_fact[successes - x] if 0 <= x <= successes else 0.0)
        + (log_fact[population - successes] - log_fact[f] - log_fact[population - successes - f])
        - (log_fact[population] - log_fact[d] - log_fact[population - d])
    )
    return np.where(possible, np.exp(np.minimum(log_p, 0.0)), 0.0)


def _hypergeom(log_fact: np.ndarray, x: int, population: int, successes: int, draws: int) -> float:
    return float(_hypergeom_vector(log_fact, x, population, successes, np.asarray([draws]))[0])


def _vote_share(votes: np.ndarray, is_correct: np.ndarray) -> np.ndarray:
    """Per row of `votes` (subsets × classes): the fraction of top-voted classes that are correct."""
    top = votes.max(axis=1, keepdims=True)
    # Relative tolerance: weighted votes that are equal up to float rounding are a tie.
    tied = (votes >= top - 1e-12 * np.maximum(1.0, np.abs(top))) & (top > 0)
    n_tied = tied.sum(axis=1)
    return np.where(n_tied > 0, (tied & is_correct).sum(axis=1) / np.maximum(n_tied, 1), 0.0)


def _votes(subsets: np.ndarray, classes: np.ndarray, weights: np.ndarray | None, n_classes: int) -> np.ndarray:
    """Votes per class for each subset (rows of sample indices); abstentions vote for nobody."""
    rows = subsets.shape[0]
    cls = classes[subsets]
    keep = cls >= 0
    flat = (np.arange(rows)[:, None] * n_classes + cls)[keep]
    w = None if weights is None else weights[subsets][keep]
    return np.bincount(flat, weights=w, minlength=rows * n_classes).reshape(rows, n_classes).astype(float)


def _exact_weighted(classes: np.ndarray, is_correct: list[bool], weights: np.ndarray, k: int) -> float:
    n, correct = classes.size, np.asarray(is_correct)
    total, count = 0.0, 0
    combos = itertools.combinations(range(n), k)
    while True:
        chunk = np.fromiter(itertools.chain.from_iterable(itertools.islice(combos, 20_000)), dtype=np.int64)
        if chunk.size == 0:
            break
        subsets = chunk.reshape(-1, k)
        total += float(_vote_share(_votes(subsets, classes, weights, len(is_correct)), correct).sum())
        count += subsets.shape[0]
    return total / count


def _monte_carlo(
    classes: np.ndarray, is_correct: list[bool], weights: np.ndarray | None, k: int, options: SubsampleOptions
) -> float:
    rng = np.random.default_rng(options.seed)
    n, correct = classes.size, np.asarray(is_correct)
    total, done = 0.0, 0
    chunk = max(1, 1_000_000 // n)  # rows of n random keys at a time: a few MB
    while done < options.samples:
        rows = min(chunk, options.samples - done)
        # The k smallest of n uniform keys are a uniform random size-k subset.
        subsets = np.argpartition(rng.random((rows, n)), k - 1, axis=1)[:, :k]
        total += float(_vote_share(_votes(subsets, classes, weights, len(is_correct)), correct).sum())
        done += rows
    return total / options.samples
