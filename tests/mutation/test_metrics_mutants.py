"""ttscale.stats.metrics: behaviour that the mutation run (tools/mutation) found unchecked. Hand-computed values."""

from __future__ import annotations

import pytest

from ttscale.stats.metrics import accuracy, bootstrap_mean, coverage, mean_pass_at_k, pass_at_k, wilson_interval


@pytest.mark.parametrize(
    ("successes", "total", "low", "high"),
    [
        # Standard published values of the 95% Wilson interval (z = 1.96).
        (5, 10, 0.236593, 0.763407),
        (0, 10, 0.0, 0.277532),
        (10, 10, 0.722468, 1.0),
        (1, 4, 0.045587, 0.699358),
    ],
)
def test_wilson_interval_values(successes: int, total: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(successes, total)
    assert lo == pytest.approx(low, abs=1e-6)
    assert hi == pytest.approx(high, abs=1e-6)


def test_wilson_interval_with_no_trials_is_everything() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_interval_narrows_with_a_smaller_z() -> None:
    lo, hi = wilson_interval(5, 10, z=1.0)
    # centre (0.5 + 1/20) / 1.1 = 0.5; half sqrt(0.025 + 0.0025) / 1.1 = 0.150756
    assert (lo, hi) == (pytest.approx(0.5 - 0.150756, abs=1e-6), pytest.approx(0.5 + 0.150756, abs=1e-6))


@pytest.mark.parametrize(
    ("n", "c", "k", "value"),
    [(4, 1, 2, 0.5), (4, 2, 2, 5 / 6), (5, 2, 3, 0.9), (3, 0, 2, 0.0), (3, 1, 3, 1.0), (5, 3, 3, 1.0)],
)
def test_pass_at_k_values(n: int, c: int, k: int, value: float) -> None:
    # 1 - C(n-c, k)/C(n, k): (4,1,2) 1 - 3/6; (4,2,2) 1 - 1/6; (5,2,3) 1 - 1/10.
    assert pass_at_k(n=n, c=c, k=k) == pytest.approx(value, abs=1e-15)


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"n": 4.0, "c": 1, "k": 1}, TypeError, "n must be an integer, got 4.0"),
        ({"n": 4, "c": True, "k": 1}, TypeError, "c must be an integer, got True"),
        ({"n": 4, "c": 1, "k": "1"}, TypeError, "k must be an integer, got '1'"),
        ({"n": 0, "c": 0, "k": 1}, ValueError, "n must be ≥ 1, got 0"),
        ({"n": 4, "c": 5, "k": 1}, ValueError, "c must be in [0, n=4], got 5"),
        ({"n": 4, "c": -1, "k": 1}, ValueError, "c must be in [0, n=4], got -1"),
        ({"n": 4, "c": 1, "k": 0}, ValueError, "k must be in [1, n=4], got 0"),
        ({"n": 4, "c": 1, "k": 5}, ValueError, "k must be in [1, n=4], got 5"),
    ],
)
def test_pass_at_k_refuses_bad_counts(kwargs: dict, error: type[Exception], words: str) -> None:
    with pytest.raises(error) as info:
        pass_at_k(**kwargs)
    assert str(info.value) == words


def test_pass_at_k_edges_of_the_ranges_are_allowed() -> None:
    assert pass_at_k(n=1, c=0, k=1) == 0.0
    assert pass_at_k(n=1, c=1, k=1) == 1.0
    assert pass_at_k(n=4, c=4, k=4) == 1.0


def test_mean_pass_at_k_and_coverage() -> None:
    results = [[True, False, False, False], [False, False], [True, True]]
    # pass@1: 1/4, 0, 1 → mean 5/12; coverage: 2 of 3
    assert mean_pass_at_k(results, k=1) == pytest.approx(5 / 12)
    assert coverage(results) == pytest.approx(2 / 3)
    assert coverage(results, k=1) == pytest.approx(5 / 12)
    # pass@2 of the first: 1 - C(3,2)/C(4,2) = 1/2; others 0 and 1 → 1/2
    assert coverage(results, k=2) == pytest.approx(0.5)
    for fn in (mean_pass_at_k, coverage):
        with pytest.raises(ValueError) as info:
            fn([], k=1)
        assert str(info.value) == "results is empty"
    with pytest.raises(ValueError) as info:
        coverage([])
    assert str(info.value) == "results is empty"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"values": [1.0], "confidence": 0.0}, "confidence must be in (0, 1), got 0.0"),
        ({"values": [1.0], "confidence": 1.0}, "confidence must be in (0, 1), got 1.0"),
        ({"values": [1.0], "resamples": 99}, "resamples must be an integer ≥ 100, got 99"),
        ({"values": [1.0], "resamples": 100.0}, "resamples must be an integer ≥ 100, got 100.0"),
        ({"values": []}, "values must be a non-empty sequence of numbers"),
        ({"values": [[1.0, 2.0]]}, "values must be a non-empty sequence of numbers"),
        ({"values": [1.0, float("inf")]}, "values must be finite"),
    ],
)
def test_bootstrap_mean_refuses_bad_input(kwargs: dict, words: str) -> None:
    with pytest.raises(ValueError) as info:
        bootstrap_mean(**kwargs)
    assert str(info.value) == words


