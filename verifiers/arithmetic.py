"""`arithmetic`: a rule-based process verifier that checks every `a op b = c` a step states.

Each statement is checked exactly with the safe evaluator of `ttscale.verifiers.safe_eval`
(an AST walk, never `eval`). A step's verdict is `wrong` when any of its statements is false,
`right` when it states at least one and all hold, and `neutral` when it states none (prose,
a bare number). With `cumulative` (the default) the score of step i judges the whole prefix
up to step i, as a PRM's value does: one false statement anywhere keeps every later step at
`wrong`, so the `last` aggregation of a search sees it.

It never looks at the reference answer: a solution that states no equation gets `neutral`
whatever its answer. (For controlled experiments with the truth, see `noisy_oracle`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

from ttscale.kit.params import check_range
from ttscale.verifiers.safe_eval import check_step

if TYPE_CHECKING:
    from ttscale.kit.context import Context


@lru_cache(maxsize=65536)
def _verdict(step: str) -> bool | None:
    """False: a statement is wrong; True: some statement checked and none wrong; None: nothing to check.

    Cached because a search re-scores every step of a path each time the path grows.
    """
    check = check_step(step)
    if check.n_wrong:
        return False
    return True if check.n_checked else None


@dataclass(frozen=True, kw_only=True)
class ArithmeticVerifier:
    """Process rewards from checking the arithmetic each step states."""

    name: ClassVar[str] = "arithmetic"

    right: float = 1.0
    """Score of a step whose statements all hold."""
    neutral: float = 0.5
    """Score of a step that states nothing checkable."""
    wrong: float = 0.0
    """Score of a step with a false statement."""
    cumulative: bool = True
    """Judge the prefix up to each step (a false statement taints every later step) rather than the step alone."""

    def __post_init__(self) -> None:
        for field_name in ("right", "neutral", "wrong"):
            check_range(field_name, getattr(self, field_name), 0, 1)
        if not self.wrong <= self.neutral <= self.right:
            raise ValueError(
                f"scores must be ordered wrong ≤ neutral ≤ right, got {self.wrong}, {self.neutral}, {self.right}"
            )

    def step_scores(self, steps: Sequence[str]) -> list[float]:
        """The score of every step of one candidate (synchronous: pure string work)."""
        scores: list[float] = []
        seen_wrong = seen_right = False
        for step in steps:
            verdict = _verdict(step)
            if not self.cumulative:
                seen_wrong, seen_right = verdict is False, verdict is True
            else:
                seen_wrong = seen_wrong or verdict is False
                seen_right = seen_right or verdict is True
            scores.append(self.wrong if seen_wrong else self.right if seen_right else self.neutral)
        return scores

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        return [self.step_scores(steps) for steps in candidates]

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        # The whole solution as one step: wrong if any statement is, right if some hold.
        return [self.step_scores([solution])[-1] for solution in solutions]
