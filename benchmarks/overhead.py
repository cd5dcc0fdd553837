"""Best-of-N through ttscale vs the same requests sent straight to vLLM, side by side in one process.

Both sides use the same engine instance, the same prompts (token ids from the model's chat
template) and the same sampling settings; ttscale adds the ledger, answer extraction, grading,
selection and the fsynced results file. After a warm-up round at the measured shape, rounds run
both sides, each side first in every other round (raw, ttscale; ttscale, raw; ...), so drift of the
machine falls on both. Prints generated tokens per second and the ratio.

    python benchmarks/overhead.py [--problems 20] [--n 16] [--max-tokens 128] [--rounds 2] [--dtype auto]
                                  [--deterministic | --deterministic-cost] [--json FILE]

The engine's CPU plan (dtype, cores its compute threads are bound to) is printed first. To measure vLLM's
own defaults instead (bfloat16 on any CPU, threads on all cores but one), run it with
`VLLM_CPU_OMP_THREADS_BIND=auto python benchmarks/overhead.py --dtype bfloat16`.

`--demo` measures P0 on the requests `make demo` sends instead (its beam search, read from the Makefile): the demo
runs once through ttscale on the engine while every engine request is recorded (prompt, sampling settings, seed);
then, in `--rounds` rounds, those requests are sent all at once straight to vLLM's AsyncLLM (vLLM's own sampling
settings, built as the engine builds them) and all at once through ttscale's engine, each side first in every other
round. Printed: the demo run's own rate (its steps wait for each other), both at-once rates and their ratio.

`--deterministic-cost` measures the cost of deterministic mode instead (EngineConfig.deterministic: float32 with
bound threads on a CPU, batch-invariant kernels on a GPU): the same seeded requests (same prompts, seeds, n,
max_tokens) on a deterministic engine, then, that one closed, on a default one (two engines do not fit side by
side, so drift between them is not alternated away). Per engine: a warm-up pass, `--rounds` timed passes with
every problem's request in flight at once, then one pass sending them one at a time. Printed per engine: dtype,
generated tokens/s at once and one at a time, and how many problems (and samples) drew other tokens one at a
time than all at once; then the ratio deterministic / default of the at-once rates.

The output ends with a provenance line (command, mode, dtype, CPU flags, versions: benchmarks/provenance.py);
`--json FILE` writes the numbers with it (`provenance`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from provenance import provenance, provenance_line

from ttscale.engine import BlockingEngine, EngineConfig
from ttscale.engine.vllm import VLLMEngine
from ttscale.pipeline import execute
from ttscale.running.runner import RunSpec, prepare
from ttscale.runstore.storage import RunDir
from ttscale.runstore.writer import RunWriter
from ttscale.schema import SamplingParams as Params


async def raw_vllm(engine: VLLMEngine, prompts: list[list[int]], n: int, max_tokens: int) -> int:
    """The requests as a vLLM user would send them to AsyncLLM: all at once, final outputs only."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.sampling_params import RequestOutputKind

    params = SamplingParams(
        n=n,
        temperature=0.8,
        top_p=1.0,
        max_tokens=max_tokens,
        logprobs=0,
        output_kind=RequestOutputKind.FINAL_ONLY,
    )

    async def one(i: int, ids: list[int]) -> int:
        final: Any = None
        async for out in engine._llm.generate(
            TokensPrompt(prompt_token_ids=ids), params, request_id=f"raw-{time.time()}-{i}"
        ):
            final = out
        return sum(len(c.token_ids) for c in final.outputs)

    return sum(await asyncio.gather(*(one(i, ids) for i, ids in enumerate(prompts))))


async def through_ttscale(engine: VLLMEngine, spec: RunSpec) -> int:
    prepared = prepare(spec)
    with tempfile.TemporaryDirectory() as out:
        run_dir = RunDir(out)
        with RunWriter(run_dir, prepared, stored={}) as writer:  # no config.json: the harness alone is timed
            summary = await execute(engine, writer, progress=False)
    return int(summary["total_generated_tokens"])


Tokens = list[list[tuple[int, ...]]]
"""tokens[i][j]: the token ids of sample j of problem i."""


