"""Budget forcing: control how long a reasoning model thinks.

Muennighoff, Yang, Shi, Li, Fei-Fei, Hajishirzi, Zettlemoyer, Liang, Candès, Hashimoto, "s1: Simple
test-time scaling", arXiv:2501.19393 (2025), §3.1; reference code simplescaling/s1 (its lm-evaluation-harness
fork, `eval/lm-evaluation-harness/lm_eval/models/vllm_causallms.py`, `_model_generate`).

Symbols: B_think the thinking budget in tokens (`thinking_budget`); W the most times the end of thinking is
suppressed (`waits`); m the length below which it is suppressed (`min_thinking`; none = every time, up to W:
s1's "ignore end-of-thinking W times"); the wait word w ("Wait"); the answer cue a ("Final Answer:").
Per chain (N chains in parallel, `n`):
1. think: generate from the prompt and the opened thinking block, at most B_think − (tokens in the block)
   tokens, stopping at the end-of-thinking delimiter;
2. if the model ended its thinking by itself, with fewer than W waits so far and fewer than m tokens thought,
   append w and go to 1 (the thinking goes on from where it stopped);
3. if it ended and may stop: append the delimiter; if the budget cut it: append a newline (unless the thought
   ends with one, or the delimiter begins with one), the delimiter and a — s1's cue, which keeps a model that
   was cut off from thinking on in its answer;
4. generate the answer (at most `answer_tokens`).
The thinking block never passes B_think tokens, the forced words included (s1 caps the thought it forced words
into). Chains are selected by majority vote. Every request goes through the ledger: thinking and answer tokens
are metered and counted apart. Tokens are counted as the ledger meters them: a chain's `thinking_tokens` and
its sample's `num_tokens` are what the model generated (its share of the ledger's `thinking_tokens` and
`generated_tokens`); the forced words are prompt tokens of the request after them, counted apart as
`forced_tokens` in the chain's info and in the ledger. s1's thought length is `thinking_tokens + forced_tokens`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Any

from ttscale.blocks.thinking import ThinkingFormat, ThinkingParams, answer_after, closing, sampling, thinking_format
from ttscale.kit.capabilities import Derived, EntryParams, Replay, Stored, largest
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, strategy
from ttscale.kit.selection import majority_vote
from ttscale.schema import Answer, Problem, Sample


@dataclass(frozen=True, kw_only=True)
class BudgetForcingParams(ThinkingParams):
    """s1's budget forcing: a thinking budget, and "Wait" where the model would stop thinking too early."""

    thinking_budget: int = 1024
    """B_think: tokens the thinking block may hold at most (forced words included)."""
    waits: int = 0
    """W: times the end of thinking is replaced by the wait word at most (0 = never: the budget only caps)."""
    min_thinking: int | None = None
    """m: replace the end of thinking only while fewer tokens were thought; None = every time, up to W (needs
    W ≥ 1)."""
    wait_word: str = "Wait"
    """What replaces the end of thinking (s1: "Wait")."""
    answer_cue: str = "\\nFinal Answer: "
    """Text after the end of thinking when the budget cut the thinking, before the answer (s1's cue); a model
    that ended its thinking by itself answers after the delimiter alone, as in s1."""
    n: int = 1
    """Chains thinking in parallel, selected by majority vote."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("thinking_budget", self.thinking_budget)
        check_positive("n", self.n)
        check_positive("min_thinking", self.min_thinking, allow_none=True)
        if self.waits < 0:
            raise ValueError(f"waits must be ≥ 0, got {self.waits}")
        if self.min_thinking is not None and self.waits == 0:  # m only says when a wait is forced: none are
            raise ValueError(f"min_thinking needs waits ≥ 1, got min_thinking={self.min_thinking} with waits=0 "
                             f"(give waits ≥ 1, or leave min_thinking unset)")
        if not self.wait_word:
            raise ValueError("wait_word must be non-empty")


def derive(stored: Stored) -> Derived | str:
    """The source's record at a smaller thinking budget, when every chain ended its thinking by itself within that
    budget and nothing was forced (the same prefix, the same answer); else why not (the chain would be cut)."""
    p, source = stored.params, stored.record
    chains = (source.get("info") or {}).get("chains") or []
    ledger = source.get("ledger") or {}
    if len(chains) != p.n or len(stored.samples) != p.n:
        return "the source has another number of chains"
    for chain in chains:
        if chain.get("waits") or chain.get("thinking_cut") or chain.get("ended_at") is None:
            return "a chain was cut or forced"
        if chain["thinking_tokens"] > p.thinking_budget:
            return f"a chain thought {chain['thinking_tokens']} tokens, past {p.thinking_budget}"
    if float(ledger.get("spent", 0.0)) > stored.budget.limit or stored.budget.unit != "tokens":
        return "the source spent more than this budget"
    info = {**source["info"], "thinking_budget": p.thinking_budget}
    kept = {**ledger, **({"budget": stored.budget.limit} if "budget" in ledger else {})}
    return Derived(prediction=source.get("prediction"), samples=stored.samples, info=info, ledger=kept)


def replays(entry: EntryParams, budgets: int) -> bool:
    """Smaller thinking budgets replay when nothing is forced (waits 0)."""
    return len(entry.get("thinking_budget", ())) > 1 and entry.get("waits", ["0"]) == ["0"]


@strategy(BudgetForcingParams, replay=Replay(derive=derive, varied=("thinking_budget",), applies=replays,
                                             source=largest("thinking_budget"), partial=True))
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
    used = waits = 0  # generated thinking tokens; forced words
    ended_at: int | None = None  # tokens thought when the model first ended its thinking by itself
    cut = True  # until the model ends its thinking and may stop: a budget that ran out first cut it
    while (left := p.thinking_budget - used - waits * len(wait)) > 0:
        generation = await ctx.generate(prefix + thinking, sampling(p, max_tokens=left, stop=(fmt.close,)),
                                        phase="thinking")
        if not generation.completions:  # the problem's budget is spent
            break
        step = generation.completions[0]
        used += step.num_tokens
        thinking += ctx.engine.tokenize(step.text)
        if step.finish_reason != "stop":  # B_think (or the context) cut the thinking: the answer is forced
            break
        ended_at = used if ended_at is None else ended_at
        below_minimum = p.min_thinking is None or used < p.min_thinking
        # A forced word needs room for itself and at least one token thought after it (as s1 forces one only while
        # tokens are left to generate): one that filled B_think exactly forced a cut thought, no continuation.
        if waits >= p.waits or not below_minimum or p.thinking_budget - used - waits * len(wait) <= len(wait):
            cut = False
            break
        thinking += wait
        waits += 1
        ctx.ledger.tally("forced_tokens", len(wait))  # prompt tokens of the next request, not generated ones
    if not thinking and ctx.ledger.exhausted:
        return None
    thought = ctx.engine.detokenize(thinking)
    # s1 closes a cut thought on a line of its own and cues the answer; a finished one gets the delimiter alone.
    ending = closing(thought, fmt.close) if cut else fmt.close
    answers = await answer_after(ctx, p, prefix + thinking + ctx.engine.tokenize(ending), cue=cut)
    if not answers:
        return None
    final = answers[0]
    sample = ctx.sample(final)  # the answer is read from the answer segment
    forced = waits * len(wait)
    text = thought + ending + (p.answer_cue if cut else "") + final.text
    info = {"thinking_tokens": used, "forced_tokens": forced, "waits": waits, "thinking_cut": cut,
            "ended_at": ended_at, "answer_tokens": final.num_tokens}
    return replace(sample, text=text, num_tokens=used + final.num_tokens), info
