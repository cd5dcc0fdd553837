"""The latency-model engine (a SIMULATOR, ttscale.testing): its protocol against the real engine, and its clock."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from ttscale.schema import Generation, SamplingParams
from ttscale.search.steps import step_end
from ttscale.testing import LatencyEngine, LatencyModel

PROMPT = [{"role": "user", "content": "Calculate 12 + 7. Give the result as a number."}]
# Requests whose outcome does not depend on what the model writes: a cut by max_tokens, a judge's one token,
# n samples, log-probs with and without alternatives, and a repeated long prompt (prefix cache).
REQUESTS = [
    SamplingParams(n=3, temperature=0.8, max_tokens=4),
    SamplingParams(n=2, temperature=0.8, max_tokens=3, logprobs=0),
    SamplingParams(n=1, temperature=0.0, max_tokens=1, logprobs=5),
]

# Requests that end the way the tree searches rely on, whatever the model writes: a step cut at a stop string
# (a space: every answer of more than one word has one within 64 tokens) and a whole greedy answer that ends at
# the model's EOS (SmolLM2 answers this prompt in a few tokens).
ENDINGS = [
    SamplingParams(n=2, temperature=0.8, max_tokens=64, stop=(" ",)),
    SamplingParams(n=1, temperature=0.0, max_tokens=200),
]


def _ending(engine: Any, generation: Generation, params: SamplingParams) -> list[tuple[Any, ...]]:
    """How each completion ended, as the harness reads it (`step_end` for a step, finish_reason for a whole one)."""
    out = []
    for c in generation.completions:
        if params.stop:
            delimiter = params.stop[0]
            # a stop string: the text leaves it out, the ids keep it, and the step stays open
            out.append((c.finish_reason, step_end(c, delimiter=delimiter, decode=engine.detokenize),
                        delimiter in c.text))
        else:  # EOS: "stop" before max_tokens with no stop string set
            out.append((c.finish_reason, len(c.token_ids) < params.max_tokens))
    return out


def _shape(generation: Generation, params: SamplingParams) -> list[tuple[Any, ...]]:
    """What the harness relies on, per completion: field types and lengths, finish reason."""
    return [
        (
            type(c.text), type(c.token_ids), len(c.token_ids), c.finish_reason,
            None if c.logprobs is None else len(c.logprobs),
            None if c.top_logprobs is None else (len(c.top_logprobs), len(c.top_logprobs[0]) >= 2),
        )
        for c in generation.completions
    ]


async def _answers(engine: Any) -> list[Any]:
    prompt = engine.chat_prompt(PROMPT)
    out = []
    for params in REQUESTS:
        generation = await engine.generate(prompt, params, seed=1)
        assert generation.prompt_tokens == len(prompt) and len(generation.completions) == params.n
        out.append(_shape(generation, params))
    for params in ENDINGS:
        generation = await engine.generate(prompt, params, seed=1)
        out.append(_ending(engine, generation, params))
    long = engine.tokenize("word " * 200)
    await engine.generate(long, SamplingParams(max_tokens=2), seed=2)
    again = await engine.generate(long, SamplingParams(max_tokens=2), seed=3)
    out.append(0 < again.cached_prompt_tokens < again.prompt_tokens)  # whole blocks, never the last token
    return out


@pytest.mark.slow
def test_the_simulator_and_the_real_engine_agree_on_the_protocol(sync_engine: Any) -> None:
    real = sync_engine.loop.run(_answers(sync_engine.engine))
    simulated = asyncio.run(_answers(LatencyEngine()))
    assert simulated == real
    # The endings were the ones meant: a stop string (open step, "stop") and EOS, not cuts.
    assert real[len(REQUESTS)] == [("stop", (" ", "open"), False)] * 2
    assert real[len(REQUESTS) + 1] == [("stop", True)]


def test_stop_strings_eos_and_cuts_look_like_vllm() -> None:
    engine = LatencyEngine(seed=3)

    async def go() -> tuple[Generation, Generation]:
        prompt = engine.chat_prompt(PROMPT)
        step = await engine.generate(prompt, SamplingParams(n=8, max_tokens=500, stop=("\n\n",)))
        whole = await engine.generate(prompt, SamplingParams(n=8, max_tokens=500))
        return step, whole

    step, whole = asyncio.run(go())
    for c in step.completions:  # one step: the stop string is in the ids, not in the text
        assert "\n\n" not in c.text and engine.detokenize(c.token_ids).endswith(("\n\n", "<eos>"))
        assert c.finish_reason == "stop"
    for c in whole.completions:  # a whole solution: EOS last, its answer in the text
        assert c.token_ids[-1] == 2 and c.text.endswith(".") and "The answer is" in c.text
    assert engine.generated_tokens == sum(len(c.token_ids) for g in (step, whole) for c in g.completions)
    assert (engine.requests, engine.sequences) == (2, 16)  # vLLM v1 would count 16 requests: one per sample


def test_the_clock_never_answers_early_and_queues_past_max_num_seqs() -> None:
    model = LatencyModel(step_seconds=0.002, max_num_seqs=4)
    engine = LatencyEngine(model=model)

    async def go() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(engine.generate([7] * 40, SamplingParams(n=4, max_tokens=30)) for _ in range(2)))
        await engine.close()
        return time.perf_counter() - start

    wall = asyncio.run(go())
    # Two requests of 4 sequences with room for 4: one after the other, each 30 steps (every script sample is
    # longer than 30 tokens, so all are cut there).
    assert 2 * 30 * 0.002 <= wall < 5.0
    assert engine.busy_seconds > 0 and engine.requests == 2


def test_a_bad_model_is_refused() -> None:
    with pytest.raises(ValueError, match="max_num_seqs must be ≥ 1, got 0"):
        LatencyModel(max_num_seqs=0)
    with pytest.raises(ValueError, match="step times must be ≥ 0"):
        LatencyModel(step_seconds=-1)


def test_a_config_with_start_engine_starts_its_own_backend() -> None:
    # The hook Ray workers and the runner use: any config with an async start_engine() is a backend.
    from ttscale.engine import start_engine
    from ttscale.testing import LatencyConfig

    async def go() -> tuple[Any, Generation]:
        engine = await start_engine(LatencyConfig(seed=5, max_steps=2))
        try:
            return engine, await engine.generate(engine.tokenize("Calculate 1 + 2."), SamplingParams(n=2))
        finally:
            await engine.close()

    engine, generation = asyncio.run(go())
    assert isinstance(engine, LatencyEngine) and engine.max_steps == 2
    assert len(generation.completions) == 2 and engine.requests == 1
