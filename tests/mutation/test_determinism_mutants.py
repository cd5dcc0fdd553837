"""ttscale.engine.determinism: behaviour the mutation run (tools/mutation) found unchecked, on hand examples, a
hand-made model folder and Hugging Face cache, and a stand-in for vLLM's modules (no engine starts)."""

from __future__ import annotations

import hashlib
import json
import sys
import types
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest

from ttscale.engine.determinism import (
    DeterminismUnavailable,
    determinants,
    differences,
    file_hashes,
    file_sha256,
    gpu_refusal,
    gpu_settings,
    model_folder,
    refuse_served,
    text_sha256,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_determinants_name_every_input() -> None:
    found = determinants(hashes={"model_sha256": "m", "tokenizer_sha256": None}, chat_template="{{ x }}",
                         vllm_version="0.11.2", torch_version="2.8.0", dtype="float32", device="cpu",
                         cpu_flags=["avx512f", "avx2"], deterministic=True, engine_seed=7, threads="0-1")
    assert found == {"model_sha256": "m", "tokenizer_sha256": None, "chat_template_sha256": sha(b"{{ x }}"),
                     "vllm_version": "0.11.2", "torch_version": "2.8.0", "dtype": "float32", "device": "cpu",
                     "cpu_flags": ["avx2", "avx512f"], "threads_bind": "0-1", "deterministic": True, "engine_seed": 7}
    bare = determinants(hashes={}, chat_template=None, vllm_version="v", torch_version="t", dtype="d", device="cuda",
                        cpu_flags=None, deterministic=False, engine_seed=0, threads=None)
    assert bare["cpu_flags"] is None and bare["chat_template_sha256"] is None


def test_text_hash() -> None:
    assert text_sha256(None) is None
    assert text_sha256("é") == sha("é".encode())


def test_differences_cover_keys_either_side_has() -> None:
    a = {"dtype": "float32", "model_sha256": "a" * 64, "only_a": 1}
    b = {"dtype": "bfloat16", "model_sha256": None, "only_b": 2}
    assert differences(a, b) == ["dtype: float32 vs bfloat16", f"model_sha256: {'a' * 12} vs None",
                                 "only_a: 1 vs None", "only_b: None vs 2"]


def test_a_files_hash_is_cached_in_a_new_folder_and_survives_a_bad_cache(tmp_path: Path) -> None:
    data = tmp_path / "w.bin"
    data.write_bytes(b"x" * 3_000_000)  # more than one read of 1 MiB
    cache = tmp_path / "deep" / "er" / "hashes.json"
    assert file_sha256(data, cache=cache) == sha(b"x" * 3_000_000)
    assert list(json.loads(cache.read_text()).values()) == [sha(b"x" * 3_000_000)]
    other = tmp_path / "v.bin"
    other.write_bytes(b"y")
    assert file_sha256(other, cache=cache) == sha(b"y") and len(json.loads(cache.read_text())) == 2
    # A cache that is not an object of hashes is ignored and replaced.
    cache.write_text("[1, 2]")
    assert file_sha256(other, cache=cache) == sha(b"y")
    assert list(json.loads(cache.read_text()).values()) == [sha(b"y")]
    # A cache that cannot be written (its folder is a file) costs only the hashing.
    blocked = tmp_path / "w.bin" / "hashes.json"
    assert file_sha256(other, cache=blocked) == sha(b"y")


def test_a_model_folders_hashes_leave_out_hidden_files_and_cache_each_file(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    (folder / "sub.bin").mkdir(parents=True)  # a folder named like weights is not a file
    (folder / "model.safetensors").write_bytes(b"w")
    (folder / "config.json").write_bytes(b"{}")
    (folder / ".hidden.safetensors").write_bytes(b"h")
    (folder / "tokenizer.json").write_bytes(b"t")
    cache = tmp_path / "cache.json"
    found = file_hashes(str(folder), cache=cache)
    # Lines "relative path, space, sha256" in path order, joined by newlines, hashed.
    assert found["model_sha256"] == sha(f"config.json {sha(b'{}')}\nmodel.safetensors {sha(b'w')}".encode())
    assert found["tokenizer_sha256"] == sha(f"tokenizer.json {sha(b't')}".encode())
    assert sorted(json.loads(cache.read_text()).values()) == sorted([sha(b"{}"), sha(b"w"), sha(b"t")])
    assert file_hashes(str(tmp_path / "missing")) == {"model_sha256": None, "tokenizer_sha256": None}


def test_a_hub_id_is_found_in_the_local_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub = pytest.importorskip("huggingface_hub.constants")
    revision = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "models--org--tiny" / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "models--org--tiny" / "refs" / "main").write_text(revision)
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path))
    assert model_folder("org/tiny") == snapshot
    assert model_folder("org/not-cached") is None
    local = tmp_path / "local"
    local.mkdir()
    assert model_folder(str(local)) == local


def test_a_served_model_is_refused_in_words() -> None:
    with pytest.raises(DeterminismUnavailable, match=r"^deterministic mode applies to the engine ttscale starts "
                       r"\(--backend vllm\); a served model's batch invariance is set where it is served \(vLLM: "
                       r"VLLM_BATCH_INVARIANT=1\)$"):
        refuse_served(served=True, deterministic=True)
    refuse_served(served=True, deterministic=False)
    refuse_served(served=False, deterministic=True)


