"""A latency-model engine: the Engine protocol, answered by a script and timed by a cost model. A SIMULATOR.

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
- a prefix cache of full blocks, reported as `cached_prompt_tokens` (at most the prompt length − 1).

Its script: a solution is 1-`max_steps` arithmetic steps (`"a + b = c\\n\\n"` padded with words to
`step_tokens` tokens on average), then `"The answer is c."` and EOS. Steps and answers are drawn from a
pool made once per engine (4,096 distinct steps), so answering costs microseconds per sample.

The timing model (rate mode): the engine is a separate device that keeps decoding while the harness runs,
as a GPU does. Sequences decode one token per step; a step takes `step_seconds + step_seconds_per_seq × b`
with b running sequences (at most `max_num_seqs`; the rest wait); a request's uncached prompt tokens cost
`1 / prefill_tokens_per_s` seconds each before its sequences decode. The engine advances by the wall clock,
whatever the event loop was doing, and hands a request back when its last sequence ends. `busy_seconds`
and `idle_seconds` say how long it had work and how long it waited for the harness.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ttscale.params import check_positive
from ttscale.schema import Completion, FinishReason, Generation, SamplingParams

EOS = 2
_OFFSET = 3
USER, ASSISTANT = "<|user|>", "<|assistant|>"
_WORDS = ("so", "we", "add", "the", "two", "numbers", "and", "carry", "one", "then", "check", "it")


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


@dataclass
class _Script:
    """Steps and answers drawn once: a sample is a few of them joined, so answering is cheap."""

    steps: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)


class CharTokenizer:
    """The tokenizer half of the Engine protocol for simulators: one token per character, EOS = 2."""

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        text = "".join(USER + m["content"] for m in messages)
        return self.tokenize(text + ASSISTANT if add_generation_prompt else text)

    def tokenize(self, text: str) -> list[int]:
        # The code points through the C-level UTF-32 codec: the harness's ceiling must not time a Python loop
        # of the simulator's own (this is its hottest function at zero cost).
        ids: list[int] = (np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32) + _OFFSET).tolist()
        return ids

    def detokenize(self, token_ids: Sequence[int]) -> str:
        if EOS in token_ids:
            return "".join("<eos>" if t == EOS else chr(t - _OFFSET) for t in token_ids)
        return (np.asarray(token_ids, dtype=np.uint32) - _OFFSET).tobytes().decode("utf-32-le")


class LatencyEngine(CharTokenizer):
    """The Engine protocol over a scripted policy and a `LatencyModel` (see the module docstring)."""

    def __init__(self, *, model: LatencyModel | None = None, seed: int = 0, max_steps: int = 4,
                 step_tokens: int = 48, max_model_len: int = 1 << 20) -> None:
        check_positive("max_steps", max_steps)
        check_positive("step_tokens", step_tokens)
        self.model = model or LatencyModel.zero_cost()
        self.rng = random.Random(seed)
        self.max_steps = max_steps
        self.config = _Config(max_model_len=max_model_len)
        self.requests = 0
        """Requests answered (calls of `generate`)."""
        self.sequences = 0
        """Sequences answered: Σ n over the requests. vLLM v1 runs a request with n samples as n child requests
        (`AsyncLLM.add_request` fans it out), so this is the request count in the engine's own terms."""
        self.generated_tokens = 0
        """Tokens returned (what the ledgers must add up to)."""
        self.busy_seconds = 0.0
        """Rate mode: wall time the engine had sequences to prefill or decode."""
        self.idle_seconds = 0.0
        """Rate mode: wall time it had none, between its first request and its last answer."""
        self._script = _make_script(self.rng, step_tokens=step_tokens)
        self._logprob_table = tuple(-0.5 * self.rng.random() for _ in range(1 << 15))
        self._blocks: set[int] = set()
        self._waiting: list[_Request] = []
        self._running: list[_Request] = []
        self._wake: asyncio.Event | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._carry = 0.0
        """Decode time spent towards a step not finished yet (a wake-up between steps loses nothing)."""

    # -- Engine protocol (the tokenizer half is CharTokenizer's) -----------------------------------
    def describe(self) -> dict[str, Any]:
        return {"backend": "latency-model simulator", "model": vars(self.model)}

    async def close(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
            self._loop_task = None

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        ids = self.tokenize(prompt) if isinstance(prompt, str) else prompt
        rng = random.Random(seed) if seed is not None else self.rng
        if params.max_tokens == 1 and params.logprobs:
            completions: tuple[Completion, ...] = tuple(_judge(rng) for _ in range(params.n))
        else:
            completions = tuple(self._sample(rng, params) for _ in range(params.n))
        cached = self._cache(ids)
        self.requests += 1
        self.sequences += params.n
        self.generated_tokens += sum(len(c.token_ids) for c in completions)
        if self.model.zero:
            await asyncio.sleep(0)  # requests awaited together are still in flight together
        else:
            await self._decode([len(c.token_ids) for c in completions], uncached=len(ids) - cached)
        return Generation(completions=completions, prompt_tokens=len(ids), cached_prompt_tokens=cached)

    # -- the script ---------------------------------------------------------------------------------
    def _sample(self, rng: random.Random, params: SamplingParams) -> Completion:
        script = self._script
        steps = [rng.choice(script.steps) for _ in range(rng.randint(1, self.max_steps))]
        text = "".join(steps) + rng.choice(script.answers)
        cut, eos = len(text), True
        finish: FinishReason = "stop"
        for stop in params.stop:
            at = text.find(stop)
            if 0 <= at < cut:
                cut, eos = at, False
        kept = text[:cut] + (text[cut:cut + _stop_len(text, cut, params.stop)] if not eos else "")
        tokens = self.tokenize(kept) + ([EOS] if eos else [])
        shown = text[:cut]
        if len(tokens) > params.max_tokens:
            tokens, finish = tokens[: params.max_tokens], "length"
            shown = self.detokenize([t for t in tokens if t != EOS])[: len(shown)]
        logprobs = self._noise(rng, len(tokens)) if params.logprobs is not None else None
        top = (tuple({self.detokenize([t]): lp} for t, lp in zip(tokens, logprobs, strict=True))
               if logprobs is not None and params.logprobs else None)
        return Completion(text=shown, token_ids=tuple(tokens), logprobs=logprobs, top_logprobs=top,
                          finish_reason=finish)

    def _noise(self, rng: random.Random, length: int) -> tuple[float, ...]:
        """`length` log-probs in (-0.5, 0]: a slice of one table drawn at start, at a random offset."""
        if length > len(self._logprob_table) // 2:
            return tuple(-0.5 * rng.random() for _ in range(length))
        at = rng.randrange(len(self._logprob_table) - length)
        return self._logprob_table[at : at + length]

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
    async def _decode(self, lengths: list[int], *, uncached: int) -> None:
        loop = asyncio.get_running_loop()
        request = _Request(remaining=[n for n in lengths if n > 0], done=loop.create_future(),
                           prefill=uncached / self.model.prefill_tokens_per_s)
        self._waiting.append(request)
        if self._wake is None:
            self._wake = asyncio.Event()
        self._wake.set()
        if self._loop_task is None or self._loop_task.done():
            self._loop_task = asyncio.ensure_future(self._scheduler())
        await request.done

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
        """Seconds until the next request is done, if nothing new arrives."""
        batch = sum(len(r.remaining) for r in self._running)
        prefill = sum(r.prefill for r in self._running)
        shortest = min((max(r.remaining, default=0) for r in self._running), default=0)
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
                r.remaining = [n - steps for n in r.remaining if n - steps > 0]
            if r.remaining:
                still.append(r)
            elif not r.done.done():
                r.done.set_result(None)
        self._running = still


@dataclass(frozen=True)
class _Config:
    max_model_len: int


def _stop_len(text: str, at: int, stops: Sequence[str]) -> int:
    return max((len(s) for s in stops if text.startswith(s, at)), default=0)


def _judge(rng: random.Random) -> Completion:
    # One token, as a judge asks for: "Y" / "N" (the char tokenizer has no one-token "Yes").
    p_yes = min(max(rng.random(), 1e-6), 1 - 1e-6)
    top = {"Y": math.log(p_yes), "N": math.log(1 - p_yes)}
    verdict = "Y" if p_yes >= 0.5 else "N"
    return Completion(text=verdict, token_ids=(ord(verdict) + _OFFSET,), logprobs=(top[verdict],),
                      top_logprobs=(top,), finish_reason="length")


def _make_script(rng: random.Random, *, step_tokens: int) -> _Script:
    # 4,096 distinct steps: siblings rarely repeat one another, as sampled steps rarely do (a harness cost
    # that is paid per distinct text, such as ETS's embeddings, is not flattered by the script).
    script = _Script()
    for _ in range(4096):
        a, b = rng.randint(1, 99), rng.randint(1, 99)
        c = a + b if rng.random() < 0.6 else a + b + rng.choice((-10, -1, 1, 10))
        core = f"{a} + {b} = {c}"
        target = rng.randint(step_tokens // 2, step_tokens * 3 // 2)
        words: list[str] = []
        while len(core) + sum(len(w) + 1 for w in words) < target:
            words.append(rng.choice(_WORDS))
        script.steps.append(" ".join([*words, core]) + "\n\n")
        script.answers.append(f"The answer is {c}.")
    return script
