"""What would decide the findings that no planner of ttscale.stats.power sizes: F1, F2 and F8 (fits and means over
best-of-N pools) and F7 (benchmarks/adaptive.py's ratio). Their intervals are percentile bootstraps over problems,
so the size that decides one is read off the bootstrap's own spread: a 95% interval of half-width w from n problems
has a standard error se = w / 1.96 that shrinks as 1/√n (problems are independent), and an interval centred at the
measured estimate clears a line at distance d from it with power 1 − β once

    n' = n · ((z_0.975 + z_(1−β)) · se / d)²                 (one line: "wholly above", "wholly below")
    n' = n · ((z_0.975 + z_(1−β/2)) · se / (m − |Δ|))²        (inside ±m, both lines at once; |Δ| < m)

(the normal approximation at the measured effect: tests/test_deciding.py checks by simulation that a percentile
bootstrap at n' clears the line with the nominal power, and that halving d quadruples n'). The side of the estimate
nearest the line gives w; an infinite end (F7's "> max") is replaced by the other. F8 also gets the pool size at
which the curves fitted to its pools put the last doubling's gain within the margin.

    python benchmarks/deciding.py benchmarks/results/findings-f1f2f8.json [--adaptive runs/.../benchmark.json]

prints each of F1, F2, F8 (and F7) with the problems that would decide it, from a findings.py --json that kept its
pool arrays.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import norm

Interval = tuple[float, float, float]
Z = float(norm.ppf(0.975))
#: The most problems a row may name: beyond it the answer is "no feasible size" with the size it needs.
CAP = 10**7


def _z(power: float) -> float:
    if not 0.5 <= power < 1:
        raise ValueError(f"power must be in [0.5, 1), got {power}")
    return float(norm.ppf(power))


def _se(ci: Interval, toward: float) -> float:
    """The standard error of the estimate from the interval's half nearer `toward` (the other if that is
    infinite or empty)."""
    est, low, high = ci
    near, far = (est - low, high - est) if toward < est else (high - est, est - low)
    half = near if math.isfinite(near) and near > 0 else far
    if not math.isfinite(half) or half <= 0:
        raise ValueError(f"the interval {ci} has no finite spread to scale")
    return half / Z


def problems_to_clear(ci: Interval, n: int, line: float, *, power: float = 0.8) -> int | None:
    """Problems at which an interval like `ci` (from `n` problems) lies wholly beyond `line`, on the estimate's side,
    with `power`; None when the estimate is on the line (no size decides it)."""
    d = abs(ci[0] - line)
    if d == 0:
        return None
    return min(CAP, max(2, math.ceil(n * ((Z + _z(power)) * _se(ci, line) / d) ** 2)))


def problems_to_be_within(ci: Interval, n: int, margin: float, *, power: float = 0.8) -> int | None:
    """Problems at which an interval like `ci` lies wholly inside ±`margin` with `power`; None when the estimate
    is not inside (then no size puts it there)."""
    d = margin - abs(ci[0])
    if d <= 0:
        return None
    se = max(_se(ci, ci[0] - 1), _se(ci, ci[0] + 1))  # both ends must come inside: the wider half
    return min(CAP, max(2, math.ceil(n * ((Z + _z(1 - (1 - power) / 2)) * se / d) ** 2)))


def log_interval(ci: Interval) -> Interval:
    """A ratio's interval on the log scale (where its bootstrap is near symmetric); an end ≤ 0 or infinite stays
    infinite."""
    return tuple(math.log(x) if 0 < x < math.inf else (-math.inf if x <= 0 else math.inf) for x in ci)  # type: ignore[return-value]


# -- the four findings -----------------------------------------------------------------------------------------


def law_decider(gap: Interval, n: int, *, margin: float = 0.01) -> dict[str, Any]:
    """F1: the ceiling's held-out RMSE minus the law's (`verdicts.coverage_law`'s interval, coverage points as
    proportions). Outside ±margin the interval can clear the margin; inside, the two curves predict the held-out k
    as well as each other and no number of problems decides it (only another k range could)."""
    if abs(gap[0]) <= margin:
        return {"verdict": None, "problems_80": None,
                "why": f"the curves predict held-out k within ±{100 * margin:g} pt of each other "
                       f"({100 * gap[0]:+.1f} pts): no number of problems decides it at this k range"}
    line = margin if gap[0] > 0 else -margin
    return {"verdict": "reproduced" if gap[0] > 0 else "not reproduced",
            "problems_80": problems_to_clear(gap, n, line), "why": f"ceiling − law's CI beyond {100 * line:+g} pt"}


def plateau_decider(majority_gain: Interval, n: int, *, margin: float = 0.01) -> dict[str, Any]:
    """F2: maj@K − maj@K/4. Outside ±margin: the problems for the interval to clear it (not reproduced); inside:
    the problems for the whole interval to come inside (reproduced, when coverage still grows and the vote wins,
    which the measured rows already show)."""
    if abs(majority_gain[0]) > margin:
        line = margin if majority_gain[0] > 0 else -margin
        return {"verdict": "not reproduced", "problems_80": problems_to_clear(majority_gain, n, line),
                "why": f"maj gain's CI beyond {100 * line:+g} pt"}
    return {"verdict": "reproduced", "problems_80": problems_to_be_within(majority_gain, n, margin),
            "why": f"maj gain's CI inside ±{100 * margin:g} pt"}


def saturation_decider(n_star: Interval, gain: Interval, n: int, largest: float, *,
                       margin: float = 0.01) -> dict[str, Any]:
    """F8 on N*'s interval and the last doubling's gain (`verdicts.saturation_rule`): a gain above the margin
    decides "not reproduced" once its interval clears it, as does N* beyond the range; else "reproduced" needs
    both the gain's upper end within the margin and N*'s within the range (the larger of the two sizes)."""
    if gain[0] > margin:
        return {"verdict": "not reproduced", "problems_80": problems_to_clear(gain, n, margin),
                "why": f"the last doubling's gain CI above +{100 * margin:g} pt (still rising)"}
    if n_star[0] > largest:
        return {"verdict": "not reproduced", "problems_80": problems_to_clear(n_star, n, largest),
                "why": f"N*'s CI beyond {largest:g}"}
    sizes = [problems_to_clear(gain, n, margin), problems_to_clear(n_star, n, largest)]
    return {"verdict": "reproduced", "problems_80": None if None in sizes else max(s for s in sizes if s),
            "why": f"the gain's CI within +{100 * margin:g} pt and N*'s within {largest:g}"}


def adaptive_decider(ratio: Interval, n: int) -> dict[str, Any]:
    """F7: best-of-N's tokens for adaptive's accuracy over adaptive's, on held-out problems; decided when the
    interval clears 1 (log scale: the bootstrap of a ratio is near symmetric there)."""
    logged = log_interval(ratio)
    if not math.isfinite(logged[0]):
        return {"verdict": None, "problems_80": None, "why": "the ratio is not finite"}
    return {"verdict": "reproduced" if ratio[0] > 1 else "not reproduced",
            "problems_80": problems_to_clear(logged, n, 0.0), "why": "the ratio's CI clear of 1"}


def pool_to_flatten(coverage: np.ndarray, ks: Sequence[int], *, margin: float = 0.01,
                    largest: int = 2**20) -> dict[str, int | None]:
    """F8's pool size: the smallest power of 2, K, at which the curves fitted to the measured coverage@k (the
    law exp(a·k^b) of F1, and TTSPM's F_max·(1 − (1 − p)^N)) put coverage@K − coverage@K/2 within `margin`;
    None: not by `largest`."""
    from ttscale.scaling import fit_ttspm
    from ttscale.scaling.coverage import LAW
    from ttscale.scaling.result import fit_profile_curves

    curve = np.asarray(coverage, dtype=float).mean(axis=0)
    x = np.asarray(ks, dtype=float)
    law = fit_profile_curves(LAW, x=x, y=curve, batches=[], level=0.95, n_obs=curve.size, n_units=1,
                             resampled="problems")
    ttspm = fit_ttspm(budget=list(ks), accuracy=np.asarray(coverage, dtype=float), n_boot=0)
    f_max, p = float(ttspm.params["F_max"]), float(ttspm.params["p"])
    grid = np.array([2.0**i for i in range(1, int(math.log2(largest)) + 1)])

    def first(gain: np.ndarray) -> int | None:
        hits = np.nonzero(gain <= margin)[0]
        return int(grid[hits[0]]) if hits.size else None

    law_gain = LAW.curve(grid, law.estimate[None, :])[0] - LAW.curve(grid / 2, law.estimate[None, :])[0]
    ttspm_gain = f_max * ((1 - p) ** (grid / 2) - (1 - p) ** grid)
    return {"law": first(law_gain), "ttspm": first(ttspm_gain)}


# -- from findings.py's JSON -----------------------------------------------------------------------------------


def _numbers(text: str, after: str) -> Interval:
    """(estimate, low, high) from a row's 'after +X pts [+L, +H]' or 'after X [L, H]'."""
    import re

    found = re.search(re.escape(after) + r"\s*([-+−\d.]+)(?: pts| samples)?x? \[([-+−\d.]+|> max), ([-+−\d.]+|> max)\]",
                      text)
    if found is None:
        raise ValueError(f"no interval after {after!r} in {text!r}")

    def number(s: str) -> float:
        return math.inf if s == "> max" else float(s.replace("−", "-"))

    return number(found[1]), number(found[2]), number(found[3])


