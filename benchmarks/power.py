"""The planner's sizes checked against experiments: at each claim's planned size for 80% and 90% power, simulated
experiments are run through the verdict's own interval and the share that reads "reproduced" is counted.

The experiments are drawn here, apart from ttscale.stats.power (which simulates counts by problem type and reads
the score statistic, never the interval): each pair is drawn, a problem's repeats are one draw copied (probability
ρ_c = (D − 1)/(R − 1)) or independent, and the interval is `paired_proportions` (accuracy) or the percentile
cluster bootstrap of the ratio of means over problems (costs), exactly as `ttscale compare` computes them. The
claim is then read off the interval by the rules of benchmarks/verdicts.py (above, equivalent, not_worse; CI low ≥
h for a ratio). tests/stats/test_power.py runs the same check on fewer experiments.

    python benchmarks/power.py [--experiments 1000] [--seed 0]

The last line is the provenance (command, CPU flags, versions: benchmarks/provenance.py).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from provenance import provenance, provenance_line

from ttscale.stats.power import Accuracy, Claim, Ratio, accuracy_problems, ratio_problems, simulate_ratio_power
from ttscale.stats.proportions import paired_proportions

_PAIR = {1: (1.0, 0.0), -1: (0.0, 1.0), 0: (1.0, 1.0)}


def accuracy_experiments(claim: Claim, acc: Accuracy, problems: int, *, experiments: int, seed: int = 0) -> float:
    """The share of `experiments` drawn experiments whose Tango interval reads "reproduced" for `claim`."""
    rng = np.random.default_rng(seed)
    r = acc.repeats
    copy = 0.0 if r == 1 else (acc.design_effect - 1) / (r - 1)
    probs = [(acc.discordance + acc.difference) / 2, (acc.discordance - acc.difference) / 2]
    probs.append(max(0.0, 1 - sum(probs)))
    hits = 0
    for _ in range(experiments):
        outcome = rng.choice([1, -1, 0], size=(problems, r), p=probs)
        copied = rng.random(problems) < copy
        outcome[copied] = outcome[copied, :1]
        found = paired_proportions([[_PAIR[x] for x in row] for row in outcome.tolist()])
        hits += reproduced(claim, found.low, found.high)
    return hits / experiments


def reproduced(claim: Claim, low: float, high: float) -> bool:
    """benchmarks/verdicts.py's rules on an interval (proportions): above, equivalent, not_worse."""
    if claim.kind == "better":
        return low > claim.value
    if claim.kind == "equal":
        return -claim.value <= low and high <= claim.value
    return low >= -claim.value


def ratio_costs(ratio: float, *, problems: int, experiments: int, seed: int = 0, spread_b: float = 0.6,
                noise: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Per-problem mean costs (experiments × problems): B log-normal across problems (some problems cost more on
    both sides), A = ratio · B · a log-normal factor of mean 1 (how differently the arms spend on one problem)."""
    rng = np.random.default_rng(seed)
    b = np.exp(rng.normal(0.0, spread_b, size=(experiments, problems)))
    a = ratio * b * np.exp(rng.normal(-noise * noise / 2, noise, size=(experiments, problems)))
    return a, b


def population_spread(ratio: float, **kw: float) -> float:
    """σ of a_p/ā − b_p/b̄ under `ratio_costs`, from a million problems."""
    a, b = ratio_costs(ratio, problems=1_000_000, experiments=1, seed=12345, **kw)
    return float(np.std(a[0] / a[0].mean() - b[0] / b[0].mean()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiments", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    began = time.perf_counter()
    acc = Accuracy(difference=0.08, discordance=0.3, repeats=2, design_effect=1.4)
    cases = [(Claim(kind="better", value=0.0), acc),
             (Claim(kind="equal", value=0.05), Accuracy(difference=0.0, discordance=0.2, repeats=2, design_effect=1.4)),
             (Claim(kind="not_worse", value=0.03), Accuracy(difference=0.0, discordance=0.2, repeats=2,
                                                            design_effect=1.4))]
    print("| claim | assumed | power | planned problems | reproduced in experiments |\n|---|---|---:|---:|---:|")
    for claim, assumed in cases:
        for power in (0.8, 0.9):
            n = accuracy_problems(claim, assumed, power)
            assert n is not None
            got = accuracy_experiments(claim, assumed, n, experiments=args.experiments, seed=args.seed)
            print(f"| {claim.text()} | Δ {100 * assumed.difference:+g} pts, q {100 * assumed.discordance:g}%, "
                  f"R {assumed.repeats}, D {assumed.design_effect:g} | {power:.0%} | {n} × {assumed.repeats} | "
                  f"{got:.1%} |")
    claim, rho = Claim(kind="ratio", value=1.34), 1.6
    spread = population_spread(rho)
    for power in (0.8, 0.9):
        n = ratio_problems(claim, Ratio(ratio=rho, spread=spread), power)
        assert n is not None
        a, b = ratio_costs(rho, problems=n, experiments=args.experiments, seed=args.seed)
        got = simulate_ratio_power(claim, a, b, resamples=1000, seed=args.seed)
        print(f"| {claim.text()} | ρ {rho}, σ {spread:.3f} | {power:.0%} | {n} | {got:.1%} |")
    se = math.sqrt(0.8 * 0.2 / args.experiments)
    print(f"\n{args.experiments} experiments per row (Monte-Carlo SE at 80%: {100 * se:.1f} points); "
          f"{time.perf_counter() - began:.0f} s")
    print(provenance_line(provenance()))


if __name__ == "__main__":
    main()
