"""The harness at GPU speed: what ttscale itself costs when the engine is (nearly) free.

    python benchmarks/harness.py [--problems 200] [--width 64] [--profile beam] [--scale] [--resume 10000]

Every run goes through the real runner (`prepare` + `execute`: ledger, strategy, tree, verifier, grading,
fsynced results) on the latency-model SIMULATOR of `ttscale.testing` (a scripted policy, never a model):
- ceiling: the zero-cost engine answers every request at once, so the run's time is the harness alone;
  printed per strategy: problems/s, requests/s (calls of the engine), vLLM requests/s (sequences: vLLM v1 runs
  a request with n samples as n requests), generated tokens/s (tree searches at `--width`, MCTS and A* at the
  same token budget);
- share: the same runs against a rate model of a 1.5B model on one H100 (`LatencyModel.h100_1p5b`): the
  engine's busy and idle time over the wall time; idle is what the harness made it wait;
- DeepConf: `deepconf` (offline: 16 traces with top-20 log-probs, filtered and voted by confidence) and
  `deepconf~online` (N = 64: a warm-up of 16, then traces streamed 8 at a time and aborted in the engine when a
  16-token window's confidence falls below the warm-up's threshold); its cost is set against
  `self_consistency~n64` (64 samples, the same tokens at most), the line after the share table;
- `NAME~nN`: a pool strategy at N samples (the pool rows are at 16);
- `--profile NAME`: the top functions by own time for one strategy's zero-cost run;
- `--scale`: best-of-N at 100 / 1,000 / 10,000 problems, time and peak memory per problem;
- `--resume N`: a run of N problems with N-1 finished, resumed: the time to find and run the last one;
- ETS runs twice in the ceiling: with the shipped encoder (all-MiniLM-L6-v2 on this CPU, one thread) and
  with a simulated one (`ets~sim-encoder`: vectors hashed from the text, no model), so the harness's own
  cost per step request is not hidden behind an encoder that a GPU run keeps on the GPU;
- `--ilp`: ETS's clustering + ILP per round at widths 16, 64 and 256 (the encoder apart);
- `--ray 1,2,4,8`: best-of-N through the Ray pool (`ttscale.running.distributed`), each worker a separate
  process whose engine is the H100 rate model: problems/s per worker count, and the speed-up over one.
The machine is printed first: numbers from different machines do not compare; the last line is the provenance
(command, CPU flags, versions: benchmarks/provenance.py) for under a README table. Its mode is "n/a (no engine)":
the simulator is no model, so no dtype applies.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import platform
import pstats
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from provenance import provenance, provenance_line

from ttscale.pipeline import execute
from ttscale.running.runner import RunSpec, prepare
from ttscale.runstore.storage import RunDir
from ttscale.runstore.writer import RunWriter
from ttscale.testing import LatencyConfig, LatencyEngine, LatencyModel

POOL = ("best_of_n", "self_consistency")
TREE = ("beam", "rebase", "ets", "astar", "mcts")
DEEPCONF = ("deepconf", "deepconf~online")
ONLINE_BASELINE = "self_consistency~n64"
"""deepconf~online's N at self-consistency: what the harness adds for streaming and aborting is set against it."""
SEQUENTIAL = ("astar", "mcts")
"""Tree searches with no width: they run until the budget (`--width` × 512 tokens) is spent."""


@dataclass
class Measured:
    strategy: str
    problems: int
    seconds: float
    requests: int
    tokens: int
    sequences: int = 0
    """Σ n over the requests: vLLM v1's own request count (it runs a request with n samples as n requests)."""
    busy: float = 0.0
    idle: float = 0.0

    def line(self) -> str:
        rate = (f"{self.problems / self.seconds:8.1f} problems/s  {self.requests / self.seconds:9.0f} requests/s  "
                f"{self.sequences / self.seconds:9.0f} vLLM requests/s  {self.tokens / self.seconds:10.0f} tokens/s")
        counts = (f"({self.problems} problems, {self.requests} requests of {self.sequences} sequences, "
                  f"{self.seconds:.2f} s)")
        return f"  {self.strategy:<20} {rate}  {counts}"