async def seeded(engine: VLLMEngine, prompts: list[list[int]], n: int, max_tokens: int, *,
                 at_once: bool) -> Tokens:
    """Each problem's request seeded by its index (as a run seeds them): all in flight at once, or one at a time.
    With per-request seeds the samples can differ between the two only where the logits depend on the batch."""
    params = Params(n=n, temperature=0.8, top_p=1.0, max_tokens=max_tokens, logprobs=0)  # raw_vllm's settings

    async def one(i: int) -> list[tuple[int, ...]]:
        done = await engine.generate(prompts[i], params, seed=i)
        return [c.token_ids for c in done.completions]

    if at_once:
        return list(await asyncio.gather(*(one(i) for i in range(len(prompts)))))
    return [await one(i) for i in range(len(prompts))]


def one_mode(args: argparse.Namespace, name: str, *, deterministic: bool) -> dict[str, Any]:
    """One engine in one mode: a warm-up, `--rounds` timed passes at once, one pass one at a time; then closed."""
    sync = BlockingEngine(EngineConfig(dtype=args.dtype, deterministic=deterministic))
    try:
        engine = sync.engine
        assert isinstance(engine, VLLMEngine)
        origin = provenance(engine=sync)  # while the engine runs: a closed one no longer knows its dtype
        print(f"{name} engine:", engine.describe().get("cpu", engine.device), flush=True)
        prepared = prepare(RunSpec(strategy="best_of_n", task="arithmetic", limit=args.problems))
        prompts = [engine.chat_prompt(prepared.task.messages(p)) for p in prepared.problems]

        def send(at_once: bool) -> Tokens:
            return sync.loop.run(seeded(engine, prompts, args.n, args.max_tokens, at_once=at_once))

        send(True)  # warm-up at the measured batch shape (the CPU backend's first batches are slow)
        tokens, seconds, batched = 0, 0.0, []
        for r in range(args.rounds):
            start = time.perf_counter()
            batched = send(True)
            took = time.perf_counter() - start
            count = sum(len(t) for samples in batched for t in samples)
            tokens, seconds = tokens + count, seconds + took
            print(f"  {name} round {r + 1}: {count} tokens in {took:.2f} s, {count / took:.1f} tok/s (at once)",
                  flush=True)
        start = time.perf_counter()
        single = send(False)
        single_seconds = time.perf_counter() - start
    finally:
        sync.close()  # before the next engine starts: two do not fit side by side
    single_tokens = sum(len(t) for samples in single for t in samples)
    pairs = list(zip(single, batched, strict=True))
    return {
        "dtype": origin["dtype"],
        "tokens_at_once": tokens, "seconds_at_once": round(seconds, 3),
        "tokens_per_second_at_once": round(tokens / seconds, 2),
        "tokens_one_at_a_time": single_tokens, "seconds_one_at_a_time": round(single_seconds, 3),
        "tokens_per_second_one_at_a_time": round(single_tokens / single_seconds, 2),
        # The last timed pass at once against the pass one at a time: same prompts, seeds and settings.
        "problems_differing": sum(a != b for a, b in pairs),
        "samples_differing": sum(x != y for a, b in pairs for x, y in zip(a, b, strict=True)),
        "problems": len(single), "samples": sum(len(a) for a in single),
        "provenance": origin,
    }


