"""What the CPU engine should run with on this machine: dtype and compute threads.

Measured (ENGINE_NOTES, and this module's closing note): on a CPU without native bfloat16
instructions the bf16 engine is emulated and runs about 8x slower than float32 (< 41 vs 322
generated tok/s, AVX2-only EPYC); on one with them (AVX512-BF16 or AMX) bf16 is the fastest
(637 vs 401 tok/s for float32). And vLLM's CPU worker by default reserves a core for its
scheduler and binds compute to the rest: on 2 cores that is one core, half the speed. So the
engine takes bf16 only where the CPU has it, and binds its compute threads to every core this
process may use, unless the user set `VLLM_CPU_OMP_THREADS_BIND` themselves.
"""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: /proc/cpuinfo flags that mean bfloat16 arithmetic in hardware (x86 AVX512-BF16 / AMX; Arm's `bf16`).
BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
#: Flags worth recording in a run's config (they explain its speed).
REPORTED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "bf16", "asimd", "sve")


@dataclass(frozen=True)
class CPUPlan:
    """The CPU engine's dtype and thread binding, with the facts they were chosen from."""

    dtype: str
    """The dtype the engine runs: the configured one, or the fastest this CPU computes natively."""
    dtype_reason: str
    """Why: `configured`, `deterministic`, or the flag that allowed bfloat16, or `no native bfloat16`."""
    threads_bind: str
    """`VLLM_CPU_OMP_THREADS_BIND` as the engine sees it (cores like `0-3`, or the user's own value)."""
    cores: int
    """Cores this process may run on."""
    flags: tuple[str, ...]
    """The CPU's flags among those that matter for speed."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The CPU's feature flags (x86 `flags`, Arm `Features`); empty where /proc/cpuinfo is absent."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def usable_cores() -> list[int]:
    """The cores this process may run on (its affinity mask: a container or `taskset` may narrow it)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return list(range(os.cpu_count() or 1))


def id_list(cores: list[int]) -> str:
    """`[0, 1, 2, 5]` -> `0-2,5` (the syntax of VLLM_CPU_OMP_THREADS_BIND)."""
    parts: list[str] = []
    start = prev = None
    for core in sorted(set(cores)):
        if start is None:
            start = prev = core
        elif core == prev + 1:  # type: ignore[operator]
            prev = core
        else:
            parts.append(f"{start}-{prev}" if start != prev else f"{start}")
            start = prev = core
    if start is not None:
        parts.append(f"{start}-{prev}" if start != prev else f"{start}")
    return ",".join(parts)


def plan(
    dtype: str,
    *,
    flags: frozenset[str] | None = None,
    cores: list[int] | None = None,
    environ: dict[str, str] | os._Environ[str] | None = None,
    deterministic: bool = False,
) -> CPUPlan:
    """The plan for a CPU engine configured with `dtype` (`auto` lets the CPU decide). `deterministic`: float32
    whatever the CPU computes fastest (bf16 logits depend on the batch; ttscale.engine.determinism)."""
    flags = cpu_flags() if flags is None else flags
    cores = usable_cores() if cores is None else cores
    environ = os.environ if environ is None else environ
    if deterministic:
        from ttscale.engine.determinism import cpu_dtype

        chosen, reason = cpu_dtype(dtype), "deterministic"
    elif dtype != "auto":
        chosen, reason = dtype, "configured"
    else:
        native = [f for f in BF16_FLAGS if f in flags and (f != "bf16" or platform.machine() in ("aarch64", "arm64"))]
        chosen, reason = ("bfloat16", native[0]) if native else ("float32", "no native bfloat16")
    return CPUPlan(
        dtype=chosen,
        dtype_reason=reason,
        threads_bind=environ.get("VLLM_CPU_OMP_THREADS_BIND") or id_list(cores),
        cores=len(cores),
        flags=tuple(f for f in REPORTED_FLAGS if f in flags),
    )
