from __future__ import annotations

import itertools
import math
import random
from collections.abc import Hashable, Sequence
from fractions import Fraction

import pytest

from ttscale.stats.metrics import (
    accuracy,
    bootstrap_mean,
    coverage,
    majority_at_k,
    mean_pass_at_k,
    pass_at_k,
    weighted_majority_at_k,
    wilson_interval,
)
from ttscale.stats.subsample import SubsampleOptions

# -- pass@k --------------------------------------------------------------------------------------


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Direct definition: the fraction of size-k subsets with at least one correct sample."""
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def test_pass_at_k_matches_subset_enumeration() -> None:
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                hits = sum(any(i < c for i in subset) for subset in itertools.combinations(range(n), k))
                assert pass_at_k(n=n, c=c, k=k) == float(Fraction(hits, math.comb(n, k)))


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [
        (10_000, 1, 1),
        (10_000, 1, 9_999),
        (10_000, 37, 5_000),
        (10_000, 9_999, 2),
        (10_000, 3, 10),
        (200, 100, 100),
    ],
)
def test_pass_at_k_is_correctly_rounded_for_large_n(n: int, c: int, k: int) -> None:
    # float(Fraction) is the correctly rounded value: no error at all, even where 1 - x cancels.
    assert pass_at_k(n=n, c=c, k=k) == float(exact_pass_at_k(n, c, k))


def test_pass_at_k_tiny_values_do_not_cancel_to_zero() -> None:
    value = pass_at_k(n=10_000, c=1, k=1)
    assert value == 1e-4
    assert pass_at_k(n=10_000, c=1, k=2) == pytest.approx(2e-4, rel=1e-15)


def test_pass_at_k_edges_and_validation() -> None:
    assert pass_at_k(n=5, c=0, k=3) == 0.0
    assert pass_at_k(n=5, c=3, k=3) == 1.0  # any 3 of 5 include a correct one
    with pytest.raises(ValueError, match="k must be in"):
        pass_at_k(n=5, c=1, k=6)
    with pytest.raises(ValueError, match="c must be in"):
        pass_at_k(n=5, c=6, k=1)
    with pytest.raises(TypeError, match="n must be an integer"):
        pass_at_k(n=5.0, c=1, k=1)


def test_mean_pass_at_k_and_coverage() -> None:
    results = [[True, False, False, False], [False] * 4, [True] * 4]
    assert mean_pass_at_k(results, k=1) == pytest.approx((0.25 + 0 + 1) / 3)
    assert coverage(results) == pytest.approx(2 / 3)
    assert coverage(results, k=4) == pytest.approx(2 / 3)
    assert coverage(results, k=2) == pytest.approx((0.5 + 0 + 1) / 3)
    with pytest.raises(ValueError, match="empty"):
        coverage([])


# -- majority@k -----------------------------------------------------------------------------------


def brute_majority(
    answers: Sequence[Hashable | None],
    correct: Sequence[bool],
    k: int,
    weights: Sequence[float] | None = None,
) -> Fraction:
    """Enumerate every size-k subset; a tie scores the fraction of tied answers that are correct."""
    right = dict(zip(answers, correct, strict=True))
    total = Fraction(0)
    subsets = list(itertools.combinations(range(len(answers)), k))
    for subset in subsets:
        votes: dict[Hashable, Fraction] = {}
        for i in subset:
            if answers[i] is not None:
                votes[answers[i]] = votes.get(answers[i], Fraction(0)) + Fraction(weights[i] if weights else 1)
        if votes:
            top = max(votes.values())
            tied = [a for a, v in votes.items() if v == top]
            total += Fraction(sum(right[a] for a in tied), len(tied))
    return total / len(subsets)


def random_pool(rng: random.Random, n: int) -> tuple[list[int | None], list[bool]]:
    kinds = rng.randint(1, 5)
    right = {a: rng.random() < 0.4 for a in range(kinds)}
    answers: list[int | None] = [rng.choice([*range(kinds), None]) for _ in range(n)]
    return answers, [a is not None and right[a] for a in answers]


def test_majority_at_k_equals_brute_force_on_small_pools() -> None:
    rng = random.Random(7)
    for _ in range(250):
        n = rng.randint(1, 10)
        answers, correct = random_pool(rng, n)
        k = rng.randint(1, n)
        assert majority_at_k(answers=answers, correct=correct, k=k) == pytest.approx(
            float(brute_majority(answers, correct, k)), abs=1e-12
        )


def test_weighted_majority_at_k_equals_brute_force_on_small_pools() -> None:
    rng = random.Random(11)
    for _ in range(150):
        n = rng.randint(1, 9)
        answers, correct = random_pool(rng, n)
        weights = [rng.choice([0.25, 0.5, 1.0, 2.0]) for _ in range(n)]  # exact in binary: real ties occur
        k = rng.randint(1, n)
        got = weighted_majority_at_k(answers=answers, correct=correct, weights=weights, k=k)
        assert got == pytest.approx(float(brute_majority(answers, correct, k, weights)), abs=1e-12)


def test_majority_known_values() -> None:
    # Two right, one wrong: a size-2 subset wins with both right (1 of 3), ties otherwise (2 of 3).
    assert majority_at_k(answers=["a", "a", "b"], correct=[True, True, False], k=2) == pytest.approx(
        1 / 3 + 2 / 3 * 0.5
    )
    assert majority_at_k(answers=["a", "a", "b"], correct=[True, True, False], k=3) == 1.0
    assert majority_at_k(answers=[None, None], correct=[False, False], k=1) == 0.0
    # k = 1 is plain accuracy over the pool.
    assert majority_at_k(answers=[1, 2, 2, 3, None], correct=[1, 0, 0, 0, 0], k=1) == pytest.approx(0.2)


def test_majority_monte_carlo_is_seeded_and_close_to_exact() -> None:
    rng = random.Random(3)
    answers: list[Hashable | None] = [rng.randint(0, 5) for _ in range(40)]
    correct = [a == 0 for a in answers]
    mc = SubsampleOptions(max_exact_work=0, samples=40_000, seed=5)
    for k in (1, 7, 20):
        exact = majority_at_k(answers=answers, correct=correct, k=k)
        estimate = majority_at_k(answers=answers, correct=correct, k=k, options=mc)
        assert estimate == majority_at_k(answers=answers, correct=correct, k=k, options=mc)
        assert abs(estimate - exact) < 0.01
    weights = [rng.random() for _ in range(40)]
    wmc = SubsampleOptions(max_exact_subsets=0, samples=5_000, seed=1)
    a = weighted_majority_at_k(answers=answers, correct=correct, weights=weights, k=5, options=wmc)
    b = weighted_majority_at_k(answers=answers, correct=correct, weights=weights, k=5, options=wmc)
    assert a == b


def test_majority_large_pool_is_exact_and_fast() -> None:
    rng = random.Random(5)
    answers: list[Hashable | None] = [rng.choice([0, 0, 1, 2, 3, None]) for _ in range(256)]
    correct = [a == 0 for a in answers]
    curve = [majority_at_k(answers=answers, correct=correct, k=k) for k in (1, 16, 64, 256)]
    assert curve[0] == pytest.approx(correct.count(True) / 256)
    assert curve[-1] == 1.0  # the whole pool: the plurality answer 0 wins outright
    assert curve == sorted(curve)  # the plurality answer is right: more votes only help


def test_majority_validation() -> None:
    with pytest.raises(ValueError, match="both correct and incorrect"):
        majority_at_k(answers=["a", "a"], correct=[True, False], k=1)
    with pytest.raises(ValueError, match="k must be"):
        majority_at_k(answers=["a"], correct=[True], k=2)
    with pytest.raises(ValueError, match="weights has"):
        weighted_majority_at_k(answers=["a"], correct=[True], weights=[1.0, 2.0], k=1)
    with pytest.raises(ValueError, match="samples must be"):
        SubsampleOptions(samples=0)


# -- accuracy and bootstrap -----------------------------------------------------------------------


def test_accuracy_bootstrap_is_seeded_and_brackets_the_mean() -> None:
    correct = [i % 3 == 0 for i in range(300)]
    est = accuracy(correct, seed=1)
    assert est.value == pytest.approx(100 / 300)
    assert est.low < est.value < est.high
    assert est == accuracy(correct, seed=1)
    low, high = wilson_interval(100, 300)
    assert est.low == pytest.approx(low, abs=0.02) and est.high == pytest.approx(high, abs=0.02)
    narrow = accuracy(correct * 10, seed=1)
    assert narrow.high - narrow.low < est.high - est.low


def test_bootstrap_mean_validation() -> None:
    assert bootstrap_mean([0.5, 0.5, 0.5]).low == 0.5
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_mean([1.0], confidence=1.5)
    with pytest.raises(ValueError, match="non-empty"):
        bootstrap_mean([])
    with pytest.raises(ValueError, match="finite"):
        bootstrap_mean([float("nan")])
