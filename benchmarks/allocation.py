"""Allocation search on the embedded model: trials to the grid's optimum per proposer, for each shipped space.

AgentTTS (2025) compares an LLM agent that proposes allocations from the trials so far with grid, random and
Bayesian search by the trials each needs to find the compute-optimal allocation. Here the spaces are GenRM's
S × V, sleep-time's sleep budget × test-time budget and beam's N × step cap, on the embedded model, one engine for
all three; each allocation is a sweep cell evaluated once (read from a stored pool where the sweep can derive it,
run live where not) and shared by every proposer and search seed. The agents are the embedded model itself:
`agent` is AgentTTS's loop (a rule-based start, insights, 10 candidates per iteration), `agent_single` the
one-allocation-per-call agent; their proposals may be poor, and every rejected reply is counted.

    python benchmarks/allocation.py [--spaces genrm,sleep_time,beam] [--trials 6] [--seeds 0,1,2] [--limit 30]
                                    [--proposers grid,random,bayesian,agent,agent_single]
                                    [--out allocations/bench] [--json FILE] [--deterministic]

Each space's directory (`--out`/<space>) resumes; `ttscale report DIR` draws its curves.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from provenance import provenance, provenance_line

import ttscale

#: Per space: the task, its options and the space's settings (budgets in generated tokens per problem or query).
SPACES: dict[str, dict[str, Any]] = {
    "genrm": {"task": "arithmetic:1-3", "settings": {"solutions": (1, 2, 4, 8), "verifications": (1, 2, 4),
                                                      "max_tokens": 64, "verify_tokens": 48, "total_budget": 1024}},
    "sleep_time": {"task": "arithmetic_stateful:1", "task_options": {"queries": 5},
                   "settings": {"sleep": (0, 64, 128, 256), "budgets": (48, 96, 192, 384), "queries": 5,
                                "max_tokens": 48, "total_budget": 320}},
    "beam": {"task": "arithmetic:1-3", "settings": {"beams": (4, 8, 16), "steps": (2, 4, 8), "step_tokens": 32,
                                                     "total_budget": 2048}},
}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spaces", default="genrm,sleep_time,beam")
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--limit", type=int, default=30)
    ap.add_argument("--agent-tokens", type=int, default=256)
    ap.add_argument("--proposers", default="grid,random,bayesian,agent,agent_single")
    ap.add_argument("--out", default="allocations/bench")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("--deterministic", action="store_true",
                    help="samples independent of batching (float32 on a CPU: slower); see EngineConfig.deterministic")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    out: dict[str, Any] = {}
    with ttscale.Engine(deterministic=args.deterministic) as engine:
        for name in args.spaces.split(","):
            case = SPACES[name]
            started = time.perf_counter()
            result = ttscale.allocate(space=name, proposers=args.proposers.split(","),
                                      seeds=[int(s) for s in args.seeds.split(",")], trials=args.trials,
                                      task=case["task"], task_options=case.get("task_options"), limit=args.limit,
                                      settings={k: v for k, v in case["settings"].items() if k != "total_budget"},
                                      total_budget=case["settings"]["total_budget"], engine=engine,
                                      out=Path(args.out) / name, agent_tokens=args.agent_tokens)
            wall = time.perf_counter() - started
            print(result.table.to_text())
            print(f"({wall:.0f} s; the agents generated {result.agent_tokens} tokens for their proposals: "
                  f"{result.agent_tokens_by})\n")
            out[name] = {**result.table.to_dict(), "wall_seconds": round(wall, 1), "agent_tokens": result.agent_tokens,
                         "agent_tokens_by": result.agent_tokens_by}
        prov = provenance(engine=engine.start(), argv=sys.argv)
    print(provenance_line(prov))
    if args.json:
        Path(args.json).write_text(json.dumps({**out, "provenance": prov}, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
