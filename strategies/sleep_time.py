"""Sleep-time compute: think about the context before the query comes, then answer it from the notes.

Lin, Snell, Wang, Packer, Wooders, Stoica, Gonzalez, "Sleep-time Compute: Beyond Inference Scaling at
Test-time", arXiv:2504.13171 (2025); reference code letta-ai/sleep-time-compute (`run_stateful_gsm_symbolic.py`,
`prompts/system/sleep_time_base.txt`, `prompts/persona/persona_verbosity_0..4.txt`) on Letta's `SleeptimeAgent`.

Symbols: a stateful problem is a context c and a query q (ttscale.evals.stateful: the task's `meta["context"]`,
`meta["query"]`); S(c) → c' is the sleep-time step and T_b(q, c') → a the test-time step at budget b.

S(c), as the reference runs it: an agent at temperature 0 calls `rethink_memory` again and again, each call
rewriting the whole of a memory block (5,000 characters at most; an edit over the limit is refused and the block
keeps its value) from the context and the block's current value, until it calls `finish_rethinking_memory` or
has made `max_memory_rethinks` = 10 calls. Here each call is one greedy generation (`rethinks` of them at most,
each of `rethink_tokens` at most, all within the stage's `sleep_tokens`); the text it writes replaces the memory,
the marker `finish_rethinking_memory` ends the loop, and so does a pass that writes nothing or rewrites the
memory unchanged from a prompt the next pass would see again (at temperature 0 it would write the same again;
after a refused edit the prompt said so, and the next one will not: the loop goes on, as the reference's does).

T_b(q, c'), `test_time`:
- `verbosity` (the reference's): one answer at temperature 0, its length set by a verbosity prompt from the
  shortest (0: only "The answer is N") to the longest (4: reason step by step, re-check the notes): the paper's
  sequential test-time axis (its Figure 3).
- `pass_at_k`: the paper's parallel baseline: k samples at `temperature` under the `verbosity` prompt (default
  its lowest, as the paper scales its lowest sequential setting in parallel); pass@k (right when any sample is:
  an oracle no strategy has) is read from the stored, graded samples by ttscale.scaling.sleeptime; the record's
  own prediction is their majority.
- `vote`: N samples of the plain question with the notes, majority-voted: ttscale's earlier test-time axis.

c' is computed once per context (a shared stage: stored with the run, read by every query of that context,
never redone on resume) and metered on a ledger of its own, so a record's ledger holds test-time tokens only and
its `sleep_tokens_amortised` is the context's sleep tokens divided by the queries that share it (the paper's cost
per query weights test-time tokens t = 10 times a sleep-time token: ttscale.scaling.sleeptime.amortised).
`sleep_tokens=0` asks the query from the raw context in the same template: the test-time-only baseline.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass, replace
from typing import Any, Literal

from ttscale.blocks.sampling import PoolParams, sample_pool
from ttscale.budget import Budget
from ttscale.kit.capabilities import Derived, Replay, Stored, derive_pool
from ttscale.kit.context import Context
from ttscale.kit.params import check_range, strategy
from ttscale.schema import Answer, Problem, SamplingParams
from ttscale.strategies.self_consistency import vote

FINISH = "finish_rethinking_memory"
"""What a pass writes to end the rethinking (the reference's tool of that name)."""
EMPTY_MEMORY = "[empty]"
"""The memory block's value before the first pass (the reference creates the block with it)."""
RETHINK_PROMPT = (
    "You prepare for questions about a situation before they are asked; you do not know them yet. Work out "
    "quantities, inferences and calculations that could help answer likely questions, and keep them as your "
    "notes. Each time, write the whole notes again: add new calculations, check the earlier ones, drop what is "
    "not useful. The notes you write replace the old ones{limit}. When they need no more work, write only: "
    f"{FINISH}\n\n"
    "Situation:\n{context}\n\nYour notes so far:\n{memory}{feedback}"
)
"""One rethink pass (our wording of the reference's `sleep_time_base.txt` and its sleep-time persona)."""
REFUSED = ("\n\nYour last notes were {got} characters, over the limit of {limit}: they were not kept. Write "
           "shorter notes.")
"""Told to the next pass after an edit over the memory's limit (the reference's tool answers with an error)."""
VERBOSITY = (
    "Answer in one sentence only: write \"The answer is\" and the number. Do not explain.",
    "Give one short sentence of explanation, then a sentence that starts with \"The answer is\" and the number.",
    "Give two sentences of explanation, then a sentence that starts with \"The answer is\" and the number.",
    "Reason step by step, as much as the question needs and no more, then end with \"The answer is\" and the "
    "number.",
    "Reason step by step and explain every step; re-check anything the notes computed before you use it; end "
    "with \"The answer is\" and the number.",
)
"""The test-time verbosity prompts, shortest first (our wording of the reference's persona_verbosity_0..4)."""
NOTES_FIRST = "Use the notes below rather than working things out again."
"""Added to a verbosity prompt when there are notes (the reference's answer prompt says to use its memory)."""
SLEEP_INFO = ("context_id", "sleep_tokens", "rethink_passes", "queries_in_context", "sleep_computed_here")
"""The info fields of the sleep-time stage a record read (a sweep's derived cells keep them)."""
NOTES = "{context}\n\nNotes worked out from this earlier:\n{notes}\n\n{query}"
"""The test-time question: the context, the sleep-time notes, then the query."""
TestTime = Literal["verbosity", "pass_at_k", "vote"]


@dataclass(frozen=True, kw_only=True)
class SleepTimeParams(PoolParams):
    """Notes about each context rethought at sleep time, then the query answered at test time from them."""

    test_time: TestTime = "verbosity"
    """`verbosity`: one greedy answer under the `verbosity` prompt (the reference's); `pass_at_k`: k = N samples
    at `temperature` under the `verbosity` prompt (the paper's parallel baseline, read as pass@k from the graded
    samples); `vote`: N samples of the plain question, majority-voted (ttscale's earlier axis)."""
    verbosity: int = 0
    """Which verbosity prompt asks the query, 0 (only the answer) to 4 (reason and re-check): the reference's
    persona_verbosity_0..4, its test-time axis. Not used by `vote`."""
    n: int | None = None
    """N (`vote`) or k (`pass_at_k`): samples per query; None = as many as the run's (test-time) budget pays for at
    `max_tokens` each, so a sweep's smaller budgets are read from the largest one's pool. `verbosity` answers once."""
    sleep_tokens: int = 2560
    """Tokens of all the rethink passes over a context together, at most (0 = no sleep-time compute: the
    baseline). The default pays for `rethinks` full passes."""
    rethinks: int = 10
    """Rethink passes over a context at most (Letta's `SleeptimeAgent.max_memory_rethinks`, the reference's 10)."""
    rethink_tokens: int = 256
    """Tokens of one rethink pass at most (what is left of `sleep_tokens` caps it too)."""
    memory_chars: int | None = 5000
    """Characters the notes may hold (the reference's memory block `limit=5000`): a pass that writes more is not
    kept, and the next is told so; None = no limit."""
    sleep_temperature: float = 0.0
    """Sampling temperature of the rethink passes (0 = greedy, as the reference's sleep-time agent)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.test_time not in ("verbosity", "pass_at_k", "vote"):
            raise ValueError(f"test_time must be one of verbosity, pass_at_k, vote, got {self.test_time!r}")
        if isinstance(self.verbosity, bool) or not isinstance(self.verbosity, int) or not 0 <= self.verbosity <= 4:
            raise ValueError(f"verbosity must be within 0-4, got {self.verbosity!r}")
        if not isinstance(self.sleep_tokens, int) or self.sleep_tokens < 0:
            raise ValueError(f"sleep_tokens must be ≥ 0, got {self.sleep_tokens!r}")
        for name in ("rethinks", "rethink_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be ≥ 1, got {value!r}")
        chars = self.memory_chars
        if chars is not None and (isinstance(chars, bool) or not isinstance(chars, int) or chars < 1):
            raise ValueError(f"memory_chars must be ≥ 1 or None, got {chars!r}")
        check_range("sleep_temperature", self.sleep_temperature, 0, 10)
        if self.test_time == "verbosity" and (self.n not in (None, 1) or self.refill):
            raise ValueError(f"test_time=verbosity answers once: n and refill apply to pass_at_k and vote, got "
                             f"n={self.n!r}, refill={self.refill!r}")


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


def rethink_prompt(context: str, memory: str, p: SleepTimeParams, *, refused: int = 0) -> str:
    """The text of one rethink pass: the context, the memory as it stands, and the refusal of the last edit."""
    limit = f" (at most {p.memory_chars} characters)" if p.memory_chars is not None else ""
    feedback = REFUSED.format(got=refused, limit=p.memory_chars) if refused else ""
    return RETHINK_PROMPT.format(limit=limit, context=context, memory=memory or EMPTY_MEMORY, feedback=feedback)


async def think(stage: Context, context: str, p: SleepTimeParams) -> dict[str, Any]:
    """S(c): up to `rethinks` greedy passes, each rewriting the memory, on the stage's own ledger of
    `sleep_tokens` (see the module doc for what ends the loop)."""
    memory, tokens, passes, refused_edits, refused, ended = "", 0, 0, 0, 0, "rethinks"
    for _ in range(p.rethinks):
        prompt = stage.engine.chat_prompt([{"role": "user", "content": rethink_prompt(context, memory, p,
                                                                                        refused=refused)}])
        params = SamplingParams(n=1, temperature=p.sleep_temperature, max_tokens=p.rethink_tokens)
        generation = await stage.generate(prompt, params, phase="sleep")  # the ledger caps it to what is left
        if not generation.completions:
            ended = "budget"
            break
        passes += 1
        tokens += generation.completions[0].num_tokens
        text, finished = _written(generation.completions[0].text)
        told, refused = refused, 0  # whether this pass's prompt said its last edit was refused
        if text and p.memory_chars is not None and len(text) > p.memory_chars:
            refused, refused_edits = len(text), refused_edits + 1  # the block refuses it and keeps its value
        elif text and text == memory and p.sleep_temperature == 0 and not told:
            ended = "unchanged"  # the next greedy pass would see this prompt again and write this again
            break
        elif text:
            memory = text
        if finished or not text:
            ended = "finished"
            break
    return {"notes": memory, "tokens": tokens, "passes": passes, "refused_edits": refused_edits, "ended": ended}


def _written(text: str) -> tuple[str, bool]:
    """(the notes a pass wrote, whether it ended the rethinking): what comes before the finish marker, if any."""
    notes, marker, _ = text.partition(FINISH)
    return notes.strip(), bool(marker)


def question_messages(ctx: Context, problem: Problem, notes: str, p: SleepTimeParams) -> list[dict[str, str]]:
    """The test-time request: the task's template over the context, the notes and the query; under `verbosity`
    and `pass_at_k` the verbosity prompt leads it."""
    context, query, _ = stateful_parts(problem)
    question = NOTES.format(context=context, notes=notes, query=query) if notes else problem.question
    messages = [dict(m) for m in ctx.task.messages(replace(problem, question=question))]
    if p.test_time != "vote":
        lead = VERBOSITY[p.verbosity] + (" " + NOTES_FIRST if notes else "")
        first = next(i for i, m in enumerate(messages) if m.get("role") == "user")
        messages[first]["content"] = f"{lead}\n\n{messages[first]['content']}"
    return messages


def answer_params(p: SleepTimeParams) -> SleepTimeParams:
    """The pool a query draws: under `verbosity`, one sample at temperature 0; else the params as given."""
    return replace(p, n=1, temperature=0.0, refill=False) if p.test_time == "verbosity" else p


def derive(stored: Stored) -> Derived | str:
    """A smaller test-time budget read from the pool: the same notes (the context's stage), the first samples
    (`verbosity`: the one answer, when the smaller budget still pays for its `max_tokens`)."""
    pool = replace(stored, params=answer_params(stored.params))
    derived = derive_pool(pool, vote)
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
    context, _, key = stateful_parts(problem)
    notes, sleep_tokens, passes, computed_here = "", 0, 0, False
    if p.sleep_tokens and context:
        stage = await ctx.shared_stage(
            f"sleep_time\x00{key}", budget=Budget(limit=p.sleep_tokens), run=lambda s: think(s, context, p)
        )
        notes, sleep_tokens, computed_here = stage.value["notes"], int(stage.value["tokens"]), stage.computed_here
        # A stage stored by a run before rethinking (one pass) has no count: it made one pass if it spent anything.
        passes = int(stage.value.get("passes", 1 if sleep_tokens else 0))
    prompt = ctx.engine.chat_prompt(question_messages(ctx, problem, notes, p))
    completions = await sample_pool(ctx, answer_params(p), prompt=prompt, phase="test")
    samples = [ctx.sample(c) for c in completions]
    prediction, info = await asyncio.to_thread(vote, samples, p)  # the majority, as self-consistency votes
    queries = max(1, int(problem.meta.get("queries_in_context") or 1))
    ctx.ledger.extra["sleep_tokens_amortised"] = round(sleep_tokens / queries, 3)
    return Answer(prediction=prediction, samples=tuple(samples), info={
        **info,
        "context_id": key,
        "sleep_tokens": sleep_tokens,
        "rethink_passes": passes,
        "queries_in_context": queries,
        "sleep_computed_here": computed_here,
    })
