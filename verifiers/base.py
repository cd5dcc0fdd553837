"""The verifier interface every strategy calls: process rewards per step, outcome rewards per solution.

Batched and async: one call scores many candidates of one problem. A model-based verifier
sends its requests through `ctx.generate(..., role="verifier")`, so its tokens are metered by
the problem's ledger apart from the policy's (and count against the same budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ttscale.kit.context import Context


@runtime_checkable
class Verifier(Protocol):
    """Scores in [0, 1]: an estimate of P(correct)."""

    name: str

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        """Process reward: for each candidate (a list of steps so far), one score per step."""
        ...

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        """Outcome reward: one score per whole solution."""
        ...
