"""Benchmark: fitting each law to 100,000 observations with 1,000 bootstrap resamples over problems.

    python benchmarks/fit.py [--points 100000] [--n-boot 1000] [--laws power,ttspm,coverage,kinetics,genrm]

Each observation is one (problem, x, y) value: a problem's accuracy at a budget, its pass@k, a
configuration's accuracy on it. The goal is under 10 s per law on 2 CPU cores; the time printed
is the wall time of the whole call (pivot, point fit, 1,000 resamples and their fits). The last line is the
provenance (command, CPU flags, versions: benchmarks/provenance.py) for under a README table.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from provenance import provenance, provenance_line  # this folder: on sys.path as the script's own

from ttscale.scaling import Fit, fit_coverage, fit_genrm, fit_kinetics, fit_power, fit_ttspm


def power(points: int, n_boot: int, rng: np.random.Generator) -> tuple[Fit, str]:
    budgets = np.geomspace(256, 65536, 10)
    problems = points // budgets.size
    ability = rng.beta(2, 2, size=(problems, 1)) - 0.5  # problems differ; the mean curve is the law
    correct = rng.random((problems, budgets.size)) < 0.85 - 4.0 * budgets**-0.35 + 0.4 * ability
    fit = fit_power(budget=budgets, accuracy=correct.astype(float), n_boot=n_boot)
    return fit, f"{problems} problems × {budgets.size} budgets"


def ttspm(points: int, n_boot: int, rng: np.random.Generator) -> tuple[Fit, str]:
    n = np.array([1, 2, 4, 8, 16, 32, 64, 128.0])
    problems = points // n.size
    solvable = rng.random((problems, 1)) < 0.7
    accuracy = (solvable & (rng.random((problems, n.size)) < 1 - 0.9**n)).astype(float)
    return fit_ttspm(budget=n, accuracy=accuracy, n_boot=n_boot), f"{problems} problems × {n.size} budgets"


def coverage(points: int, n_boot: int, rng: np.random.Generator) -> tuple[Fit, str]:
    k = np.array([1, 2, 4, 8, 16, 32, 64, 128.0])
    problems = points // k.size
    truth = np.exp(-1.2 * k**-0.5)
    values = np.clip(truth + 0.2 * rng.normal(size=(problems, 1)) * (1 - truth), 0, 1)
    return fit_coverage(k=k, coverage=values, n_boot=n_boot), f"{problems} problems × {k.size} k"


def kinetics(points: int, n_boot: int, rng: np.random.Generator) -> tuple[Fit, str]:
    models, configs = 6, 8
    queries = points // (models * configs)
    size = np.repeat(np.arange(models), configs * queries)
    trials = np.tile(np.repeat(2.0 ** np.arange(configs), queries), models)
    query = np.tile(np.arange(queries), models * configs)
    cost = 10.0 ** (3 + 0.3 * size) * trials * rng.uniform(0.5, 2, size=size.size)
    accuracy = np.clip(1 - 0.9 ** (trials * (1 + size)) * rng.random(size.size), 0, 1)
    fit = fit_kinetics(model=size.astype(str), cost=cost, accuracy=accuracy, query=query, n_boot=n_boot)
    return fit, f"{queries} queries × {models} models × {configs} configs"


def genrm(points: int, n_boot: int, rng: np.random.Generator) -> tuple[Fit, str]:
    s, v = (g.ravel() for g in np.meshgrid(2.0 ** np.arange(10), 2.0 ** np.arange(10), indexing="ij"))
    problems = points // s.size
    cost = s * (1 + v)
    mean = 0.95 - 0.6 * cost**-0.35 - 0.05 * (np.log(s) - 0.57 * np.log(cost)) ** 2
    accuracy = (rng.random((problems, s.size)) < mean).astype(float).ravel()
    fit = fit_genrm(
        s=np.tile(s, problems),
        v=np.tile(v, problems),
        accuracy=accuracy,
        lam=1.0,
        problem=np.repeat(np.arange(problems), s.size),
        n_boot=n_boot,
    )
    return fit, f"{problems} problems × {s.size} (S, V)"


LAWS: dict[str, Callable[[int, int, np.random.Generator], tuple[Fit, str]]] = {
    "power": power,
    "ttspm": ttspm,
    "coverage": coverage,
    "kinetics": kinetics,
    "genrm": genrm,
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--laws", default=",".join(LAWS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"{args.points} observations, {args.n_boot} bootstrap resamples")
    slowest = 0.0
    for name in args.laws.split(","):
        rng = np.random.default_rng(args.seed)
        start = time.perf_counter()
        fit, shape = LAWS[name](args.points, args.n_boot, rng)
        elapsed = time.perf_counter() - start
        slowest = max(slowest, elapsed)
        params = ", ".join(
            f"{k}={v:.4g} [{lo:.4g}, {hi:.4g}]" for k, v in fit.params.items() for lo, hi in [fit.ci[k]]
        )
        print(f"{name:<9} {elapsed:6.2f} s  ({shape})  {params}")
    print(f"slowest: {slowest:.2f} s (goal < 10 s)")
    print(provenance_line(provenance()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