def test_bootstrap_mean_accepts_the_smallest_resample_count() -> None:
    est = bootstrap_mean([0.0, 1.0], resamples=100)
    assert est.value == 0.5 and est.n == 2 and est.confidence == 0.95
    assert 0.0 <= est.low <= 0.5 <= est.high <= 1.0


def test_bootstrap_interval_of_a_constant_is_the_constant() -> None:
    est = bootstrap_mean([0.25, 0.25, 0.25], resamples=200, confidence=0.9, seed=3)
    assert (est.value, est.low, est.high, est.confidence, est.n) == (0.25, 0.25, 0.25, 0.9, 3)


def test_bootstrap_interval_of_a_mixed_sample() -> None:
    est = bootstrap_mean([0.0] * 50 + [1.0] * 50, resamples=2000)
    # The mean of 100 draws of a fair 0/1 unit: sd 0.05, so the 95% interval is about 0.5 ± 0.098.
    assert est.low == pytest.approx(0.402, abs=0.03)
    assert est.high == pytest.approx(0.598, abs=0.03)


def test_accuracy_is_the_fraction_correct() -> None:
    est = accuracy([True, False, True, True], resamples=500, seed=1)
    assert est.value == 0.75 and est.n == 4
    wide = accuracy([True, False, True, True], resamples=500, seed=1, confidence=0.5)
    assert wide.confidence == 0.5 and wide.high - wide.low < est.high - est.low


@pytest.mark.parametrize(("successes", "total", "low", "high"), [(1, 1, 0.206549, 1.0), (0, 1, 0.0, 0.793451)])
def test_wilson_interval_of_one_trial(successes: int, total: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(successes, total)
    assert (lo, hi) == (pytest.approx(low, abs=1e-6), pytest.approx(high, abs=1e-6))


def test_wilson_interval_stays_inside_zero_one() -> None:
    # At p = 1 (or 0) the upper (lower) end is 1 (0) exactly; float noise would pass it for n = 16, 40, ...
    for n in range(1, 100):
        assert wilson_interval(n, n)[1] <= 1.0
        assert wilson_interval(0, n)[0] >= 0.0


def test_pass_at_k_when_every_subset_holds_a_correct_sample() -> None:
    # n - c < k: there are fewer wrong samples than k
    assert pass_at_k(n=5, c=3, k=3) == 1.0
    assert pass_at_k(n=2, c=1, k=2) == 1.0


def test_defaults_and_arguments_reach_the_bootstrap() -> None:
    # 997 problems, 37% right: the resampled means are fine-grained enough that a seed or a confidence shows
    correct = [(i * 7919) % 997 < 370 for i in range(997)]
    values = [float(c) for c in correct]
    assert bootstrap_mean(values, seed=1) != bootstrap_mean(values, seed=0)
    # documented defaults: confidence 0.95, 10,000 resamples, seed 0
    assert bootstrap_mean(values) == bootstrap_mean(values, confidence=0.95, resamples=10_000, seed=0)
    assert accuracy(correct) == bootstrap_mean(values, confidence=0.95, resamples=10_000, seed=0)
    assert accuracy(correct, confidence=0.5, resamples=500, seed=7) == bootstrap_mean(
        values, confidence=0.5, resamples=500, seed=7
    )
    # seeded: the same seed gives the same interval
    assert bootstrap_mean(values, seed=11) == bootstrap_mean(values, seed=11)


def test_bootstrap_mean_takes_any_real_numbers() -> None:
    from fractions import Fraction

    est = bootstrap_mean([Fraction(1, 2), Fraction(1, 4)], resamples=100)
    assert est.value == 0.375 and isinstance(est.value, float)


def test_majority_at_k_exact_and_with_options() -> None:
    from ttscale.stats.metrics import majority_at_k, weighted_majority_at_k
    from ttscale.stats.subsample import SubsampleOptions

    answers, correct = ["a", "a", "b", "b", "c"], [True, True, False, False, False]
    # 10 subsets of 3: the 3 holding both a's win; of the 6 with one a, the 4 with {b, c} tie three ways
    # (1/3 each) and the 2 with {b, b} lose; {b, b, c} loses: (3 + 4/3) / 10
    assert majority_at_k(answers=answers, correct=correct, k=3) == pytest.approx(13 / 30)
    # options reach the computation: a 7-subset Monte Carlo estimate is not the exact value
    mc = SubsampleOptions(max_exact_work=1, max_exact_subsets=1, samples=7, seed=3)
    estimate = majority_at_k(answers=answers, correct=correct, k=3, options=mc)
    assert estimate != pytest.approx(13 / 30)
    assert estimate == majority_at_k(answers=answers, correct=correct, k=3, options=mc)
    weights = [1.0, 0.5, 2.0, 0.1, 0.3]
    exact = weighted_majority_at_k(answers=answers, correct=correct, weights=weights, k=3)
    estimate = weighted_majority_at_k(answers=answers, correct=correct, weights=weights, k=3, options=mc)
    assert estimate != pytest.approx(exact)
