"""GenRM: S solutions, V generative verifications each, the answer of the best mean verdict.

Singhi, Bansal, Hosseini, Grover, Chang, Rohrbach, Rohrbach, "When To Solve, When To Verify:
Compute-Optimal Problem Solving and Generative Verification for LLM Reasoning", arXiv:2504.01005
(2025), §2-§5; the verifier is ttscale.verifiers.genrm (GenRM-Base: P(Yes) after each chain).

Symbols: S solutions of at most T_S tokens (`n`, `max_tokens`); V verification chains per
solution of at most T_V tokens (`verifications`, `verify_tokens`); λ = T_V / T_S; r_j(s) the
verdict of chain j on solution s; r(s) = (1/V) Σ_j r_j(s); the answer is argmax_s r(s) (`select=best`,
the paper's) or the answer with the largest Σ r (`weighted`). The compute, in solution-equivalents,
is C = S·(1 + λV) (the paper's C = S·T_S·(1 + λV) in tokens, over T_S).

S and V from the budget (when not given): C = B / T_S (the worst-case solutions the budget pays
for, best-of-N's N). The paper's compute-optimal laws S_opt ∝ C^0.57 and V_opt ∝ C^0.39 (Llama-3.1-8B,
MATH) say how log C splits between the two factors of C = S·(1 + λV): log S gets the share
ρ = 0.57 / (0.57 + 0.39) ≈ 0.594 (`solution_share`) and log(1 + λV) the rest, so
V = max(1, round((C^(1−ρ) − 1) / λ')) and then S = max(1, floor(C / (1 + λ'V))), the largest S the
budget pays for at that V. λ' = (T_V + 1) / T_S: each chain also generates its one verdict token,
so the split never plans past the budget; `lambda` in the answer's info is the paper's T_V / T_S.
With only one of S, V given, the other is the largest the budget pays for. The ledger caps any
request that does not fit (explicit S and V may ask for more than the budget).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from ttscale.context import Context
from ttscale.params import check_positive, check_range, strategy
from ttscale.sampling import PoolParams, sample_pool
from ttscale.select import best_scored, weighted_vote
from ttscale.types import Answer, Problem
from ttscale.verifiers.genrm import GenRM


@dataclass(frozen=True, kw_only=True)
class GenRMParams(PoolParams):
    """Solutions verified by generated verification chains."""

    n: int | None = None
    """S: solutions per problem; None = from the budget (see the module docstring)."""
    verifications: int | None = None
    """V: verification chains per solution; None = from the budget."""
    verify_tokens: int = 256
    """T_V: tokens per verification chain at most."""
    verify_temperature: float = 0.7
    """Sampling temperature of the verification chains."""
    solution_share: float = 0.594
    """ρ: share of log C given to S when S and V come from the budget (0.57 / (0.57 + 0.39), the paper's exponents)."""
    select: Literal["best", "weighted"] = "best"
    """best: the solution with the highest mean verdict (the paper); weighted: the answer with the largest Σ r."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.refill:
            raise ValueError("refill does not apply to genrm: the budget left after the solutions pays the verifiers")
        check_positive("verifications", self.verifications, allow_none=True)
        check_positive("verify_tokens", self.verify_tokens)
        check_range("verify_temperature", self.verify_temperature, 0, 10, low_open=True)
        check_range("solution_share", self.solution_share, 0, 1, low_open=True)
        if self.select not in ("best", "weighted"):
            raise ValueError(f"select must be best or weighted, got {self.select!r}")


def budget_split(
    c: float, *, lam: float, solution_share: float, s: int | None = None, v: int | None = None
) -> tuple[int, int]:
    """(S, V) for a budget of `c` solution-equivalents, a verification costing `lam` of a solution.

    The rule of the module docstring; a given S or V is kept and the other fitted to the budget.
    Both are at least 1 (a budget too small for that is left to the ledger's caps).
    """
    if c < 0 or lam <= 0:
        raise ValueError(f"budget_split needs c ≥ 0 and lam > 0, got c={c}, lam={lam}")
    if s is not None and v is not None:
        return s, v
    if s is not None:
        return s, max(1, math.floor((c / s - 1) / lam))
    if v is None:
        v = max(1, round((max(c, 1.0) ** (1 - solution_share) - 1) / lam))
    return max(1, math.floor(c / (1 + lam * v))), v


@strategy(GenRMParams)
async def genrm(problem: Problem, ctx: Context, p: GenRMParams) -> Answer:
    c = ctx.budget.affordable_samples(p.max_tokens)
    lam = p.verify_tokens / p.max_tokens
    s, v = budget_split(
        c, lam=(p.verify_tokens + 1) / p.max_tokens, solution_share=p.solution_share, s=p.n, v=p.verifications
    )
    solutions = await sample_pool(ctx, replace(p, n=s))
    verifier = GenRM(verifications=v, max_tokens=p.verify_tokens, temperature=p.verify_temperature)
    scores = await verifier.score_outcomes(ctx, [sol.text for sol in solutions])
    samples = [ctx.sample(sol, score=r) for sol, r in zip(solutions, scores, strict=True)]
    if p.select == "weighted":
        prediction, votes = weighted_vote(samples)
    else:
        best = best_scored(samples)
        prediction, votes = (best.answer if best else None), {}
    info = {
        "S": s,
        "V": v,
        "lambda": round(lam, 6),
        "solutions": len(samples),
        "select": p.select,
        "votes": {k: round(x, 6) for k, x in votes.items()},
        "best_score": max(scores, default=None),
    }
    return Answer(prediction=prediction, samples=tuple(samples), info=info)
