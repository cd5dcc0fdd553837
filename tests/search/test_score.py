"""Score aggregation, softmax allocation, resampling and verifier specs: pure functions, no engine."""

from __future__ import annotations

import math
import random
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttscale.registry import UnknownNameError
from ttscale.search import aggregate, allocate, logit, resample, softmax
from ttscale.search.score import parse_verifier_spec
from ttscale.verifiers.loading import load_verifier


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
    scores=st.lists(st.floats(0, 1) | st.sampled_from([0.0, 0.5, 0.8, 1.0]), min_size=1, max_size=12),
    total=st.integers(0, 64),
    temperature=st.floats(0.05, 5),
    ties=st.sampled_from(["later", "earlier"]),
)
def test_allocation_sums_exactly_and_serves_the_best_nodes_first(
    scores: list[float], total: int, temperature: float, ties: Literal["later", "earlier"]
) -> None:
    counts = allocate(scores, total, temperature=temperature, ties=ties)
    assert sum(counts) == total and all(c >= 0 for c in counts)
    for i in range(len(scores)):
        for j in range(len(scores)):
            if scores[i] > scores[j]:
                assert counts[i] >= counts[j]
            if scores[i] == scores[j]:  # equal scores differ by one child at most
                assert abs(counts[i] - counts[j]) <= 1
    # Greedy ceilings in the serving order: every head of that order holds at least its softmax share.
    shares = [p * total for p in softmax(scores, temperature=temperature)]
    later = -1 if ties == "later" else 1
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], later * i))
    held = share = 0.0
    for i in order:
        held, share = held + counts[i], share + shares[i]
        assert held >= share - 1e-9


def test_allocation_follows_the_reference_ceilings() -> None:
    # w = exp([1, 0.5, 0] / 0.5) = [7.389, 2.718, 1], Σ = 11.107; 8 children:
    # ceil(8 · 7.389 / 11.107) = ceil(5.32) = 6, then ceil(2 · 2.718 / 3.718) = ceil(1.46) = 2, then 0 left.
    # (Largest-remainder rounding of the shares 5.32, 1.96, 0.72 gave 5, 2, 1.)
    assert allocate([1.0, 0.5, 0.0], 8, temperature=0.5) == [6, 2, 0]
    assert allocate([1.0, 0.0], 4, temperature=0.01) == [4, 0]
    assert allocate([], 4) == []
    with pytest.raises(ValueError, match="total must be"):
        allocate([1.0], -1)
    with pytest.raises(ValueError, match="temperature must be"):
        allocate([1.0], 1, temperature=0)
    with pytest.raises(ValueError, match="ties must be"):
        allocate([1.0], 1, ties="first")  # type: ignore[arg-type]


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
