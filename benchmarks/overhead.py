"""Best-of-N through ttscale vs the same requests sent straight to vLLM, side by side in one process.

Both sides use the same engine instance, the same prompts (token ids from the model's chat
template) and the same sampling settings; ttscale adds the ledger, answer extraction, grading,
selection and the fsynced results file. After a warm-up round at the measured shape, rounds run
both sides, each side first in every other round (raw, ttscale; ttscale, raw; ...), so drift of the
machine falls on both. Prints generated tokens per second and the ratio.

    python benchmarks/overhead.py [--problems 20] [--n 16] [--max-tokens 128] [--rounds 2] [--dtype auto]

The engine's CPU plan (dtype, cores its compute threads are bound to) is printed first. To measure vLLM's
own defaults instead (bfloat16 on any CPU, threads on all cores but one), run it with
`VLLM_CPU_OMP_THREADS_BIND=auto python benchmarks/overhead.py --dtype bfloat16`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from typing import Any

from ttscale.engine import SyncEngine
from ttscale.engine.vllm import VLLMEngine
from ttscale.runner import RunSpec, execute, prepare
from ttscale.storage import RunDir


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
        with run_dir.open_for_writing():
            summary = await execute(prepared, engine, run_dir, progress=False)
    return int(summary["total_generated_tokens"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problems", type=int, default=20)
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dtype", default="auto", help="engine dtype (auto: bfloat16 only where the CPU has it)")
    args = parser.parse_args()

    sync = SyncEngine(dtype=args.dtype)
    engine = sync.engine
    assert isinstance(engine, VLLMEngine)
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
    )
    prepared = prepare(spec)
    prompts = [engine.chat_prompt(prepared.task.messages(p)) for p in prepared.problems]
    # Warm-up at the measured batch shape, outside the timings: the CPU backend's first batches of a new
    # size are slow (measured: a first raw round at 242 tok/s, the next at 512), which a tiny warm-up
    # left on whichever side ran first.
    sync.loop.run(raw_vllm(engine, prompts, args.n, args.max_tokens))

    totals = {"raw vLLM": [0, 0.0], "ttscale best_of_n": [0, 0.0]}
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
            print(
                f"round {r + 1}  {name:<18} {tokens:>7} tokens  {seconds:7.2f} s  {tokens / seconds:8.1f} tok/s"
            )
    rate = {name: tokens / seconds for name, (tokens, seconds) in totals.items()}
    print(f"\n{args.problems} problems x n={args.n} x max_tokens={args.max_tokens}, {args.rounds} rounds")
    for name, value in rate.items():
        print(f"{name:<18} {value:8.1f} generated tok/s")
    print(f"ratio ttscale / raw = {rate['ttscale best_of_n'] / rate['raw vLLM']:.3f}  (goal ≥ 0.95)")
    sync.close()


if __name__ == "__main__":
    main()
