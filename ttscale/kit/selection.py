"""Answer selection shared by all strategies: majority vote, best score, score-weighted vote."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ttscale.schema import Sample


def normalize_answer(answer: str) -> str:
    """The key under which answers count as the same vote: the grader's canonical form (math delimiters,
    spacing commands, `\\dfrac`, a trailing full stop dropped), and for a rational literal its exact
    value, so `1/2`, `0.5`, `$\\frac{1}{2}$` and `\\dfrac12` are one vote and `1,234` is `1234`.

    These are the pairs the grader's fast path calls equal (`math_equal` agrees on every one), found
    in microseconds: a 256-sample pool is grouped without a symbolic engine.
    """
    return _keyed(answer)[0]


def _keyed(answer: str) -> tuple[str, bool]:
    """(the vote key, whether the answer is an exact number: such keys are never compared symbolically)."""
    from ttscale.answers.canonical import canonical, exact_number

    form = canonical(answer[:_MAX_KEY])
    number = exact_number(form)
    return (str(number[0]), True) if number is not None else (form, False)


_MAX_KEY = 10_000
"""Longer answers are grouped by their first characters (the grader refuses them anyway)."""


def majority_vote(samples: Sequence[Sample]) -> tuple[str | None, dict[str, int]]:
    """The most frequent answer and the vote counts (keys: `normalize_answer`, merged by `SYMBOLIC`).

    Ties go to the answer that appeared first among the samples, so the choice is deterministic
    for a given sample order (and not a matter of dict or hash order).
    """
    prediction, totals = _vote(samples, weighted=False)
    return prediction, {k: int(v) for k, v in totals.items()}


def weighted_vote(samples: Sequence[Sample]) -> tuple[str | None, dict[str, float]]:
    """The answer with the largest total score (scores must be non-negative, e.g. probabilities)."""
    return _vote(samples, weighted=True)


@dataclass(frozen=True, kw_only=True)
class SymbolicMerge:
    """How votes whose keys differ are merged when math-verify calls their answers equal."""

    groups: int = 8
    """The most-voted groups compared pairwise (at most groups·(groups−1)/2 = 28 pairs per vote); 0 = never."""
    pair_timeout: float = 1.0
    """Seconds of a grader worker per pair at most (a pair that needs longer stays apart, as the grader says
    False): no real answer comes near it, so the merge depends on the answers, not on the machine's load."""
    within: float | None = None
    """Seconds per vote at most, worker start-up excepted (pairs not reached stay apart); None = no such bound.
    A bound makes a vote depend on how busy the machine is: off by default."""


SYMBOLIC = SymbolicMerge()
"""The settings every vote uses (replace it to change them process-wide)."""


def _vote(samples: Sequence[Sample], *, weighted: bool) -> tuple[str | None, dict[str, float]]:
    totals: dict[str, float] = defaultdict(float)
    first_seen: dict[str, int] = {}
    shown: dict[str, str] = {}
    literal: set[str] = set()
    for i, sample in enumerate(samples):
        if sample.answer is None or (weighted and sample.score is None):
            continue
        key, is_number = _keyed(sample.answer)
        if not key:
            continue
        weight = sample.score if weighted and sample.score is not None else 1.0
        if weight < 0:
            raise ValueError(f"weighted_vote needs scores ≥ 0, got {weight}")
        totals[key] += weight
        if key not in first_seen:
            first_seen[key], shown[key] = i, sample.answer
            if is_number:
                literal.add(key)
    if not totals:
        return None, {}
    _merge_symbolic(totals, first_seen, shown, literal)
    best = min(totals, key=lambda k: (-totals[k], first_seen[k]))
    return shown[best], dict(totals)


def _merge_symbolic(
    totals: dict[str, float], first_seen: dict[str, int], shown: dict[str, str], literal: set[str]
) -> None:
    """Fold groups math-verify calls equal ("(x+1)^2" and "x^2+2x+1") into the better-voted one, in place."""
    ranked = sorted(totals, key=lambda k: (-totals[k], first_seen[k]))[: SYMBOLIC.groups]
    for key, leader in symbolic_leaders(ranked, shown, literal).items():
        totals[leader] += totals.pop(key)
        first_seen[leader] = min(first_seen[leader], first_seen.pop(key))


def symbolic_leaders(ranked: Sequence[str], shown: Mapping[str, str], literal: set[str]) -> dict[str, str]:
    """{group key: the leader it folds into} for the vote groups math-verify calls equal to a better-voted one.

    `ranked`: group keys by (votes, first appearance), at most `SYMBOLIC.groups` of them; `shown`: each group's
    first answer; `literal`: the keys that are exact numbers. Two exact numbers are never compared: their keys
    are their exact values, already equal or not. Each group joins the first leader it equals, so equality is
    never chained through a third answer, and the fold is deterministic for a given sample order. Shared by
    the vote and by analyses that need each answer's group (maj@k over sub-pools, benchmarks/verdicts.py).
    """
    pairs = [(a, b) for i, b in enumerate(ranked) for a in ranked[:i] if not (a in literal and b in literal)]
    from ttscale.answers.grading import math_equal_many, math_verify_available

    # Without math-verify (a bare install) votes keep the exact-value keys: still correct, less merged.
    if not pairs or not math_verify_available():
        return {}
    verdicts = math_equal_many(
        [(shown[b], shown[a]) for a, b in pairs], timeout=SYMBOLIC.pair_timeout, within=SYMBOLIC.within
    )
    equal = {pair for pair, same in zip(pairs, verdicts, strict=True) if same}
    leaders: list[str] = []
    folded: dict[str, str] = {}
    for key in ranked:
        leader = next((lead for lead in leaders if (lead, key) in equal), None)
        if leader is None:
            leaders.append(key)
        else:
            folded[key] = leader
    return folded


def best_scored(samples: Sequence[Sample]) -> Sample | None:
    """The highest-scored sample that states an answer (first one on ties); None if none does."""
    candidates = [s for s in samples if s.answer is not None and s.score is not None]
    if not candidates:
        return None
    return max(candidates, key=lambda s: s.score if s.score is not None else float("-inf"))
