"""REBASE: reward-balanced search.

Wu, Sun, Li, Welleck, Yang, "Inference Scaling Laws: An Empirical Analysis of Compute-Optimal
Inference for Problem-Solving with Language Models", arXiv:2408.00724 (2024), §3.2.

Symbols: N the search width (`n`); R_j the verifier value of frontier node j; T_b the balance
temperature (`temperature_b`); W_j the children allocated to node j.
1. sample N first steps and score them;
2. the solutions that ended leave the frontier; N_left = N − (number ended so far);
3. with w_j = exp(R_j / T_b), serve the open frontier from the highest R_j down:
   W_j = ceil(N' · w_j / Σ_{k not served yet} w_k), N' ← N' − W_j, starting from N' = N_left
   (the reference code's rounding, thu-wyz/inference_scaling `rebase.py`, `select_softmax`;
   ttscale.search.allocate): Σ W_j = N_left exactly, the best nodes get the rounding and the
   tail may get W_j = 0 (not expanded); expand each j W_j times; go to 2.
Stops when N solutions have ended, the frontier is empty, `max_steps` is reached, or the budget
ends. Unlike beam search no node is cut by a hard top-k: a low-valued node still gets children
when the temperature spreads the mass (and N_left is large enough to reach it). The answer is
selected over the ended solutions (`select`, weighted majority by default as in the paper).
With `n` unset, N = B / max_tokens. This allocation is also the first stage of ETS
(ttscale.search.allocate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ttscale.blocks.verified import ChecksVerifier, open_search
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range, strategy
from ttscale.schema import Answer, Problem
from ttscale.search import SearchParams
from ttscale.search.rounds import reward_balanced


@dataclass(frozen=True, kw_only=True)
class RewardBalancedParams(ChecksVerifier, SearchParams):
    """What REBASE and ETS (which starts from REBASE's allocation) share: the width N and the balance temperature."""

    ALIASES: ClassVar[dict[str, str]] = {"width": "n"}
    """`width=16` on the command line is N, as the ETS paper names it; deprecated (`DEPRECATED_ALIASES`), since
    beam's and DVTS's `width` is another quantity: M, the children of each kept prefix."""

    n: int | None = None
    """N: the search width (solutions to finish; `width`, deprecated, is read as n); None = B / max_tokens."""
    temperature_b: float = 0.2
    """T_b: softmax temperature of the allocation over verifier values in [0, 1]; lower = greedier."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive("n", self.n, allow_none=True)
        check_range("temperature_b", self.temperature_b, 0, 100, low_open=True)


@dataclass(frozen=True, kw_only=True)
class RebaseParams(RewardBalancedParams):
    """Reward-balanced tree search."""

    DEPRECATED_ALIASES: ClassVar[dict[str, str]] = {
        "width": "REBASE's search width N is n; width is beam's and DVTS's M, children per kept prefix"}
    """Old spellings that still read (scripts, sweep and compare commands), with a warning naming the new one."""


@strategy(RebaseParams)
async def rebase(problem: Problem, ctx: Context, p: RebaseParams) -> Answer:
    search, n = open_search(ctx, p, n=p.n)
    if n < 1:
        return await search.answer([], info={"n": 0})
    candidates = await reward_balanced(search, n, temperature=p.temperature_b)
    return await search.answer(candidates, info={"n": n, "temperature_b": p.temperature_b})
