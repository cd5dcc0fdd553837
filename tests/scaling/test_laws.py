"""Coverage and saturation laws: recovery of known parameters, CI coverage, saturation points.

Data are simulated with known parameters so that the population curve is exactly the law:
problem-level random effects with mean zero around it, or (TTSPM) its own generative story.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttscale.scaling import (
    FitInputError,
    fit_coverage,
    fit_coverage_from_samples,
    fit_power,
    fit_saturation,
    fit_ttspm,
    pass_at_k_array,
    power_saturation,
    ttspm_curve,
    ttspm_saturation,
)

KS = np.array([1, 2, 4, 8, 16, 32, 64, 128.0])
NS = np.array([1, 2, 4, 8, 16, 32, 64.0])
BUDGETS = np.geomspace(10, 1e5, 10)


def coverage_data(rng: np.random.Generator, a: float, b: float, problems: int) -> np.ndarray:
    truth = np.exp(a * KS**b)
    spread = 0.15 * rng.normal(size=(problems, 1)) * (1 - truth) + 0.05 * rng.normal(size=(problems, KS.size))
    return truth + spread


def ttspm_data(
    rng: np.random.Generator, f_max: float, p: float, problems: int, samples: int = 64
) -> np.ndarray:
    """F_max of the problems are solvable, each sample of a solvable one right with chance p:
    the unbiased pass@N of a problem then has mean F_max·(1 − (1 − p)^N) exactly."""
    solvable = rng.random(problems) < f_max
    correct = ((rng.random((problems, samples)) < p) & solvable[:, None]).sum(axis=1)
    return pass_at_k_array(n=np.full(problems, samples), correct=correct, k=NS)


def power_data(rng: np.random.Generator, a: float, b: float, alpha: float, problems: int) -> np.ndarray:
    truth = a - b * BUDGETS**-alpha
    return truth + 0.1 * rng.normal(size=(problems, 1)) + 0.05 * rng.normal(size=(problems, BUDGETS.size))


CASES: dict[str, tuple[Callable, Callable, list[tuple[float, ...]]]] = {
    "coverage": (
        lambda rng, t, u: coverage_data(rng, t[0], t[1], u),
        lambda y, **kw: fit_coverage(k=KS, coverage=y, **kw),
        [(-1.2, -0.5), (-3.0, -0.3), (-0.4, -0.8)],
    ),
    "ttspm": (
        lambda rng, t, u: ttspm_data(rng, t[0], t[1], u),
        lambda y, **kw: fit_ttspm(budget=NS, accuracy=y, **kw),
        [(0.7, 0.12), (0.95, 0.03), (0.4, 0.5)],
    ),
    "power": (
        lambda rng, t, u: power_data(rng, t[0], t[1], t[2], u),
        lambda y, **kw: fit_power(budget=BUDGETS, accuracy=y, **kw),
        [(0.85, 2.0, 0.4), (0.6, 0.9, 0.25), (0.95, 30.0, 0.8)],
    ),
}


@pytest.mark.parametrize("law", list(CASES))
def test_recovers_known_parameters_within_5_percent(law: str) -> None:
    simulate, fit, truths = CASES[law]
    rng = np.random.default_rng(11)
    for truth in truths:
        result = fit(simulate(rng, truth, 4000), n_boot=100)
        assert result.r2 > 0.99
        for name, estimate, true in zip(result.names, result.estimate, truth, strict=True):
            assert abs(estimate / true - 1) < 0.05, f"{law} {name}: {estimate:.4g} vs {true:.4g}"
            low, high = result.ci[name]
            assert low <= estimate <= high


@pytest.mark.parametrize("law", list(CASES))
def test_95_percent_intervals_cover_the_truth(law: str) -> None:
    simulate, fit, truths = CASES[law]
    truth = truths[0]
    rng = np.random.default_rng(2024)
    repetitions = 80
    hits = np.zeros(len(truth))
    for rep in range(repetitions):
        result = fit(simulate(rng, truth, 200), n_boot=300, seed=rep)
        hits += [result.ci[n][0] <= t <= result.ci[n][1] for n, t in zip(result.names, truth, strict=True)]
    assert np.all(hits / repetitions >= 0.9), f"{law} coverage {hits / repetitions}"


def test_wide_and_long_forms_and_problem_ids_agree() -> None:
    rng = np.random.default_rng(5)
    y = coverage_data(rng, -1.0, -0.5, 50)
    wide = fit_coverage(k=KS, coverage=y, n_boot=50, seed=3)
    problem = np.repeat(np.arange(50), KS.size)
    long = fit_coverage(k=np.tile(KS, 50), coverage=y.ravel(), problem=problem, n_boot=50, seed=3)
    np.testing.assert_allclose(wide.estimate, long.estimate, rtol=1e-9)
    np.testing.assert_allclose(wide.boot, long.boot, rtol=1e-9)
    assert wide.resampled == "problems"
    points = fit_coverage(k=np.tile(KS, 50), coverage=y.ravel(), n_boot=50)
    assert points.resampled == "points" and points.n_units == y.size
    np.testing.assert_allclose(points.estimate, wide.estimate, rtol=1e-9)  # same mean curve


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 40), data=st.data())
def test_pass_at_k_is_the_combinatorial_estimator(n: int, data: st.DataObject) -> None:
    correct = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    expected = 1 - math.comb(n - correct, k) / math.comb(n, k)
    assert math.isclose(float(pass_at_k_array(n=[n], correct=[correct], k=[k])[0, 0]), expected, abs_tol=1e-9)


def test_pass_at_k_beyond_n_is_missing() -> None:
    assert np.isnan(pass_at_k_array(n=[4], correct=[1], k=[8])[0, 0])


def test_coverage_from_sample_counts_fits_realistic_data() -> None:
    rng = np.random.default_rng(9)
    difficulty = rng.beta(0.3, 1.5, size=500)  # many hard problems: coverage keeps rising with k
    correct = rng.binomial(256, difficulty)
    result = fit_coverage_from_samples(n=np.full(500, 256), correct=correct, n_boot=200)
    assert result.params["a"] < 0 and result.params["b"] < 0 and result.r2 > 0.95
    mean, low, high = result.predict([1, 16, 256], interval=True)
    assert np.all(low <= mean) and np.all(mean <= high) and np.all(np.diff(mean) > 0)


def test_ttspm_saturation_point_is_where_one_more_step_gains_less_than_epsilon() -> None:
    for f_max, p, eps in [(0.8, 0.1, 0.01), (0.5, 0.4, 0.001), (0.9, 0.02, 0.005), (0.3, 0.01, 0.01)]:
        n_star = int(ttspm_saturation(f_max=f_max, p=p, epsilon=eps))
        gains = np.diff(
            ttspm_curve(np.arange(1, n_star + 2), f_max=f_max, p=p)
        )  # gains[i] = P(i + 2) − P(i + 1)
        assert gains[-1] < eps
        assert n_star == 1 or gains[-2] >= eps


def test_power_saturation_budget_is_where_doubling_gains_epsilon() -> None:
    for b, alpha, eps in [(2.0, 0.4, 0.01), (30.0, 0.8, 0.001)]:
        c_star = float(power_saturation(b=b, alpha=alpha, epsilon=eps))
        gain = b * c_star**-alpha - b * (2 * c_star) ** -alpha
        assert math.isclose(gain, eps, rel_tol=1e-9)
    assert np.isnan(power_saturation(b=-1.0, alpha=0.5, epsilon=0.01))


def test_fits_report_saturation_points_with_intervals() -> None:
    rng = np.random.default_rng(1)
    result = fit_ttspm(budget=NS, accuracy=ttspm_data(rng, 0.7, 0.12, 1000), epsilon=0.005, n_boot=200)
    value, low, high = result.derived["N_star"]
    assert low <= value <= high
    assert value == ttspm_saturation(f_max=result.params["F_max"], p=result.params["p"], epsilon=0.005)
    sequential = fit_saturation(
        form="ttspm", budget=NS, accuracy=ttspm_data(rng, 0.7, 0.12, 300), mode="sequential", n_boot=20
    )
    assert sequential.details["p_name"] == "p_rethink"
    power = fit_saturation(
        form="power", budget=BUDGETS, accuracy=power_data(rng, 0.85, 2.0, 0.4, 300), n_boot=50
    )
    assert "C_star" in power.derived and power.to_dict()["params"]["alpha"]["ci"][0] is not None


HAND_N = [1, 2, 4, 8, 16, 32]
HAND_ACC = [0.03, 0.06, 0.12, 0.22, 0.40, 0.65]  # issue 27: unbounded least squares gave F_max 1.078, N* = 39


def test_ttspm_ceiling_is_a_probability_and_n_star_past_the_data_is_flagged() -> None:
    from scipy.optimize import least_squares

    result = fit_ttspm(budget=HAND_N, accuracy=HAND_ACC, n_boot=200)
    f_max, p = result.params["F_max"], result.params["p"]
    assert 0 < f_max <= 1 and np.all(result.boot[:, 0][np.isfinite(result.boot[:, 0])] <= 1)
    # The bounded least-squares optimum, found independently by scipy with F_max in [0, 1].
    ref = least_squares(
        lambda t: ttspm_curve(HAND_N, f_max=t[0], p=t[1]) - HAND_ACC,
        x0=[0.5, 0.1], bounds=([0.0, 1e-9], [1.0, 1 - 1e-9]), xtol=1e-14, ftol=1e-14, gtol=1e-14,
    )
    assert f_max == pytest.approx(ref.x[0], abs=1e-6) and p == pytest.approx(ref.x[1], rel=1e-5)
    n_star = result.derived["N_star"][0]
    assert n_star == ttspm_saturation(f_max=f_max, p=p, epsilon=0.01) and n_star > 32
    assert result.details["N_star_extrapolated"] is True and result.details["largest_N"] == 32
    assert any("F_max estimate sits at its bound 1" in w for w in result.warnings)
    assert result.to_dict()["details"]["N_star_extrapolated"] is True


def test_ttspm_n_star_inside_the_measured_range_is_not_flagged() -> None:
    # F_max 0.7, p 0.3: N* = ⌈ln(0.01 / 0.21) / ln 0.7⌉ = 9, inside N = 1…32; the bound does not bind.
    truth = ttspm_curve(HAND_N, f_max=0.7, p=0.3)
    result = fit_ttspm(budget=HAND_N, accuracy=truth, n_boot=50)
    assert result.params["F_max"] == pytest.approx(0.7) and result.params["p"] == pytest.approx(0.3)
    assert result.derived["N_star"][0] == 9
    assert result.details["N_star_extrapolated"] is False and result.details["largest_N"] == 32
    assert not result.warnings


def test_power_law_handles_flop_scale_budgets() -> None:
    # eFLOPs run to 1e17: the fit works in units of the budgets' geometric mean.
    rng = np.random.default_rng(4)
    y = power_data(rng, 0.85, 2.0, 0.4, 3000)
    small = fit_power(budget=BUDGETS, accuracy=y, n_boot=0)
    large = fit_power(budget=BUDGETS * 1e12, accuracy=y, n_boot=0)
    assert math.isclose(large.params["alpha"], small.params["alpha"], rel_tol=1e-6)
    assert math.isclose(large.params["B"], small.params["B"] * 1e12 ** small.params["alpha"], rel_tol=1e-5)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fit_coverage(k=[0, 1], coverage=[0.1, 0.2]), "k must be ≥ 1"),
        (lambda: fit_coverage(k=[1, 2], coverage=[0.1, 1.5]), r"coverage values must lie in \[0, 1\]"),
        (lambda: fit_coverage(k=[1, 2, 3], coverage=[0.1, 0.2]), "must be 1-D of equal length"),
        (lambda: fit_ttspm(budget=[0, 1, 2], accuracy=[0.1, 0.2, 0.3]), "need N ≥ 1"),
        (lambda: fit_ttspm(budget=[1, 2], accuracy=[0.1, 0.2], epsilon=0), "epsilon must be a number > 0"),
        (lambda: fit_power(budget=[1, 2, 3], accuracy=[0.1, 0.2, 0.3]), "need ≥ 4 distinct budgets"),
        (lambda: fit_ttspm(budget=[1, 2], accuracy=[0.1, 0.2], n_boot=-1), "n_boot must be an integer ≥ 0"),
        (lambda: fit_ttspm(budget=[1, 2], accuracy=[0.1, 0.2], level=1.5), r"level must be in \(0, 1\)"),
        (
            lambda: fit_saturation(form="cubic", budget=[1], accuracy=[1]),  # type: ignore[arg-type]
            "form must be 'ttspm' or 'power'",
        ),
    ],
)
def test_bad_input_says_what_is_allowed(call: Callable, message: str) -> None:
    with pytest.raises(FitInputError, match=message):
        call()


@pytest.mark.parametrize(("a", "b"), [(-1.2, -0.35), (-0.4, -0.8)])
def test_coverage_is_fitted_in_both_linearisations_and_the_better_is_named(a: float, b: float) -> None:
    exact = fit_coverage(k=KS, coverage=np.exp(a * KS**b), n_boot=0)
    for form in ("log", "loglog"):  # on exact data both recover the law
        values = exact.details["forms"][form]
        assert values["a"] == pytest.approx(a, rel=1e-3) and values["b"] == pytest.approx(b, rel=1e-3)
    noisy = fit_coverage(k=KS, coverage=coverage_data(np.random.default_rng(3), a, b, 200), n_boot=0)
    forms = noisy.details["forms"]
    assert forms["log"]["a"] == noisy.params["a"] and forms["log"]["rmse"] == noisy.rmse
    assert noisy.details["better"] == min(forms, key=lambda f: forms[f]["rmse"])
    assert forms["loglog"]["a"] == pytest.approx(a, rel=0.15) and forms["loglog"]["b"] == pytest.approx(b, rel=0.15)


def test_the_loglog_form_needs_two_points_strictly_inside_zero_and_one() -> None:
    fit = fit_coverage(k=[1, 2, 4], coverage=[0.5, 1.0, 1.0], n_boot=0)
    assert set(fit.details["forms"]) == {"log"} and fit.details["better"] == "log"


def test_the_fit_options_have_one_set_of_defaults_ttscale_fits() -> None:
    # issue 47: ttscale.fit states them (its public signature) and the fitter takes them from it, not a copy
    import inspect

    import ttscale
    from ttscale.scaling.laws import fit_law

    options = {name: p for name, p in inspect.signature(fit_law).parameters.items() if name not in ("law", "data")}
    assert options and all(p.default is inspect.Parameter.empty for p in options.values())
    public = inspect.signature(ttscale.fit).parameters
    assert {name: public[name].default for name in options} == {
        "form": "ttspm", "mode": "parallel", "epsilon": 0.01, "lam": None, "scope": None, "n_boot": 1000,
        "level": 0.95, "seed": 0}
