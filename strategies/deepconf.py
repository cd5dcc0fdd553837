"""DeepConf: votes weighted and filtered by the traces' own confidence; online, traces stopped when it falls.

Fu, Wang, Tian, Zhao, "Deep Think with Confidence", arXiv:2508.15260 (2025); reference code
facebookresearch/deepconf (`deepconf-offline.py`, `deepconf-online.py`, `analysis_offline.py`). Its online
mode needs a patched vLLM; here the same stop is made on stock vLLM by streaming each trace and aborting it.

Symbols (ttscale.confidence): C_i token confidence, C_G group confidence over a window of n tokens (`window`),
C(t) a trace's score (`score`: mean, lowest_group = C_least, bottom_10, tail); η the share of traces kept
(`eta`: 0.1 is the paper's DeepConf-low, 0.9 DeepConf-high); N traces (`n`, None = what the budget pays for).
Offline (`mode="offline"`):
1. sample N traces with the top-k log-probs of each token (`top_k`);
2. keep the traces whose C(t) is in the top η (≥ the (1 − η) percentile of C over the N traces);
3. answer by the vote of the kept traces, each weighted by its C(t).
Online (`mode="online"`, C = C_least as in the paper's Algorithm 2):
1. warm-up: N_init traces (`warmup`), generated in full; the stopping threshold s is the (1 − η) percentile of
   their C_least; those with C_least ≥ s vote, weighted by C_least;
2. further traces, `parallel` at a time, each streamed: the moment a full window's C_G < s the trace is aborted
   in the engine (its tokens are paid, it does not vote); a finished trace votes with weight C_least;
3. sampling ends when the leading answer's share of the vote weight β reaches τ (`consensus`) — traces still
   running are then aborted too — or when N traces were drawn or the budget cannot pay for another.
A trace shorter than the window has one group (its mean): online it is never stopped, as in the reference.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ttscale.capabilities import Derived, EntryParams, Replay, Stored, first, replay_pool, varies
from ttscale.confidence import TRACE_SCORES, WINDOW, GroupWatch, TraceScore, keep_top, percentile, trace_score
from ttscale.context import Context
from ttscale.params import check_positive, check_range, strategy
from ttscale.sampling import PoolParams, sample_pool
from ttscale.schema import Answer, Completion, Problem, Sample, SamplingParams
from ttscale.selection import weighted_vote


@dataclass(frozen=True, kw_only=True)
class DeepConfParams(PoolParams):
    mode: Literal["offline", "online"] = "offline"
    """`offline`: N traces, then filter and vote; `online`: warm-up, then traces stopped by confidence."""
    eta: float = 0.1
    """Share of traces kept (offline) or the warm-up percentile that sets the stop (online): 0.1 = DeepConf-low,
    0.9 = DeepConf-high."""
    score: TraceScore = "lowest_group"
    """Offline trace confidence: mean, lowest_group, bottom_10 or tail (online always uses lowest_group)."""
    window: int = WINDOW
    """Tokens per group (and of the tail): 2,048 in the paper, for traces of thousands of tokens."""
    top_k: int = 20
    """Candidates per token whose log-probs make its confidence (the reference asks vLLM for 20)."""
    warmup: int = 16
    """Online: warm-up traces N_init that set the threshold."""
    consensus: float = 0.95
    """Online: τ, the leading answer's share of the vote weight at which sampling ends."""
    parallel: int = 8
    """Online: traces in flight at once after the warm-up (1 = exactly reproducible order of decisions)."""

    @property
    def streams(self) -> bool:
        """Online traces are streamed and aborted mid-way: a served model (--backend openai) cannot yet."""
        return self.mode == "online"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.mode not in ("offline", "online"):
            raise ValueError(f"mode must be offline or online, got {self.mode!r}")
        check_range("eta", self.eta, 0, 1, low_open=True)
        if self.score not in TRACE_SCORES:
            raise ValueError(f"score must be one of {', '.join(TRACE_SCORES)}, got {self.score!r}")
        check_positive("window", self.window)
        check_range("top_k", self.top_k, 1, 20)
        check_positive("warmup", self.warmup)
        check_range("consensus", self.consensus, 0, 1, low_open=True)
        check_positive("parallel", self.parallel)
        if self.mode == "online" and self.n is not None and self.n < self.warmup:
            raise ValueError(f"n must be ≥ warmup ({self.warmup}) online, got {self.n}")


def select_offline(samples: Sequence[Sample], p: DeepConfParams) -> tuple[str | None, list[Sample], dict[str, Any]]:
    """Steps 2-3 of offline DeepConf over stored samples (a run's, or a replayed pool's): (prediction, the samples
    scored by C(t), info). Shared with ttscale.sweeps.replay, which re-scores a stored pool at another η."""
    scores = [trace_score(s.confidences or (), score=p.score, window=p.window, tail=p.window) for s in samples]
    scored = [replace(s, score=c) for s, c in zip(samples, scores, strict=True)]
    kept = keep_top(scores, eta=p.eta)
    prediction, votes = weighted_vote([scored[i] for i in kept])
    threshold = min((c for i in kept if (c := scores[i]) is not None), default=None)
    return prediction, scored, {"n": len(samples), "kept": len(kept), "threshold": threshold, "votes": dict(votes)}


