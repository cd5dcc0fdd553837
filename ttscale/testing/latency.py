"""A latency-model engine: the AsyncEngine protocol, answered by a script and timed by a cost model. A SIMULATOR.

It is neither vLLM nor a model. It exists to measure the harness (strategies, ledger, tree, storage)
without a GPU: with `LatencyModel.zero_cost()` every request is answered at once, so what a run takes is
the harness alone (its ceiling); with a rate model (`LatencyModel.h100_1p5b()`, or your own) requests take
the time a continuously batching engine would, so the run's wall time shows what share the harness adds.
Never use it where a real engine is meant: its text is a script, its log-probs are random.

What it imitates of vLLM, because the harness relies on it (and `tests/testing/test_latency.py` checks it
against the real engine on the same requests):
- a tokenizer (one token per character, EOS = 2) and a chat prompt;
- `n` samples per request, `max_tokens` (finish "length"), stop strings (dropped from the text, kept in the
  token ids, finish "stop"), EOS kept in the token ids (finish "stop");
- log-probs (and top alternatives when `logprobs > 0`); a one-token request with top log-probs (a judge) is
  answered "Y" or "N" (random P(yes));
- DeepConf token confidences (`Completion.confidences`) when `logprobs > 0`: scripted, not derived from the
  random log-probs: each token's is 3 ± 0.5, `confidence_drop` lower in a sample that states a wrong sum (drawn
  from RNGs of their own, so the script's samples are the same with or without them);
- `generate_watched` (one sample streamed to `watch(confidence)`; True aborts it there, finish "abort", and only
  the tokens up to the stop come back and are counted), as ttscale's vLLM engine does with stock vLLM;
- a prefix cache of full blocks, reported as `cached_prompt_tokens` (at most the prompt length − 1).

Its script (`ttscale.testing.script`): a solution is 1-`max_steps` arithmetic steps (`"a + b = c\\n\\n"`
padded with words to `step_tokens` tokens on average), then `"The answer is c."` and EOS. Steps and answers
are drawn from a pool made once per engine (4,096 distinct steps), so answering costs microseconds per sample.

The timing model (rate mode): the engine is a separate device that keeps decoding while the harness runs,
as a GPU does. Sequences decode one token per step; a step takes `step_seconds + step_seconds_per_seq × b`
with b running sequences (at most `max_num_seqs`; the rest wait); a request's uncached prompt tokens cost
`1 / prefill_tokens_per_s` seconds each before its sequences decode. The engine advances by the wall clock,
whatever the event loop was doing, and hands a request back when its last sequence ends. A watched request is
shown its tokens as the steps decode them (the engine wakes every step while one runs) and leaves the batch
at the step where `watch` stops it: it is charged the decode steps of the tokens up to there, not of its
whole sample, and its slot goes to the next request. `busy_seconds` and `idle_seconds` say how long it had
work and how long it waited for the harness. At zero cost a watched sample is shown whole, at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ttscale.engine.base import check_watched
from ttscale.kit.params import check_positive
from ttscale.schema import Completion, FinishReason, Generation, SamplingParams
from ttscale.testing.script import ASSISTANT, EOS, OFFSET, USER, Script, first_stop, judge, stop_len


@dataclass(frozen=True, kw_only=True)
class LatencyModel:
    """How long the simulated engine takes; every rate in seconds or tokens per second."""

    step_seconds: float = 0.0
    """One decode step with one sequence running (0 with every other rate 0: the zero-cost engine)."""
    step_seconds_per_seq: float = 0.0
    """Added to a decode step per running sequence (decode is memory-bound: this grows slowly)."""
    prefill_tokens_per_s: float = math.inf
    """Uncached prompt tokens computed per second (inf: prefill is free)."""
    max_num_seqs: int = 256
    """Sequences decoded at once; the others wait (vLLM's max_num_seqs)."""
    block_size: int = 16
    """Prefix-cache block in tokens: only whole blocks of a prompt are served from the cache."""

    def __post_init__(self) -> None:
        if not (self.step_seconds >= 0 and self.step_seconds_per_seq >= 0 and self.prefill_tokens_per_s > 0):
            raise ValueError("step times must be ≥ 0 and prefill_tokens_per_s > 0, got "
                             f"{self.step_seconds}, {self.step_seconds_per_seq}, {self.prefill_tokens_per_s}")
        check_positive("max_num_seqs", self.max_num_seqs)
        check_positive("block_size", self.block_size)

    @property
    def zero(self) -> bool:
        return self.step_seconds == 0 and self.step_seconds_per_seq == 0 and math.isinf(self.prefill_tokens_per_s)

    @classmethod
    def zero_cost(cls) -> LatencyModel:
        """Every request answered at once: what a run takes is the harness alone."""
        return cls()

    @classmethod
    def h100_1p5b(cls) -> LatencyModel:
        """Rates of the order published for vLLM serving a 1.5B model on one H100 (an assumption to set
        against your own measurements): ~4 ms per decode step at batch 1 growing to ~10 ms at 256 sequences
        (~25,000 generated tokens/s), prefill ~60,000 tokens/s."""
        return cls(step_seconds=0.004, step_seconds_per_seq=0.000025, prefill_tokens_per_s=60_000.0)

    def step(self, running: int) -> float:
        return self.step_seconds + self.step_seconds_per_seq * running


@dataclass(frozen=True, kw_only=True)
class LatencyConfig:
    """What starts a `LatencyEngine` where an engine config is expected (`start_engine`, Ray workers)."""

    model: LatencyModel = field(default_factory=LatencyModel)
    """The cost model (zero-cost by default)."""
    seed: int = 0
    """Seed of the scripted policy."""
    max_steps: int = 4
    """Steps of a scripted solution at most."""

    async def start_engine(self) -> LatencyEngine:
        return LatencyEngine(model=self.model, seed=self.seed, max_steps=self.max_steps)


@dataclass
class _Request:
    remaining: list[int]
    """Tokens each sequence still has to decode."""
    done: asyncio.Future[None]
    prefill: float = 0.0
    """Seconds of prefill still owed before its sequences decode."""
    watch: Callable[[float], bool] | None = None
    """A watched request's stop rule (one sequence), shown each token's confidence as it is decoded."""
    confidences: Sequence[float] = ()
    shown: int = 0
    """Watched: tokens `watch` has seen."""
    stopped: int | None = None
    """Watched: the token `watch` stopped it at."""


class CharTokenizer:
    """The tokenizer half of the AsyncEngine protocol for simulators: one token per character, EOS = 2."""

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        text = "".join(USER + m["content"] for m in messages)
        return self.tokenize(text + ASSISTANT if add_generation_prompt else text)

    def tokenize(self, text: str) -> list[int]:
        # The code points through the C-level UTF-32 codec: the harness's ceiling must not time a Python loop
        # of the simulator's own (this is its hottest function at zero cost).
        ids: list[int] = (np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32) + OFFSET).tolist()
        return ids

    def detokenize(self, token_ids: Sequence[int]) -> str:
        if EOS in token_ids:
            return "".join("<eos>" if t == EOS else chr(t - OFFSET) for t in token_ids)
        return (np.asarray(token_ids, dtype=np.uint32) - OFFSET).tobytes().decode("utf-32-le")

    def cut(self, whole: Completion, at: int) -> Completion:
        """`whole` as generated up to token `at`, where its watch stopped it (a simulator's abort)."""
        end = at + 1
        tokens = whole.token_ids[:end]
        return Completion(
            text=self.detokenize([t for t in tokens if t != EOS])[: len(whole.text)], token_ids=tokens,
            logprobs=whole.logprobs[:end] if whole.logprobs is not None else None,
            top_logprobs=whole.top_logprobs[:end] if whole.top_logprobs is not None else None,
            finish_reason="abort", confidences=whole.confidences[:end] if whole.confidences is not None else None,
        )


