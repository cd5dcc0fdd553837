"""Deterministic mode, and what a run's samples depend on.

Every request is seeded (from the run seed, the problem and the request), so a sample is a function of
the logits; the logits are a function of the batch wherever the kernels reduce in an order that depends on
which requests share it. Measured (ENGINE_NOTES): bf16 on an AMX Xeon, 11 of 16 problems drew other samples
at concurrency 16 than at 1; float32, 0 of 16. Deterministic mode therefore means:

- on a CPU, float32 with the compute threads bound to a recorded core list (`ttscale.engine.cpu.plan`);
- on a GPU, vLLM's batch-invariant kernels (`VLLM_BATCH_INVARIANT=1`), which vLLM documents for NVIDIA GPUs
  of compute capability ≥ 9.0 (H100, H200, B100, B200) in the versions that define the variable. Elsewhere
  the run is refused in one line naming why, before the model loads.

`determinants` records what the samples depend on besides the run's own identity — the model files' hash,
the tokenizer's and the chat template's, vLLM and torch versions, dtype, device, CPU flags, the mode, the
engine seed — so that `ttscale compare` can tell two machines apart from two strategies.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: vLLM documents batch invariance for NVIDIA GPUs of this compute capability and above.
BATCH_INVARIANT_MIN_CAPABILITY = (9, 0)
#: The vLLM setting that selects batch-invariant kernels (vLLM ≥ 0.11.1).
BATCH_INVARIANT_ENV = "VLLM_BATCH_INVARIANT"

_WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
_MODEL_FILES = ("config.json", "generation_config.json")
_TOKENIZER = re.compile(r"^(tokenizer.*|vocab\..*|merges\.txt|special_tokens_map\.json|added_tokens\.json|"
                        r"chat_template.*|.*\.jinja|.*\.model|.*\.tiktoken)$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class DeterminismUnavailable(ValueError):
    """Deterministic mode was asked for where it cannot be had (a one-line reason)."""


def refuse_served(*, served: bool, deterministic: bool) -> None:
    """A served model (the openai backend) cannot be made deterministic from here: refused in one line."""
    if served and deterministic:
        raise DeterminismUnavailable(
            "deterministic mode applies to the engine ttscale starts (--backend vllm); a served model's batch "
            "invariance is set where it is served (vLLM: VLLM_BATCH_INVARIANT=1)")


def cpu_dtype(configured: str) -> str:
    """The dtype a deterministic CPU engine runs: float32, whatever `auto` would pick; bf16 or fp16 is refused."""
    if configured in ("auto", "float32"):
        return "float32"
    raise DeterminismUnavailable(
        f"deterministic mode on a CPU runs float32 (bfloat16 logits depend on which requests share a batch), but "
        f"dtype {configured} was configured: leave dtype auto or set float32")


def gpu_refusal(*, vllm_version: str, has_batch_invariant: bool, device: str, capability: tuple[int, int] | None,
                device_name: str = "this GPU", environ: Mapping[str, str] | None = None) -> str | None:
    """Why vLLM's batch-invariant mode cannot run here, or None when it can."""
    environ = os.environ if environ is None else environ
    if not has_batch_invariant:
        return (f"the installed vLLM {vllm_version} has no batch-invariant mode ({BATCH_INVARIANT_ENV}, vLLM ≥ "
                "0.11.1); upgrade vLLM or run without --deterministic")
    if device != "cuda":
        return f"vLLM's batch-invariant mode needs an NVIDIA GPU; this engine runs on {device}"
    need = ".".join(map(str, BATCH_INVARIANT_MIN_CAPABILITY))
    if capability is None or tuple(capability) < BATCH_INVARIANT_MIN_CAPABILITY:
        have = "an unknown compute capability" if capability is None else "compute capability {}.{}".format(*capability)
        return (f"vLLM's batch-invariant mode needs compute capability ≥ {need} (H100, H200, B100, B200); "
                f"{device_name} has {have}")
    if environ.get(BATCH_INVARIANT_ENV, "1") != "1":
        return (f"{BATCH_INVARIANT_ENV}={environ[BATCH_INVARIANT_ENV]} is set in the environment; deterministic mode "
                "sets it to 1")
    return None


