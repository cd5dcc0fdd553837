"""Budget forcing: control how long a reasoning model thinks.

Muennighoff, Yang, Shi, Li, Fei-Fei, Hajishirzi, Zettlemoyer, Liang, Candès, Hashimoto, "s1: Simple
test-time scaling", arXiv:2501.19393 (2025), §3.1; reference code simplescaling/s1 (`eval/generate.py`).

Symbols: B_think the thinking budget in tokens (`thinking_budget`); W the most times the end of thinking is
suppressed (`waits`); m the length below which it is suppressed (`min_thinking`; none = every time, up to W:
s1's "ignore end-of-thinking W times"); the wait word w ("Wait"); the answer cue a ("Final Answer:").
Per chain (N chains in parallel, `n`):
1. think: generate from the prompt and the opened thinking block, at most B_think − used tokens, stopping at
   the end-of-thinking delimiter;
2. if the model ended its thinking by itself, with fewer than W waits so far and fewer than m tokens thought,
   append w and go to 1 (the thinking goes on from where it stopped);
3. otherwise — it ended and may stop, or the budget cut it — append the delimiter and a, and generate the
   answer (at most `answer_tokens`).
The thinking never passes B_think tokens, the forced words included. Chains are selected by majority vote.
Every request goes through the ledger: thinking and answer tokens are metered and counted apart.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

from ttscale.context import Context
from ttscale.params import check_positive, strategy
from ttscale.schema import Answer, Problem, Sample
from ttscale.selection import majority_vote
from ttscale.thinking import ThinkingFormat, ThinkingParams, answer_after, sampling, thinking_format


@dataclass(frozen=True, kw_only=True)
class BudgetForcingParams(ThinkingParams):
    """s1's budget forcing: a thinking budget, and "Wait" where the model would stop thinking too early."""

    thinking_budget: int = 1024
    """B_think: tokens the thinking may take at most (forced words included)."""
    waits: int = 0
    """W: times the end of thinking is replaced by the wait word at most (0 = never: the budget only caps)."""
    min_thinking: int | None = None
    """m: replace the end of thinking only while fewer tokens were thought; None = every time, up to W."""
    wait_word: str = "Wait"
    """What replaces the end of thinking (s1: "Wait")."""
    n: int = 1
    """Chains thinking in parallel, selected by majority vote."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("thinking_budget", self.thinking_budget)
        check_positive("n", self.n)
        check_positive("min_thinking", self.min_thinking, allow_none=True)
        if self.waits < 0:
            raise ValueError(f"waits must be ≥ 0, got {self.waits}")
        if not self.wait_word:
            raise ValueError("wait_word must be non-empty")


@strategy(BudgetForcingParams)
async def budget_forcing(problem: Problem, ctx: Context, p: BudgetForcingParams) -> Answer:
    fmt = thinking_format(ctx, p)
    chains = [c for c in await asyncio.gather(*(_chain(ctx, p, fmt) for _ in range(p.n))) if c is not None]
    samples = [sample for sample, _ in chains]
    prediction, votes = await asyncio.to_thread(majority_vote, samples)
    return Answer(prediction=prediction, samples=tuple(samples),
                  info={"thinking_budget": p.thinking_budget, "chains": [info for _, info in chains],
                        "votes": dict(votes), "think_close": fmt.close})


async def _chain(ctx: Context, p: BudgetForcingParams, fmt: ThinkingFormat) -> tuple[Sample, dict[str, Any]] | None:
    prefix = ctx.prompt() + ctx.engine.tokenize(fmt.open)
    thinking: list[int] = []  # the thought so far, as the next request continues it (delimiters left out)
    wait = ctx.engine.tokenize(p.wait_word)
    used = waits = 0
    ended_at: int | None = None  # tokens thought when the model first ended its thinking by itself
    cut = False
    while (left := p.thinking_budget - used) > 0:
        generation = await ctx.generate(prefix + thinking, sampling(p, max_tokens=left, stop=(fmt.close,)),
                                        phase="thinking")
        if not generation.completions:  # the problem's budget is spent
            break
        step = generation.completions[0]
        used += step.num_tokens
        thinking += ctx.engine.tokenize(step.text)
        if step.finish_reason != "stop":  # B_think (or the context) cut the thinking: the answer is forced
            cut = True
            break
        ended_at = used if ended_at is None else ended_at
        below_minimum = p.min_thinking is None or used < p.min_thinking
        if waits >= p.waits or not below_minimum or used + len(wait) > p.thinking_budget:
            break
        thinking += wait
        used += len(wait)
        waits += 1
    if not thinking and ctx.budget.exhausted:
        return None
    closed = prefix + thinking + ctx.engine.tokenize(fmt.close)
    answers = await answer_after(ctx, p, closed)
    if not answers:
        return None
    final = answers[0]
    sample = ctx.sample(final)  # the answer is read from the answer segment
    text = ctx.engine.detokenize(thinking) + fmt.close + p.answer_cue + final.text
    info = {"thinking_tokens": used, "waits": waits, "thinking_cut": cut, "ended_at": ended_at,
            "answer_tokens": final.num_tokens}
    return replace(sample, text=text, num_tokens=used + final.num_tokens), info
