"""Sequential designs measured: each design `compare --until-decided` offers, simulated with ttscale's own verdict
(Tango's score statistic with the repeats' design effect at every look, ttscale.stats.sequential.simulate) at the
claim's line (no effect), half, the planned and twice the planned effect, 2,000 sequences each.

For each design the cap is the smallest at which it keeps the fixed design's 80% power at the planned effect
(ttscale.stats.designs.recommend), so every row is at matched power; expected problems are shown as a share of the
fixed design's size. The pilot-like setting: better:0, discordance 30%, 2 repeats with design effect 1.4 (what the
arithmetic comparisons of the docs measure), planned effects of 5 and 10 points. "legacy" is the design before
issue 63 (O'Brien-Fleming-like, a look every N/10 problems).

    python benchmarks/sequential.py [--sequences 2000] [--json benchmarks/results/sequential.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from provenance import provenance, provenance_line

from ttscale.stats.designs import LEGACY, RECOMMENDED, Design, recommend
from ttscale.stats.power import Accuracy, Claim

DESIGNS: list[tuple[str, Design]] = [
    ("legacy", LEGACY),
    *((spending, Design(spending=spending)) for spending in
      ("obrien_fleming", "hsd:-4", "hsd:-2", "hsd:-1", "hsd:0", "hsd:1", "pocock")),
    ("hsd:-1, 10 looks", Design(looks=10)),
]
EFFECTS = (0.05, 0.10)


def main() -> None:
    flags = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    flags.add_argument("--sequences", type=int, default=2000, help="simulated sequences per design and effect")
    flags.add_argument("--seed", type=int, default=0)
    flags.add_argument("--json", type=Path, help="write the rows and provenance here")
    args = flags.parse_args()
    claim = Claim(kind="better", value=0.0)
    rows = []
    started = time.perf_counter()
    print("| planned Δ | design | fixed, 80% | cap | no effect | half | planned | twice | power | false verdicts |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for effect in EFFECTS:
        acc = Accuracy(difference=effect, discordance=0.3, repeats=2, design_effect=1.4)
        for name, design in DESIGNS:
            found = recommend(claim, acc, design=design, sims=args.sequences, seed=args.seed)
            assert found is not None
            fixed = found.fixed_problems
            shares = {k: v.expected_problems / fixed for k, v in found.at.items()}
            mark = " (recommended)" if design == RECOMMENDED else ""
            print(f"| {100 * effect:g} pts | {name}{mark} | {fixed} | {found.max_problems} "
                  f"({found.max_problems / fixed:.2f}x) | "
                  + " | ".join(f"{100 * shares[k]:.0f}%" for k in ("line", "half", "planned", "twice"))
                  + f" | {100 * found.power:.1f}% | {100 * (found.false_verdicts() or 0):.1f}% |")
            rows.append({"effect": effect, "design": name, "spec": design.spec(), **found.to_dict()})
    # A 100-point difference (A always right, B never): the problems each design needs, cap 200.
    always = Accuracy(difference=1.0, discordance=1.0, repeats=2, design_effect=2.0)
    from ttscale.stats.sequential import simulate

    hundred = {name: int(simulate(design.plan(claim, 200), always, sims=50, seed=0)[1].max())
               for name, design in DESIGNS}
    print(f"\nA 100-point difference, cap 200, stops at: {', '.join(f'{k} {v}' for k, v in hundred.items())} "
          "problems.")
    found = provenance()
    print(f"\n{provenance_line(found)} ({time.perf_counter() - started:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "hundred_points_at_cap_200": hundred, "date":
                                         time.strftime("%Y-%m-%d"), "provenance": found}, indent=1) + "\n")


if __name__ == "__main__":
    main()
