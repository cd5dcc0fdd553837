"""`genrm`: generative verification with V chains of thought per solution, each ending in its verdict.

Singhi et al., "When To Solve, When To Verify: Compute-Optimal Problem Solving and Generative
Verification for LLM Reasoning", arXiv:2504.01005 (2025).

Symbols: for a solution s, V verification chains v_1..v_V ~ π_V(· | x, s) of at most T_V tokens;
the prompt asks each chain to END with "Is the answer correct (Yes/No)? X" (the paper's format), and
r_j = P(Yes) is read from the log-probs of that verdict token inside the chain, as the paper does: the
probability of "Yes" among the top alternatives, else 1 − P("No"). A chain that states no verdict
there (cut by T_V, or off-format) is asked the question once more, appended after the chain, and
P(Yes) / (P(Yes) + P(No)) of that one greedy token is its verdict (`source` "appended"). A verdict that
still cannot be read (neither Yes nor No among the top alternatives, or no budget left to ask) is
"unreadable" (r = None). The score is the mean over the READABLE verdicts, r(s) = (1/|R|) Σ_{j∈R} r_j,
and 0 when no verdict of s is readable: sc-genrm-scaling's `get_solution_score`
(llmonk/evaluate/eval_utils.py) drops a verdict it cannot extract (NaN) from the mean and scores a solution
with none left 0, rather than counting it as 0.5. All tokens are metered as verifier tokens, so λ can be
measured, not assumed.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range
from ttscale.schema import Completion, SamplingParams
from ttscale.verifiers.judging import TOP_K, steps_as_outcomes, yes_probability

QUESTION = "Is the answer correct (Yes/No)?"
VERIFY = (
    "Problem: {question}\n\nProposed solution:\n{solution}\n\n"
    "Verify the solution step by step. End your verification with the line "
    f"'{QUESTION} X', where X is Yes or No."
)
VERDICT = f"\n\n{QUESTION}"
"""The question appended after a chain that did not state its verdict (the fallback read)."""
#: The chain's last words: the question, then Yes or No, then nothing but markup or punctuation.
_STATED = re.compile(r"is the answer correct\s*\(yes/no\)\s*\?[\s*:_]*(yes|no)\b[^a-z0-9]*$", re.IGNORECASE)
_YES, _NO = frozenset({"yes", "y"}), frozenset({"no", "n"})
#: Tokens searched back from the chain's end for the verdict token (it is followed by markup or EOS only).
_WINDOW = 16

Source = Literal["chain", "appended", "unreadable"]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """One verification chain's verdict and what it cost."""

    r: float | None
    """r_j = P(Yes); None when the verdict cannot be read (left out of the solution's mean)."""
    chain_tokens: int
    """Tokens the chain generated."""
    verdict_tokens: int = 0
    """Tokens of the appended verdict request (1 when the chain stated no verdict and the budget paid for it)."""
    source: Source = "chain"
    """chain: read inside the chain; appended: from the appended question; unreadable: neither (r = None)."""


def _word(piece: str) -> str:
    return piece.strip().strip(".,:!*_").lower()


def verdict_yes_probability(top: Mapping[str, float]) -> float | None:
    """P(Yes) at the verdict position as the paper reads it: P(Yes) if Yes is among the top alternatives,
    else 1 − P(No); None when neither is."""
    p_yes = sum(math.exp(lp) for token, lp in top.items() if _word(token) in _YES)
    p_no = sum(math.exp(lp) for token, lp in top.items() if _word(token) in _NO)
    if p_yes > 0:
        return min(1.0, p_yes)
    return max(0.0, 1.0 - p_no) if p_no > 0 else None


