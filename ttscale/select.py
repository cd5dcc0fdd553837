"""Answer selection shared by all strategies: majority vote, best score, score-weighted vote."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from ttscale.types import Sample


def normalize_answer(answer: str) -> str:
    """The key under which answers count as the same vote: the grader's canonical form (math delimiters,
    spacing commands, `\\dfrac`, a trailing full stop dropped), and for a rational literal its exact
    value, so `1/2`, `0.5`, `$\\frac{1}{2}$` and `\\dfrac12` are one vote and `1,234` is `1234`.

    These are the pairs the grader's fast path calls equal (`math_equal` agrees on every one), found
    in microseconds: a 256-sample pool is grouped without a symbolic engine.
    """
    from ttscale.verifiers.canonical import canonical, exact_number

    form = canonical(answer[:_MAX_KEY])
    number = exact_number(form)
    return str(number[0]) if number is not None else form


_MAX_KEY = 10_000
"""Longer answers are grouped by their first characters (the grader refuses them anyway)."""


def majority_vote(samples: Sequence[Sample]) -> tuple[str | None, dict[str, int]]:
    """The most frequent answer and the vote counts.

    Ties go to the answer that appeared first among the samples, so the choice is deterministic
    for a given sample order (and not a matter of dict or hash order).
    """
    votes: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    shown: dict[str, str] = {}
    for i, sample in enumerate(samples):
        if sample.answer is None:
            continue
        key = normalize_answer(sample.answer)
        if not key:
            continue
        votes[key] += 1
        first_seen.setdefault(key, i)
        shown.setdefault(key, sample.answer)
    if not votes:
        return None, {}
    best = min(votes, key=lambda k: (-votes[k], first_seen[k]))
    return shown[best], dict(votes)


def weighted_vote(samples: Sequence[Sample]) -> tuple[str | None, dict[str, float]]:
    """The answer with the largest total score (scores must be non-negative, e.g. probabilities)."""
    totals: dict[str, float] = defaultdict(float)
    first_seen: dict[str, int] = {}
    shown: dict[str, str] = {}
    for i, sample in enumerate(samples):
        if sample.answer is None or sample.score is None:
            continue
        key = normalize_answer(sample.answer)
        if not key:
            continue
        if sample.score < 0:
            raise ValueError(f"weighted_vote needs scores ≥ 0, got {sample.score}")
        totals[key] += sample.score
        first_seen.setdefault(key, i)
        shown.setdefault(key, sample.answer)
    if not totals:
        return None, {}
    best = min(totals, key=lambda k: (-totals[k], first_seen[k]))
    return shown[best], dict(totals)


def best_scored(samples: Sequence[Sample]) -> Sample | None:
    """The highest-scored sample that states an answer (first one on ties); None if none does."""
    candidates = [s for s in samples if s.answer is not None and s.score is not None]
    if not candidates:
        return None
    return max(candidates, key=lambda s: s.score if s.score is not None else float("-inf"))
