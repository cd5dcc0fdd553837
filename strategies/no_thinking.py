"""NoThinking: skip the thinking, sample answers in parallel, select.

Ma, He, Snell, Griggs, Min, Zaharia, "Reasoning Models Can Be Effective Without Thinking",
arXiv:2504.09858 (2025), §3. The thinking block is prefilled as finished — the paper's dummy thought
"Okay, I think I have finished thinking." and the end-of-thinking delimiter — so the model writes its
answer at once; N answers are sampled in parallel (one request) and one is selected: majority vote, or the
best score of a verifier (the paper's pass@k / best-of-N with a verifier).

Symbols: N answers (`n`; None = as many as the budget pays for at `answer_tokens` each, the rule every
pool strategy uses, so NoThinking and thinking strategies compare at matched tokens: the ledger meters both).
"""

from __future__ import annotations

from dataclasses import dataclass

from ttscale.context import Context
from ttscale.params import check_positive, strategy
from ttscale.sampling import vote_or_verify
from ttscale.schema import Answer, Problem
from ttscale.search.score import check_verifier_spec
from ttscale.thinking import ThinkingParams, sampling, thinking_format

#: The paper's prefilled thought.
DUMMY_THOUGHT = "Okay, I think I have finished thinking."


@dataclass(frozen=True, kw_only=True)
class NoThinkingParams(ThinkingParams):
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
        if self.verifier is not None:
            check_verifier_spec(self.verifier)


@strategy(NoThinkingParams)
async def no_thinking(problem: Problem, ctx: Context, p: NoThinkingParams) -> Answer:
    fmt = thinking_format(ctx, p)
    prefill = ctx.engine.tokenize(fmt.open + p.thought + fmt.close + p.answer_cue)
    n = p.n if p.n is not None else ctx.budget.affordable_samples(p.answer_tokens)
    if n < 1:
        # As every pool strategy, nothing is drawn when the budget pays for no sample; the record says why (a
        # sweep's budgets below answer_tokens would otherwise read as a model that never answers).
        left = f"{ctx.budget.remaining:,.0f} {ctx.budget.budget.unit}"
        reason = (f"the budget left ({left}) pays for no answer of answer_tokens={p.answer_tokens}: "
                  f"give a budget of at least one answer, or a smaller answer_tokens")
        return Answer(prediction=None, info={"n": 0, "reason": reason})
    generation = await ctx.generate(ctx.prompt() + prefill, sampling(p, max_tokens=p.answer_tokens, n=n),
                                    phase="answer")
    prediction, samples, votes = await vote_or_verify(ctx, list(generation.completions), verifier=p.verifier)
    return Answer(prediction=prediction, samples=tuple(samples),
                  info={"n": len(samples), "votes": dict(votes), "prefill_tokens": len(prefill)})