def rows_from(data: dict[str, Any], *, adaptive: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each pool finding of a findings.py --json (and F7 from an adaptive report) with what would decide it."""
    out = []
    n = int(data["problems"])
    pace = data.get("seconds")
    for name, verdict, detail in data["rows"]:
        key = name.split()[0]
        found: dict[str, Any] | None = None
        if key == "F1":
            gap = _numbers(detail, "ceiling − law")
            found = law_decider(tuple(x / 100 for x in gap), n)  # type: ignore[arg-type]
        elif key == "F2":
            gain = _numbers(detail, f"maj@{data['pool']} − maj@{data['pool'] // 4}")
            found = plateau_decider(tuple(x / 100 for x in gain), n)  # type: ignore[arg-type]
        elif key == "F8":
            star = _numbers(detail, "N* =")
            gain = _numbers(detail, f"coverage@{data['pool']} − coverage@{data['pool'] // 2}")
            found = saturation_decider(star, tuple(x / 100 for x in gain), n, float(data["pool"]))  # type: ignore[arg-type]
            arrays = data.get("pool_arrays")
            if arrays:
                found["pool_80"] = pool_to_flatten(np.asarray(arrays["coverage"]), arrays["ks"])
        if found is not None:
            out.append({"finding": key, "verdict_now": verdict, **found,
                        "minutes": None if pace is None or found["problems_80"] is None
                        else found["problems_80"] / n * pace / 60})
    if adaptive is not None:
        live = next(v for k, v in adaptive["policies"].items() if "total budget (live" in k)["ratio"]
        ci = tuple(math.inf if x == "inf" else float(x) for x in (live["value"], live["ci95_low"], live["ci95_high"]))
        out.append({"finding": "F7", **adaptive_decider(ci, int(adaptive["problems"]))})  # type: ignore[arg-type]
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("findings", help="a findings.py --json with F1, F2 and F8")
    parser.add_argument("--adaptive", metavar="FILE", help="benchmarks/adaptive.py's benchmark.json (F7)")
    args = parser.parse_args(argv)
    data = json.loads(Path(args.findings).read_text())
    adaptive = json.loads(Path(args.adaptive).read_text()) if args.adaptive else None
    print(json.dumps(rows_from(data, adaptive=adaptive), indent=1))


if __name__ == "__main__":
    main()
