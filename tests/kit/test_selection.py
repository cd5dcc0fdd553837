from __future__ import annotations

import pytest

from ttscale.kit import selection
from ttscale.kit.selection import best_scored, majority_vote, normalize_answer, weighted_vote
from ttscale.schema import Sample


def s(answer: str | None, score: float | None = None) -> Sample:
    return Sample(text="", answer=answer, num_tokens=1, score=score)


def test_majority_counts_normalised_answers() -> None:
    prediction, votes = majority_vote([s("1,000"), s("7"), s("1000."), s(None)])
    assert prediction == "1,000"
    assert votes == {"1000": 2, "7": 1}


def test_majority_ties_go_to_the_first_seen() -> None:
    assert majority_vote([s("3"), s("5"), s("5"), s("3")])[0] == "3"
    assert majority_vote([s("5"), s("3"), s("3"), s("5")])[0] == "5"
    assert majority_vote([s(None)]) == (None, {})


def test_weighted_vote_and_best_score() -> None:
    samples = [s("1", 0.9), s("2", 0.5), s("2", 0.5), s(None, 5.0)]
    assert weighted_vote(samples)[0] == "2"
    best = best_scored(samples)
    assert best is not None and best.answer == "1"
    assert best_scored([s(None, 1.0)]) is None


def test_equal_values_are_one_vote_whatever_their_form() -> None:
    samples = [s(a) for a in ["3", "1/2", "0.5", "\\frac{1}{2}"]]
    prediction, votes = majority_vote(samples)
    assert prediction == "1/2" and sorted(votes.values()) == [1, 3]
    scored = [s(a, w) for a, w in [("3", 0.9), ("0.5", 0.5), ("$\\dfrac12$", 0.5)]]
    assert weighted_vote(scored)[0] == "0.5"  # 1.0 for one half against 0.9 for three


def test_vote_keys_agree_with_the_grader_and_keep_distinct_answers_apart() -> None:
    from ttscale.verifiers import math_equal

    same = [("1,234", "1234"), ("5.", "5"), ("\\frac{10}{2}", "5"), ("x^2 + 1", "$x^2+1$"), ("-0.25", "-\\frac14")]
    for a, b in same:
        assert normalize_answer(a) == normalize_answer(b) and math_equal(a, b), (a, b)
    apart = [("(1,2)", "(12)"), ("1/3", "0.333"), ("2", "-2"), ("x+1", "x-1")]
    for a, b in apart:
        assert normalize_answer(a) != normalize_answer(b), (a, b)


def test_a_256_sample_pool_is_counted_fast() -> None:
    import time

    answers = [f"\\frac{{{i % 17}}}{{{1 + i % 5}}}" if i % 3 else f"{i % 11}.0" for i in range(256)]
    samples = [s(a, 0.5) for a in answers]
    start = time.process_time()
    for _ in range(20):
        majority_vote(samples)
        weighted_vote(samples)
    assert (time.process_time() - start) / 20 < 0.05  # per pool, both votes: far below one engine step


def test_symbolically_equal_answers_are_one_vote() -> None:
    # Keys differ ("x^2+2x+1" vs "(x+1)^2"): only math-verify sees they are one polynomial.
    samples = [s(a) for a in ["3", "3", "(x+1)^2", "x^2+2x+1", "x^{2} + 2x + 1"]]
    prediction, votes = majority_vote(samples)
    assert prediction == "(x+1)^2" and sorted(votes.values()) == [2, 3]
    # Weighted: 0.4 + 0.3 for the polynomial in two forms against 0.6 for 3.
    scored = [s("3", 0.6), s("x^2+2x+1", 0.4), s("(x+1)^2", 0.3)]
    assert weighted_vote(scored) == ("x^2+2x+1", {"3": 0.6, normalize_answer("x^2+2x+1"): 0.7})


def test_symbolic_merge_joins_the_better_voted_group() -> None:
    # "\\sqrt{4}" equals the literal 2; 2 and 3 are never compared (their keys are exact values).
    samples = [s(a) for a in ["2", "\\sqrt{4}", "3", "3", "\\sqrt{9}"]]
    prediction, votes = majority_vote(samples)
    assert votes == {"2": 2, "3": 3} and prediction == "3"
    # Reversed, "3" leads (two votes) and "\\sqrt{4}" (seen before "2") leads its group: the shown answer
    # and the key are the leader's.
    assert majority_vote(list(reversed(samples))) == ("3", {"3": 3, normalize_answer("\\sqrt{4}"): 2})


def test_symbolic_merge_is_bounded_and_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import time


    distinct = [f"x^{{{k}}} + {k}" for k in range(40)]  # 40 different polynomials: nothing to merge
    monkeypatch.setattr(selection, "SYMBOLIC", selection.SymbolicMerge(groups=16, pair_timeout=1.0, within=0.5))
    majority_vote([s("x")])  # start the grader's workers off the clock
    start = time.monotonic()
    _, votes = majority_vote([s(a) for a in distinct])
    assert len(votes) == 40 and time.monotonic() - start < 0.5 + 1.5  # `within`, plus killing a busy worker
    monkeypatch.setattr(selection, "SYMBOLIC", selection.SymbolicMerge(groups=0))
    assert len(majority_vote([s("(x+1)^2"), s("x^2+2x+1")])[1]) == 2


def test_a_symbolic_vote_is_the_same_whatever_the_grader_cache_holds() -> None:
    from ttscale.verifiers import GraderConfig, configure_grader

    samples = [s(a) for a in ["w", "(t+3)^2", "t^2+6t+9", "w", "t^{2} + 6t + 9", "(3+t)^2", "v"]]
    first = majority_vote(samples)
    assert first[0] == "(t+3)^2" and sorted(first[1].values()) == [1, 2, 4]
    configure_grader(GraderConfig())  # a fresh grader: no verdict cached, workers started again
    assert majority_vote(samples) == first and majority_vote(list(samples)) == first


def test_only_the_most_voted_groups_are_compared(monkeypatch: pytest.MonkeyPatch) -> None:
    """`groups` bounds the merge: a group ranked past it stays apart even when it equals a leader."""
    samples = [s(a) for a in ["(x+1)^2", "(x+1)^2", "(x+1)^2", "y", "y", "x^2+2x+1"]]
    monkeypatch.setattr(selection, "SYMBOLIC", selection.SymbolicMerge(groups=3))
    assert sorted(majority_vote(samples)[1].values()) == [2, 4]  # third-ranked: compared, merged
    monkeypatch.setattr(selection, "SYMBOLIC", selection.SymbolicMerge(groups=2))
    assert sorted(majority_vote(samples)[1].values()) == [1, 2, 3]  # ranked third of three: never compared
