"""Scaling laws of test-time compute, fitted with bootstrap confidence intervals (pure numpy/scipy).

Each law has a formula, a least-squares fit, percentile intervals from a bootstrap over problems,
goodness of fit and prediction with intervals (`Fit`):

- `fit_coverage`: Large Language Monkeys, coverage(k) = exp(a·k^b).
- `fit_ttspm` / `fit_power` (`fit_saturation`): TTSPM P(N) = F_max·(1 − (1 − p)^N) with its saturation
  point N*, and the saturating power law acc(C) = A − B·C^(−α) with C*.
- `fit_kinetics`: the Kinetics cost–accuracy frontier, which model owns which cost range.
- `fit_genrm`: compute-optimal solutions S and verifications V, S_opt ∝ C^a and V_opt ∝ C^b.
"""

from ttscale.scaling._resample import FitInputError
from ttscale.scaling.coverage import coverage_curve, fit_coverage, fit_coverage_from_samples, pass_at_k_array
from ttscale.scaling.genrm import fit_genrm, genrm_budget, optimal_allocation
from ttscale.scaling.kinetics import fit_kinetics, owner_ranges, pareto_frontier
from ttscale.scaling.result import Fit
from ttscale.scaling.saturation import (
    fit_power,
    fit_saturation,
    fit_ttspm,
    power_curve,
    power_saturation,
    ttspm_curve,
    ttspm_saturation,
)

__all__ = [
    "Fit",
    "FitInputError",
    "coverage_curve",
    "fit_coverage",
    "fit_coverage_from_samples",
    "fit_genrm",
    "fit_kinetics",
    "fit_power",
    "fit_saturation",
    "fit_ttspm",
    "genrm_budget",
    "optimal_allocation",
    "owner_ranges",
    "pareto_frontier",
    "pass_at_k_array",
    "power_curve",
    "power_saturation",
    "ttspm_curve",
    "ttspm_saturation",
]
