"""`ttscale cost`: compute FLOPs, memory bytes and Kinetics eFLOPs of sampling N solutions.

    ttscale cost --model Qwen3-8B --params 8.19e9 --prompt-tokens 155 \\
        --gen-tokens 13063,22187,16921 --samples 8 --hardware B200 --json

The cost is averaged over the given generation lengths, as Kinetics does: each length stands for
one possible length of all N samples.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from ttscale.errors import UsageError
from ttscale.quantities import parse_quantity


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "cost",
        help="FLOPs, memory bytes and Kinetics eFLOPs of sampling N solutions",
        description=(
            "Price N samples of a prompt with the Kinetics cost model: compute FLOPs, KV memory bytes and "
            "eFLOPs = compute + I·bytes, averaged over the given generation lengths."
        ),
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--model", metavar="PRESET", help="a preset such as Qwen3-8B, Llama-3.1-8B, Qwen2.5-7B"
    )
    which.add_argument(
        "--model-config", metavar="PATH", help="a model's config.json, or the folder holding it"
    )
    parser.add_argument(
        "--params", metavar="N", help="parameter count P for 2·P FLOPs/token (e.g. 8.19e9 or 8.19B)"
    )
    parser.add_argument("--prompt-tokens", metavar="L_IN", required=True, help="prompt length in tokens")
    parser.add_argument(
        "--gen-tokens",
        metavar="L1,L2,...",
        required=True,
        help="generated lengths to average over (comma-separated)",
    )
    parser.add_argument("--samples", metavar="N", default="1", help="samples drawn per prompt (default 1)")
    parser.add_argument(
        "--hardware",
        metavar="NAME",
        default="B200",
        help="A100, H100, H200, B200 (default; I = 562.5) or FLOPS/BANDWIDTH such as 989e12/3.35e12",
    )
    parser.add_argument(
        "--cached-tokens", metavar="N", default="0", help="prompt tokens served from cache (with --prefill)"
    )
    parser.add_argument(
        "--prefill", action="store_true", help="also charge the prompt's forward pass (not in Kinetics)"
    )
    parser.add_argument(
        "--kv-bytes", metavar="B", default="2", help="bytes per KV element: 2 (bf16, default) or 1 (fp8)"
    )
    sparse = parser.add_mutually_exclusive_group()
    sparse.add_argument("--topk", metavar="K", help="sparse attention: token top-k with K tokens")
    sparse.add_argument("--block-topk", metavar="BS:K", help="sparse attention: top-K blocks of BS tokens")
    parser.add_argument("--local", metavar="W", default="0", help="local window added to the sparse budget")
    parser.add_argument(
        "--convention",
        choices=("kinetics", "exact"),
        default="kinetics",
        help="sparse warm-up term: as in the published tables (default) or the exact integral",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ttscale.cost import (
        CostInputError,
        CostModel,
        HardwareError,
        ModelShape,
        ModelShapeError,
        SparseAttention,
        load_hardware,
        load_shape,
    )

    params = None if args.params is None else _number(args.params, "--params", positive=True)
    prompt = _integer(args.prompt_tokens, "--prompt-tokens", minimum=0)
    samples = _integer(args.samples, "--samples", minimum=1)
    cached = _integer(args.cached_tokens, "--cached-tokens", minimum=0)
    lengths = _lengths(args.gen_tokens)
    local = _integer(args.local, "--local", minimum=0)
    sparse = None
    if args.topk is not None:
        sparse = SparseAttention.topk(
            k=_integer(args.topk, "--topk", minimum=1), local=local, convention=args.convention
        )
    elif args.block_topk is not None:
        block, _, k = args.block_topk.partition(":")
        sparse = SparseAttention.block_topk(
            block_size=_integer(block, "--block-topk BS", minimum=1),
            k=_integer(k, "--block-topk K", minimum=1),
            local=local,
            convention=args.convention,
        )
    try:
        if args.model is not None:
            shape = load_shape(args.model, params=params)
        else:
            shape = ModelShape.from_config(args.model_config, params=params)
        model = CostModel(
            shape=shape,
            hardware=load_hardware(args.hardware),
            sparse=sparse,
            prefill=args.prefill,
            kv_bytes_per_element=_number(args.kv_bytes, "--kv-bytes", positive=True),
        )
        cost = model.expected(
            prompt_tokens=prompt, gen_lengths=lengths, samples=samples, cached_prompt_tokens=cached
        )
    except (ModelShapeError, HardwareError, CostInputError) as exc:
        raise UsageError(str(exc)) from None
    report: dict[str, Any] = {
        **model.describe(),
        "params_total": shape.params_total,
        "params_non_embedding": shape.params_non_embedding,
        "prompt_tokens": prompt,
        "cached_prompt_tokens": cached,
        "samples": samples,
        "gen_tokens": lengths,
        "mean_gen_tokens": sum(lengths) / len(lengths),
        **cost.to_dict(),
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"model      {shape.name}  (P = {shape.params:.4g} params; {shape.num_layers} layers, "
        f"{shape.num_heads} heads, {shape.num_kv_heads} KV heads, head dim {shape.head_dim})"
    )
    print(f"hardware   {model.hardware.name}  (I = {model.hardware.intensity:.6g} FLOPs/byte)")
    print(
        f"request    {prompt} prompt tokens, {samples} sample(s), averaged over {len(lengths)} length(s) "
        f"(mean {report['mean_gen_tokens']:.6g} tokens)"
        + (f"; sparse budget {sparse.budget}" if sparse else "")
    )
    print(f"compute    {cost.compute_flops:.6e} FLOPs")
    print(f"memory     {cost.memory_bytes:.6e} bytes  (I·bytes = {cost.memory_flops:.6e})")
    print(f"eFLOPs     {cost.eflops:.6e}")
    return 0


def _number(text: str, flag: str, *, positive: bool = False) -> float:
    parsed = parse_quantity(str(text), signed=True)
    if parsed is None:
        raise UsageError(f"{flag}: cannot read {text!r}; write a number such as 8.19e9 or 8.19B")
    value = parsed[0]
    if not math.isfinite(value):
        raise UsageError(f"{flag} must be a finite number, got {text!r}")
    if positive and value <= 0:
        raise UsageError(f"{flag} must be > 0, got {text!r}")
    return value


def _integer(text: str, flag: str, *, minimum: int) -> int:
    value = _number(text, flag)
    if value != int(value) or value < minimum:
        raise UsageError(f"{flag} must be a whole number ≥ {minimum}, got {text!r}")
    return int(value)


def _lengths(text: str) -> list[int]:
    # Accepts "1,2,3" and the bracketed form of the Kinetics tables, "[1, 2, 3]".
    items = [item for item in text.strip().strip("[]").replace(" ", "").split(",") if item]
    if not items:
        raise UsageError("--gen-tokens needs at least one length, e.g. --gen-tokens 4096,8192")
    return [_integer(item, "--gen-tokens", minimum=0) for item in items]
