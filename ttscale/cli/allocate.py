"""`ttscale allocate`: search a multi-stage allocation space with each proposer, against the full grid (AgentTTS).

ttscale allocate --space genrm --total-budget 2048 --limit 30 --trials 6 --seeds 0,1,2
ttscale allocate --space sleep_time --task arithmetic_stateful:1 --task-option queries=5 --proposer agent
ttscale allocate --space beam --setting beams=4,8 --setting steps=2,4 --out allocations/beam --json
ttscale allocate --space grm --setting verifier.samples=1,2,4 --setting meta=llm_judge --setting verifier.meta_top=1,2
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ttscale.errors import UsageError
from ttscale.running.flags import add_task_option_flag, task_options

SPACES = ("genrm", "sleep_time", "beam", "grm")  # as ttscale.allocsearch.spaces.STUDIES (not imported: fast --help)
PROPOSERS = ("grid", "random", "bayesian", "agent", "agent_single")
DEFAULT_PROPOSERS = PROPOSERS[:4]  # as ttscale.allocsearch.run.DEFAULT_PROPOSERS


def register(sub: Any) -> None:
    p = sub.add_parser(
        "allocate",
        help="search a multi-stage allocation (GenRM S×V, sleep-time, beam, GRM N×k) with grid, random, Bayesian "
             "and LLM-agent proposers",
        description="Compare proposers of allocations (per stage a budget) on a space whose allocations are sweep "
                    "cells: derived from stored pools where the sweep can, run live where not, each once. Prints "
                    "trials to the grid's optimum per proposer; the directory resumes.",
    )
    p.add_argument("--space", required=True, choices=SPACES)
    p.add_argument("--proposer", action="append", choices=PROPOSERS,
                   help="a proposer to compare (repeatable; default grid, random, bayesian and agent: AgentTTS's "
                        "loop; agent_single: one allocation per model call)")
    p.add_argument("--trials", type=int, default=6, help="trials per search (default 6)")
    p.add_argument("--seeds", default="0,1,2", help="search seeds, comma-separated (default 0,1,2)")
    p.add_argument("--total-budget", type=float, help="tokens per problem (sleep_time: per query) every allocation "
                   "must fit")
    p.add_argument("--setting", action="append", default=[], metavar="KEY=V1,V2",
                   help="the space's values (genrm: solutions, verifications, max_tokens, verify_tokens; sleep_time: "
                        "sleep, budgets, queries, max_tokens; beam: beams, steps, step_tokens, width; grm: solutions, "
                        "strategy, meta, max_tokens, verify_tokens, group, meta_tokens); verifier.OPTION=V1,V2 varies "
                        "an option of the space's verifier spec (grm: verifier.samples, verifier.meta_top)")
    p.add_argument("--task", default="arithmetic", help="task spec, as for `ttscale run` (default arithmetic)")
    add_task_option_flag(p)
    p.add_argument("--limit", type=int, help="only the first N problems")
    p.add_argument("--candidates", type=int, default=10, help="the agent's candidates per iteration (default 10)")
    p.add_argument("--agent-budget", type=int, help="tokens the agent may generate per search (default: no limit "
                   "beyond each reply's cap)")
    p.add_argument("--model", help="embedded (default), a local HF model folder, or a hub id")
    p.add_argument("--out", help="directory to write (default allocations/<space>-<time>); again to resume")
    p.add_argument("--verbose", action="store_true",
                   help="show the engine's own logs here instead of in the search directory's engine.log")
    p.add_argument("--json", action="store_true", help="print the table as one JSON object")
    p.set_defaults(func=cmd_allocate)


def settings_of(items: list[str]) -> dict[str, Any]:
    """`KEY=V1,V2` → a tuple of numbers; `KEY=V` → one number (a tuple for a setting of values, as `solutions` or
    a verifier option `verifier.samples`); a text setting (`meta`, `strategy`) → its text as written."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if sep and key.strip() in _TEXTS:
            out[key.strip()] = value.strip()
            continue
        try:
            numbers = tuple(int(v) if v.strip().lstrip("-").isdigit() else float(v) for v in value.split(","))
        except ValueError:
            numbers = ()
        if not sep or not key.strip() or not numbers:
            raise UsageError(f"allocate: --setting takes KEY=V1,V2 (numbers; meta and strategy take text), got "
                             f"{item!r}")
        out[key.strip()] = numbers if "," in value or key.strip() in _TUPLES or "." in key else numbers[0]
    return out


_TUPLES = {"solutions", "verifications", "sleep", "budgets", "beams", "steps"}
_TEXTS = {"meta", "strategy"}  # grm's meta RM (a verifier spec) and its strategy


def cmd_allocate(args: argparse.Namespace) -> int:
    from ttscale.allocsearch.run import allocate

    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        raise UsageError(f"allocate: --seeds must be whole numbers separated by commas, got {args.seeds!r}") from None
    if args.trials < 1:
        raise UsageError(f"allocate: --trials must be ≥ 1, got {args.trials}")
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"allocate: --limit must be ≥ 1, got {args.limit}")
    try:
        result = allocate(space=args.space, proposers=args.proposer or DEFAULT_PROPOSERS, seeds=seeds,
                          trials=args.trials, task=args.task, limit=args.limit, total_budget=args.total_budget,
                          settings=settings_of(args.setting), out=args.out, model=args.model,
                          task_options=task_options(args, "allocate") or None, candidates=args.candidates,
                          agent_budget=args.agent_budget, verbose=args.verbose)
    except ValueError as exc:
        raise UsageError(f"allocate: {exc}") from None
    if args.json:
        print(json.dumps({**result.table.to_dict(), "path": str(result.path), "agent_tokens": result.agent_tokens},
                         default=str))
    else:
        print(result.table.to_text())
        print(f"\n{result.path} (agent: {result.agent_tokens} tokens generated for its proposals)")
    return 0
