"""The CPU engine's dtype and thread binding, chosen from what the CPU has (no engine needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ttscale.engine.base import environ_defaults
from ttscale.engine.cpu import REPORTED_FLAGS, RealCPURead, busy_note, cpu_flags, host, id_list, plan, read_host
from ttscale.testing.cpu import CPUKind, simulated_cpu

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


def test_every_cpu_kind_gets_a_plan_it_can_explain(cpu_kind: CPUKind) -> None:
    chosen = plan("auto")
    assert (chosen.dtype, chosen.dtype_reason) == (cpu_kind.dtype, cpu_kind.bf16_flag or "no native bfloat16")
    assert chosen.cores >= 1 and set(chosen.flags) <= cpu_kind.host.flags
    assert list(chosen.to_dict()["flags"]) == [f for f in REPORTED_FLAGS if f in cpu_kind.host.flags]
    # Deterministic mode takes float32 on every kind, and refuses a bf16 that `auto` may take there.
    assert plan("auto", deterministic=True).dtype == "float32"
    with pytest.raises(ValueError, match="deterministic mode on a CPU runs float32"):
        plan("bfloat16", deterministic=True)


def test_arm_s_bf16_flag_means_bfloat16_on_arm_alone() -> None:
    arm = frozenset({"asimd", "bf16"})
    assert plan("auto", flags=arm, machine="aarch64", cores=[0], environ={}).dtype == "bfloat16"
    assert plan("auto", flags=arm, machine="x86_64", cores=[0], environ={}).dtype == "float32"


def test_a_simulated_cpu_is_what_every_reader_sees_and_the_real_one_cannot_be_read(tmp_path: Path) -> None:
    real = read_host()
    with simulated_cpu("arm_bf16") as kind:
        assert host() == kind.host and cpu_flags() == kind.host.flags
        # Reading the real flags beside simulated ones fails loudly, on any machine.
        with pytest.raises(RealCPURead, match="simulated CPU 'arm_bf16'"):
            read_host()
        with pytest.raises(RuntimeError, match="already in force"), simulated_cpu("avx2"):
            pass
        other = tmp_path / "cpuinfo"  # a file that is not the machine's own is read as ever
        other.write_text("flags\t: avx2\n")
        assert cpu_flags(other) == {"avx2"}
    assert host() == real
    with pytest.raises(ValueError, match=r"CPU kind must be one of avx2, .*got 'sparc'"), simulated_cpu("sparc"):
        pass


def test_the_real_model_name_is_read(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nmodel name\t: AMD  EPYC 9B14\nflags\t\t: fpu avx2\n\n")
    assert read_host(x86).model == "AMD EPYC 9B14"


def test_engine_settings_are_scoped_to_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("TTSCALE_TEST_A", raising=False)
    monkeypatch.setenv("TTSCALE_TEST_B", "user")
    with environ_defaults({"TTSCALE_TEST_A": "1", "TTSCALE_TEST_B": "ours"}):
        assert os.environ["TTSCALE_TEST_A"] == "1" and os.environ["TTSCALE_TEST_B"] == "user"
    assert "TTSCALE_TEST_A" not in os.environ and os.environ["TTSCALE_TEST_B"] == "user"


def test_a_busy_machine_gets_one_line_before_a_cpu_engine_starts() -> None:
    from ttscale.engine.base import EngineConfig
    from ttscale.engine.openai_config import OpenAIConfig

    cpu = EngineConfig(device="cpu")
    note = busy_note(cpu, load=3.8, cores=[0, 1], environ={})
    assert note is not None and "\n" not in note
    assert note.startswith("note: this machine is busy (load average 3.8 on 2 cores)") and "cores 0-1" in note
    assert "VLLM_CPU_OMP_THREADS_BIND=<cores>" in note
    assert "cores 1)" in str(busy_note(cpu, load=3.0, cores=[0, 1], environ={"VLLM_CPU_OMP_THREADS_BIND": "1"}))
    # A quiet machine, a GPU engine or a served model: nothing to say.
    assert busy_note(cpu, load=2.0, cores=[0, 1], environ={}) is None
    assert busy_note(EngineConfig(device="cuda"), load=9.0, cores=[0, 1], environ={}) is None
    assert busy_note(OpenAIConfig(base_url="http://127.0.0.1:1/v1", model="m"), load=9.0, cores=[0, 1]) is None
