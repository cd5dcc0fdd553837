from __future__ import annotations

from ttscale.select import best_scored, majority_vote, weighted_vote
from ttscale.types import Sample


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
