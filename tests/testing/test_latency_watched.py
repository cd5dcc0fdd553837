"""The latency-model engine (a SIMULATOR) for DeepConf: token confidences, and requests stopped mid-stream.

A watched request is charged by the rate model only for the tokens decoded up to its stop, and its slot goes to
the next request then; every other request keeps decoding.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest

from ttscale.schema import Completion, Generation, SamplingParams
from ttscale.testing import LatencyEngine, LatencyModel

PROMPT = "Calculate 12 + 7."
# Steps of 48 characters at least: every sample is longer than LONG tokens, so each is cut there ("length").
LONG = 40
LONG_PARAMS = SamplingParams(n=1, max_tokens=LONG, logprobs=5)
MODEL = LatencyModel(step_seconds=0.005)


def _engine(model: LatencyModel | None = None, *, seed: int = 0) -> LatencyEngine:
    return LatencyEngine(model=model, seed=seed, step_tokens=96, max_steps=2)


def _stop_at(k: int) -> Callable[[float], bool]:
    """A watch that stops at the k-th token (counted from 0), whatever its confidence."""
    seen = 0

    def watch(confidence: float) -> bool:
        nonlocal seen
        assert 1.0 <= confidence <= 4.0
        seen += 1
        return seen == k + 1

    return watch


def test_confidences_come_only_with_top_logprobs_and_leave_the_samples_as_they_were() -> None:
    engine = LatencyEngine(seed=3, max_steps=6)

    async def go() -> list[Generation]:
        prompt = engine.tokenize(PROMPT)
        asked = [SamplingParams(n=4, max_tokens=300, logprobs=k) for k in (None, 0, 5)]
        return [await engine.generate(prompt, p, seed=9) for p in asked]

    plain, sampled_only, top = asyncio.run(go())
    assert all(c.confidences is None for c in (*plain.completions, *sampled_only.completions))
    for c in top.completions:
        assert c.confidences is not None and len(c.confidences) == len(c.token_ids)
    # The confidences draw from RNGs of their own: the same seed gives the same samples with or without them.
    assert [replace(c, top_logprobs=None, confidences=None) for c in top.completions] == list(sampled_only.completions)


def test_a_judge_token_has_its_confidence_from_its_two_candidates() -> None:
    engine = LatencyEngine(seed=1)
    generation = asyncio.run(engine.generate(engine.tokenize(PROMPT), SamplingParams(n=2, max_tokens=1, logprobs=5)))
    for c in generation.completions:
        assert c.top_logprobs is not None and c.confidences is not None
        assert c.confidences == pytest.approx((-sum(c.top_logprobs[0].values()) / 2,))


def test_a_sample_that_states_a_wrong_sum_is_less_confident() -> None:
    engine = LatencyEngine(seed=5, max_steps=1)
    generation = asyncio.run(engine.generate(engine.tokenize(PROMPT), SamplingParams(n=64, logprobs=5), seed=2))

    def wrong(c: Completion) -> bool:
        left, _, right = c.text.split("\n\n")[0].rpartition(" = ")
        a, b = left.split()[-3::2]
        return int(a) + int(b) != int(right)

    means = {True: [], False: []}  # type: dict[bool, list[float]]
    for c in generation.completions:
        assert c.confidences is not None
        means[wrong(c)].append(sum(c.confidences) / len(c.confidences))
    assert means[True] and means[False]  # the script states a wrong sum 40% of the time
    assert max(means[True]) < 2.3 < 2.7 < min(means[False])  # 2 ± 0.5 and 3 ± 0.5 per token, averaged


@pytest.mark.parametrize("model", [None, MODEL], ids=["zero-cost", "rate"])
def test_a_watched_request_stopped_at_token_k_returns_k_plus_1_tokens(model: LatencyModel | None) -> None:
    engine, k = _engine(model), 9

    async def go() -> tuple[Generation, Generation]:
        try:
            prompt = engine.tokenize(PROMPT)
            stopped = await engine.generate_watched(prompt, LONG_PARAMS, watch=_stop_at(k), seed=4)
            whole = await engine.generate(prompt, LONG_PARAMS, seed=4)
            return stopped, whole
        finally:
            await engine.close()

    stopped, whole = asyncio.run(go())
    (cut,), (full,) = stopped.completions, whole.completions
    assert cut.finish_reason == "abort" and len(cut.token_ids) == k + 1 and full.finish_reason == "length"
    assert cut.token_ids == full.token_ids[: k + 1] and cut.text == full.text[: k + 1]
    assert cut.confidences == full.confidences[: k + 1]  # type: ignore[index]
    assert cut.logprobs is not None and len(cut.logprobs) == len(cut.top_logprobs or ()) == k + 1
    assert engine.generated_tokens == k + 1 + LONG and engine.aborted == 1 and engine.requests == 2


def test_a_watch_that_never_stops_returns_the_whole_sample() -> None:
    engine = _engine(MODEL)

    async def go() -> Generation:
        try:
            return await engine.generate_watched(engine.tokenize(PROMPT), LONG_PARAMS, watch=lambda c: False)
        finally:
            await engine.close()

    (c,) = asyncio.run(go()).completions
    assert c.finish_reason == "length" and len(c.token_ids) == LONG and engine.aborted == 0


def test_a_stopped_request_is_charged_only_its_tokens() -> None:
    async def timed(watch: Callable[[float], bool] | None) -> tuple[float, float]:
        engine = _engine(MODEL)
        start = time.perf_counter()
        try:
            if watch is None:
                await engine.generate(engine.tokenize(PROMPT), LONG_PARAMS, seed=4)
            else:
                await engine.generate_watched(engine.tokenize(PROMPT), LONG_PARAMS, watch=watch, seed=4)
        finally:
            await engine.close()
        return time.perf_counter() - start, engine.busy_seconds

    stopped, stopped_busy = asyncio.run(timed(_stop_at(9)))
    whole, whole_busy = asyncio.run(timed(None))
    assert 10 * MODEL.step_seconds <= stopped < whole and stopped_busy < whole_busy
    assert whole >= LONG * MODEL.step_seconds and stopped < whole / 2


def test_other_requests_keep_decoding_and_take_the_stopped_ones_slot() -> None:
    # Room for 2 sequences: the third request waits for a slot, which the watched one frees at its stop.
    engine = _engine(replace(MODEL, max_num_seqs=2))
    short = SamplingParams(n=1, max_tokens=10)
    done: dict[str, float] = {}

    async def timed(name: str, request: Awaitable[Generation], start: float) -> Generation:
        generation = await request
        done[name] = time.perf_counter() - start
        return generation

    async def go() -> tuple[Generation, Generation, Generation]:
        prompt = engine.tokenize(PROMPT)
        start = time.perf_counter()
        try:
            return await asyncio.gather(
                timed("watched", engine.generate_watched(prompt, LONG_PARAMS, watch=_stop_at(4)), start),
                timed("first", engine.generate(prompt, replace(LONG_PARAMS, logprobs=None)), start),
                timed("queued", engine.generate(prompt, short), start),
            )
        finally:
            await engine.close()

    watched, first, queued = asyncio.run(go())
    assert watched.completions[0].finish_reason == "abort" and len(watched.completions[0].token_ids) == 5
    assert [len(g.completions[0].token_ids) for g in (first, queued)] == [LONG, 10]
    # The queued request started at the watched one's stop (5 steps) and ended at ~15, while the first ran on
    # to 40; had the watched one held its slot to its sample's end (40), the queued one would end at ~50.
    assert done["watched"] < done["queued"] < done["first"]
    assert done["queued"] < 30 * MODEL.step_seconds


def test_a_watch_sees_tokens_as_they_decode() -> None:
    """A watch whose rule changes while the request runs (DeepConf online's consensus, reached by another trace)
    stops it at the token decoding then, not at the end of its sample."""
    engine = _engine(MODEL)
    settled = asyncio.Event()
    seen: list[float] = []

    def watch(confidence: float) -> bool:
        seen.append(confidence)
        return settled.is_set()

    async def other(prompt: list[int]) -> None:
        await engine.generate(prompt, SamplingParams(n=1, max_tokens=10))
        settled.set()

    async def go() -> Generation:
        prompt = engine.tokenize(PROMPT)
        try:
            watched, _ = await asyncio.gather(engine.generate_watched(prompt, LONG_PARAMS, watch=watch), other(prompt))
            return watched
        finally:
            await engine.close()

    (c,) = asyncio.run(go()).completions
    assert c.finish_reason == "abort" and 10 <= len(c.token_ids) < LONG and len(seen) == len(c.token_ids)


def test_a_watched_request_is_one_sample_with_top_logprobs_and_a_failing_watch_fails_it() -> None:
    engine = _engine(MODEL)

    def broken(confidence: float) -> bool:
        raise RuntimeError("watch failed")

    async def go() -> Generation:
        prompt = engine.tokenize(PROMPT)
        try:
            for bad in (SamplingParams(n=2, logprobs=5), SamplingParams(n=1, logprobs=0)):
                with pytest.raises(ValueError, match="one sample with top log-probs"):
                    await engine.generate_watched(prompt, bad, watch=lambda c: False)
            with pytest.raises(RuntimeError, match="watch failed"):
                await engine.generate_watched(prompt, LONG_PARAMS, watch=broken)
            return await engine.generate(prompt, LONG_PARAMS)  # the engine still serves
        finally:
            await engine.close()

    assert len(asyncio.run(go()).completions[0].token_ids) == LONG
