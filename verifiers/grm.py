"""`grm`: DeepSeek-GRM's pointwise generative reward, scaled at inference time by voting, optionally meta-RM guided.

Liu, Wang, Xu, Wu, Hao, Jiang, Wu, "Inference-Time Scaling for Generalist Reward Modeling", arXiv:2504.02495 (2025),
§2.2 (pointwise GRM: principles, then a critique, then a score per response), §3 (voting over k samples; meta-RM
guided voting).

Symbols: a query x and the responses y_1..y_n scored together (at most `group` to a prompt); k GRM samples
(`samples`), sample j shown the responses in its own order (a seeded shuffle per sample, as the paper counters
position bias); sample j writes principles, then a critique, then one score S_ij ∈ {1, ..., 10} per response
(`Scores: [[s_1, ..., s_n]]`, in the order it was shown). Scores are read strictly (`parse_scores`): a list of
another length, or an element that is not an integer from 1 to 10, gives no score; a response that sample j did not
score gets nothing from it (counted in the ledger as `grm_missing_scores`, never a default value).
- Voting: the reward of y_i is Σ_j S_ij over the voting samples (the paper's; its range grows with k).
- Meta-RM guided voting (`meta`, any verifier; `meta_top` = k_meta): the meta RM scores each sample's text
  (its principles and critique) as a solution of x, and only the k_meta best samples vote.
The verifier's score, in [0, 1] like every verifier's, is the reward / (10 × the voting samples): the order of the
voted rewards, the paper's ranking. Everything the GRM and the meta RM generate is verifier work on the ledger.
Differences from the paper, and why: its GRM is DeepSeek-GRM-27B, trained (rejection fine-tuning, then SPCT) to
write principles and critiques, and its meta RM a scalar RM trained on their correctness; neither is available
here, so any chat model the engine serves plays the GRM (the run's config names the model and this verifier's
parameters) and the meta RM is whichever ttscale verifier is named.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range
from ttscale.schema import SamplingParams
from ttscale.verifiers.judging import steps_as_outcomes

JUDGE = (
    "You judge the quality of {count} response(s) to a query.\n\nQuery:\n{question}\n\n{responses}\n\n"
    "First write the principles a good response to this query must follow, after 'Principles:'. Then critique each "
    "response against them, after 'Critique:'. End with one line 'Scores: [[s_1, ..., s_{count}]]' giving each "
    "response an integer score from 1 to 10, in the order shown."
)
RESPONSE = "[Response {index}]\n{text}\n[End of Response {index}]"
_SCORES = re.compile(r"scores\s*:\s*\[\[([^\[\]]*)\]\]", re.IGNORECASE)
_SCORE = re.compile(r"10|[1-9]")


def parse_scores(text: str, count: int) -> list[int | None]:
    """The scores one GRM sample gives its `count` responses, in the order it was shown them; None where none is
    readable. Strict: the last `Scores: [[...]]` of the text; a list of another length reads as no score at all,
    an element that is not an integer from 1 to 10 as no score for its response."""
    found = _SCORES.findall(text)
    if not found:
        return [None] * count
    parts = [part.strip() for part in found[-1].split(",")]
    if len(parts) != count:
        return [None] * count
    return [int(part) if _SCORE.fullmatch(part) else None for part in parts]


def shown_order(count: int, seed: int) -> list[int]:
    """The order one sample is shown `count` responses in: a permutation of their indices, seeded."""
    return random.Random(seed).sample(range(count), count)


def voted_rewards(scores: Sequence[Sequence[int | None]], voters: Sequence[int], count: int) -> list[int]:
    """Σ_j S_ij over the samples `voters` (indices into `scores`, each row in the responses' own order)."""
    return [sum(scores[j][i] or 0 for j in voters) for i in range(count)]


def meta_voters(meta_scores: Sequence[float], top: int) -> list[int]:
    """The `top` samples of the highest meta-RM score (ties: the earlier sample), in sample order."""
    ranked = sorted(range(len(meta_scores)), key=lambda j: (-meta_scores[j], j))
    return sorted(ranked[:top])


@dataclass(frozen=True, kw_only=True)
class GRM:
    """DeepSeek-GRM: principles, critique and 1-10 scores per response, summed over k shuffled samples."""

    name: ClassVar[str] = "grm"
    NESTED_VERIFIERS: ClassVar[tuple[str, ...]] = ("meta",)
    """Options that are verifier specs of their own (checked as specs by `check_verifier_spec`)."""

    samples: int = 4
    """k: GRM samples per group of responses (each a request of its own: its order of the responses differs)."""
    max_tokens: int = 384
    """Tokens per GRM sample at most (principles, critique and scores)."""
    temperature: float = 0.7
    """Sampling temperature of the GRM samples."""
    group: int = 4
    """Responses judged together in one prompt at most (n); more are judged in groups of this size."""
    meta: str | None = None
    """The meta RM: a verifier spec (llm_judge, prm, ...) that scores each sample's principles and critique; None =
    every sample votes. Its own options go in parentheses inside grm's spec: `meta=(prm:model=DIR,aggregate=min)`."""
    meta_top: int | None = None
    """k_meta: the samples of the highest meta score that vote; None = half of k, rounded up (with `meta`)."""
    shuffle: bool = True
    """Show each sample the responses in its own seeded order (the paper's counter to position bias)."""

    def __post_init__(self) -> None:
        for name in ("samples", "max_tokens", "group"):
            check_positive(name, getattr(self, name))
        check_positive("meta_top", self.meta_top, allow_none=True)
        check_range("temperature", self.temperature, 0, 10)
        if self.meta_top is not None and self.meta_top > self.samples:
            raise ValueError(f"meta_top must be ≤ samples ({self.samples}), got {self.meta_top}")
        if self.meta_top is not None and self.meta is None:
            raise ValueError("meta_top needs a meta verifier (meta=llm_judge, ...)")
        if self.meta is not None:
            from ttscale.verifiers.loading import check_verifier_spec  # the registry, as `_voters` loads it

            try:
                check_verifier_spec(self.meta)
            except ValueError as exc:  # UnknownNameError included: one line naming the option
                raise ValueError(f"meta: {exc}") from None

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        groups = [list(solutions[i : i + self.group]) for i in range(0, len(solutions), self.group)]
        scored = await asyncio.gather(*(self._score_group(ctx, group) for group in groups))
        return [score for group in scored for score in group]

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        # A generative RM judges whole responses; each step gets the judgement of the path so far.
        return await steps_as_outcomes(self, ctx, candidates)

    async def _score_group(self, ctx: Context, responses: list[str]) -> list[float]:
        count = len(responses)
        base = _seed(ctx, responses)
        orders = [shown_order(count, base + j) if self.shuffle else list(range(count)) for j in range(self.samples)]
        params = SamplingParams(n=1, temperature=self.temperature, max_tokens=self.max_tokens)
        generations = await asyncio.gather(
            *(ctx.generate(self._prompt(ctx, responses, order), params, role="verifier") for order in orders))
        texts = [g.completions[0].text if g.completions else None for g in generations]
        # Each sample's scores back in the responses' own order; a sample the budget did not pay for has none.
        scores: list[list[int | None]] = []
        for order, text in zip(orders, texts, strict=True):
            shown = parse_scores(text, count) if text is not None else [None] * count
            row: list[int | None] = [None] * count
            for position, index in enumerate(order):
                row[index] = shown[position]
            scores.append(row)
        written = [j for j, text in enumerate(texts) if text is not None]
        voters = await self._voters(ctx, texts, written)
        missing = sum(score is None for j in voters for score in scores[j])
        if missing:
            ctx.ledger.tally("grm_missing_scores", missing)
        rewards = voted_rewards(scores, voters, count)
        return [reward / (10 * len(voters)) if voters else 0.0 for reward in rewards]

    async def _voters(self, ctx: Context, texts: list[str | None], written: list[int]) -> list[int]:
        if self.meta is None or not written:
            return written
        from ttscale.verifiers.loading import load_verifier  # the meta RM, loaded as any verifier is

        meta_scores = await load_verifier(self.meta).score_outcomes(ctx, [texts[j] or "" for j in written])
        top = self.meta_top if self.meta_top is not None else -(-self.samples // 2)
        return [written[j] for j in meta_voters(list(meta_scores), min(top, len(written)))]

    def _prompt(self, ctx: Context, responses: list[str], order: list[int]) -> Any:
        shown = "\n\n".join(RESPONSE.format(index=position + 1, text=responses[index])
                            for position, index in enumerate(order))
        content = JUDGE.format(count=len(responses), question=ctx.problem.question, responses=shown)
        return ctx.engine.chat_prompt([{"role": "user", "content": content}])


def _seed(ctx: Context, responses: Sequence[str]) -> int:
    """The group's shuffle seed: the problem and its responses (the same group is shown the same orders)."""
    digest = hashlib.sha256("\x00".join([str(ctx.problem.id), *responses]).encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest()[:8], "big")