def gpu_settings(device: str) -> dict[str, str]:
    """The environment a deterministic GPU engine starts with; DeterminismUnavailable where it cannot."""
    import vllm
    import vllm.envs

    capability, name = None, "this GPU"
    if device == "cuda":
        from vllm.platforms import current_platform

        found = current_platform.get_device_capability()
        capability = None if found is None else (int(found.major), int(found.minor))
        with contextlib.suppress(Exception):  # the name only makes the message clearer
            name = str(current_platform.get_device_name())
    reason = gpu_refusal(vllm_version=vllm.__version__, device=device, capability=capability, device_name=name,
                         has_batch_invariant=BATCH_INVARIANT_ENV in getattr(vllm.envs, "environment_variables", {}))
    if reason is not None:
        raise DeterminismUnavailable(f"deterministic mode: {reason}")
    return {BATCH_INVARIANT_ENV: "1"}


# -- what the samples depend on ---------------------------------------------------------------------------------


def file_sha256(path: Path, *, cache: Path | None = None) -> str:
    """The file's sha256. A Hugging Face cache names its large blobs by their sha256: read from the link, free.
    Else computed once per (file, size, mtime) and kept in `cache` (a JSON file), so a 16 GB model is hashed once."""
    target = path.resolve()
    if _SHA256.match(target.name):
        return target.name
    stat = target.stat()
    key = f"{target}:{stat.st_size}:{stat.st_mtime_ns}"
    known = _read_cache(cache)
    if key in known:
        return str(known[key])
    sha = hashlib.sha256()
    with target.open("rb") as handle:  # hashlib.file_digest is 3.11+; ttscale supports 3.10
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            sha.update(chunk)
    digest = sha.hexdigest()
    if cache is not None:
        with contextlib.suppress(OSError):  # a read-only cache only costs the next run the hashing
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
            tmp.write_text(json.dumps({**known, key: digest}), encoding="utf-8")
            tmp.replace(cache)
    return digest


def _read_cache(cache: Path | None) -> dict[str, Any]:
    if cache is None:
        return {}
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _combined(folder: Path, names: Sequence[Path], cache: Path | None) -> str | None:
    if not names:
        return None
    lines = [f"{p.relative_to(folder)} {file_sha256(p, cache=cache)}" for p in sorted(names)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def model_folder(model_path: str) -> Path | None:
    """The folder a model's files are in: a local folder as given, a hub id's snapshot in the local cache (no
    network), else None."""
    if Path(model_path).is_dir():
        return Path(model_path)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model_path, local_files_only=True))
    except Exception:  # not cached, not a hub id, or huggingface_hub's own error: nothing to hash
        return None


def file_hashes(model_path: str, *, cache: Path | None = None) -> dict[str, str | None]:
    """sha256 of the model's weights and config, of its tokenizer files (chat template files included)."""
    folder = model_folder(model_path)
    if folder is None:
        return {"model_sha256": None, "tokenizer_sha256": None}
    files = [p for p in folder.rglob("*") if p.is_file() and not p.name.startswith(".")]
    weights = [p for p in files if p.suffix in _WEIGHTS or p.name in _MODEL_FILES]
    tokenizer = [p for p in files if _TOKENIZER.match(p.name)]
    return {"model_sha256": _combined(folder, weights, cache), "tokenizer_sha256": _combined(folder, tokenizer, cache)}


def text_sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def determinants(*, hashes: Mapping[str, str | None], chat_template: str | None, vllm_version: str,
                 torch_version: str, dtype: str, device: str, cpu_flags: Sequence[str] | None, deterministic: bool,
                 engine_seed: int, threads: str | None) -> dict[str, Any]:
    """What an engine's samples depend on besides the run's identity (config.json `environment.determinants`)."""
    return {
        **hashes,
        "chat_template_sha256": text_sha256(chat_template),
        "vllm_version": vllm_version,
        "torch_version": torch_version,
        "dtype": dtype,
        "device": device,
        "cpu_flags": None if cpu_flags is None else sorted(cpu_flags),
        "threads_bind": threads,
        "deterministic": deterministic,
        "engine_seed": engine_seed,
    }


def differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[str]:
    """`name: A vs B` for each determinant two engines disagree on (hashes shortened); [] when either is unknown."""
    if not a or not b:
        return []
    out = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x != y:
            if key.endswith("sha256"):
                x, y = (v[:12] if isinstance(v, str) else v for v in (x, y))
            out.append(f"{key}: {x} vs {y}")
    return out


__all__ = ["BATCH_INVARIANT_ENV", "BATCH_INVARIANT_MIN_CAPABILITY", "DeterminismUnavailable", "cpu_dtype",
           "determinants", "differences", "file_hashes", "file_sha256", "gpu_refusal", "gpu_settings",
           "model_folder", "refuse_served", "text_sha256"]
