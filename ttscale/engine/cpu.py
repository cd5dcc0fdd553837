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
#: `platform.machine()` of an Arm processor, where the flag `bf16` means bfloat16 arithmetic.
ARM = ("aarch64", "arm64")
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


CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class CPUHost:
    """What this machine's processor is, as far as the engine's plan and a benchmark's provenance care."""

    flags: frozenset[str]
    """Feature flags (x86 `flags`, Arm `Features` of /proc/cpuinfo); empty where it is absent."""
    machine: str
    """The architecture (`platform.machine()`: `x86_64`, `aarch64`, ...): Arm's `bf16` means bfloat16 only there."""
    model: str
    """The model name (x86 `model name`), or the architecture where /proc/cpuinfo does not name one (Arm)."""


class RealCPURead(RuntimeError):
    """The real /proc/cpuinfo was read while a simulated CPU was in force (`ttscale.testing.cpu`): a test would
    then mix the simulated machine's flags with the real one's, and hold only on machines like the one it ran on."""


_simulated: CPUHost | None = None
"""Set only by `ttscale.testing.cpu.simulated_cpu`: the CPU every reader below sees instead of the real one."""
_simulated_name = ""


def read_host(cpuinfo: Path = CPUINFO) -> CPUHost:
    """The processor as `cpuinfo` describes it: the one place that reads /proc/cpuinfo."""
    if _simulated is not None and cpuinfo == CPUINFO:
        raise RealCPURead(f"the real {CPUINFO} was read while the simulated CPU {_simulated_name!r} is in force: "
                          "read it through ttscale.engine.cpu.host(), or hand the flags in")
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    flags: frozenset[str] = frozenset()
    model = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features") and not flags:
            flags = frozenset(value.split())
        elif key.strip() == "model name" and value.strip() and not model:
            model = " ".join(value.split())
    machine = platform.machine()
    return CPUHost(flags=flags, machine=machine, model=model or platform.processor() or machine or "unknown")


def host() -> CPUHost:
    """This machine's processor, or the simulated one a test put in force (`ttscale.testing.cpu`)."""
    return _simulated if _simulated is not None else read_host()


def cpu_flags(cpuinfo: Path | None = None) -> frozenset[str]:
    """The CPU's feature flags (x86 `flags`, Arm `Features`); empty where /proc/cpuinfo is absent."""
    return host().flags if cpuinfo is None else read_host(cpuinfo).flags


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
    machine: str | None = None,
) -> CPUPlan:
    """The plan for a CPU engine configured with `dtype` (`auto` lets the CPU decide). `deterministic`: float32
    whatever the CPU computes fastest (bf16 logits depend on the batch; ttscale.engine.determinism)."""
    if flags is None or machine is None:
        found = host()
        flags = found.flags if flags is None else flags
        machine = found.machine if machine is None else machine
    cores = usable_cores() if cores is None else cores
    environ = os.environ if environ is None else environ
    if deterministic:
        from ttscale.engine.determinism import cpu_dtype

        chosen, reason = cpu_dtype(dtype), "deterministic"
    elif dtype != "auto":
        chosen, reason = dtype, "configured"
    else:
        native = [f for f in BF16_FLAGS if f in flags and (f != "bf16" or machine in ARM)]
        chosen, reason = ("bfloat16", native[0]) if native else ("float32", "no native bfloat16")
    return CPUPlan(
        dtype=chosen,
        dtype_reason=reason,
        threads_bind=environ.get("VLLM_CPU_OMP_THREADS_BIND") or id_list(cores),
        cores=len(cores),
        flags=tuple(f for f in REPORTED_FLAGS if f in flags),
    )


def cpu_build() -> bool:
    """Whether the installed vLLM is its CPU build (`vllm-cpu`, what `make` installs where no GPU answers)."""
    from importlib import metadata

    try:
        metadata.version("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def busy_note(config: object, *, load: float | None = None, cores: list[int] | None = None,
              environ: dict[str, str] | os._Environ[str] | None = None) -> str | None:
    """One line for the start of a run whose engine computes on this CPU (`config`: the engine's config) while the
    machine is already busy: its 1-minute load average above the cores this process may use. None otherwise (a
    served model, a GPU, a quiet machine).

    Measured (docs/results/performance.md): two busy programs on a 2-core AVX2 EPYC cut raw vLLM from 154 to
    59 generated tok/s with its compute threads bound to both cores, and from 99 to 41 unbound: the binding still
    wins, so the line says what to expect and how to choose other cores, not to unbind."""
    from ttscale.engine.base import EngineConfig

    if not isinstance(config, EngineConfig) or config.device == "cuda" or (config.device == "auto" and not cpu_build()):
        return None
    environ = os.environ if environ is None else environ
    cores = usable_cores() if cores is None else cores
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # where the system keeps no load average
            return None
    if not cores or load <= len(cores):
        return None
    bound = environ.get("VLLM_CPU_OMP_THREADS_BIND") or id_list(cores)
    return (f"note: this machine is busy (load average {load:.1f} on {len(cores)} cores): the engine's compute threads "
            f"(bound to cores {bound}) share them with other programs and generate several times slower than on a "
            "quiet machine; VLLM_CPU_OMP_THREADS_BIND=<cores> binds them to others")
