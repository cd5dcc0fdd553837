"""GPU check for deterministic mode (issue 33), run on a lent GPU machine (torch, no vLLM, no weights).

1. What ttscale's refusal rule says for this GPU (ttscale/engine/determinism.py's `gpu_refusal`, loaded from its
   file: the GPU machine has torch but not ttscale's other dependencies).
2. Why the mode is needed on a GPU: whether a row's result depends on the batch it is computed in, for the
   operations a decoder step is made of (a linear layer with a model-sized weight, RMS norm, log-softmax), in
   bfloat16 and float32, with torch's defaults. A row computed alone vs the same row inside batches of 2..256.

    python tools/gpu/batch_invariance.py [--json OUT]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import torch


def _determinism_module():  # type: ignore[no-untyped-def]
    path = Path(__file__).resolve().parents[2] / "ttscale" / "engine" / "determinism.py"
    spec = importlib.util.spec_from_file_location("determinism", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def batch_dependence(dtype: torch.dtype, *, hidden: int = 4096, vocab: int = 32000, seed: int = 0) -> dict:
    """Max |row alone − row in batch| over batch sizes, per operation; 0.0 everywhere = batch-invariant here."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    w = torch.randn(hidden, hidden, device="cuda", generator=g, dtype=torch.float32).div_(hidden**0.5).to(dtype)
    head = torch.randn(vocab, hidden, device="cuda", generator=g, dtype=torch.float32).div_(hidden**0.5).to(dtype)
    rows = torch.randn(256, hidden, device="cuda", generator=g, dtype=torch.float32).to(dtype)
    ops = {
        "linear": lambda x: torch.nn.functional.linear(x, w),
        "rms_norm": lambda x: x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype),
        "lm_head_log_softmax": lambda x: torch.log_softmax(torch.nn.functional.linear(x, head).float(), dim=-1),
    }
    out: dict[str, dict[str, float]] = {}
    for name, op in ops.items():
        alone = op(rows[:1])
        out[name] = {}
        for size in (2, 4, 16, 64, 256):
            together = op(rows[:size])[:1]
            out[name][str(size)] = float((alone.float() - together.float()).abs().max())
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 1
    cap = torch.cuda.get_device_capability()
    name = torch.cuda.get_device_name()
    module = _determinism_module()
    try:
        import vllm
        import vllm.envs

        version, has = vllm.__version__, module.BATCH_INVARIANT_ENV in vllm.envs.environment_variables
    except ImportError:
        version, has = None, None
    verdicts = {
        "installed vLLM": None if version is None else module.gpu_refusal(
            vllm_version=version, has_batch_invariant=has, device="cuda", capability=cap, device_name=name),
        "vLLM >= 0.11.1 (has VLLM_BATCH_INVARIANT)": module.gpu_refusal(
            vllm_version="0.11.1", has_batch_invariant=True, device="cuda", capability=cap, device_name=name),
        "vLLM 0.10.2 (without it)": module.gpu_refusal(
            vllm_version="0.10.2", has_batch_invariant=False, device="cuda", capability=cap, device_name=name),
    }
    result = {
        "device": name, "capability": list(cap), "torch": torch.__version__, "cuda": torch.version.cuda,
        "vllm": version, "refusal": verdicts,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "batch_dependence": {str(dt).removeprefix("torch."): batch_dependence(dt)
                             for dt in (torch.bfloat16, torch.float32)},
    }
    print(json.dumps(result, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
