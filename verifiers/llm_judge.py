"""`llm_judge`: a process/outcome reward model made from any chat model through the engine.

Each judgement asks the served model whether the latest step (or the whole solution) is
correct and reads P(Yes) from the log-probs of one generated token (see `judging.py`). The
judge's tokens are metered as verifier tokens in the problem's ledger.

Step scores of a path are cached per problem, so a search that re-scores a growing path pays
only for its new step.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from ttscale.kit.context import Context
from ttscale.kit.params import check_range
from ttscale.verifiers.judging import judge

STEP_QUESTION = "Is the last step of this solution correct? Answer Yes or No."
OUTCOME_QUESTION = "Is this solution's final answer correct? Answer Yes or No."


@dataclass(kw_only=True)
class LLMJudge:
    """P(Yes) of the policy model (or any chat model the engine serves) asked to judge each step."""

    name: ClassVar[str] = "llm_judge"

    default: float = 0.5
    """Score when the verdict cannot be read (no Yes/No among the top tokens) or the budget is spent."""
    _cache: weakref.WeakKeyDictionary[Context, dict[tuple[str, ...], float]] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False
    )

    def __post_init__(self) -> None:
        check_range("default", self.default, 0, 1)

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        cache = self._cache.setdefault(ctx, {})
        prefixes = {tuple(steps[: i + 1]) for steps in candidates for i in range(len(steps))}
        todo = sorted(p for p in prefixes if p not in cache)
        # All new judgements of the problem go to the engine together; their prompts share prefixes.
        scores = await asyncio.gather(
            *(judge(ctx, self._prompt(ctx, p, STEP_QUESTION), default=self.default) for p in todo)
        )
        cache.update(zip(todo, scores, strict=True))
        return [[cache[tuple(steps[: i + 1])] for i in range(len(steps))] for steps in candidates]

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        return list(
            await asyncio.gather(
                *(
                    judge(ctx, self._prompt(ctx, (s,), OUTCOME_QUESTION), default=self.default)
                    for s in solutions
                )
            )
        )

    @staticmethod
    def _prompt(ctx: Context, steps: Sequence[str], question: str) -> list[int]:
        solution = "\n\n".join(steps)
        content = f"Problem: {ctx.problem.question}\n\nSolution:\n{solution}\n\n{question}"
        return ctx.engine.chat_prompt([{"role": "user", "content": content}])