def derive(stored: Stored) -> Derived | str:
    """Offline DeepConf re-scores its stored pool: every trace keeps its token confidences."""
    p = stored.params
    if p.mode != "offline":
        return "online traces were stopped by their own run's threshold"
    taken = replay_pool(stored.ledger, p, [s.num_tokens for s in stored.samples], prompt_tokens=stored.prompt_tokens,
                        max_model_len=stored.max_model_len)
    if isinstance(taken, str):
        return taken
    if any(s.confidences is None for s in stored.samples[:taken]):
        return "the source's samples carry no token confidences"
    prediction, kept, info = select_offline(stored.samples[:taken], p)
    return Derived(prediction=prediction, samples=kept, info={**info, "mode": "offline"})


def replays(entry: EntryParams, budgets: int) -> bool:
    """Any η, trace score or smaller budget of an offline entry replays from one pool; online traces were stopped
    by their own run's threshold."""
    return entry.get("mode", ["offline"]) == ["offline"] and (budgets > 1 or varies(entry, "eta", "score"))


@strategy(DeepConfParams, replay=Replay(derive=derive, varied=("eta", "score"), applies=replays,
                                        source=first("eta", "score")))
async def deepconf(problem: Problem, ctx: Context, p: DeepConfParams) -> Answer:
    if p.mode == "offline":
        completions = await sample_pool(ctx, p, logprobs=p.top_k)
        _check_confidences(completions)
        samples = [ctx.sample(c, confidences=True) for c in completions]
        prediction, samples, info = await asyncio.to_thread(select_offline, samples, p)
        return Answer(prediction=prediction, samples=tuple(samples), info={"mode": "offline", **info})
    return await _online(ctx, p)


async def _online(ctx: Context, p: DeepConfParams) -> Answer:
    prompt = ctx.prompt()
    one = SamplingParams(n=1, temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_tokens, logprobs=p.top_k)
    limit = p.n if p.n is not None else 1 << 30

    # 1. Warm-up: N_init whole traces in one request; s from their C_least.
    warm = await ctx.generate(prompt, replace(one, n=min(p.warmup, limit)))
    _check_confidences(warm.completions)
    least = [trace_score(c.confidences or (), window=p.window) or 0.0 for c in warm.completions]
    threshold = percentile(least, 100 * (1 - p.eta)) if least else None
    samples = [ctx.sample(c, score=w, confidences=True) for c, w in zip(warm.completions, least, strict=True)]
    voters = [s for s in samples if threshold is not None and s.score is not None and s.score >= threshold]
    settled = asyncio.Event()  # read by every running trace's stop rule
    if threshold is None or await _share(voters) >= p.consensus:
        settled.set()
    drawn = len(samples)
    stopped = {"threshold": 0, "consensus": 0}

    # 2-3. Streamed traces, stopped below s; no new one once the vote is settled or nothing more is paid for.
    async def worker() -> None:
        nonlocal drawn
        while not settled.is_set() and drawn < limit and ctx.ledger.affordable_samples(p.max_tokens) >= 1:
            group = GroupWatch(window=p.window)

            def stop(confidence: float, group: GroupWatch = group) -> bool:
                c_g = group.add(confidence)
                return settled.is_set() or (c_g is not None and threshold is not None and c_g < threshold)

            drawn += 1  # counted against N before its request is sent: the workers never overshoot it
            generation = await ctx.generate(prompt, one, watch=stop)
            if not generation.completions:
                return
            trace = generation.completions[0]
            weight = trace_score(trace.confidences or (), window=p.window) or 0.0
            cut = trace.finish_reason == "abort"
            if cut:
                below = group.lowest is not None and threshold is not None and group.lowest < threshold
                stopped["threshold" if below else "consensus"] += 1
            samples.append(ctx.sample(trace, score=weight, confidences=True, stopped=cut))
            if not cut:
                voters.append(samples[-1])
                if await _share(voters) >= p.consensus:
                    settled.set()

    await asyncio.gather(*(worker() for _ in range(p.parallel)))
    prediction, votes = await asyncio.to_thread(weighted_vote, voters)
    info = {"mode": "online", "threshold": threshold, "warmup": len(warm.completions), "n": len(samples),
            "voters": len(voters), "stopped": stopped, "consensus": round(await _share(voters), 4),
            "votes": dict(votes)}
    return Answer(prediction=prediction, samples=tuple(samples), info=info)


async def _share(voters: Sequence[Sample]) -> float:
    """β: the leading answer's share of the vote weight (0 with no vote)."""
    _, votes = await asyncio.to_thread(weighted_vote, list(voters))  # a symbolic merge waits on the grader
    total = sum(votes.values())
    return max(votes.values()) / total if total > 0 else 0.0


def _check_confidences(completions: Sequence[Completion]) -> None:
    if any(c.confidences is None for c in completions):
        raise ValueError("the engine returned no top log-probs: deepconf needs them for its token confidences")
