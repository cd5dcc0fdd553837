"""`ttscale plan`: the problems a claim needs for 80% and 90% power, from a pilot or stated assumptions
(`ttscale.plan`, ttscale.comparisons.planning).

ttscale plan compares/arith-20260101                       # a compare directory: its two arms
ttscale plan runs/a runs/b --claim equal:1 --claim ratio:1.34
ttscale plan --difference 5 --discordance 20 --repeats 2 --design-effect 1.4 --claim better:0
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ttscale.errors import UsageError


def register(sub: Any) -> None:
    p = sub.add_parser(
        "plan",
        help="problems (and repeats) a claim needs for 80%%/90%% power, and their compute, from a pilot or assumptions",
        description="Plan an evaluation: for each claim (better by more than T points, equal within ±M points, not "
        "worse by more than M points, a cost ratio of at least H), the problems for 80%% and 90%% power at α = 0.05 "
        "for the interval the verdict uses, the smallest effect detectable at the pilot's size, and the compute "
        "scaled from the pilot's ledgers. Percentages are given in points.",
    )
    p.add_argument("pilot", nargs="*", metavar="DIR", help="a compare directory, or two run directories")
    p.add_argument("--claim", action="append", metavar="KIND:VALUE",
                   help="better:T, equal:M, not-worse:M (points) or ratio:H (times); repeatable (default better:0, "
                   "equal:1, not-worse:1, ratio:1.1)")
    p.add_argument("--difference", type=float, help="assumed accuracy difference A − B, in points")
    p.add_argument("--accuracy", type=float, nargs=2, metavar=("A", "B"), help="assumed accuracies, in percent")
    p.add_argument("--discordance", type=float, help="assumed share of pairs where the arms disagree, in percent")
    p.add_argument("--repeats", type=int, help="pairs per problem (default the pilot's, else 1)")
    p.add_argument("--design-effect", type=float, help="the repeats' design effect, in [1, repeats]")
    p.add_argument("--ratio", type=float, help="assumed cost ratio mean A / mean B")
    p.add_argument("--ratio-spread", type=float, help="assumed σ of a_p/ā − b_p/b̄ over problems (0.3 = 30%%)")
    p.add_argument("--metric", default="generated_tokens", help="the cost a ratio claim is about (default "
                   "generated_tokens)")
    p.add_argument("--size", type=int, help="problems the power now and the detectable effect are for (default the "
                   "pilot's)")
    p.add_argument("--sims", type=int, default=4000, help="simulated experiments per size (default 4000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the simulations (default 0)")
    p.add_argument("--design", metavar="SPENDING[,looks=K][,first=N][,first_spend=A]",
                   help="the sequential design planned beside the fixed one (default the recommended one, "
                   "hsd:-1,looks=20,first=10,first_spend=0.001; as `compare --until-decided --design` takes it)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(func=cmd_plan)


def cmd_plan(args: argparse.Namespace) -> int:
    from ttscale.comparisons.planning import DEFAULT_CLAIMS, plan

    def share(x: float | None, name: str) -> float | None:
        if x is None:
            return None
        if not -100 <= x <= 100:
            raise UsageError(f"plan: {name} is in points or percent, in [-100, 100], got {x:g}")
        return x / 100

    accuracy = args.accuracy or (None, None)
    try:
        result = plan(pilot=args.pilot or None, claims=args.claim or DEFAULT_CLAIMS,
                      difference=share(args.difference, "--difference"),
                      accuracy_a=share(accuracy[0], "--accuracy"), accuracy_b=share(accuracy[1], "--accuracy"),
                      discordance=share(args.discordance, "--discordance"), repeats=args.repeats,
                      design_effect=args.design_effect, ratio=args.ratio, ratio_spread=args.ratio_spread,
                      metric=args.metric, size=args.size, sims=args.sims, seed=args.seed, design=args.design)
    except ValueError as exc:
        raise UsageError(f"plan: {exc}") from None
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.to_markdown())
    return 0


__all__ = ["cmd_plan", "register"]
