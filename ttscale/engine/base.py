"""The engine protocol: the only door between strategies and a model server.

Small on purpose: generate n samples of one prompt (async, so many problems' requests are in
flight together and the engine batches them), plus the tokenizer and chat template.
"""

from __future__ import annotations

import contextlib
import functools
import os
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ttscale.engine.args import convert
from ttscale.schema import Generation, SamplingParams

Prompt = str | Sequence[int]
"""A prompt as text or as token ids (ids skip re-tokenisation and keep tree prefixes exact)."""


TokenWatch = Callable[[float], bool]
"""Called with each generated token's confidence (`Completion.confidences`) as it streams in; True stops the
request at that token (an engine that streams implements `generate_watched(prompt, params, *, watch, seed)`)."""


def watched_generate(engine: Any) -> Callable[..., Any]:
    """`engine.generate_watched`, or a TypeError naming the engine when it cannot stop a request mid-stream."""
    streaming = getattr(engine, "generate_watched", None)
    if not callable(streaming):
        raise TypeError(f"the engine ({type(engine).__name__}) cannot stop a request mid-stream: stopping by "
                        "confidence needs ttscale's vLLM engine or a simulator")
    return streaming


def check_watched(params: SamplingParams) -> None:
    """What every `generate_watched` takes: one sample, with the top log-probs its confidences come from."""
    if params.n != 1 or not params.logprobs:
        raise ValueError(f"a watched request is one sample with top log-probs, got n={params.n}, "
                         f"logprobs={params.logprobs}")


@runtime_checkable
class AsyncEngine(Protocol):
    """An async text-generation backend: the protocol every engine implements (vLLM in process, a served model, the
    simulators), named as vLLM names its own. `ttscale.Engine` is something else: the handle a user shares."""

    async def generate(self, prompt: Prompt, params: SamplingParams, *, seed: int | None = None) -> Generation:
        """n samples of one prompt, with token ids, optional log-probs and prompt accounting.

        `seed` seeds this request alone, so its samples do not depend on what else the engine
        is batching (the runner derives one per request from the run seed and the problem).
        """
        ...

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        """Token ids of `messages` rendered by the model's own chat template (ready for the reply, by default)."""
        ...

    def tokenize(self, text: str) -> list[int]: ...

    def detokenize(self, token_ids: Sequence[int]) -> str: ...

    def describe(self) -> dict[str, Any]:
        """What identifies this engine in a run's config.json (model, versions, settings)."""
        ...

    async def close(self) -> None: ...


class EngineFatalError(RuntimeError):
    """The engine cannot serve any further request (server gone, rejected credentials, engine dead).

    Unlike a failed request, which is recorded against its problem, this stops the run: recording
    it for every remaining problem would mark them finished, and `--resume` would never redo them.
    """


def is_fatal(exc: BaseException) -> bool:
    """Whether `exc` means the engine is gone, not that one request failed."""
    # vLLM's EngineDeadError is matched by name: importing vllm here would make `import ttscale` heavy.
    return isinstance(exc, EngineFatalError) or type(exc).__name__ == "EngineDeadError"


#: EngineConfig fields that are vLLM engine arguments of the same name and meaning.
_VLLM_NAMED = frozenset({"dtype", "block_size", "gpu_memory_utilization", "enforce_eager", "seed", "max_model_len",
                         "enable_prefix_caching", "max_num_seqs", "tensor_parallel_size", "runner"})


def context_length(*values: Any) -> int | None:
    """The first of `values` that is a context length in tokens: not None (the model's own, unknown before the
    engine starts), nor -1 (whatever fits the KV cache, chosen at start), nor a bool. None when none is."""
    return next((v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0), None)


