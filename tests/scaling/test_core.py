"""The shared machinery: problem bootstrap by sparse products, and the vectorised profile fit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import curve_fit

from ttscale.scaling._resample import bootstrap_draws, observations
from ttscale.scaling.coverage import LAW as COVERAGE
from ttscale.scaling.result import percentile_bands
from ttscale.scaling.saturation import POWER, TTSPM


def test_draws_resample_every_unit_count_and_are_seeded() -> None:
    draws = np.vstack(list(bootstrap_draws(37, 250, np.random.default_rng(1))))
    assert draws.shape == (250, 37) and np.all(draws.sum(axis=1) == 37)
    again = np.vstack(list(bootstrap_draws(37, 250, np.random.default_rng(1))))
    other = np.vstack(list(bootstrap_draws(37, 250, np.random.default_rng(2))))
    assert np.array_equal(draws, again) and not np.array_equal(draws, other)
    # Each unit is drawn Binomial(37, 1/37) times: mean 1, variance 36/37.
    assert abs(draws.mean() - 1) < 0.05 and abs(draws.var() - 36 / 37) < 0.1


def test_large_problem_counts_are_chunked_without_losing_resamples() -> None:
    total = sum(chunk.shape[0] for chunk in bootstrap_draws(200_000, 90, np.random.default_rng(0)))
    assert total == 90


def test_resampled_curves_equal_explicit_resampling() -> None:
    rng = np.random.default_rng(3)
    problems, xs = 40, np.array([1.0, 2, 4, 8])
    rows = [(p, x, rng.random()) for p in range(problems) for x in xs if rng.random() < 0.8]  # some missing
    unit, x, y = (np.array(col) for col in zip(*rows, strict=True))
    obs = observations(x=x, y=y, unit=unit)
    picks = rng.integers(0, problems, size=(5, problems))
    draws = np.stack([np.bincount(p, minlength=problems) for p in picks]).astype(float)
    curves = obs.resampled(draws)
    for b, pick in enumerate(picks):
        for j, value in enumerate(xs):
            chosen = [y[(unit == p) & (x == value)] for p in pick]
            values = np.concatenate(chosen)
            expected = values.mean() if values.size else np.nan
            assert (np.isnan(expected) and np.isnan(curves[b, j])) or math.isclose(curves[b, j], expected)


def _solve(law, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    from ttscale.scaling._profile import coefficients, polish, solve

    w = np.ones_like(y)
    u = polish(
        law.profile,
        x,
        law.transform(y),
        w,
        float(solve(law.profile, x, law.transform(y)[None], w[None]).u[0]),
    )
    beta, _ = coefficients(law.profile, x, law.transform(y)[None], w[None], np.array([u]))
    return law.to_params(np.array([u]), beta, 1.0)[0]


@pytest.mark.parametrize("seed", range(5))
def test_profile_fit_agrees_with_scipy_curve_fit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = np.geomspace(1, 500, 12)
    y = 0.8 - 1.5 * x ** -rng.uniform(0.2, 1.0) + 0.01 * rng.normal(size=x.size)
    ours = _solve(POWER, x, y)
    theirs, _ = curve_fit(lambda c, a, b, al: a - b * c**-al, x, y, p0=[0.8, 1.5, 0.5], maxfev=20000)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    cov = np.exp(-rng.uniform(0.5, 3) * x ** -rng.uniform(0.2, 0.9)) * (1 + 0.005 * rng.normal(size=x.size))
    ours = _solve(COVERAGE, x, np.minimum(cov, 1))
    theirs, _ = curve_fit(
        lambda k, a, b: a * k**b, x, np.log(np.minimum(cov, 1)), p0=[-1, -0.5], maxfev=20000
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    n = np.arange(1.0, 33)
    acc = 0.7 * -np.expm1(n * np.log1p(-0.08)) + 0.005 * rng.normal(size=n.size)
    ours = _solve(TTSPM, n, acc)
    theirs, _ = curve_fit(
        lambda m, f, p: f * (1 - (1 - p) ** m), n, acc, p0=[0.5, 0.2], bounds=([0, 0], [2, 1])
    )
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_percentile_interval_ignores_failed_resamples() -> None:
    values = np.concatenate([np.arange(100.0), [np.nan] * 10])
    low, high = percentile_bands(values, level=0.9)
    assert math.isclose(low[0], 4.95) and math.isclose(high[0], 94.05)
