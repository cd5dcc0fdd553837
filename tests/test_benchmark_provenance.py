"""benchmarks/provenance.py: what every benchmark records of where its numbers hold, and the `--deterministic` flag
of every benchmark that starts an engine. No engine starts here: a fake one stands for a started engine."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ttscale.engine.cpu import REPORTED_FLAGS
from ttscale.testing.cpu import CPUKind

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
#: The benchmarks that start a vLLM engine (test_every_engine_benchmark_is_listed keeps this list whole).
ENGINE_BENCHMARKS = ("adaptive", "allocation", "ets_regime", "ets_threshold", "findings", "overhead", "search",
                     "sleep_time")
KEYS = {"command", "mode", "dtype", "dtype_source", "device", "cpu", "cpu_flags", "cores", "versions"}


def _module(name: str, *, alias: str | None = None) -> ModuleType:
    """benchmarks/<name>.py, whose siblings (provenance, verdicts) import as top-level modules, as the scripts
    run. `alias` loads it under another name: `search` is also a folder of tests/."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        if alias is None:
            return importlib.import_module(name)
        spec = importlib.util.spec_from_file_location(alias, BENCHMARKS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCHMARKS))


prov = _module("provenance")


class FakeEngine:
    """What a started vLLM engine's describe() holds that provenance reads."""

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "vllm", "device": "cpu", "config": {"dtype": "auto", "deterministic": True},
            "cpu": {"dtype": "float32", "dtype_reason": "deterministic", "threads_bind": "0-1", "cores": 2,
                    "flags": ["avx512f", "amx_bf16"]},
            "determinants": {"model_sha256": "ab" * 32, "dtype": "float32", "device": "cpu", "deterministic": True,
                             "engine_seed": 0, "threads_bind": "0-1", "vllm_version": "0.32.0"},
        }


class FakeSync:
    """A BlockingEngine's shape: the engine is its `.engine`."""

    engine = FakeEngine()


@pytest.mark.parametrize("deterministic", [False, True])
def test_without_an_engine_the_dtype_is_the_planned_one(deterministic: bool, cpu_kind: CPUKind) -> None:
    p = prov.provenance(deterministic=deterministic, argv=[str(BENCHMARKS / "findings.py"), "--problems", "30"])
    assert set(p) >= KEYS
    assert p["command"] == "python benchmarks/findings.py --problems 30"
    assert p["mode"] == ("deterministic" if deterministic else "default")
    assert p["dtype"] == ("float32" if deterministic else cpu_kind.dtype)
    assert p["cpu"] == cpu_kind.host.model and set(p["cpu_flags"]) <= cpu_kind.host.flags
    assert p["dtype_source"].startswith("planned")
    assert "determinants" not in p  # only a started engine knows them
    assert set(p["versions"]) == {"ttscale", "python", "vllm", "torch", "numpy", "scipy"}
    assert p["cores"] >= 1


def test_a_benchmark_without_an_engine_has_no_mode_nor_dtype() -> None:
    p = prov.provenance(argv=["benchmarks/votes.py"])
    assert p["mode"] == prov.NO_ENGINE and p["dtype"] is None
    assert "mode n/a (no engine);" in prov.provenance_line(p)


@pytest.mark.parametrize("engine", [FakeEngine(), FakeSync()], ids=["engine", "sync-engine"])
def test_a_started_engine_s_determinants_and_cpu_plan_are_carried(engine: Any) -> None:
    p = prov.provenance(engine=engine, deterministic=False, argv=["benchmarks/overhead.py"])
    described = FakeEngine().describe()
    assert p["determinants"] == described["determinants"]
    assert p["cpu_plan"] == described["cpu"]
    # The engine says what it runs; the flag given beside it does not override that.
    assert (p["mode"], p["dtype"], p["dtype_source"], p["device"]) == ("deterministic", "float32", "engine", "cpu")


def test_the_line_states_command_mode_dtype_flags_and_versions(cpu_kind: CPUKind) -> None:
    p = prov.provenance(engine=FakeEngine(), argv=["benchmarks/findings.py", "--problems", "30"])
    line = prov.provenance_line(p)
    assert line.startswith("Command: `python benchmarks/findings.py --problems 30`; mode deterministic (float32);")
    # Only the flags that matter, in REPORTED_FLAGS's order.
    shown = ", ".join(f for f in REPORTED_FLAGS if f in cpu_kind.host.flags) or "no flags of note"
    assert f"({shown})" in line and "sse2" not in line and "fma" not in line
    assert f"{p['cores']} cores" in line and p["cpu"] in line
    for shown, version in (("ttscale", p["versions"]["ttscale"]), ("Python", p["versions"]["python"])):
        assert f"{shown} {version}" in line
    assert "vLLM " in line and "torch " in line and "\n" not in line
    planned = prov.provenance_line(prov.provenance(deterministic=False, argv=["benchmarks/search.py"]))
    assert f"mode default ({cpu_kind.dtype}, planned)" in planned  # the plan for this kind's flags


def test_a_missing_package_is_none_not_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    assert prov.version("no-such-package-ttscale-test") is None
    monkeypatch.setitem(prov.PACKAGES, "vllm", ("no-such-package-ttscale-test",))
    p = prov.provenance(argv=["benchmarks/sandbox.py"])
    assert p["versions"]["vllm"] is None
    assert "vLLM not installed" in prov.provenance_line(p)


def test_a_command_with_a_backtick_stays_one_code_span() -> None:
    line = prov.provenance_line({"command": "python benchmarks/x.py --tree 'a`b'", "mode": prov.NO_ENGINE})
    assert line.startswith("Command: `` python benchmarks/x.py --tree 'a`b' ``;")


@pytest.mark.parametrize("name", ENGINE_BENCHMARKS)
def test_every_engine_benchmark_takes_deterministic(name: str) -> None:
    flags: argparse.ArgumentParser = _module(name, alias=f"benchmark_{name}").parser()
    assert flags.parse_args(["--deterministic"]).deterministic is True
    assert flags.parse_args([]).deterministic is False


def test_overhead_measures_the_mode_s_cost_apart_from_the_mode_itself() -> None:
    flags = _module("overhead", alias="benchmark_overhead").parser()
    assert flags.parse_args(["--deterministic-cost", "--json", "x.json"]).deterministic_cost is True
    with pytest.raises(SystemExit):  # the cost runs both modes: one mode as well is a contradiction
        flags.parse_args(["--deterministic-cost", "--deterministic"])


def test_every_engine_benchmark_is_listed_and_every_benchmark_prints_its_provenance() -> None:
    for script in sorted(BENCHMARKS.glob("*.py")):
        # The helper, the rules, findings' sequential loop and the sizes that would decide a finding (read off a
        # findings JSON, which carries its own provenance): no measurement of their own.
        if script.stem in ("provenance", "verdicts", "evidence", "decided", "deciding"):
            continue
        text = script.read_text(encoding="utf-8")
        starts_engine = "BlockingEngine(" in text or "ttscale.Engine(" in text
        assert starts_engine == (script.stem in ENGINE_BENCHMARKS), script.name
        assert "provenance_line(" in text, f"{script.name} prints no provenance line"
        if starts_engine:
            assert "deterministic=" in text, f"{script.name} does not pass --deterministic to its engine"
