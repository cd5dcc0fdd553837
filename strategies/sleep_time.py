"""Sleep-time compute: think about the context before the query comes, then answer it from the notes.

Lin, Snell, Wang, Packer, Wooders, Stoica, Gonzalez, "Sleep-time Compute: Beyond Inference Scaling at
Test-time", arXiv:2504.13171 (2025); reference code letta-ai/sleep-time-compute.

Symbols: a stateful problem is a context c and a query q (ttscale.evals.stateful: the task's `meta["context"]`,
`meta["query"]`); S(c) → c' is the sleep-time pass, one generation of at most `sleep_tokens` tokens that
infers what likely queries will need (the reference asks the model to compute such quantities ahead); at test
time T(q, c') answers the query from the context and those notes with N samples and a majority vote (the
run's budget b is the test-time budget). c' is computed once per context (a shared stage: stored with the run,
read by every query of that context, never redone on resume) and metered on a ledger of its own, so a record's
ledger holds test-time tokens only and its `sleep_tokens_amortised` is the context's sleep tokens divided by
the queries that share it. `sleep_tokens=0` asks the query from the raw context in the same template: the
paper's test-time-only baseline.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, replace
from typing import Any

from ttscale.budget import Budget
from ttscale.capabilities import Derived, Replay, Stored, derive_pool
from ttscale.context import Context
from ttscale.params import check_range, strategy
from ttscale.sampling import PoolParams, sample_pool
from ttscale.schema import Answer, Problem, SamplingParams
from ttscale.strategies.self_consistency import vote

SLEEP_PROMPT = (
    "Here is some information. A question about it will come later; you do not know the question yet.\n\n"
    "{context}\n\n"
    "Work out now the quantities a question about this could ask for, step by step, and state each result "
    "as a short sentence."
)
"""The sleep-time instruction (the reference's: anticipate the questions, compute useful quantities ahead)."""
SLEEP_INFO = ("context_id", "sleep_tokens", "queries_in_context", "sleep_computed_here")
"""The info fields of the sleep-time stage a record read (a sweep's derived cells keep them)."""
NOTES = "{context}\n\nNotes worked out from this earlier:\n{notes}\n\n{query}"
"""The test-time question: the context, the sleep-time notes, then the query."""


@dataclass(frozen=True, kw_only=True)
class SleepTimeParams(PoolParams):
    """Notes about the context made once at sleep time, then the query answered by N samples and a vote."""

    n: int | None = None
    """N: test-time samples per query, majority-voted; None = as many as the run's (test-time) budget pays for at
    `max_tokens` each, so a sweep's smaller budgets are read from the largest one's pool."""
    sleep_tokens: int = 256
    """Tokens of the sleep-time pass over a context, at most (0 = no sleep-time compute: the baseline)."""
    sleep_temperature: float = 0.0
    """Sampling temperature of the sleep-time pass (0 = greedy, as one careful pass over the context)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.sleep_tokens, int) or self.sleep_tokens < 0:
            raise ValueError(f"sleep_tokens must be ≥ 0, got {self.sleep_tokens!r}")
        check_range("sleep_temperature", self.sleep_temperature, 0, 10)


def needs_contexts(problems: list[Problem]) -> None:
    """Refuse a task without contexts before anything starts (declared with the strategy, checked by `prepare`)."""
    for problem in problems:
        stateful_parts(problem)


def stateful_parts(problem: Problem) -> tuple[str, str, str]:
    """(context, query, context id) of a stateful problem; a one-line error names the tasks that have them."""
    context, query = problem.meta.get("context"), problem.meta.get("query")
    if not isinstance(context, str) or not isinstance(query, str):
        raise ValueError("sleep_time needs a stateful task (a context and a query per problem): arithmetic_stateful, "
                         "gsm8k_stateful, or jsonl rows with context and query fields")
    key = problem.meta.get("context_id") or hashlib.blake2b(context.encode(), digest_size=8).hexdigest()
    return context, query, str(key)


async def think(stage: Context, context: str, p: SleepTimeParams) -> dict[str, Any]:
    """S(c): the sleep-time pass, on the stage's own ledger of `sleep_tokens`."""
    prompt = stage.engine.chat_prompt([{"role": "user", "content": SLEEP_PROMPT.format(context=context)}])
    params = SamplingParams(n=1, temperature=p.sleep_temperature, max_tokens=p.sleep_tokens)
    generation = await stage.generate(prompt, params, phase="sleep")
    notes = generation.completions[0].text.strip() if generation.completions else ""
    return {"notes": notes, "tokens": sum(c.num_tokens for c in generation.completions)}


def derive(stored: Stored) -> Derived | str:
    """A smaller test-time budget read from the pool: the same notes (the context's stage), fewer votes."""
    derived = derive_pool(stored, vote)
    if isinstance(derived, str):
        return derived
    derived.info.update({k: v for k, v in (stored.record.get("info") or {}).items() if k in SLEEP_INFO})
    source_ledger = stored.record.get("ledger") or {}
    if "sleep_tokens_amortised" in source_ledger:
        stored.ledger.extra["sleep_tokens_amortised"] = source_ledger["sleep_tokens_amortised"]
    stored.ledger.tally("test_tokens", sum(s.num_tokens for s in derived.samples))
    return derived


@strategy(SleepTimeParams, replay=Replay(derive=derive), check_problems=needs_contexts)
async def sleep_time(problem: Problem, ctx: Context, p: SleepTimeParams) -> Answer:
    context, query, key = stateful_parts(problem)
    notes, sleep_tokens, computed_here = "", 0, False
    if p.sleep_tokens and context:
        stage = await ctx.shared_stage(
            f"sleep_time\x00{key}", budget=Budget(limit=p.sleep_tokens), run=lambda s: think(s, context, p)
        )
        notes, sleep_tokens, computed_here = stage.value["notes"], int(stage.value["tokens"]), stage.computed_here
    question = NOTES.format(context=context, notes=notes, query=query) if notes else problem.question
    prompt = ctx.engine.chat_prompt(ctx.task.messages(replace(problem, question=question)))
    completions = await sample_pool(ctx, p, prompt=prompt, phase="test")
    samples = [ctx.sample(c) for c in completions]
    prediction, info = await asyncio.to_thread(vote, samples, p)  # the majority, as self-consistency votes
    queries = max(1, int(problem.meta.get("queries_in_context") or 1))
    ctx.ledger.extra["sleep_tokens_amortised"] = round(sleep_tokens / queries, 3)
    return Answer(prediction=prediction, samples=tuple(samples), info={
        **info,
        "context_id": key,
        "sleep_tokens": sleep_tokens,
        "queries_in_context": queries,
        "sleep_computed_here": computed_here,
    })