@functools.cache
def _field_types() -> dict[str, Any]:
    return typing.get_type_hints(EngineConfig)


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    """vLLM settings, validated at construction. Defaults suit the embedded model on a CPU."""

    model: str = "embedded"
    """`embedded`, a local Hugging Face model folder, or a hub id."""
    dtype: str = "auto"
    """Weights/activations dtype; `auto` = on CPU bfloat16 where the CPU computes it natively (AVX512-BF16, AMX,
    Arm BF16) and float32 elsewhere (emulated bf16 is ~8x slower); on GPU the model's own."""
    block_size: int | None = None
    """KV-cache block size in tokens; None = 32 on CPU (must be a multiple of 32 there), vLLM's default on GPU."""
    kv_cache_gib: float = 2.0
    """CPU only: KV-cache space in GiB (VLLM_CPU_KVCACHE_SPACE)."""
    gpu_memory_utilization: float = 0.9
    """GPU only: share of GPU memory vLLM may take."""
    enforce_eager: bool | None = None
    """Skip graph compilation; None = True on CPU (start 23 s instead of 121 s), False on GPU."""
    seed: int = 0
    """AsyncEngine-level sampling seed. Runs also seed every request (derived from the run seed and the problem),
    which makes their samples independent of batching and of the number of workers wherever the engine's logits
    are batch-invariant (float32 on CPU). bf16 on CPUs with AMX is not: on an Intel Xeon, 11 of 16 problems drew
    other samples at concurrency 16 than at 1 (0 of 16 in float32), so exact replays there need float32."""
    deterministic: bool = False
    """Samples that do not depend on the batch, the concurrency or the number of workers: float32 with the compute
    threads bound to a recorded core list on a CPU; vLLM's batch-invariant kernels (VLLM_BATCH_INVARIANT=1) on an
    NVIDIA GPU of compute capability ≥ 9.0. Refused in one line where neither holds, and for a served model (set
    it where it is served). Part of a run's identity: a run is never resumed in the other mode."""
    max_model_len: int | None = -1
    """Longest prompt + generation, in tokens. -1 (the default) = the largest length the KV cache holds, at most the
    model's own (vLLM's auto-fit, on GPU and CPU alike): a long-context model on a small GPU starts with a shorter
    window instead of failing, and a reasoning chain is never cut short by a number of ours. None = exactly the
    model's own limit (vLLM refuses to start when the KV cache cannot hold it). The limit in force is the started
    engine's `config.max_model_len`."""
    enable_prefix_caching: bool = True
    """Share KV of common prompt prefixes across requests (the heart of tree-search efficiency)."""
    max_num_seqs: int = 256
    """Sequences the scheduler runs at once."""
    tensor_parallel_size: int = 1
    """GPUs one engine spans."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where to run; `auto` = whatever the installed vLLM was built for."""
    runner: Literal["generate", "pooling"] = "generate"
    """`generate` for policies and judges; `pooling` for reward models scored per token (PRMs)."""
    engine_args: Mapping[str, Any] = field(default_factory=dict)
    """Any other argument of the installed vLLM's engine (`AsyncEngineArgs`), by name: quantization,
    kv_cache_dtype, max_num_batched_tokens, ... (ttscale.engine.args types and checks them). A name that is also
    a field above replaces that field's value."""
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    """Options of the model's chat template, e.g. {"enable_thinking": False} for Qwen3."""

    def __post_init__(self) -> None:
        for name in ("engine_args", "chat_template_kwargs"):
            options = getattr(self, name)
            if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
                raise ValueError(f"{name} must map names to values, got {options!r}")
            object.__setattr__(self, name, dict(options))  # a plain dict: JSON, asdict and pickling take it
        # vLLM's flags spell names with dashes (max-num-seqs): one spelling, so a field's name is found below.
        # The names and values are checked against vLLM's own dataclass when the engine starts (engine.args):
        # importing it here would pull vLLM and torch (seconds) into every config, and vLLM is optional.
        object.__setattr__(self, "engine_args", {k.replace("-", "_"): v for k, v in self.engine_args.items()})
        # An engine argument that is one of the fields above sets that field: one value, checked like the others.
        for name in _VLLM_NAMED & set(self.engine_args):
            value = self.engine_args[name]
            if isinstance(value, str):  # typed as `--engine-arg NAME=TEXT` is, by the field's own type
                value = convert(name, value, _field_types()[name])
            object.__setattr__(self, name, value)
        object.__setattr__(self, "engine_args", {k: v for k, v in self.engine_args.items() if k not in _VLLM_NAMED})
        if self.dtype not in ("auto", "bfloat16", "float16", "float32"):
            raise ValueError(f"dtype must be auto, bfloat16, float16 or float32, got {self.dtype!r}")
        if self.block_size is not None and (self.block_size < 1 or self.block_size & (self.block_size - 1)):
            raise ValueError(f"block_size must be a power of two ≥ 1, got {self.block_size}")
        if not (1 <= self.kv_cache_gib <= 1024 and float(self.kv_cache_gib).is_integer()):
            # vllm-cpu reads VLLM_CPU_KVCACHE_SPACE as an integer (0.5 crashed it at start).
            raise ValueError(f"kv_cache_gib must be a whole number in [1, 1024], got {self.kv_cache_gib}")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.max_model_len is not None and self.max_model_len != -1 and not 64 <= self.max_model_len <= 1_048_576:
            raise ValueError(f"max_model_len must be in [64, 1048576], or -1 for the largest length the KV cache "
                             f"holds (at most the model's own), got {self.max_model_len}")
        if self.max_num_seqs < 1:
            raise ValueError(f"max_num_seqs must be ≥ 1, got {self.max_num_seqs}")
        if self.tensor_parallel_size < 1:
            raise ValueError(f"tensor_parallel_size must be ≥ 1, got {self.tensor_parallel_size}")
        if self.runner not in ("generate", "pooling"):
            raise ValueError(f"runner must be generate or pooling, got {self.runner!r}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}")
        if not isinstance(self.deterministic, bool):
            raise ValueError(f"deterministic must be true or false, got {self.deterministic!r}")
        if self.deterministic and self.device == "cpu" and self.dtype not in ("auto", "float32"):
            from ttscale.engine.determinism import cpu_dtype

            cpu_dtype(self.dtype)  # raises DeterminismUnavailable (a ValueError) naming why

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextlib.contextmanager
def environ_defaults(values: dict[str, str]) -> Iterator[None]:
    """Set the variables of `values` that are not set yet, and remove them again afterwards.

    vLLM takes settings from the environment (and its engine processes inherit it): scoped like
    this, a setting made for one engine leaks into no later engine or subprocess of the process.
    """
    added = {k: v for k, v in values.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


class HFTokenizerMixin:
    """The tokenizer half of `AsyncEngine` for backends that hold a Hugging Face tokenizer in `self._tokenizer`."""

    _tokenizer: Any
    chat_template_kwargs: Mapping[str, Any] = {}
    """Options passed to the chat template on every render (`EngineConfig.chat_template_kwargs`)."""

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        ids = self._tokenizer.apply_chat_template(
            messages, tokenize=True, add_generation_prompt=add_generation_prompt, **self.chat_template_kwargs
        )
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):  # newer transformers return a BatchEncoding
            ids = ids["input_ids"]
        return list(ids)

    def tokenize(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=False))

    def detokenize(self, token_ids: Sequence[int]) -> str:
        return str(self._tokenizer.decode(list(token_ids)))