class Recording:
    """An engine that records every request it passes on (prompt, settings, seed): the demo's requests."""

    def __init__(self, engine: VLLMEngine) -> None:
        self._engine = engine
        self.requests: list[tuple[Any, Params, int | None]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    async def generate(self, prompt: Any, params: Params, *, seed: int | None = None) -> Any:
        self.requests.append((prompt, params, seed))
        return await self._engine.generate(prompt, params, seed=seed)


async def replay(engine: VLLMEngine, requests: list[tuple[Any, Params, int | None]], *, raw: bool) -> int:
    """`requests` all at once: straight to AsyncLLM (`raw`) or through the engine; the tokens generated."""
    from ttscale.engine.vllm import _request

    async def one(i: int, prompt: Any, params: Params, seed: int | None) -> int:
        if not raw:
            done = await engine.generate(prompt, params, seed=seed)
            return sum(len(c.token_ids) for c in done.completions)
        request, vllm_params = _request(prompt, params, seed=seed, stream=False)
        final: Any = None
        async for out in engine._llm.generate(request, vllm_params, request_id=f"raw-{time.time()}-{i}"):
            final = out
        return sum(len(c.token_ids) for c in final.outputs)

    return sum(await asyncio.gather(*(one(i, *r) for i, r in enumerate(requests))))


def demo_requests(args: argparse.Namespace) -> dict[str, Any]:
    """P0 on `make demo`'s requests: the demo through ttscale (recorded), then its requests replayed both ways."""
    from demo import demo_command

    from ttscale.cli import parse_args

    demo = parse_args(demo_command()[1:])
    config = EngineConfig(dtype=args.dtype, deterministic=args.deterministic)
    sync = BlockingEngine(config)
    try:
        engine = sync.engine
        assert isinstance(engine, VLLMEngine)
        origin = provenance(engine=sync)
        spec = RunSpec.from_cli_args(demo, base=None)
        recording = Recording(engine)
        start = time.perf_counter()
        produced = sync.loop.run(through_ttscale(recording, spec))  # type: ignore[arg-type]
        demo_seconds = time.perf_counter() - start
        requests = recording.requests
        print(f"demo through ttscale: {produced} tokens in {demo_seconds:.1f} s ({produced / demo_seconds:.1f} "
              f"tok/s), {len(requests)} engine requests", flush=True)
        totals = {"raw vLLM": [0, 0.0], "ttscale engine": [0, 0.0]}
        for r in range(args.rounds):
            for name in list(totals) if r % 2 == 0 else list(totals)[::-1]:
                start = time.perf_counter()
                tokens = sync.loop.run(replay(engine, requests, raw=name == "raw vLLM"))
                seconds = time.perf_counter() - start
                totals[name][0] += tokens
                totals[name][1] += seconds
                print(f"round {r + 1}  {name:<15} {tokens:>7} tokens  {seconds:7.2f} s  {tokens / seconds:8.1f} tok/s",
                      flush=True)
    finally:
        sync.close()
    rate = {name: tokens / seconds for name, (tokens, seconds) in totals.items()}
    ratio = rate["ttscale engine"] / rate["raw vLLM"]
    print(f"\nthe demo's {len(requests)} requests, all at once, {args.rounds} rounds")
    for name, value in rate.items():
        print(f"{name:<15} {value:8.1f} generated tok/s")
    print(f"ratio ttscale engine / raw vLLM = {ratio:.3f}  (P0: ≥ 0.9); the demo itself, its steps waiting for each "
          f"other: {produced / demo_seconds:.1f} tok/s")
    print(provenance_line(origin))
    return {"demo_tokens": produced, "demo_seconds": round(demo_seconds, 2), "requests": len(requests),
            "tokens_per_second": {name: round(value, 2) for name, value in rate.items()}, "ratio": round(ratio, 4),
            "provenance": origin}


def mode_cost(args: argparse.Namespace) -> dict[str, Any]:
    """The same seeded requests on a default engine, then on a deterministic one: rates and sample differences."""
    # The deterministic engine first: where the mode is refused (bf16 asked for on a CPU, a GPU without
    # batch-invariant kernels), it is refused before its model loads, and no default pass was spent for nothing.
    deterministic = one_mode(args, "deterministic", deterministic=True)
    default = one_mode(args, "default", deterministic=False)
    ratio = deterministic["tokens_per_second_at_once"] / default["tokens_per_second_at_once"]
    return {"default": default, "deterministic": deterministic, "ratio": round(ratio, 4)}


def print_cost(cost: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"\ncost of deterministic mode: {args.problems} problems x n={args.n} x max_tokens={args.max_tokens}, "
          f"seeded requests; {args.rounds} timed rounds at once, one pass one at a time, per engine")
    print(f"| engine | dtype | tok/s, all {args.problems} at once | tok/s, one at a time "
          f"| problems differing, 1 vs {args.problems} | samples differing |")
    print("|---|---|---:|---:|---:|---:|")
    for name in ("default", "deterministic"):
        side = cost[name]
        print(f"| {name} | {side['dtype']} | {side['tokens_per_second_at_once']:.1f} "
              f"| {side['tokens_per_second_one_at_a_time']:.1f} | {side['problems_differing']}/{side['problems']} "
              f"| {side['samples_differing']}/{side['samples']} |")
    print(f"\nratio deterministic / default (at once) = {cost['ratio']:.3f}")


def both(cost: dict[str, Any]) -> dict[str, Any]:
    """One provenance for the pair: the machine and versions are shared; mode and dtype name both engines
    (each engine's own, determinants included, stays with its numbers)."""
    first, second = cost["default"]["provenance"], cost["deterministic"]["provenance"]
    shared = {k: v for k, v in first.items() if k not in ("cpu_plan", "determinants")}
    return {**shared, "mode": f"{first['mode']} vs {second['mode']}", "dtype": f"{first['dtype']} vs {second['dtype']}"}


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dtype", default="auto", help="engine dtype (auto: bfloat16 only where the CPU has it)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--deterministic", action="store_true",
                      help="run the comparison on a deterministic engine (EngineConfig.deterministic)")
    mode.add_argument("--deterministic-cost", action="store_true",
                      help="instead: the same seeded requests on a default engine, then a deterministic one")
    parser.add_argument("--demo", action="store_true",
                        help="instead: P0 on the requests of `make demo` (recorded, then replayed both ways)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the numbers and provenance here")
    return parser


