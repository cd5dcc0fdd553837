"""NoThinking: skip the thinking, sample answers in parallel, select.

Ma, He, Snell, Griggs, Min, Zaharia, "Reasoning Models Can Be Effective Without Thinking",
arXiv:2504.09858 (2025), §3.1 and §4.1.

Symbols: N answers (`n`; None = as many as the budget pays for at `answer_tokens` each, the rule every
pool strategy uses, so NoThinking and thinking strategies compare at matched tokens: the ledger meters both).
1. prefill the thinking block as finished, as the paper's
   "<|beginning_of_thinking|>\\nOkay, I think I have finished thinking.\\n<|end_of_thinking|>": the dummy
   thought on a line of its own between the model's delimiters (a plain-text delimiter that brings its own
   newline gets no second one), so the model writes its answer at once;
2. sample N answers in parallel (one request, at most `answer_tokens` each);
3. select one: majority vote, or the best score of a verifier (the paper's best-of-N with a verifier).
"""

from __future__ import annotations

from dataclasses import dataclass

from ttscale.blocks.sampling import vote_or_verify
from ttscale.blocks.thinking import ThinkingParams, finished_thinking, sampling, thinking_format
from ttscale.blocks.verified import ChecksVerifier
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, strategy
from ttscale.schema import Answer, Problem

#: The paper's prefilled thought.
DUMMY_THOUGHT = "Okay, I think I have finished thinking."


@dataclass(frozen=True, kw_only=True)
class NoThinkingParams(ChecksVerifier, ThinkingParams):
    """N answers after a prefilled, finished thinking block."""

    n: int | None = None
    """N: answers sampled in parallel; None = as many as the budget pays for at `answer_tokens` each."""
    thought: str = DUMMY_THOUGHT
    """The prefilled thinking (the paper's dummy thought)."""
    verifier: str | None = None
    """Selects the best-scored answer with this verifier; None = majority vote."""
    answer_cue: str = ""
    """Text after the end of thinking before the answer (none by default: the model answers directly)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("n", self.n, allow_none=True)


@strategy(NoThinkingParams)
async def no_thinking(problem: Problem, ctx: Context, p: NoThinkingParams) -> Answer:
    fmt = thinking_format(ctx, p)
    opened = ctx.engine.detokenize(ctx.prompt()) + fmt.open  # where the template opened the block, its newline
    prefill = ctx.engine.tokenize(fmt.open + finished_thinking(opened, p.thought, fmt.close) + p.answer_cue)
    n = p.n if p.n is not None else ctx.ledger.affordable_samples(p.answer_tokens)
    if n < 1:
        # As every pool strategy, nothing is drawn when the budget pays for no sample; the record says why (a
        # sweep's budgets below answer_tokens would otherwise read as a model that never answers).
        left = f"{ctx.ledger.remaining:,.0f} {ctx.ledger.budget.unit}"
        reason = (f"the budget left ({left}) pays for no answer of answer_tokens={p.answer_tokens}: "
                  f"give a budget of at least one answer, or a smaller answer_tokens")
        return Answer(prediction=None, info={"n": 0, "reason": reason})
    generation = await ctx.generate(ctx.prompt() + prefill, sampling(p, max_tokens=p.answer_tokens, n=n),
                                    phase="answer")
    prediction, samples, votes = await vote_or_verify(ctx, list(generation.completions), verifier=p.verifier)
    return Answer(prediction=prediction, samples=tuple(samples),
                  info={"n": len(samples), "votes": dict(votes), "prefill_tokens": len(prefill)})