def chain_verdict(chain: Completion, detokenize: Callable[[Sequence[int]], str]) -> float | None:
    """r = P(Yes) from the verdict the chain ends with; None when it ends with none (or its log-probs lack it)."""
    stated = _STATED.search(chain.text)
    if stated is None or not chain.top_logprobs:
        return None
    said_yes = stated.group(1).lower() == "yes"
    # Only markup, punctuation and EOS follow the verdict word, so the last Yes/No token is its first token;
    # the "?" of the question bounds the search (its "(Yes/No)" must never be read as the verdict).
    last = len(chain.token_ids) - 1
    for i in range(last, max(-1, last - _WINDOW), -1):
        piece = detokenize([chain.token_ids[i]])
        if "?" in piece:
            return None
        word = _word(piece)
        if word in _YES or word in _NO:
            if (word in _YES) != said_yes or i >= len(chain.top_logprobs):
                return None
            return verdict_yes_probability(chain.top_logprobs[i])
    return None


@dataclass(frozen=True, kw_only=True)
class GenRM:
    """Mean readable verdict probability over V generated verifications (none readable: 0)."""

    name: ClassVar[str] = "genrm"

    verifications: int = 4
    """V: verification chains per solution."""
    max_tokens: int = 256
    """T_V: tokens per verification chain at most."""
    temperature: float = 0.7
    """Sampling temperature of the verification chains."""
    default: float = 0.0
    """Score of a solution with no readable verdict (none read, or none the budget paid for): 0, as
    sc-genrm-scaling's `get_solution_score`. Unreadable verdicts are left out of the mean, never set to this."""

    def __post_init__(self) -> None:
        check_positive("verifications", self.verifications)
        check_positive("max_tokens", self.max_tokens)
        check_range("temperature", self.temperature, 0, 10, low_open=True)
        check_range("default", self.default, 0, 1)

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        return [self.score(v) for v in await self.verify(ctx, solutions)]

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        # A generative verifier judges whole solutions; each step gets the verdict on the path so far.
        return await steps_as_outcomes(self, ctx, candidates)

    def score(self, verdicts: Sequence[Verdict]) -> float:
        """The mean of the readable verdicts; `default` (0) when none is readable or no chain was generated.

        As sc-genrm-scaling's `get_solution_score`: [0.9, unreadable] → 0.9, [unreadable, unreadable] → 0.
        """
        readable = [v.r for v in verdicts if v.r is not None]
        return sum(readable) / len(readable) if readable else self.default

    async def verify(self, ctx: Context, solutions: Sequence[str]) -> list[list[Verdict]]:
        """Every solution's verdicts, one per chain the budget paid for."""
        return list(await asyncio.gather(*(self._verify(ctx, s) for s in solutions)))

    async def _verify(self, ctx: Context, solution: str) -> list[Verdict]:
        prompt = ctx.engine.chat_prompt(
            [{"role": "user", "content": VERIFY.format(question=ctx.problem.question, solution=solution)}]
        )
        params = SamplingParams(
            n=self.verifications, temperature=self.temperature, max_tokens=self.max_tokens, logprobs=TOP_K
        )
        chains = await ctx.generate(prompt, params, role="verifier")
        return list(await asyncio.gather(*(self._read(ctx, prompt, c) for c in chains.completions)))

    async def _read(self, ctx: Context, prompt: Sequence[int], chain: Completion) -> Verdict:
        r = chain_verdict(chain, ctx.engine.detokenize)
        if r is not None:
            return Verdict(r=r, chain_tokens=chain.num_tokens, source="chain")
        # The fallback: one greedy verdict token after the chain; prompt + chain are served from the cache.
        asked = [*prompt, *chain.token_ids, *ctx.engine.tokenize(VERDICT)]
        one = SamplingParams(n=1, temperature=0.0, max_tokens=1, logprobs=TOP_K)
        generation = await ctx.generate(asked, one, role="verifier")
        spent = sum(c.num_tokens for c in generation.completions)
        top = generation.completions[0].top_logprobs if generation.completions else None
        p = yes_probability(top[0]) if top else None
        if p is None:
            return Verdict(r=None, chain_tokens=chain.num_tokens, verdict_tokens=spent, source="unreadable")
        return Verdict(r=p, chain_tokens=chain.num_tokens, verdict_tokens=spent, source="appended")
