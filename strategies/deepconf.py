"""DeepConf: votes weighted and filtered by the traces' own confidence; online, traces stopped when it falls.

Fu, Wang, Tian, Zhao, "Deep Think with Confidence", arXiv:2508.15260 (2025); reference code
facebookresearch/deepconf (`deepconf/utils.py`, `deepconf/wrapper.py`; the first release's `deepconf-online.py`).
Its online mode needs a patched vLLM; here the same stop is made on stock vLLM by streaming each trace and aborting it.

Symbols (ttscale.engine.confidence): C_i token confidence, C_G group confidence over a window of n tokens (`window`),
C(t) a trace's score (`score`: mean, lowest_group = C_least, bottom_10, tail); η the share of traces kept
(`eta`: 0.1 is the paper's DeepConf-low, 0.9 DeepConf-high); N traces (`n`, None = what the budget pays for).
Offline (`mode="offline"`), as the reference's `compute_all_voting_results` (`deepconf/utils.py`):
1. sample N traces with the top-k log-probs of each token (`top_k`);
2. keep only the traces that state an answer, then of those the ones whose C(t) is in the top η (≥ the (1 − η)
   percentile of C over the answered traces: a confident trace without an answer neither votes nor raises the bar);
3. answer by the vote of the kept traces, each weighted by its C(t).
Online (`mode="online"`, C = C_least as in the paper's Algorithm 2), two settings (`sampling`):
1. warm-up: N_init traces (`warmup`), generated in full; the stopping threshold s is the (1 − η) percentile of
   their C_least;
2. further traces, `parallel` at a time, each streamed: the moment a full window's C_G < s the trace is aborted
   in the engine (its tokens are paid, it does not vote). A finished trace whose C_least is below s is dropped
   from the vote afterwards, as the reference does: a trace shorter than the window has one group (its mean) and
   is never aborted, only dropped; every other finished trace votes with weight C_least;
3. `sampling="reference"` (the default; facebookresearch/deepconf `wrapper.py` `_deepthink_online`): no consensus
   stop — all N traces are drawn (or what the budget pays for), and the vote is the warm-up traces with C_least ≥ s
   plus the final traces neither aborted nor dropped.
   `sampling="adaptive"` (the paper's Algorithm 2 adaptive sampling, which the reference code does not have):
   V holds every warm-up trace with an answer (weight C_least) and every final trace that finished above s; after
   each final trace, β = the leading answer's share of V's weight; sampling ends when β ≥ τ (`consensus`) with at
   least `min_voters` traces in V (traces still running are then aborted), or when N traces were drawn or the
   budget cannot pay for another. The answer is V's weighted vote.
Each problem's info records the voters, the traces aborted by confidence (`stopped.threshold`) and by the
consensus stop (`stopped.consensus`), the short traces dropped (`dropped`), whether the consensus stopped sampling
(`consensus_stop`) and how many traces voted at that moment (`voters_at_stop`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ttscale.blocks.sampling import PoolParams, sample_pool
from ttscale.engine.confidence import TRACE_SCORES, WINDOW, GroupWatch, TraceScore, keep_top, percentile, trace_score
from ttscale.kit.capabilities import Derived, EntryParams, Replay, Stored, first, replay_pool, varies
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range, strategy
from ttscale.kit.selection import weighted_vote
from ttscale.schema import Answer, Completion, Problem, Sample, SamplingParams


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
    sampling: Literal["reference", "adaptive"] = "reference"
    """Online: `reference` draws every trace, as the reference code does (no consensus stop); `adaptive` is the
    paper's Algorithm 2, which ends sampling at consensus (see the module doc)."""
    consensus: float = 0.95
    """Online, `adaptive` only: τ, the leading answer's share of V's weight at which sampling ends (the paper's
    0.95)."""
    min_voters: int = 4
    """Online, `adaptive` only: the fewest traces in V before β may end sampling. The paper's V starts with all
    N_init = 16 warm-up traces; this keeps a β of 1 over one or two voters (warm-up traces without an answer, a
    small warm-up) from reading as consensus. Our choice, not the paper's: 4 is the smallest warm-up it uses
    anywhere here."""
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
        if self.sampling not in ("reference", "adaptive"):
            raise ValueError(f"sampling must be reference or adaptive, got {self.sampling!r}")
        check_range("consensus", self.consensus, 0, 1, low_open=True)
        check_positive("min_voters", self.min_voters)
        check_positive("parallel", self.parallel)
        if self.mode == "online" and self.n is not None and self.n < self.warmup:
            raise ValueError(f"n must be ≥ warmup ({self.warmup}) online, got {self.n}")


