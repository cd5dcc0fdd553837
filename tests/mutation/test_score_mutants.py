"""ttscale.search.score: behaviour that the mutation run (tools/mutation) found unchecked. Hand-computed values."""

from __future__ import annotations

import math
import random

import pytest

from ttscale.search.score import (
    aggregate,
    allocate,
    logit,
    parse_verifier_spec,
    resample,
    softmax,
)
from ttscale.verifiers.loading import check_verifier_spec


@pytest.mark.parametrize(("how", "value"), [("last", 0.6), ("min", 0.2), ("prod", 0.096), ("mean", 1.6 / 3)])
def test_aggregate(how: str, value: float) -> None:
    assert aggregate([0.8, 0.2, 0.6], how) == pytest.approx(value)  # type: ignore[arg-type]
    assert isinstance(aggregate([1, 2], how), float)  # type: ignore[arg-type]


def test_aggregate_errors() -> None:
    with pytest.raises(ValueError) as info:
        aggregate([], "last")
    assert str(info.value) == "aggregate needs at least one step score"
    with pytest.raises(ValueError) as info:
        aggregate([0.5], "max")  # type: ignore[arg-type]
    assert str(info.value) == "aggregate must be one of last, min, prod, mean, got 'max'"


def test_softmax() -> None:
    assert softmax([]) == []
    assert softmax([0.0, 0.0]) == [0.5, 0.5]
    e = math.e
    assert softmax([1.0, 0.0]) == pytest.approx([e / (e + 1), 1 / (e + 1)])
    # T = 0.5 doubles the gap: e² : 1
    assert softmax([1.0, 0.0], temperature=0.5) == pytest.approx([e**2 / (e**2 + 1), 1 / (e**2 + 1)])
    assert softmax([1000.0, 999.0]) == pytest.approx([e / (e + 1), 1 / (e + 1)])  # no overflow
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match=r"temperature must be > 0, got"):
            softmax([1.0], temperature=bad)


def test_allocate_the_docstring_example() -> None:
    # [.9, .8, .8] at T = 0.2 over 3 children: the best node 2, one of the tied pair 1, the other none.
    assert allocate([0.9, 0.8, 0.8], 3, temperature=0.2) == [2, 0, 1]
    assert allocate([0.9, 0.8, 0.8], 3, temperature=0.2, ties="earlier") == [2, 1, 0]


def test_allocate_hand_computed() -> None:
    assert allocate([], 4) == []
    assert allocate([0.3, 0.7], 0) == [0, 0]
    assert allocate([0.5, 0.5, 0.5, 0.5], 4) == [1, 1, 1, 1]  # equal weights: ceil(4/4), ceil(3/3), ...
    assert allocate([0.5, 0.5, 0.5, 0.5], 2) == [0, 0, 1, 1]  # `later`: the last tied nodes first
    assert allocate([0.5, 0.5, 0.5, 0.5], 2, ties="earlier") == [1, 1, 0, 0]
    # weights e^0 = 1 and e^-1 = 0.3679 at T = 1: ceil(5 · 1/1.3679) = ceil(3.655) = 4, then the last 1
    assert allocate([1.0, 0.0], 5) == [4, 1]
    # the default T = 1 over 10: ceil(10 · 0.7311) = 8, then the last 2 (T = 2 would give 7 and 3)
    assert allocate([1.0, 0.0], 10) == [8, 2]
    # scores far from 0 do not overflow: only their differences count
    assert allocate([800.0, 799.0], 10) == [8, 2]
    # at T = 0.5 the second weight is e^-2 = 0.1353: ceil(5 · 0.8808) = ceil(4.404) = 5, nothing left
    assert allocate([1.0, 0.0], 5, temperature=0.5) == [5, 0]
    # an exactly integral share is not rounded up: equal weights, 6 over 3 is 2 each
    assert allocate([0.1, 0.1, 0.1], 6) == [2, 2, 2]


def test_allocate_errors() -> None:
    with pytest.raises(ValueError) as info:
        allocate([0.5], -1)
    assert str(info.value) == "total must be ≥ 0, got -1"
    with pytest.raises(ValueError) as info:
        allocate([0.5], 2, temperature=0)
    assert str(info.value) == "temperature must be > 0, got 0"
    with pytest.raises(ValueError) as info:
        allocate([0.5], 2, ties="random")  # type: ignore[arg-type]
    assert str(info.value) == "ties must be later or earlier, got 'random'"


def test_resample() -> None:
    picks = resample([0.0, 1.0, 0.0], 5, rng=random.Random(0))
    assert picks == [1, 1, 1, 1, 1]
    assert resample([1.0], 0, rng=random.Random(0)) == []
    with pytest.raises(ValueError) as info:
        resample([1.0], -1, rng=random.Random(0))
    assert str(info.value) == "k must be ≥ 0, got -1"
    for bad in ([], [0.0, 0.0]):
        with pytest.raises(ValueError) as info:
            resample(bad, 1, rng=random.Random(0))
        assert str(info.value) == "resample needs weights with a positive sum"


def test_resample_follows_the_weights() -> None:
    picks = resample([1.0, 3.0], 4000, rng=random.Random(1))
    assert picks.count(1) / 4000 == pytest.approx(0.75, abs=0.03)


def test_logit() -> None:
    assert logit(0.5) == 0.0
    assert logit(0.75) == pytest.approx(math.log(3))
    assert logit(1.0) == pytest.approx(math.log((1 - 1e-6) / 1e-6))
    assert logit(0.0) == pytest.approx(-math.log((1 - 1e-6) / 1e-6))
    assert logit(1.0, eps=0.1) == pytest.approx(math.log(9))


def test_parse_verifier_spec() -> None:
    assert parse_verifier_spec("prm") == ("prm", {})
    assert parse_verifier_spec(" prm : model = x , agg=min ,") == ("prm", {"model": "x", "agg": "min"})
    assert parse_verifier_spec("prm:url=a=b") == ("prm", {"url": "a=b"})
    with pytest.raises(ValueError) as info:
        parse_verifier_spec("prm:model")
    assert str(info.value) == "verifier options must look like key=value, got 'model' in 'prm:model'"
    with pytest.raises(ValueError) as info:
        parse_verifier_spec("prm: =x")
    assert str(info.value) == "verifier options must look like key=value, got '=x' in 'prm: =x'"
    with pytest.raises(ValueError) as info:
        parse_verifier_spec(" :a=b")
    assert str(info.value) == "verifier spec must start with a name, got ' :a=b'"


def test_check_verifier_spec_refuses_unknown_names() -> None:
    with pytest.raises(Exception, match="no_such_verifier"):
        check_verifier_spec("no_such_verifier")
