"""`ttscale compare`: the command line of ttscale.comparisons.paired (paired multi-seed comparisons; its intervals
are named by `ttscale.comparisons.paired.INTERVALS`)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import Any

from ttscale.comparisons.paired import COMPARE, GROUPS, INTERVALS, compare
from ttscale.errors import UsageError
from ttscale.running.flags import (
    ENGINE_FLAGS,
    ENGINE_SWITCHES,
    add_data_dir_flag,
    add_engine_flags,
    add_task_option_flag,
    engine_settings,
    task_options,
)

#: Flags of run mode (with --strategy): refused with run directories or --resume, which take them from elsewhere.
_RUN_FLAGS = ("strategy", "repeats", "budget", "task", "limit", "model", "concurrency", "data_dir", "task_option",
              *ENGINE_FLAGS, *ENGINE_SWITCHES, "engine_arg", "chat_template_kwargs", "until_decided", "max_problems",
              "batch", "design")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help=f"paired multi-seed comparison of strategies (same problems, same seeds): {INTERVALS}",
        description="Run strategies on the same problems and seeds (--strategy ... --repeats R), or compare run, "
        "sweep or compare directories (DIR ...). Accuracy is compared as a difference in points, costs as a ratio "
        f"of means: {INTERVALS}.",
    )
    p.add_argument("runs", nargs="*", metavar="DIR", help="run, sweep or compare directories to compare")
    p.add_argument("--strategy", action="append", metavar="'NAME key=value ...'",
                   help="a strategy to run, with its parameters (repeatable; at least two)")
    p.add_argument("--repeats", type=int, help="repeats per strategy: repeat r runs with run seed r (default 3)")
    p.add_argument("--budget", help="per-problem budget, as for `ttscale run` (default 8k)")
    p.add_argument("--task", help="task spec, as for `ttscale run` (default arithmetic)")
    p.add_argument("--limit", type=int, help="only the first N problems")
    p.add_argument("--model", help="embedded (default), a local HF model folder, or a hub id")
    p.add_argument("--concurrency", type=int, help="problems in flight at once within a run (default 64)")
    add_data_dir_flag(p)
    add_task_option_flag(p)
    add_engine_flags(p)
    p.add_argument("--until-decided", metavar="CLAIM",
                   help="add problems in batches and stop when CLAIM (of the first strategy over the second) is "
                   "decided: better:T, equal:M or not-worse:M in points, e.g. better:0; group-sequential boundaries "
                   "keep the false-verdict rate at 5%% over all looks")
    p.add_argument("--max-problems", type=int, metavar="N", help="with --until-decided: the cap (default 200)")
    p.add_argument("--batch", type=int, metavar="B",
                   help="with --until-decided: a look every B problems (default: the design's looks)")
    p.add_argument("--design", metavar="SPENDING[,looks=K][,first=N][,first_spend=A]",
                   help="with --until-decided: the sequential design, spending obrien_fleming, pocock or hsd:GAMMA "
                   "(default hsd:-1,looks=20,first=10,first_spend=0.001, the one `ttscale plan` recommends)")
    p.add_argument("--out", help="compare directory to write (run mode default compares/<task>-<time>; with DIRs, "
                   f"where {COMPARE} is written)")
    p.add_argument("--resume", metavar="DIR", help="finish an interrupted comparison run")
    p.add_argument("--group", choices=GROUPS, default="config",
                   help="config: runs that differ only in seed are repeats of one arm (default); strategy: same "
                   "strategy and parameters; run: each run directory is an arm")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals (default 0.95)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples of the cost ratios (default 2000)")
    p.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap draws (default 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--verbose", action="store_true",
                   help="show the engine's own logs here instead of in the compare directory's engine.log")
    p.add_argument("--json", action="store_true", help=f"print {COMPARE} instead of the Markdown tables")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from ttscale.engine.base import EngineConfig

    given = [f"--{k.replace('_', '-')}" for k in _RUN_FLAGS if getattr(args, k) is not None]
    if args.runs and args.resume:
        raise UsageError("compare: give run directories to compare or --resume DIR, not both")
    if (args.runs or args.resume) and given:
        what = "run directories are compared as they are" if args.runs else "--resume continues the stored runs"
        verb = "apply" if len(given) > 1 else "applies"
        raise UsageError(f"compare: {', '.join(given)} {verb} only to a new run (--strategy); {what}")
    if args.bootstrap_seed < 0:  # CompareOptions would name its field, `seed`, not the flag
        raise UsageError(f"compare: --bootstrap-seed must be a whole number ≥ 0, got {args.bootstrap_seed}")
    if not (args.runs or args.resume or args.strategy):
        raise UsageError("compare: give run directories to compare, or at least two --strategy 'NAME key=value' "
                         "to run (or --resume DIR)")
    _check_until_decided(args)
    run: dict[str, Any] = {}
    if args.strategy:
        engine = engine_settings(args, "compare")
        if args.model:
            engine["model"] = args.model
        run = {"strategies": args.strategy, "engine_config": replace(EngineConfig(), **engine),
               "task_options": task_options(args, "compare", data_dir=args.data_dir) or None,
               **{k: getattr(args, k) for k in ("repeats", "budget", "task", "limit", "concurrency", "until_decided",
                                                "max_problems", "batch", "design")
                  if getattr(args, k) is not None}}
    try:
        result = compare(runs=args.runs, resume=args.resume, out=args.out, confidence=args.confidence,
                         resamples=args.resamples, seed=args.bootstrap_seed, group=args.group,
                         progress=not args.no_progress, command=sys.argv, verbose=args.verbose, **run)
    except ValueError as exc:  # bad input, or a run directory held by another process (unknown names: main's)
        raise UsageError(f"compare: {exc}") from None
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.to_markdown())
    if result.directory is not None:
        print(f"compare: {result.directory / COMPARE}", file=sys.stderr)
    return 0


def _check_until_decided(args: argparse.Namespace) -> None:
    """The sequential flags in the flags' own words (the library's errors name its arguments)."""
    from ttscale.stats.claims import parse_claim

    if args.until_decided is None:
        if args.max_problems is not None or args.batch is not None or args.design is not None:
            raise UsageError("compare: --max-problems, --batch and --design apply only with --until-decided CLAIM")
        return
    try:
        parse_claim(args.until_decided, ratio=False, what="--until-decided")
    except ValueError as exc:
        raise UsageError(f"compare: {exc}") from None
    if args.limit is not None:
        raise UsageError("compare: --until-decided runs up to --max-problems N, not --limit: give --max-problems")


__all__ = ["cmd_compare", "register"]
