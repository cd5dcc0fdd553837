"""Search strategies side by side on the embedded model: one engine, one run, four tables.

(a) wall time per generated token of beam, astar and ets against best_of_n at one budget (goal ≤ 1.5x);
(b) prompt tokens the prefix cache served to tree searches, as a share of the shareable ones (goal ≥ 90%);
(c) ETS against REBASE at equal width: unique KV tokens (goal ≥ 1.8x fewer) and accuracy;
(d) accuracy against budget for every registered strategy on arithmetic levels 1-3.

Shareable prompt tokens of a request: the whole blocks (32 tokens on the CPU engine) of the longest
prefix its prompt shares with a sequence whose KV the engine had computed before the request was
sent — the prompt plus output of every request finished by then, less the last sampled token (its
KV is never computed) — and never the prompt's last token (vLLM always recomputes it). Counted from
the token ids of every request by a pass-through wrapper around the engine.

Comparability: every strategy derives its width from the budget by the same rule, N = B / max_tokens,
with the same max_tokens, so at one budget they start from the same N; the tables also print the
tokens each really spent (solutions here are 20-60 tokens, far below max_tokens, so searches
stop well before their budgets; GenRM's verification chains run to their limit and spend more).

    python benchmarks/search.py [--per-level 2] [--budgets 1k,2k,4k,8k] [--max-tokens 256] [--parts abcd]
                                [--deterministic]

The tables end with a provenance line (command, mode, dtype, CPU flags, versions: benchmarks/provenance.py).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from provenance import provenance, provenance_line

from ttscale.budget import Budget, Ledger
from ttscale.engine import BlockingEngine
from ttscale.evals.arithmetic import ArithmeticTask
from ttscale.kit.context import Context
from ttscale.kit.params import params_class, parse_params
from ttscale.schema import Answer, Generation, Problem, SamplingParams
from ttscale.strategies import STRATEGIES

BLOCK = 32  # the CPU engine's KV block (ttscale.engine.vllm)
TREE = ("beam", "dvts", "rebase", "ets", "astar", "particle_filter")
#: (a)'s rows: label, strategy, overrides. A* pops `parallel` states per round into one batched request.
SPEED: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("best_of_n", "best_of_n", {}),
    ("beam", "beam", {}),
    ("astar", "astar", {}),
    ("astar parallel=2", "astar", {"parallel": 2}),
    ("astar parallel=4", "astar", {"parallel": 4}),
    ("astar parallel=8", "astar", {"parallel": 8}),
    ("ets", "ets", {}),
)


class RecordingEngine:
    """The engine as strategies see it, plus one record per request: prompt, cached and shareable tokens."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.tag: tuple[str, str] = ("warm-up", "")
        """(benchmark part, strategy) of the requests being sent."""
        self.records: list[dict[str, Any]] = []
        self._blocks: set[int] = set()  # chained hashes of the blocks whose KV the engine has computed

    async def generate(self, prompt: Any, params: SamplingParams, **kwargs: Any) -> Generation:
        ids = self.inner.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        shareable = self._shared_blocks(ids, len(ids) - 1) * BLOCK
        generation: Generation = await self.inner.generate(ids, params, **kwargs)
        self.records.append(
            {
                "part": self.tag[0],
                "strategy": self.tag[1],
                "prompt": len(ids),
                "cached": generation.cached_prompt_tokens,
                "shareable": shareable,
            }
        )
        for completion in generation.completions:
            self._remember([*ids, *completion.token_ids[:-1]])
        return generation

    def __getattr__(self, name: str) -> Any:  # tokenizer, chat template, describe: the engine's own
        return getattr(self.inner, name)

    def _chain(self, ids: Sequence[int], blocks: int) -> list[int]:
        hashes, h = [], 0
        for b in range(blocks):
            h = hash((h, tuple(ids[b * BLOCK : (b + 1) * BLOCK])))
            hashes.append(h)
        return hashes

    def _shared_blocks(self, ids: Sequence[int], usable: int) -> int:
        count = 0
        for h in self._chain(ids, max(0, usable) // BLOCK):
            if h not in self._blocks:
                break
            count += 1
        return count

    def _remember(self, ids: Sequence[int]) -> None:
        self._blocks.update(self._chain(ids, len(ids) // BLOCK))


def strategy_params(name: str, args: argparse.Namespace, **overrides: Any) -> dict[str, str]:
    """The benchmark's settings, each given to the strategies that have the field."""
    common = {
        "max_tokens": args.max_tokens,
        "verifier": "arithmetic",
        "delimiter": args.delimiter,
        "step_tokens": args.step_tokens,
        "max_steps": args.max_steps,
        "width": 4,
        "k": 4,
        "verify_tokens": args.verify_tokens,
    }
    if name == "self_consistency":
        common.pop("verifier")  # plain majority: the verifier-free baseline
    fields = {f.name for f in dataclasses.fields(params_class(STRATEGIES.get(name)))}
    return {k: str(v) for k, v in {**common, **overrides}.items() if k in fields}


async def run_grid(
    engine: RecordingEngine, task: Any, problems: list[Problem], name: str, budgets: list[str], params: dict[str, str]
) -> list[dict[str, Any]]:
    """Every (budget, problem) of one strategy at once; one record each (errors recorded, not raised)."""
    fn = STRATEGIES.get(name)
    p = parse_params(params_class(fn), params)

    async def one(problem: Problem, budget: str) -> dict[str, Any]:
        ledger = Ledger(Budget.parse(budget))
        ctx = Context(problem=problem, task=task, engine=engine, ledger=ledger)
        error = None
        try:
            answer = await fn(problem, ctx, p)
        except Exception as exc:  # one bad problem must not sink the benchmark
            answer, error = Answer(prediction=None), f"{type(exc).__name__}: {exc}"
        return {
            "budget": budget,
            "level": problem.level,
            "correct": bool(task.grade(answer.prediction, problem)),
            "ledger": ledger.to_dict(),
            "info": answer.info,
            "error": error,
        }

    return list(await asyncio.gather(*(one(problem, b) for b in budgets for problem in problems)))


def timed(
    sync: BlockingEngine, engine: RecordingEngine, part: str, name: str, coro: Any
) -> tuple[list[dict[str, Any]], float]:
    engine.tag = (part, name)
    began = time.perf_counter()
    rows = sync.loop.run(coro)
    return rows, time.perf_counter() - began


def kv(rows: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(Σ over problems and steps of our exact unique KV tokens, Σ of their peaks, Σ of the reference's
    per-node KV over selection rounds — the ETS paper's `global_kv_size`)."""
    trees = [r["ledger"].get("tree", {}) for r in rows]
    return (
        sum(sum(t.get("unique_kv_tokens_per_step", [])) for t in trees),
        sum(t.get("peak_unique_kv_tokens", 0) for t in trees),
        sum(t.get("reference_kv_tokens", 0) for t in trees),
    )


def accuracy(rows: list[dict[str, Any]]) -> float:
    return sum(r["correct"] for r in rows) / max(1, len(rows))


def generated(rows: list[dict[str, Any]]) -> int:
    return sum(r["ledger"]["generated_tokens"] for r in rows)


def errors(rows: list[dict[str, Any]]) -> str:
    bad = [r["error"] for r in rows if r["error"]]
    return f"  ({len(bad)} errors, first: {bad[0]})" if bad else ""


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-level", type=int, default=2, help="problems per arithmetic level (levels 1-3)")
    parser.add_argument("--budgets", default="1k,2k,4k,8k", help="(d)'s budgets")
    parser.add_argument("--speed-budget", default="4k", help="(a)'s budget")
    parser.add_argument("--width", type=int, default=16, help="(c)'s search width N")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--delimiter", default="\\n", help="step delimiter of the tree searches")
    parser.add_argument("--step-tokens", type=int, default=64)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--verify-tokens", type=int, default=128, help="GenRM's T_V")
    parser.add_argument("--parts", default="abcd", help="the tables to print, e.g. 'a' (b sums the others' requests)")
    parser.add_argument("--deterministic", action="store_true",
                        help="samples independent of the batch (EngineConfig.deterministic; float32 on a CPU)")
    return parser


def main() -> None:
    flags = parser()
    args = flags.parse_args()
    if not args.parts or set(args.parts) - set("abcd"):
        flags.error(f"--parts takes letters of 'abcd', got {args.parts!r}")
    began = time.perf_counter()

    task = ArithmeticTask(levels=(1, 2, 3), per_level=args.per_level)
    problems = task.problems()
    budgets = [b.strip() for b in args.budgets.split(",")]
    sync = BlockingEngine(deterministic=args.deterministic)
    origin = provenance(engine=sync)  # while the engine runs: a closed one no longer knows its dtype
    engine = RecordingEngine(sync.engine)
    import torch

    from ttscale.verifiers.embeddings import embed

    # ETS's sentence encoder runs in this process beside the CPU engine's workers: with torch's default
    # of one thread per core they oversubscribe the cores (16 steps: 1.3 s instead of 0.09 s, measured).
    torch.set_num_threads(1)
    embed(["warm up the encoder outside every timing"])
    hello = engine.chat_prompt([{"role": "user", "content": "Hi"}])
    sync.loop.run(engine.generate(hello, SamplingParams(max_tokens=4)))
    started = time.perf_counter() - began
    print(f"engine and encoder ready in {started:.0f} s; {len(problems)} problems (arithmetic levels 1-3)")
    print(
        f"settings: N = B / max_tokens with max_tokens={args.max_tokens} for every strategy; tree searches: "
        f"arithmetic step verifier, delimiter {args.delimiter!r}, step_tokens={args.step_tokens}, "
        f"max_steps={args.max_steps}, beam/dvts width M=4, astar k=4; best_of_n scored by the arithmetic "
        f"verifier; self_consistency plain majority; genrm T_V={args.verify_tokens}, S and V from the budget"
    )
    print("(the embedded model rarely writes '\\n\\n', so tree searches step on '\\n'; encoder: 1 torch thread)\n")

    def params_of(name: str, **overrides: Any) -> dict[str, str]:
        return strategy_params(name, args, **overrides)

    # (a) -------------------------------------------------------------------------------------------
    if "a" in args.parts:
        speed: dict[str, tuple[int, float]] = {}
        for label, name, extra in SPEED:
            rows, seconds = timed(
                sync,
                engine,
                "a",
                name,
                run_grid(engine, task, problems, name, [args.speed_budget], strategy_params(name, args, **extra)),
            )
            speed[label] = (generated(rows), seconds)
        base = speed["best_of_n"][1] / max(1, speed["best_of_n"][0])
        print(f"(a) wall time per generated token at {args.speed_budget}, {len(problems)} problems in flight together")
        print(f"    {'strategy':<18}{'tokens':>8}{'wall s':>9}{'ms/token':>10}{'x best_of_n':>13}  goal ≤ 1.5x")
        for label, (tokens, seconds) in speed.items():
            per = seconds / max(1, tokens)
            ok = "" if label == "best_of_n" else ("yes" if per / base <= 1.5 else "no")
            print(f"    {label:<18}{tokens:>8}{seconds:>9.1f}{1000 * per:>10.2f}{per / base:>13.2f}  {ok}")

    # (c) -------------------------------------------------------------------------------------------
    if "c" in args.parts:
        variants: list[tuple[str, str, dict[str, Any]]] = [
            ("rebase", "rebase", {}),
            ("ets (defaults, cut 0.15)", "ets", {}),
            ("ets threshold=0.05", "ets", {"threshold": 0.05}),
            ("ets kv_cost=nodes", "ets", {"kv_cost": "nodes"}),
            ("ets lambda_s=0", "ets", {"lambda_s": 0}),
            ("ets lambda_c=4, lambda_s=0", "ets", {"lambda_c": 4, "lambda_s": 0}),
        ]
        print(
            f"\n(c) ETS vs REBASE at equal width N={args.width}, budget 8k (never binding here), "
            f"{len(problems)} problems"
        )
        print(
            f"    {'variant':<28}{'acc':>6}{'tokens':>8}{'KV Σsteps':>11}{'peak KV':>9}{'REBASE/x':>10}{'peak':>7}"
            f"{'ref KV':>8}{'REBASE/x':>10}{'kept':>7}{'K/cand':>8}"
        )
        reference: tuple[int, int, int] | None = None
        for label, name, extra in variants:
            params = strategy_params(name, args, n=args.width, **extra)
            rows, _ = timed(sync, engine, "c", name, run_grid(engine, task, problems, name, ["8k"], params))
            total, peak, paper_kv = kv(rows)
            reference = reference or (total, peak, paper_kv)
            considered = sum(r["info"].get("ilp_considered", 0) for r in rows)
            kept = f"{sum(r['info'].get('ilp_kept', 0) for r in rows) / considered:.2f}" if considered else "-"
            k = f"{sum(r['info'].get('ilp_clusters', 0) for r in rows) / considered:.2f}" if considered else "-"
            print(
                f"    {label:<28}{accuracy(rows):>6.2f}{generated(rows):>8}{total:>11}{peak:>9}"
                f"{reference[0] / max(1, total):>10.2f}{reference[1] / max(1, peak):>7.2f}{paper_kv:>8}"
                f"{reference[2] / max(1, paper_kv):>10.2f}{kept:>7}{k:>8}{errors(rows)}"
            )
        print(
            "    goal: REBASE/ETS ≥ 1.8 on KV (ref KV: the paper's per-node count); kept = share of the frontier\n"
            "    the ILP kept; K/cand = clusters per candidate"
        )

    # (d) -------------------------------------------------------------------------------------------
    if "d" in args.parts:
        names = STRATEGIES.names()
        grid: dict[str, list[dict[str, Any]]] = {}
        seconds_of: dict[str, float] = {}
        for name in names:
            grid[name], seconds_of[name] = timed(
                sync, engine, "d", name, run_grid(engine, task, problems, name, budgets, strategy_params(name, args))
            )
        print(f"\n(d) accuracy vs budget, arithmetic levels 1-3, {len(problems)} problems per cell")
        print(f"    {'strategy':<18}" + "".join(f"{b:>8}" for b in budgets) + "   all  (mean tokens spent per problem)")
        for name in names:
            cells = [[r for r in grid[name] if r["budget"] == b] for b in budgets]
            spent = " / ".join(f"{generated(c) / max(1, len(c)):.0f}" for c in cells)
            print(
                f"    {name:<18}"
                + "".join(f"{accuracy(c):>8.2f}" for c in cells)
                + f"{accuracy(grid[name]):>6.2f}  ({spent}; {seconds_of[name]:.0f} s){errors(grid[name])}"
            )

    # (b) -------------------------------------------------------------------------------------------
    if "b" in args.parts:
        print("\n(b) prefix cache in tree search: prompt tokens served from cache, over every tree-search request "
              "above")
        print(
            f"    {'strategy':<18}{'requests':>9}{'prompt':>9}{'shareable':>11}{'cached':>9}"
            f"{'of shareable':>14}{'of prompt':>11}"
        )
        totals = [0, 0, 0, 0, 0]
        for name in TREE:
            records = [r for r in engine.records if r["strategy"] == name]
            row = [
                len(records),
                sum(r["prompt"] for r in records),
                sum(r["shareable"] for r in records),
                sum(r["cached"] for r in records),
                sum(min(r["cached"], r["shareable"]) for r in records),
            ]
            totals = [a + b for a, b in zip(totals, row, strict=True)]
            print_cache_row(name, row)
        print_cache_row("all tree searches", totals)
        print("    goal: ≥ 90% of the shareable prompt tokens served from the cache")

    print(f"\ntotal wall time {time.perf_counter() - began:.0f} s")
    print(provenance_line(origin))
    sync.close()


def print_cache_row(label: str, row: list[int]) -> None:
    requests, prompt, shareable, cached, served = row
    print(
        f"    {label:<18}{requests:>9}{prompt:>9}{shareable:>11}{cached:>9}"
        f"{served / max(1, shareable):>14.1%}{cached / max(1, prompt):>11.1%}"
    )


if __name__ == "__main__":
    main()
