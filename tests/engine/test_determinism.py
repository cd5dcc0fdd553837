"""Deterministic mode without an engine: when it is refused and why, the CPU plan, what a run's samples depend on
(file hashes), the mode in a run's identity (never resumed in the other), and the flag on the command line.

The real-engine proof (bit-identical samples at concurrency 1 and 16 and over two Ray workers) is in
tests/running/distributed/test_ray.py, which shares its engines with the Ray failover test.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from ttscale.cli import main
from ttscale.engine.base import EngineConfig
from ttscale.engine.cpu import plan
from ttscale.engine.determinism import (
    DeterminismUnavailable,
    cpu_dtype,
    determinants,
    differences,
    file_hashes,
    file_sha256,
    gpu_refusal,
)
from ttscale.running.runner import RunSpec, prepare
from ttscale.runstore.run_config import check_resume
from ttscale.runstore.storage import CONFIG, RunDir, RunDirError

H100 = {"vllm_version": "0.11.1", "has_batch_invariant": True, "device": "cuda", "capability": (9, 0),
        "device_name": "NVIDIA H100 80GB HBM3", "environ": {}}


# -- where the mode can run ---------------------------------------------------------------------------------------
def test_batch_invariance_is_allowed_on_an_h100_class_gpu_with_a_vllm_that_has_it() -> None:
    assert gpu_refusal(**H100) is None  # type: ignore[arg-type]
    assert gpu_refusal(**{**H100, "capability": (10, 0)}) is None  # type: ignore[arg-type]  # B200
    assert gpu_refusal(**{**H100, "environ": {"VLLM_BATCH_INVARIANT": "1"}}) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"has_batch_invariant": False, "vllm_version": "0.10.2"},
         r"the installed vLLM 0\.10\.2 has no batch-invariant mode \(VLLM_BATCH_INVARIANT, vLLM ≥ 0\.11\.1\)"),
        ({"device": "rocm"}, r"needs an NVIDIA GPU; this engine runs on rocm"),
        ({"capability": (8, 0), "device_name": "NVIDIA A100-SXM4-40GB"},
         r"needs compute capability ≥ 9\.0 \(H100, H200, B100, B200\); NVIDIA A100-SXM4-40GB has compute "
         r"capability 8\.0"),
        ({"capability": (8, 9)}, r"has compute capability 8\.9"),
        ({"capability": None}, r"has an unknown compute capability"),
        ({"environ": {"VLLM_BATCH_INVARIANT": "0"}}, r"VLLM_BATCH_INVARIANT=0 is set in the environment"),
    ],
)
def test_batch_invariance_is_refused_naming_why(change: dict[str, object], message: str) -> None:
    reason = gpu_refusal(**{**H100, **change})  # type: ignore[arg-type]
    assert reason is not None and "\n" not in reason
    assert pytest.importorskip("re").search(message, reason), reason


def test_a_cpu_runs_float32_in_deterministic_mode_whatever_it_computes_fastest() -> None:
    amx = frozenset({"avx512f", "avx512_bf16", "amx_bf16"})
    assert plan("auto", flags=amx, cores=[0, 1], environ={}).dtype == "bfloat16"  # the default: fastest
    chosen = plan("auto", flags=amx, cores=[0, 1], environ={}, deterministic=True)
    assert (chosen.dtype, chosen.dtype_reason, chosen.threads_bind) == ("float32", "deterministic", "0-1")
    assert plan("float32", flags=frozenset(), cores=[3], environ={}, deterministic=True).dtype == "float32"
    assert cpu_dtype("auto") == cpu_dtype("float32") == "float32"
    for dtype in ("bfloat16", "float16"):
        with pytest.raises(DeterminismUnavailable, match=f"deterministic mode on a CPU runs float32 .* dtype {dtype} "
                                                         "was configured: leave dtype auto or set float32"):
            plan(dtype, flags=amx, cores=[0], environ={}, deterministic=True)


def test_the_engine_setting_is_checked_at_construction() -> None:
    assert EngineConfig().deterministic is False and EngineConfig(deterministic=True).to_dict()["deterministic"]
    with pytest.raises(ValueError, match="deterministic must be true or false, got 'yes'"):
        EngineConfig(deterministic="yes")  # type: ignore[arg-type]
    with pytest.raises(DeterminismUnavailable, match="dtype bfloat16 was configured"):
        EngineConfig(deterministic=True, device="cpu", dtype="bfloat16")
    EngineConfig(deterministic=True, device="cuda", dtype="bfloat16")  # batch-invariant kernels run bf16


# -- what the samples depend on -------------------------------------------------------------------------------------
def test_a_files_hash_is_its_sha256_kept_per_size_and_mtime(tmp_path: Path) -> None:
    weights, cache = tmp_path / "model.safetensors", tmp_path / "cache" / "digests.json"
    weights.write_bytes(b"w" * 3_000_000)
    expected = hashlib.sha256(b"w" * 3_000_000).hexdigest()
    assert file_sha256(weights, cache=cache) == expected
    assert expected in cache.read_text()
    # The cache answers for the same size and mtime: planted, it is what comes back (no re-reading of 16 GB).
    key = next(iter(json.loads(cache.read_text())))
    cache.write_text(json.dumps({key: "planted"}))
    assert file_sha256(weights, cache=cache) == "planted"
    weights.write_bytes(b"v" * 3_000_000)
    os.utime(weights, ns=(1, 1))  # another mtime: hashed again
    assert file_sha256(weights, cache=cache) == hashlib.sha256(b"v" * 3_000_000).hexdigest()
    cache.write_text("not json")  # a damaged cache costs a re-hash, never an error
    assert file_sha256(weights, cache=cache) == hashlib.sha256(b"v" * 3_000_000).hexdigest()


def test_a_hub_cache_blob_is_named_by_its_sha256_and_is_not_read(tmp_path: Path) -> None:
    name = "ab" * 32
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / name).write_bytes(b"anything: the name is the hub's own sha256")
    (tmp_path / "model.safetensors").symlink_to(tmp_path / "blobs" / name)
    assert file_sha256(tmp_path / "model.safetensors") == name


def test_weights_and_tokenizer_are_hashed_apart(tmp_path: Path) -> None:
    for name, text in [("model.safetensors", "w1"), ("config.json", "{}"), ("tokenizer.json", "t1"),
                       ("tokenizer_config.json", "{}"), ("chat_template.jinja", "c1"), ("README.md", "r1")]:
        (tmp_path / name).write_text(text)
    first = file_hashes(str(tmp_path))
    assert first["model_sha256"] and first["tokenizer_sha256"] and first["model_sha256"] != first["tokenizer_sha256"]
    (tmp_path / "README.md").write_text("r2")  # not something samples depend on
    assert file_hashes(str(tmp_path)) == first
    (tmp_path / "chat_template.jinja").write_text("c2")
    second = file_hashes(str(tmp_path))
    assert second["model_sha256"] == first["model_sha256"] and second["tokenizer_sha256"] != first["tokenizer_sha256"]
    (tmp_path / "model.safetensors").write_text("w2")
    third = file_hashes(str(tmp_path))
    assert third["model_sha256"] != second["model_sha256"] and third["tokenizer_sha256"] == second["tokenizer_sha256"]
    assert file_hashes(str(tmp_path / "absent")) == {"model_sha256": None, "tokenizer_sha256": None}


def test_determinants_and_their_differences() -> None:
    common = {"hashes": {"model_sha256": "a" * 64, "tokenizer_sha256": "b" * 64}, "chat_template": "{{ x }}",
              "vllm_version": "0.32.0", "torch_version": "2.9.0", "device": "cpu", "deterministic": False,
              "engine_seed": 0, "threads": "0-1"}
    xeon = determinants(**common, dtype="bfloat16", cpu_flags=["amx_bf16", "avx512f"])  # type: ignore[arg-type]
    epyc = determinants(**common, dtype="float32", cpu_flags=["avx2"])  # type: ignore[arg-type]
    assert xeon["chat_template_sha256"] == hashlib.sha256(b"{{ x }}").hexdigest()
    assert differences(xeon, epyc) == ["cpu_flags: ['amx_bf16', 'avx512f'] vs ['avx2']", "dtype: bfloat16 vs float32"]
    assert differences(xeon, {**xeon, "model_sha256": "c" * 64}) == [f"model_sha256: {'a' * 12} vs {'c' * 12}"]
    assert differences(xeon, xeon) == [] and differences(xeon, None) == [] and differences({}, epyc) == []


# -- the mode is part of a run's identity ---------------------------------------------------------------------------
SPEC = RunSpec(strategy="self_consistency", budget="96", task="arithmetic", limit=2)


def _stored(tmp_path: Path, spec: RunSpec) -> RunDir:
    run_dir = RunDir(tmp_path / "run")
    run_dir.path.mkdir(exist_ok=True)
    run_dir.write_json(CONFIG, {"identity": json.loads(json.dumps(prepare(spec).identity(), default=str))})
    return run_dir


def test_a_deterministic_run_and_a_default_one_refuse_to_resume_into_each_other(tmp_path: Path) -> None:
    deterministic = replace(SPEC, engine=EngineConfig(deterministic=True))
    run_dir = _stored(tmp_path, deterministic)
    check_resume(run_dir, prepare(deterministic))  # the same mode: accepted
    with pytest.raises(RunDirError, match=r"differs in engine\.deterministic: stored true vs now false$"):
        check_resume(run_dir, prepare(SPEC))
    run_dir = _stored(tmp_path, SPEC)
    with pytest.raises(RunDirError, match=r"differs in engine\.deterministic: stored false vs now true$"):
        check_resume(run_dir, prepare(deterministic))


def test_a_run_made_before_the_mode_existed_resumes_in_the_default_mode_only(tmp_path: Path) -> None:
    run_dir = _stored(tmp_path, SPEC)
    config = run_dir.read_config()
    del config["identity"]["engine"]["deterministic"]  # as every run made before this mode was stored
    run_dir.write_json(CONFIG, config)
    check_resume(run_dir, prepare(SPEC))
    with pytest.raises(RunDirError, match=r"engine\.deterministic: stored false vs now true"):
        check_resume(run_dir, prepare(replace(SPEC, engine=EngineConfig(deterministic=True))))


def test_a_served_model_is_refused_deterministic_mode() -> None:
    """Refused as the spec is made (a spec that says both cannot exist), so before anything is prepared."""
    from ttscale.engine.openai import OpenAIConfig

    server = OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="m", tokenizer="embedded")
    with pytest.raises(ValueError, match="deterministic mode applies to the engine ttscale starts"):
        replace(SPEC, engine=EngineConfig(deterministic=True), backend="openai", server=server)
    assert replace(SPEC, backend="openai", server=server).server is server  # without deterministic mode it is a spec


# -- the flag ---------------------------------------------------------------------------------------------------------
def _spec(argv: list[str], tmp_path: Path) -> RunSpec:
    from ttscale.cli import parse_args
    from ttscale.cli.run import build_spec

    return build_spec(parse_args(["run", *argv, "--out", str(tmp_path / "out")]))[0]


def test_the_flag_and_the_config_file_reach_the_run_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _spec(["--strategy", "best_of_n", "--deterministic"], tmp_path).engine.deterministic is True
    assert _spec(["--strategy", "best_of_n"], tmp_path).engine.deterministic is False
    config = tmp_path / "run.yaml"
    config.write_text("strategy: best_of_n\ndeterministic: true\n")
    assert _spec(["--config", str(config)], tmp_path).engine.deterministic is True
    assert _spec(["--config", str(config), "--no-deterministic"], tmp_path).engine.deterministic is False
    config.write_text("strategy: best_of_n\ndeterministic: maybe\n")
    assert main(["run", "--config", str(config)]) == 2
    assert "deterministic must be true or false, got 'maybe'" in capsys.readouterr().err


def test_the_openai_backend_refuses_the_flag_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--strategy", "best_of_n", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                 "--model", "m", "--tokenizer", "embedded", "--deterministic", "--limit", "1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "deterministic mode applies to the engine" in err, err