def select_offline(samples: Sequence[Sample], p: DeepConfParams) -> tuple[str | None, list[Sample], dict[str, Any]]:
    """Steps 2-3 of offline DeepConf over stored samples (a run's, or a replayed pool's): (prediction, the samples
    scored by C(t), info). Shared with ttscale.sweeps.replay, which re-scores a stored pool at another η."""
    scores = [trace_score(s.confidences or (), score=p.score, window=p.window, tail=p.window) for s in samples]
    scored = [replace(s, score=c) for s, c in zip(samples, scores, strict=True)]
    # The reference filters the traces that have an answer (`valid_traces`) before it takes the percentile.
    answered = [i for i, s in enumerate(samples) if s.answer]
    kept = [answered[j] for j in keep_top([scores[i] for i in answered], eta=p.eta)]
    prediction, votes = weighted_vote([scored[i] for i in kept])
    # The threshold the reference records: the (1 - η) percentile of the answered traces' scores (a kept trace sits
    # at or above it; the lowest kept score is only where the percentile falls on a trace).
    answered_scores = [c for i in answered if (c := scores[i]) is not None]
    threshold = percentile(answered_scores, 100 * (1 - p.eta)) if answered_scores else None
    return prediction, scored, {"n": len(samples), "answered": len(answered), "kept": len(kept),
                                "threshold": threshold, "votes": dict(votes)}


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
    adaptive = p.sampling == "adaptive"

    # 1. Warm-up: N_init whole traces in one request; s from their C_least.
    warm = await ctx.generate(prompt, replace(one, n=min(p.warmup, limit)))
    _check_confidences(warm.completions)
    least = [trace_score(c.confidences or (), window=p.window) or 0.0 for c in warm.completions]
    threshold = percentile(least, 100 * (1 - p.eta)) if least else None
    samples = [ctx.sample(c, score=w, confidences=True) for c, w in zip(warm.completions, least, strict=True)]
    # The paper's V holds every warm-up trace; the reference votes only those at or above s.
    voters = [s for s in samples
              if s.answer and (adaptive or (threshold is not None and (s.score or 0.0) >= threshold))]
    settled = asyncio.Event()  # read by every running trace's stop rule
    if threshold is None:
        settled.set()
    drawn = len(samples)
    stopped = {"threshold": 0, "consensus": 0}
    dropped = 0
    at_stop: int | None = None

    # 2-3. Streamed traces, stopped below s; no new one once the vote is settled or nothing more is paid for.
    async def worker() -> None:
        nonlocal drawn, dropped, at_stop
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
            # A finished trace below s is dropped afterwards, as the reference marks it `gconf_threshold`: only one
            # shorter than the window can be (its one group, its mean, was never watched). The watch's own lowest
            # group decides for a longer one, so that a float's last bit cannot drop a trace the stop let through.
            c_least = group.lowest if group.lowest is not None else weight
            if not cut and threshold is not None and c_least < threshold:
                dropped += 1
            elif not cut and samples[-1].answer:
                voters.append(samples[-1])
            if adaptive and not settled.is_set() and len(voters) >= p.min_voters and (
                    await _share(voters) >= p.consensus):
                at_stop = len(voters)
                settled.set()

    await asyncio.gather(*(worker() for _ in range(p.parallel)))
    prediction, votes = await asyncio.to_thread(weighted_vote, voters)
    info = {"mode": "online", "sampling": p.sampling, "threshold": threshold, "warmup": len(warm.completions),
            "n": len(samples), "voters": len(voters), "stopped": stopped, "dropped": dropped,
            "consensus": round(await _share(voters), 4), "consensus_stop": at_stop is not None,
            "voters_at_stop": at_stop, "votes": dict(votes)}
    return Answer(prediction=prediction, samples=tuple(samples), info=info)


async def _share(voters: Sequence[Sample]) -> float:
    """β: the leading answer's share of the vote weight (0 with no vote)."""
    _, votes = await asyncio.to_thread(weighted_vote, list(voters))  # a symbolic merge waits on the grader
    total = sum(votes.values())
    return max(votes.values()) / total if total > 0 else 0.0


def _check_confidences(completions: Sequence[Completion]) -> None:
    if any(c.confidences is None for c in completions):
        raise ValueError("the engine returned no top log-probs: deepconf needs them for its token confidences")