def test_the_refusals_read_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    base: dict[str, Any] = {"vllm_version": "0.11.2", "has_batch_invariant": True, "device": "cuda",
                            "capability": (8, 6), "environ": {}}
    assert gpu_refusal(**base) == ("vLLM's batch-invariant mode needs compute capability ≥ 9.0 (H100, H200, B100, "
                                   "B200); this GPU has compute capability 8.6")
    assert gpu_refusal(**{**base, "has_batch_invariant": False}) == (
        "the installed vLLM 0.11.2 has no batch-invariant mode (VLLM_BATCH_INVARIANT, vLLM ≥ 0.11.1); upgrade vLLM "
        "or run without --deterministic")
    # Without an environment given, the process's own is read.
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "0")
    assert gpu_refusal(**{**base, "capability": (9, 0), "environ": None}) == (
        "VLLM_BATCH_INVARIANT=0 is set in the environment; deterministic mode sets it to 1")
    monkeypatch.delenv("VLLM_BATCH_INVARIANT")
    assert gpu_refusal(**{**base, "capability": (9, 0), "environ": None}) is None


_Capability = namedtuple("_Capability", "major minor")


def _fake_vllm(monkeypatch: pytest.MonkeyPatch, *, variables: dict[str, Any] | None, capability: Any,
               name: Any) -> None:
    """Stand-ins for the three vLLM modules gpu_settings reads (a version, its settings, the platform)."""
    vllm = types.ModuleType("vllm")
    vllm.__version__ = "0.11.2"  # type: ignore[attr-defined]
    envs = types.ModuleType("vllm.envs")
    if variables is not None:  # a vLLM before the settings table has no such attribute at all
        envs.environment_variables = variables  # type: ignore[attr-defined]
    platforms = types.ModuleType("vllm.platforms")

    class Platform:
        def get_device_capability(self) -> Any:
            return capability

        def get_device_name(self) -> str:
            if isinstance(name, Exception):
                raise name
            return str(name)

    platforms.current_platform = Platform()  # type: ignore[attr-defined]
    vllm.envs = envs  # type: ignore[attr-defined]
    vllm.platforms = platforms  # type: ignore[attr-defined]
    for module in (vllm, envs, platforms):
        monkeypatch.setitem(sys.modules, module.__name__, module)


def test_gpu_settings_on_an_h100_set_batch_invariance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    _fake_vllm(monkeypatch, variables={"VLLM_BATCH_INVARIANT": None}, capability=_Capability(9, 0), name="H100")
    assert gpu_settings("cuda") == {"VLLM_BATCH_INVARIANT": "1"}


@pytest.mark.parametrize(
    ("device", "variables", "capability", "name", "message"),
    [
        ("cuda", {"VLLM_BATCH_INVARIANT": None}, _Capability(8, 0), "NVIDIA A100",
         "deterministic mode: vLLM's batch-invariant mode needs compute capability ≥ 9.0 (H100, H200, B100, B200); "
         "NVIDIA A100 has compute capability 8.0"),
        ("cuda", {"VLLM_BATCH_INVARIANT": None}, _Capability(7, 5), RuntimeError("no name"),
         "deterministic mode: vLLM's batch-invariant mode needs compute capability ≥ 9.0 (H100, H200, B100, B200); "
         "this GPU has compute capability 7.5"),
        ("cuda", {"VLLM_BATCH_INVARIANT": None}, None, "X",
         "deterministic mode: vLLM's batch-invariant mode needs compute capability ≥ 9.0 (H100, H200, B100, B200); "
         "X has an unknown compute capability"),
        ("cuda", {}, _Capability(9, 0), "H100",
         "deterministic mode: the installed vLLM 0.11.2 has no batch-invariant mode (VLLM_BATCH_INVARIANT, vLLM ≥ "
         "0.11.1); upgrade vLLM or run without --deterministic"),
        ("cuda", None, _Capability(9, 0), "H100",
         "deterministic mode: the installed vLLM 0.11.2 has no batch-invariant mode (VLLM_BATCH_INVARIANT, vLLM ≥ "
         "0.11.1); upgrade vLLM or run without --deterministic"),
        ("cpu", {"VLLM_BATCH_INVARIANT": None}, _Capability(9, 0), "H100",
         "deterministic mode: vLLM's batch-invariant mode needs an NVIDIA GPU; this engine runs on cpu"),
    ],
    ids=["a100", "no_name", "unknown_capability", "old_vllm", "no_settings_table", "cpu"],
)
def test_gpu_settings_refuse_naming_the_gpu(monkeypatch: pytest.MonkeyPatch, device: str,
                                           variables: dict[str, Any] | None,
                                           capability: Any, name: Any, message: str) -> None:
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    _fake_vllm(monkeypatch, variables=variables, capability=capability, name=name)
    with pytest.raises(DeterminismUnavailable) as caught:
        gpu_settings(device)
    assert str(caught.value) == message
