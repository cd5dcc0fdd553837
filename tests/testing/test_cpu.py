"""ttscale.testing.cpu: the simulated CPU kinds, and the rule that keeps the suite's CPU assumptions in one place.

Every test whose expectation depends on the CPU asks for the `cpu_kind` fixture (tests/conftest.py), which runs it
under each kind of KINDS and under the real host; no test reads /proc/cpuinfo or patches a reader of it by hand."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ttscale.engine.cpu import BF16_FLAGS, CPUHost, RealCPURead, host, plan, read_host
from ttscale.testing.cpu import KINDS, CPUKind, expected_kind, simulated_cpu

TESTS = Path(__file__).resolve().parents[1]
#: The readers of the host: a test that replaced one by hand would mix a simulated CPU with the real one.
READERS = {"cpu_flags", "host", "read_host", "machine", "_simulated", "cpu_model"}


def test_the_kinds_are_the_five_the_suite_promises() -> None:
    assert set(KINDS) == {"avx2", "avx512", "avx512_bf16", "amx", "arm_bf16"}
    for name, kind in KINDS.items():
        # Each kind's stated expectation agrees with the oracle written apart from it.
        assert expected_kind(kind.host) == kind, name
        assert (kind.dtype == "bfloat16") == any(f in kind.host.flags for f in BF16_FLAGS), name


def test_the_fixture_runs_each_kind_and_the_host(cpu_kind: CPUKind, request: pytest.FixtureRequest) -> None:
    name = request.node.callspec.params["cpu_kind"]
    if name == "host":
        assert cpu_kind.host == read_host() == host()
    else:
        assert cpu_kind is KINDS[name] and host() == KINDS[name].host
        with pytest.raises(RealCPURead):
            read_host()
    assert plan("auto").dtype == cpu_kind.dtype


def test_the_oracle_is_not_the_plan() -> None:
    # Arm's `bf16` is no native bfloat16 on x86 (a flag of that name there would be a different feature).
    x86 = CPUHost(flags=frozenset({"avx2", "bf16"}), machine="x86_64", model="x")
    assert expected_kind(x86).dtype == "float32" == plan("auto", flags=x86.flags, machine=x86.machine).dtype
    with simulated_cpu("avx512"):
        assert plan("auto").dtype == "float32"  # AVX-512 alone emulates bf16


def _patched_names(tree: ast.AST) -> set[str]:
    """Names a test replaces: monkeypatch.setattr(obj, "name", ...), setattr(obj, "name", ...), patch("...name")."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if called == "setattr" and len(node.args) >= 2 and strings:
            found.add(strings[0].rsplit(".", 1)[-1])
        elif called in ("patch", "object") and strings:
            found.add(strings[-1].rsplit(".", 1)[-1])
    return found


def test_no_test_reads_the_cpu_or_patches_its_readers_by_hand() -> None:
    allowed = {TESTS / "conftest.py", Path(__file__).resolve(), TESTS / "engine" / "test_cpu.py"}
    offenders: list[str] = []
    for path in sorted(TESTS.rglob("*.py")):
        if path in allowed:
            continue
        text = path.read_text(encoding="utf-8")
        if "/proc/cpuinfo" in text:
            offenders.append(f"{path.relative_to(TESTS)} reads /proc/cpuinfo")
        for name in sorted(_patched_names(ast.parse(text)) & READERS):
            offenders.append(f"{path.relative_to(TESTS)} patches {name}")
    assert not offenders, "use the cpu_kind fixture (ttscale.testing.cpu) instead: " + "; ".join(offenders)


def test_the_rule_finds_the_hand_patch_that_hid_a_bf16_assumption() -> None:
    # The test that failed on AVX2-only machines patched provenance's reader, then compared with the real plan.
    old = 'monkeypatch.setattr(prov, "cpu_flags", lambda: frozenset({"amx_bf16"}))\nplan("auto")'
    assert _patched_names(ast.parse(old)) & READERS == {"cpu_flags"}
    assert _patched_names(ast.parse('mock.patch("platform.machine", lambda: "aarch64")')) & READERS == {"machine"}