SIM_ENCODER = "sim-encoder"
"""ETS's `embedder` for the simulated encoder (a name no sentence-transformers model has)."""


DEFAULT = (*POOL, *DEEPCONF, ONLINE_BASELINE, *TREE, "ets~" + SIM_ENCODER)
"""The rows of the ceiling and share tables unless `--strategies` names others."""


class HashEncoder:
    """A SIMULATED sentence encoder: a unit vector per text, seeded by its bytes (equal texts, equal vectors)."""

    def encode(self, texts: list[str], **_: Any) -> Any:
        import zlib

        import numpy as np

        rows = [np.random.default_rng(zlib.crc32(text.encode())).normal(size=384) for text in texts]
        vectors = np.array(rows) if rows else np.zeros((0, 384))
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def use_simulated_encoder() -> None:
    """Route ETS's embedder `SIM_ENCODER` to `HashEncoder`; every other name still loads its real model."""
    from ttscale.verifiers import embeddings

    real = embeddings.load_encoder
    if getattr(real, "simulated", False):
        return

    def load(model: str = embeddings.EMBEDDED) -> Any:
        return HashEncoder() if model == SIM_ENCODER else real(model)

    load.simulated = True  # type: ignore[attr-defined]
    embeddings.load_encoder = load


def spec_for(strategy: str, *, problems: int, width: int, budget: str) -> RunSpec:
    """`ets~sim-encoder` is ETS with the simulated encoder, `deepconf~online` DeepConf's online mode, `NAME~nN`
    a pool strategy at N samples."""
    strategy, _, variant = strategy.partition("~")
    params: dict[str, Any] = {"n": width} if strategy in TREE else {"n": 16, "max_tokens": 256}
    if variant == SIM_ENCODER:
        use_simulated_encoder()
        params["embedder"] = SIM_ENCODER
    elif variant[:1] == "n" and variant[1:].isdigit():
        params["n"] = int(variant[1:])
    if strategy in TREE:
        params.update(max_tokens=512, step_tokens=96, max_steps=8)
    if strategy in SEQUENTIAL:  # no width: A* pops `parallel` nodes per round, MCTS runs one simulation at a time
        del params["n"]
    if strategy == "deepconf":
        # The simulator's traces are ~50-300 tokens, not the paper's thousands: a 16-token group (the paper's
        # 2,048) lets a wrong step's lower confidence show, and online lets the stop fire inside a trace.
        params["window"] = 16
        if variant == "online":
            params.update(mode="online", n=64, warmup=16)
    return RunSpec(strategy=strategy, budget=budget, task="arithmetic", limit=problems, params=params,
                   task_options={"per_level": max(1, -(-problems // 5))}, concurrency=256)


async def run_once(spec: RunSpec, model: LatencyModel, out: Path, *, label: str | None = None) -> Measured:
    prepared = prepare(spec)
    engine = LatencyEngine(model=model, max_steps=6)
    run_dir = RunDir(out)
    start = time.perf_counter()
    try:
        with RunWriter(run_dir, prepared, stored={}) as writer:  # no config.json: the harness alone is timed
            await execute(engine, writer, progress=False)
    finally:
        await engine.close()
    seconds = time.perf_counter() - start
    if label is None:
        label = spec.strategy + ("~" + SIM_ENCODER if spec.params.get("embedder") == SIM_ENCODER else "")
    return Measured(label, len(prepared.problems), seconds, engine.requests, engine.generated_tokens,
                    engine.sequences, engine.busy_seconds, engine.idle_seconds)


def measure(spec: RunSpec, model: LatencyModel, *, label: str | None = None) -> Measured:
    with tempfile.TemporaryDirectory() as out:
        return asyncio.run(run_once(spec, model, Path(out), label=label))


def profile(spec: RunSpec, *, top: int = 15) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    measure(spec, LatencyModel.zero_cost())
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    return text.getvalue()


def scale(sizes: list[int]) -> None:
    """Time and memory from two runs per size: tracemalloc hooks every allocation, and its cost grows with
    what is alive (measured: 3.9 -> 5.1 ms per problem from 100 to 10,000 traced, 1.13 -> 1.21 untraced)."""
    print("scale: best_of_n n=16, zero-cost engine")
    for size in sizes:
        spec = spec_for("best_of_n", problems=size, width=16, budget="8k")
        m = measure(spec, LatencyModel.zero_cost())
        tracemalloc.start()
        measure(spec, LatencyModel.zero_cost())
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"  {size:>6} problems: {1e3 * m.seconds / size:7.3f} ms/problem ({m.seconds:.1f} s), "
              f"peak {peak / size / 1024:7.1f} KiB/problem (traced Python memory, a second run)")


def ilp_rounds(widths: list[int], *, rounds: int = 20) -> None:
    """ETS's per-round selection alone: clustering + the ILP over a frontier of `width` paths of 6 steps
    (random unit embeddings of dimension 384, as the shipped encoder's; the encoder's own time is apart)."""
    import numpy as np

    from ttscale.search.ets_ilp import select_nodes
    from ttscale.verifiers.embeddings import cluster

    rng = np.random.default_rng(0)
    print("ETS selection per round (clustering + ILP, no encoder):")
    for width in widths:
        times = []
        for _ in range(rounds):
            # A tree: 4 roots, each path shares its first steps with the paths of its group.
            paths = [[g % 4, 4 + g % 16, 20 + g % 32, 100 + i, 1000 + i, 2000 + i] for i, g in enumerate(range(width))]
            costs = {node: 40.0 for path in paths for node in path}
            vectors = rng.normal(size=(width, 384))
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            start = time.perf_counter()
            labels = cluster(vectors, threshold=0.05)
            weights = rng.random(width)  # ETS's O_i: REBASE's allocation shares, which sum to 1
            select_nodes(paths=paths, costs=costs, outcome=list(weights / weights.sum()), clusters=labels,
                         lambda_c=1.0, lambda_s=1.5)
            times.append(time.perf_counter() - start)
        times = sorted(times[1:])  # the first round imports and warms the solver
        print(f"  width {width:>4}: median {1e3 * times[len(times) // 2]:7.2f} ms, max {1e3 * times[-1]:7.2f} ms")


def resume(size: int) -> None:
    spec = spec_for("best_of_n", problems=size, width=16, budget="8k")
    with tempfile.TemporaryDirectory() as out:
        asyncio.run(run_once(spec, LatencyModel.zero_cost(), Path(out)))
        path = Path(out) / "results.jsonl"
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-1]))  # the last problem unfinished
        start = time.perf_counter()
        m = asyncio.run(run_once(spec, LatencyModel.zero_cost(), Path(out)))
        seconds = time.perf_counter() - start
        print(f"resume: {size} problems, {size - 1} finished ({path.stat().st_size / 1e6:.1f} MB of results): "
              f"{seconds:.2f} s to prepare, read, run the last one and summarize ({m.requests} request)")