def main() -> None:
    args = parser().parse_args()
    settings = {k: v for k, v in vars(args).items() if k != "json"}
    if args.demo:
        found = demo_requests(args)
        if args.json:
            args.json.write_text(json.dumps({"settings": settings, **found}, indent=1) + "\n")
        return
    if args.deterministic_cost:
        cost = mode_cost(args)
        print_cost(cost, args)
        origin = both(cost)
        print(provenance_line(origin))
        if args.json:
            args.json.write_text(json.dumps({"settings": settings, "deterministic_cost": cost,
                                             "provenance": origin}, indent=1) + "\n")
        return

    config = EngineConfig(dtype=args.dtype, deterministic=args.deterministic)
    sync = BlockingEngine(config)
    engine = sync.engine
    assert isinstance(engine, VLLMEngine)
    origin = provenance(engine=sync)
    print("engine:", engine.describe().get("cpu", engine.device))
    spec = RunSpec(
        strategy="best_of_n",
        budget=str(
            args.n * args.max_tokens
        ),  # exactly one full request per problem: the ledger never caps it
        task="arithmetic",
        limit=args.problems,
        params={"n": str(args.n), "max_tokens": str(args.max_tokens)},
        concurrency=args.problems,
        engine=config,  # the stored config of the ttscale side says the mode it ran in
    )
    prepared = prepare(spec)
    prompts = [engine.chat_prompt(prepared.task.messages(p)) for p in prepared.problems]
    # Warm-up at the measured batch shape, outside the timings: the CPU backend's first batches of a new
    # size are slow (measured: a first raw round at 242 tok/s, the next at 512), which a tiny warm-up
    # left on whichever side ran first.
    sync.loop.run(raw_vllm(engine, prompts, args.n, args.max_tokens))

    totals = {"raw vLLM": [0, 0.0], "ttscale best_of_n": [0, 0.0]}
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        # Each side goes first in every other round, so drift within a round falls on both.
        for name in list(totals) if r % 2 == 0 else list(totals)[::-1]:
            start = time.perf_counter()
            if name == "raw vLLM":
                tokens = sync.loop.run(raw_vllm(engine, prompts, args.n, args.max_tokens))
            else:
                tokens = sync.loop.run(through_ttscale(engine, spec))
            seconds = time.perf_counter() - start
            totals[name][0] += tokens
            totals[name][1] += seconds
            rounds.append({"round": r + 1, "side": name, "tokens": tokens, "seconds": round(seconds, 3)})
            print(
                f"round {r + 1}  {name:<18} {tokens:>7} tokens  {seconds:7.2f} s  {tokens / seconds:8.1f} tok/s"
            )
    rate = {name: tokens / seconds for name, (tokens, seconds) in totals.items()}
    print(f"\n{args.problems} problems x n={args.n} x max_tokens={args.max_tokens}, {args.rounds} rounds")
    for name, value in rate.items():
        print(f"{name:<18} {value:8.1f} generated tok/s")
    ratio = rate["ttscale best_of_n"] / rate["raw vLLM"]
    print(f"ratio ttscale / raw = {ratio:.3f}  (goal ≥ 0.95)")
    print(provenance_line(origin))
    sync.close()
    if args.json:
        args.json.write_text(json.dumps({
            "settings": settings, "rounds": rounds,
            "tokens_per_second": {name: round(value, 2) for name, value in rate.items()},
            "ratio": round(ratio, 4), "provenance": origin}, indent=1) + "\n")


if __name__ == "__main__":
    main()
