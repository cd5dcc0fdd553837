"""ttscale.kit.selection: behaviour that the mutation run (tools/mutation) found unchecked. Hand-computed values."""

from __future__ import annotations

import dataclasses

import pytest

from ttscale.kit import selection
from ttscale.kit.selection import best_scored, majority_vote, weighted_vote
from ttscale.schema import Sample


def s(answer: str | None, score: float | None = None) -> Sample:
    return Sample(text="", answer=answer, num_tokens=1, score=score)


class FakeGrader:
    """Stands in for math-verify: records the pairs a vote asks about and calls none of them equal."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[tuple[str, str]], dict]] = []

    def __call__(self, pairs: list[tuple[str, str]], **kwargs: object) -> list[bool]:
        self.calls.append((list(pairs), dict(kwargs)))
        return [False] * len(pairs)


@pytest.fixture
def grader(monkeypatch: pytest.MonkeyPatch) -> FakeGrader:
    from ttscale.answers import grading

    fake = FakeGrader()
    monkeypatch.setattr(grading, "math_equal_many", fake)
    monkeypatch.setattr(grading, "math_verify_available", lambda: True)
    return fake


def test_exact_numbers_are_never_compared_symbolically(grader: FakeGrader) -> None:
    prediction, counts = majority_vote([s("1"), s("2"), s("2"), s("3")])
    assert prediction == "2" and counts == {"1": 1, "2": 2, "3": 1}
    assert grader.calls == []


def test_non_numbers_are_compared_with_the_vote_settings(
    grader: FakeGrader, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(selection, "SYMBOLIC", dataclasses.replace(selection.SYMBOLIC, pair_timeout=2.5, within=7.0))
    majority_vote([s("x+1"), s("x+1"), s("2")])
    # one pair: the number 2 against the expression (a number and a non-number are compared)
    assert len(grader.calls) == 1
    pairs, kwargs = grader.calls[0]
    assert pairs == [("2", "x+1")]
    assert kwargs == {"timeout": 2.5, "within": 7.0}


def test_majority_vote_ignores_scores(grader: FakeGrader) -> None:
    prediction, counts = majority_vote([s("7", 0.9), s("8", 0.1), s("8", 0.1)])
    assert prediction == "8"
    assert counts == {"7": 1, "8": 2}


def test_weighted_vote_refuses_negative_scores() -> None:
    with pytest.raises(ValueError) as info:
        weighted_vote([s("7", 0.5), s("8", -0.5)])
    assert str(info.value) == "weighted_vote needs scores ≥ 0, got -0.5"


def test_best_scored_takes_the_highest_score() -> None:
    best = best_scored([s("1", 0.2), s(None, 5.0), s("2", 0.9), s("3", None), s("4", 0.9)])
    assert best is not None and best.answer == "2"  # the first of the two 0.9
    assert best_scored([s("1", None), s(None, 1.0)]) is None


def test_votes_skip_missing_and_empty_answers_and_go_on(grader: FakeGrader) -> None:
    assert majority_vote([s(None), s("5"), s("5")]) == ("5", {"5": 2})
    assert majority_vote([s(""), s("5")]) == ("5", {"5": 1})
    assert weighted_vote([s("4", None), s("5", 0.5)]) == ("5", {"5": 0.5})


def test_a_zero_score_is_a_vote_of_weight_zero(grader: FakeGrader) -> None:
    assert weighted_vote([s("7", 0.0), s("8", 0.5)]) == ("8", {"7": 0.0, "8": 0.5})