@dataclass(frozen=True, kw_only=True)
class SimulatedSpec(RunSpec):
    """A run whose engine is the latency-model simulator: what every Ray worker starts (pickled by value)."""

    latency: LatencyConfig = field(default_factory=LatencyConfig)

    def engine_config(self) -> Any:
        return self.latency


def ray_scaling(workers: list[int], *, problems: int) -> None:
    import os

    from ttscale.pipeline import on_workers
    from ttscale.running.distributed import DistributedConfig

    model = LatencyModel.h100_1p5b()
    cores = os.cpu_count() or 1
    print(f"ray: best_of_n n=16, {problems} problems, each worker a process with the H100 rate model, "
          f"{cores} cores shared by all workers")
    base: float | None = None
    for count in workers:
        spec = SimulatedSpec(**vars(spec_for("best_of_n", problems=problems, width=16, budget="8k")),
                             latency=LatencyConfig(model=model, max_steps=6))
        spec = replace(spec, concurrency=256 * count)  # every worker as full as one alone
        with tempfile.TemporaryDirectory() as out:
            run_dir = RunDir(Path(out))
            prepared = prepare(spec)
            config = DistributedConfig(workers=count, cpus_per_worker=cores / max(workers))
            start = time.perf_counter()
            with RunWriter(run_dir, prepared, stored={}) as writer:
                summary = asyncio.run(on_workers(writer, config, progress=False))
            total = time.perf_counter() - start
        seconds = float(summary["wall_seconds"])  # the problems alone: Ray's and the workers' start apart
        rate = problems / seconds
        base = base or rate
        print(f"  {count} worker(s): {seconds:7.2f} s  {rate:7.1f} problems/s  {rate / base:5.2f}x one worker  "
              f"(with start-up {total:.1f} s; {summary.get('errors', 0)} errors)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=200)
    parser.add_argument("--width", type=int, default=64, help="tree searches' N")
    parser.add_argument("--strategies", default=",".join(DEFAULT))
    parser.add_argument("--profile", metavar="STRATEGY")
    parser.add_argument("--scale", action="store_true", help="best-of-N at 100, 1,000 and 10,000 problems")
    parser.add_argument("--resume", type=int, metavar="N", help="resume a run of N problems with N-1 finished")
    parser.add_argument("--no-share", action="store_true", help="skip the runs against the H100 rate model")
    parser.add_argument("--ilp", action="store_true", help="ETS's selection per round at widths 16, 64, 256")
    parser.add_argument("--ray", metavar="COUNTS", help="Ray workers to compare, e.g. 1,2,4,8 (best-of-N)")
    parser.add_argument("--ray-problems", type=int, default=2000, help="problems of each --ray run")
    parser.add_argument("--skip-ceiling", action="store_true", help="only the extra sections asked for")
    args = parser.parse_args(argv)
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}; "
          "engine: ttscale.testing.LatencyEngine (a simulator)")
    names = [s for s in args.strategies.split(",") if s]
    budget = f"{args.width * 512}"  # tree searches: N paths of 512 tokens at most
    print(f"ceiling (zero-cost engine), {args.problems} problems, tree width {args.width}:")
    for name in [] if args.skip_ceiling else names:
        print(measure(spec_for(name, problems=args.problems, width=args.width, budget=budget),
                      LatencyModel.zero_cost(), label=name).line())
    if not args.no_share and not args.skip_ceiling:
        model = LatencyModel.h100_1p5b()
        print(f"share (H100 1.5B rate model: {model.step_seconds * 1e3:g} ms/step + "
              f"{model.step_seconds_per_seq * 1e6:g} µs/sequence, prefill {model.prefill_tokens_per_s:,.0f} tok/s):")
        shares: dict[str, float] = {}
        for name in names:
            m = measure(spec_for(name, problems=args.problems, width=args.width, budget=budget), model, label=name)
            shares[name] = 100 * (1 - m.busy / m.seconds)
            print(f"  {name:<20} wall {m.seconds:7.2f} s  engine busy {m.busy:7.2f} s  idle {m.idle:6.2f} s  "
                  f"harness share {shares[name]:5.1f}%  ({m.tokens / m.seconds:,.0f} tokens/s)")
        if "deepconf~online" in shares and ONLINE_BASELINE in shares:
            online, base = shares["deepconf~online"], shares[ONLINE_BASELINE]
            print(f"  deepconf~online adds {online - base:+.1f} points of harness share to {ONLINE_BASELINE} "
                  f"({online:.1f}% vs {base:.1f}%)")
    if args.profile:
        print(f"profile: {args.profile}, zero-cost engine")
        print(profile(spec_for(args.profile, problems=args.problems, width=args.width, budget=budget)))
    if args.scale:
        scale([100, 1_000, 10_000])
    if args.resume:
        resume(args.resume)
    if args.ilp:
        ilp_rounds([16, 64, 256])
    if args.ray:
        ray_scaling([int(c) for c in args.ray.split(",")], problems=args.ray_problems)
    print(provenance_line(provenance(argv=None if argv is None else [sys.argv[0], *argv])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