class LatencyEngine(CharTokenizer):
    """The AsyncEngine protocol over a scripted policy and a `LatencyModel` (see the module docstring)."""

    def __init__(self, *, model: LatencyModel | None = None, seed: int = 0, max_steps: int = 4,
                 step_tokens: int = 48, max_model_len: int = 1 << 20, confidence_drop: float = 1.0) -> None:
        check_positive("max_steps", max_steps)
        check_positive("step_tokens", step_tokens)
        self.model = model or LatencyModel.zero_cost()
        self.rng = random.Random(seed)
        self._confidence_rng = random.Random(f"engine confidences {seed}")  # its own draws: see _generate
        self.max_steps = max_steps
        self.config = _Config(max_model_len=max_model_len)
        self.requests = 0
        """Requests answered (calls of `generate` and `generate_watched`)."""
        self.sequences = 0
        """Sequences answered: Σ n over the requests. vLLM v1 runs a request with n samples as n child requests
        (`AsyncLLM.add_request` fans it out), so this is the request count in the engine's own terms."""
        self.generated_tokens = 0
        """Tokens returned (what the ledgers must add up to)."""
        self.aborted = 0
        """Watched requests stopped mid-stream (`generate_watched`)."""
        self.busy_seconds = 0.0
        """Rate mode: wall time the engine had sequences to prefill or decode."""
        self.idle_seconds = 0.0
        """Rate mode: wall time it had none, between its first request and its last answer."""
        self._script = Script(self.rng, step_tokens=step_tokens, seed=seed, confidence_drop=confidence_drop)
        self._blocks: set[int] = set()
        self._waiting: list[_Request] = []
        self._running: list[_Request] = []
        self._wake: asyncio.Event | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._carry = 0.0
        """Decode time spent towards a step not finished yet (a wake-up between steps loses nothing)."""

    # -- AsyncEngine protocol (the tokenizer half is CharTokenizer's) -----------------------------------
    def describe(self) -> dict[str, Any]:
        return {"backend": "latency-model simulator", "model": vars(self.model)}

    async def close(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
            self._loop_task = None

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        return await self._generate(prompt, params, seed=seed)

    async def generate_watched(self, prompt: Any, params: SamplingParams, *, watch: Callable[[float], bool],
                               seed: int | None = None) -> Generation:
        """One sample, shown to `watch` token by token as it decodes; stopped at the first token it returns True
        for (finish "abort": the tokens up to that one come back and are counted, the engine spent no step on
        the rest)."""
        check_watched(params)
        return await self._generate(prompt, params, seed=seed, watch=watch)

    async def _generate(self, prompt: Any, params: SamplingParams, *, seed: int | None,
                        watch: Callable[[float], bool] | None = None) -> Generation:
        ids = self.tokenize(prompt) if isinstance(prompt, str) else prompt
        rng = random.Random(seed) if seed is not None else self.rng
        # The confidences' own draws: `rng`'s stream, and so the samples, are the same with or without them.
        sure = (random.Random(f"confidences {seed}") if seed is not None else self._confidence_rng
                ) if params.logprobs else None
        if params.max_tokens == 1 and params.logprobs:
            completions: tuple[Completion, ...] = tuple(judge(rng) for _ in range(params.n))
        else:
            completions = tuple(self._sample(rng, params, sure) for _ in range(params.n))
        cached = self._cache(ids)
        self.requests += 1
        self.sequences += params.n
        if watch is None:
            self.generated_tokens += sum(len(c.token_ids) for c in completions)
        stop: int | None = None
        if self.model.zero:
            await asyncio.sleep(0)  # requests awaited together are still in flight together
            if watch is not None:
                stop = first_stop(watch, completions[0].confidences or ())
        else:
            stop = await self._decode([len(c.token_ids) for c in completions], uncached=len(ids) - cached,
                                      watch=watch, confidences=completions[0].confidences or ())
        if stop is not None:
            completions = (self.cut(completions[0], stop),)
            self.aborted += 1
        if watch is not None:  # what it returns: the tokens up to its stop
            self.generated_tokens += sum(len(c.token_ids) for c in completions)
        return Generation(completions=completions, prompt_tokens=len(ids), cached_prompt_tokens=cached)

    # -- the script ---------------------------------------------------------------------------------
    def _sample(self, rng: random.Random, params: SamplingParams, sure: random.Random | None) -> Completion:
        script = self._script
        steps = [rng.choice(script.steps) for _ in range(rng.randint(1, self.max_steps))]
        text = "".join(steps) + rng.choice(script.answers)
        cut, eos = len(text), True
        finish: FinishReason = "stop"
        for stop in params.stop:
            at = text.find(stop)
            if 0 <= at < cut:
                cut, eos = at, False
        kept = text[:cut] + (text[cut:cut + stop_len(text, cut, params.stop)] if not eos else "")
        tokens = self.tokenize(kept) + ([EOS] if eos else [])
        shown = text[:cut]
        if len(tokens) > params.max_tokens:
            tokens, finish = tokens[: params.max_tokens], "length"
            shown = self.detokenize([t for t in tokens if t != EOS])[: len(shown)]
        logprobs = script.noise(rng, len(tokens)) if params.logprobs is not None else None
        # One token decoded without the tokenizer's numpy round trip (a DeepConf row asks for every token's).
        top = (tuple({"<eos>" if t == EOS else chr(t - OFFSET): lp} for t, lp in zip(tokens, logprobs, strict=True))
               if logprobs is not None and params.logprobs else None)
        confidences = None
        if top is not None and sure is not None:
            confidences = script.confidences(sure, len(tokens), wrong=script.states_wrong(steps, len(tokens)))
        return Completion(text=shown, token_ids=tuple(tokens), logprobs=logprobs, top_logprobs=top,
                          finish_reason=finish, confidences=confidences)

    # -- prefix cache -------------------------------------------------------------------------------
    def _cache(self, ids: Sequence[int]) -> int:
        """Whole blocks of `ids` seen before (a chain of block hashes: linear in the prompt)."""
        size, cached, chain, hit = self.model.block_size, 0, 0, True
        for end in range(size, len(ids) + 1, size):
            chain = hash((chain, tuple(ids[end - size:end])))
            if hit and chain in self._blocks and end < len(ids):  # the last token is always computed
                cached = end
            else:
                hit = False
            self._blocks.add(chain)
        return cached

    # -- the timing model ---------------------------------------------------------------------------
    async def _decode(self, lengths: list[int], *, uncached: int, watch: Callable[[float], bool] | None = None,
                      confidences: Sequence[float] = ()) -> int | None:
        """Wait for the request's sequences to decode; a watched one's stop (the token index), if it was."""
        loop = asyncio.get_running_loop()
        request = _Request(remaining=[n for n in lengths if n > 0], done=loop.create_future(),
                           prefill=uncached / self.model.prefill_tokens_per_s, watch=watch, confidences=confidences)
        self._waiting.append(request)
        if self._wake is None:
            self._wake = asyncio.Event()
        self._wake.set()
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.ensure_future(self._scheduler())
        await request.done
        return request.stopped

    async def _scheduler(self) -> None:
        assert self._wake is not None
        last = time.perf_counter()
        while True:
            if not self._running and not self._waiting:
                self._wake.clear()
                await self._wake.wait()
                now = time.perf_counter()
                self.idle_seconds += now - last
                last = now
            self._admit()
            wait = self._next_event()
            self._wake.clear()
            if wait > 0:
                with contextlib.suppress(TimeoutError):  # the next request is done: no new one came first
                    await asyncio.wait_for(self._wake.wait(), timeout=wait)
            now = time.perf_counter()
            self._advance(now - last)
            self.busy_seconds += now - last
            last = now

    def _admit(self) -> None:
        running = sum(len(r.remaining) for r in self._running)
        while self._waiting and running + len(self._waiting[0].remaining) <= self.model.max_num_seqs:
            request = self._waiting.pop(0)
            self._running.append(request)
            running += len(request.remaining)
        if not self._running and self._waiting:  # a request wider than the batch runs alone
            self._running.append(self._waiting.pop(0))

    def _next_event(self) -> float:
        """Seconds until the next request is done, if nothing new arrives (a watched one may stop at any step:
        while one runs, the next step)."""
        batch = sum(len(r.remaining) for r in self._running)
        prefill = sum(r.prefill for r in self._running)
        shortest = min((1 if r.watch is not None else max(r.remaining, default=0) for r in self._running),
                       default=0)
        return prefill + shortest * self.model.step(batch)

    def _advance(self, elapsed: float) -> None:
        """Spend `elapsed` seconds: prefill first (it stalls the batch, as a prefill step does), then steps."""
        owed = sum(r.prefill for r in self._running)
        paid = min(owed, elapsed)
        for r in self._running:
            share = paid * (r.prefill / owed) if owed else 0.0
            r.prefill -= share
        elapsed = elapsed - paid + self._carry
        batch = sum(len(r.remaining) for r in self._running if r.prefill <= 1e-12)
        step = self.model.step(batch)
        steps = int(elapsed / step + 1e-9) if step > 0 else (1 << 30)
        self._carry = max(0.0, elapsed - steps * step) if step > 0 else 0.0
        still = []
        for r in self._running:
            if r.prefill <= 1e-12:
                if r.watch is not None and self._show(r, steps):
                    r.remaining = []  # stopped: it leaves the batch, its later tokens never decoded
                r.remaining = [n - steps for n in r.remaining if n - steps > 0]
            if r.remaining:
                still.append(r)
            elif not r.done.done():
                r.done.set_result(None)
        self._running = still

    @staticmethod
    def _show(request: _Request, steps: int) -> bool:
        """Show a watched request the tokens of `steps` more decode steps; whether it is stopped (a watch that
        raises stops it too, and its caller gets the error)."""
        assert request.watch is not None
        start, end = request.shown, min(request.shown + steps, len(request.confidences))
        request.shown = end
        try:
            at = first_stop(request.watch, request.confidences, start=start, end=end)
        except Exception as error:
            request.done.set_exception(error)
            return True
        request.stopped = at
        return at is not None


@dataclass(frozen=True)
class _Config:
    max_model_len: int
