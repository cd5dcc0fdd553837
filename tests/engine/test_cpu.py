"""The CPU engine's dtype and thread binding, chosen from what the CPU has (no engine needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ttscale.engine.base import environ_defaults
from ttscale.engine.cpu import cpu_flags, id_list, plan

AVX2_EPYC = frozenset({"sse4_2", "avx", "avx2", "fma", "f16c"})
AVX512_BF16 = AVX2_EPYC | {"avx512f", "avx512bw", "avx512_bf16"}
SAPPHIRE_RAPIDS = AVX2_EPYC | {"avx512f", "amx_tile", "amx_bf16"}


@pytest.mark.parametrize(
    ("flags", "dtype", "reason"),
    [
        (AVX2_EPYC, "float32", "no native bfloat16"),
        (AVX2_EPYC | {"avx512f"}, "float32", "no native bfloat16"),  # AVX-512 alone emulates bf16 too
        (AVX512_BF16, "bfloat16", "avx512_bf16"),
        (SAPPHIRE_RAPIDS, "bfloat16", "amx_bf16"),
        (frozenset(), "float32", "no native bfloat16"),  # unknown CPU: the safe choice
    ],
)
def test_auto_dtype_is_bfloat16_only_with_native_support(flags: frozenset[str], dtype: str, reason: str) -> None:
    chosen = plan("auto", flags=flags, cores=[0, 1], environ={})
    assert (chosen.dtype, chosen.dtype_reason) == (dtype, reason)


def test_a_configured_dtype_is_kept() -> None:
    chosen = plan("bfloat16", flags=AVX2_EPYC, cores=[0, 1], environ={})
    assert (chosen.dtype, chosen.dtype_reason) == ("bfloat16", "configured")


def test_threads_are_bound_to_every_usable_core_unless_the_user_chose() -> None:
    assert plan("auto", flags=AVX2_EPYC, cores=[0, 1], environ={}).threads_bind == "0-1"
    assert plan("auto", flags=AVX2_EPYC, cores=[2, 3, 4, 7], environ={}).threads_bind == "2-4,7"
    mine = plan("auto", flags=AVX2_EPYC, cores=[0, 1], environ={"VLLM_CPU_OMP_THREADS_BIND": "1"})
    assert mine.threads_bind == "1" and mine.cores == 2


@pytest.mark.parametrize(
    ("cores", "text"),
    [([0], "0"), ([0, 1, 2, 3], "0-3"), ([0, 2, 4], "0,2,4"), ([5, 1, 2, 3], "1-3,5"), ([], "")],
)
def test_id_list(cores: list[int], text: str) -> None:
    assert id_list(cores) == text


def test_cpu_flags_reads_x86_and_arm_cpuinfo(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512_bf16\n\n")
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nFeatures\t: fp asimd bf16 sve\n")
    assert cpu_flags(x86) == {"fpu", "avx2", "avx512_bf16"}
    assert {"asimd", "bf16"} <= cpu_flags(arm)
    assert cpu_flags(tmp_path / "missing") == frozenset()


def test_this_machine_gets_a_plan_it_can_explain() -> None:
    chosen = plan("auto")
    assert chosen.dtype in ("bfloat16", "float32") and chosen.cores >= 1
    assert (chosen.dtype == "bfloat16") == any(f in chosen.flags for f in ("avx512_bf16", "amx_bf16", "bf16"))


def test_engine_settings_are_scoped_to_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("TTSCALE_TEST_A", raising=False)
    monkeypatch.setenv("TTSCALE_TEST_B", "user")
    with environ_defaults({"TTSCALE_TEST_A": "1", "TTSCALE_TEST_B": "ours"}):
        assert os.environ["TTSCALE_TEST_A"] == "1" and os.environ["TTSCALE_TEST_B"] == "user"
    assert "TTSCALE_TEST_A" not in os.environ and os.environ["TTSCALE_TEST_B"] == "user"
