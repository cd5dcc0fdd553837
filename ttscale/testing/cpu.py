"""Simulated CPUs: the processor kinds ttscale's users run on, for tests and benchmarks of what depends on the CPU.

A host cannot be changed, so a test of the engine's plan (dtype, thread binding), a benchmark's provenance or a
run's recorded `environment.engine.cpu` holds on every kind only if it runs under each kind's flags as well as under
the real one's. `simulated_cpu(kind)` puts a kind in force for every reader (`ttscale.engine.cpu.host()` and what
calls it: `cpu_flags()`, `plan()`); the real /proc/cpuinfo cannot be read meanwhile (`RealCPURead`), so a test that
mixes the two fails on every machine instead of only on those unlike the one it was written on.

    with simulated_cpu("avx2"):
        assert plan("auto").dtype == "float32"

The flags are those of real machines of each kind (abridged to the ones a plan or a record reads, plus the usual
neighbours); the expected dtype is what ttscale's plan must choose there (ENGINE_NOTES: emulated bf16 is ~8x slower).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ttscale.engine import cpu
from ttscale.engine.cpu import CPUHost

_X86 = frozenset({"fpu", "sse2", "sse4_2", "avx", "avx2", "fma", "f16c"})
_AVX512 = _X86 | {"avx512f", "avx512bw", "avx512vl", "avx512dq"}


@dataclass(frozen=True)
class CPUKind:
    """A kind of processor, and what ttscale's plan must choose on it."""

    host: CPUHost
    """What `ttscale.engine.cpu.host()` returns under this kind."""
    dtype: str
    """The dtype the engine's `auto` plan must take there: bfloat16 only with native bfloat16 arithmetic."""
    bf16_flag: str | None
    """The flag that allows bfloat16 (the plan's `dtype_reason`), None where none does."""


KINDS: dict[str, CPUKind] = {
    "avx2": CPUKind(host=CPUHost(flags=_X86, machine="x86_64", model="AMD EPYC (AVX2 only, simulated)"),
                    dtype="float32", bf16_flag=None),
    "avx512": CPUKind(host=CPUHost(flags=_AVX512, machine="x86_64", model="Intel Xeon (AVX-512, no BF16, simulated)"),
                      dtype="float32", bf16_flag=None),
    "avx512_bf16": CPUKind(host=CPUHost(flags=_AVX512 | {"avx512_bf16"}, machine="x86_64",
                                        model="AMD EPYC (AVX-512 + AVX512_BF16, simulated)"),
                           dtype="bfloat16", bf16_flag="avx512_bf16"),
    "amx": CPUKind(host=CPUHost(flags=_AVX512 | {"avx512_bf16", "amx_bf16", "amx_tile", "amx_int8"}, machine="x86_64",
                                model="Intel Xeon (AMX, simulated)"),
                   dtype="bfloat16", bf16_flag="avx512_bf16"),
    "arm_bf16": CPUKind(host=CPUHost(flags=frozenset({"fp", "asimd", "bf16", "sve", "i8mm"}), machine="aarch64",
                                     model="aarch64 (Neoverse with bf16, simulated)"),
                        dtype="bfloat16", bf16_flag="bf16"),
}
"""Every CPU kind the suite holds its CPU-dependent tests on (docs/results/performance.md names the same)."""


@contextmanager
def simulated_cpu(kind: str) -> Iterator[CPUKind]:
    """Put the CPU `kind` (a key of KINDS) in force for every reader of the host; the real one is back after."""
    if kind not in KINDS:
        raise ValueError(f"CPU kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if cpu._simulated is not None:
        raise RuntimeError(f"a simulated CPU ({cpu._simulated_name!r}) is already in force")
    chosen = KINDS[kind]
    cpu._simulated, cpu._simulated_name = chosen.host, kind
    try:
        yield chosen
    finally:
        cpu._simulated, cpu._simulated_name = None, ""


def expected_kind(found: CPUHost) -> CPUKind:
    """What the plan must choose on the processor `found` (a real one): bfloat16 only with a flag for native
    bfloat16 arithmetic (Arm's `bf16` on Arm alone), else float32. Written apart from the plan, as its oracle."""
    on_arm = found.machine in ("aarch64", "arm64")
    allowing: list[str] = [flag for flag in ("avx512_bf16", "amx_bf16") if flag in found.flags]
    allowing += ["bf16"] if on_arm and "bf16" in found.flags else []
    return CPUKind(host=found, dtype="bfloat16" if allowing else "float32", bf16_flag=allowing[0] if allowing else None)
