"""Score aggregation, softmax allocation, resampling and verifier specs: pure functions, no engine."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttscale.registry import UnknownNameError
from ttscale.search import aggregate, allocate, load_verifier, logit, resample, softmax
from ttscale.search.score import parse_verifier_spec


def test_aggregations() -> None:
    scores = [0.9, 0.5, 0.8]
    assert aggregate(scores, "last") == 0.8
    assert aggregate(scores, "min") == 0.5
    assert aggregate(scores, "prod") == pytest.approx(0.36)
    assert aggregate(scores, "mean") == pytest.approx(2.2 / 3)
    with pytest.raises(ValueError, match="at least one"):
        aggregate([], "last")
    with pytest.raises(ValueError, match="aggregate must be one of"):
        aggregate([1.0], "max")  # type: ignore[arg-type]


def test_softmax_is_stable_and_tempered() -> None:
    assert softmax([1000.0, 1000.0]) == [0.5, 0.5]
    cold = softmax([1.0, 0.5], temperature=0.01)
    assert cold[0] > 0.999
    warm = softmax([1.0, 0.5], temperature=100)
    assert abs(warm[0] - 0.5) < 0.01
    with pytest.raises(ValueError, match="temperature must be > 0"):
        softmax([1.0], temperature=0)


@given(
    scores=st.lists(st.floats(0, 1), min_size=1, max_size=12),
    total=st.integers(0, 64),
    temperature=st.floats(0.05, 5),
)
def test_allocation_sums_exactly_and_respects_the_score_order(
    scores: list[float], total: int, temperature: float
) -> None:
    counts = allocate(scores, total, temperature=temperature)
    assert sum(counts) == total and all(c >= 0 for c in counts)
    for i in range(len(scores)):
        for j in range(len(scores)):
            if scores[i] > scores[j]:
                assert counts[i] >= counts[j]
    shares = [p * total for p in softmax(scores, temperature=temperature)]
    assert all(abs(c - s) < 1 + 1e-9 for c, s in zip(counts, shares, strict=True))


def test_allocation_follows_rebase_rounding() -> None:
    # softmax([1, 0.5, 0] / 0.5) = [0.665, 0.245, 0.090] → 8 children: 5.32, 1.96, 0.72 → 5, 2, 1
    assert allocate([1.0, 0.5, 0.0], 8, temperature=0.5) == [5, 2, 1]
    assert allocate([1.0, 0.0], 4, temperature=0.01) == [4, 0]
    assert allocate([], 4) == []


def test_resampling_is_proportional_and_seeded() -> None:
    draws = resample([0.7, 0.2, 0.1], 20_000, rng=random.Random(1))
    shares = [draws.count(i) / len(draws) for i in range(3)]
    assert shares == pytest.approx([0.7, 0.2, 0.1], abs=0.015)
    assert resample([1, 1], 10, rng=random.Random(5)) == resample([1, 1], 10, rng=random.Random(5))
    with pytest.raises(ValueError, match="positive sum"):
        resample([0.0, 0.0], 1, rng=random.Random(0))


def test_logit_is_finite_at_the_ends() -> None:
    assert logit(0.5) == 0.0
    assert math.isfinite(logit(0.0)) and math.isfinite(logit(1.0)) and logit(1.0) == pytest.approx(-logit(0.0))


def test_verifier_specs_build_typed_shared_instances() -> None:
    assert parse_verifier_spec("noisy_oracle:noise=0.3, seed=2") == ("noisy_oracle", {"noise": "0.3", "seed": "2"})
    oracle = load_verifier("noisy_oracle:noise=0.3,per_step=false")
    assert (oracle.noise, oracle.per_step) == (0.3, False)
    assert load_verifier("noisy_oracle:noise=0.3,per_step=false") is oracle  # one instance per spec
    assert load_verifier("arith").name == "arithmetic"
    with pytest.raises(ValueError, match="key=value"):
        parse_verifier_spec("noisy_oracle:noise")
    with pytest.raises(ValueError, match="noise must be in"):
        load_verifier("noisy_oracle:noise=-1")
    with pytest.raises(UnknownNameError, match="did you mean 'arithmetic'"):
        load_verifier("arithmetc")
