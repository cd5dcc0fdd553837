"""GenRM: S solutions, V generative verifications each, the answer of the best mean verdict.

Singhi, Bansal, Hosseini, Grover, Chang, Rohrbach, Rohrbach, "When To Solve, When To Verify:
Compute-Optimal Problem Solving and Generative Verification for LLM Reasoning", arXiv:2504.01005
(2025), §2-§5; the verifier is ttscale.verifiers.genrm (GenRM-Base: P(Yes) of the verdict each chain ends with).

Symbols: S solutions of at most T_S tokens (`n`, `max_tokens`); V verification chains per
solution of at most T_V tokens (`verifications`, `verify_tokens`); r_j(s) the verdict of chain j on
solution s; r(s) the mean of its readable r_j(s), 0 when none is readable (unreadable verdicts are left
out, as sc-genrm-scaling's `get_solution_score`; see ttscale.verifiers.genrm); the answer is argmax_s r(s)
(`select=best`, the paper's) or the answer with the largest Σ r (`weighted`). The compute, in
solution-equivalents, is C = S·(1 + λV) with λ a verification's tokens per solution token: λ_cap = T_V / T_S
from the caps, and λ_measured = (verifier tokens generated per chain) / (policy tokens generated per solution)
from the problem's ledger, both in the info.

1. S from the budget (when not given), before anything is measured: C = B / T_S, and the paper's
   compute-optimal laws S_opt ∝ C^0.57, V_opt ∝ C^0.39 split log C between the two factors of
   C = S·(1 + λ'V): log S gets ρ = 0.57 / (0.57 + 0.39) ≈ 0.594 (`solution_share`), so
   V' = max(1, round((C^(1−ρ) − 1) / λ')) and S = max(1, floor(C / (1 + λ'V'))), with λ' = (T_V + 1) / T_S
   (a chain's worst case: T_V tokens and one appended verdict token).
2. Generate the S solutions; their real lengths are now spent, and the rest R of the budget is measured.
3. V from what is left: the most chains per solution that R pays for uncut, V_fit = floor(R / (S·(T_V + 1))).
   V not given: V = max(1, V_fit) (every solution-equivalent the short solutions saved goes to verification);
   V given: V = min(V, max(1, V_fit)), so a chain is never silently cut by the ledger (V_requested records
   a lowered V). Only V_fit = 0 (the solutions left no room for one chain each) lets the ledger cap chains.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ttscale.blocks.sampling import PoolParams, sample_pool
from ttscale.kit.capabilities import Derived, EntryParams, Replay, Stored, largest, spend, varies
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, check_range, strategy
from ttscale.kit.selection import best_scored, weighted_vote
from ttscale.schema import Answer, Completion, Generation, Problem, SamplingParams
from ttscale.verifiers.genrm import GenRM, Verdict


@dataclass(frozen=True, kw_only=True)
class GenRMParams(PoolParams):
    """Solutions verified by generated verification chains."""

    n: int | None = None
    """S: solutions per problem; None = from the budget (see the module docstring)."""
    verifications: int | None = None
    """V: verification chains per solution; None = what the budget left after the solutions pays for."""
    verify_tokens: int = 256
    """T_V: tokens per verification chain at most."""
    verify_temperature: float = 0.7
    """Sampling temperature of the verification chains."""
    solution_share: float = 0.594
    """ρ: share of log C given to S when S comes from the budget (0.57 / (0.57 + 0.39), the paper's exponents)."""
    select: Literal["best", "weighted"] = "best"
    """best: the solution with the highest r(s), its mean readable verdict (the paper); weighted: the answer with
    the largest Σ r."""

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

    Step 1 of the module docstring; a given S or V is kept and the other fitted to the budget.
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


def plan_verifications(*, remaining: float, solutions: int, chain_tokens: int, wanted: int | None) -> int:
    """Step 3: V from the measured rest of the budget; `chain_tokens` = T_V + 1, a chain's worst case."""
    fit = math.floor(remaining / (max(1, solutions) * chain_tokens))
    return max(1, fit) if wanted is None else min(wanted, max(1, fit))


def answer_info(
    p: GenRMParams, *, s: int, v: int, verdicts: Sequence[Sequence[Verdict]], scores: Sequence[float],
    votes: Mapping[str, float], policy_tokens: int, verifier_tokens: int,
) -> dict[str, Any]:
    """The answer's info: S, V, both λ, where the verdicts came from, and every chain (what a sweep replays)."""
    flat = [x for vs in verdicts for x in vs]
    return {
        "S": s,
        "V": v,
        **({"V_requested": p.verifications} if p.verifications is not None and v < p.verifications else {}),
        "lambda_cap": round(p.verify_tokens / p.max_tokens, 6),
        # The paper's λ per verification: verifier tokens per chain over policy tokens per solution (ledger counts).
        "lambda_measured": round(verifier_tokens * len(verdicts) / (policy_tokens * len(flat)), 6)
        if policy_tokens and flat
        else None,
        "solution_tokens_mean": round(policy_tokens / len(verdicts), 3) if verdicts else None,
        "chain_tokens_mean": round(sum(x.chain_tokens for x in flat) / len(flat), 3) if flat else None,
        # Where each verdict was read; "unreadable" ones are left out of their solution's mean (the reference's
        # rule), and a solution with none readable scores 0 (`no_readable_verdict` counts those solutions).
        "verdicts": {src: sum(x.source == src for x in flat) for src in ("chain", "appended", "unreadable")},
        "no_readable_verdict": sum(all(x.r is None for x in vs) for vs in verdicts),
        # Per solution, per chain: r (None when unreadable), chain tokens, verdict tokens, source.
        "chains": [[[x.r, x.chain_tokens, x.verdict_tokens, x.source] for x in vs] for vs in verdicts],
        "solutions": len(verdicts),
        "select": p.select,
        "votes": {k: round(x, 6) for k, x in votes.items()},
        "best_score": max(scores, default=None),
    }


def derive(stored: Stored) -> Derived | str:
    """A run with (S, V) at a smaller budget from a source with S_B ≥ S solutions and V_B ≥ V chains each (its
    `info["chains"]` keeps every verdict and token count): the first S solutions and the first V chains of each,
    reserved and settled on the ledger as the run sends them. Refused where the run would send what the source
    cannot reproduce: a capped request, more solutions or chains than stored, a source itself capped."""
    p, ledger, samples = stored.params, stored.ledger, stored.samples
    kept_chains = (stored.record.get("info") or {}).get("chains")
    if not isinstance(kept_chains, list) or len(kept_chains) != len(samples):
        return "the source stores no per-chain verdicts"
    if (stored.record.get("ledger") or {}).get("capped_requests"):
        return "the source's own requests were capped"
    chain = p.verify_tokens + 1
    s, _ = budget_split(ledger.affordable_samples(p.max_tokens), lam=chain / p.max_tokens,
                        solution_share=p.solution_share, s=p.n, v=p.verifications)
    asked = SamplingParams(n=s, temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_tokens)
    if s > len(samples) or not spend(ledger, asked, [x.num_tokens for x in samples[:s]], prompt=stored.prompt_tokens,
                                     role="policy"):
        return f"S={s} solutions do not come from the source's {len(samples)} uncapped"
    v = plan_verifications(remaining=ledger.remaining, solutions=s, chain_tokens=chain, wanted=p.verifications)
    # Records of older GenRM versions arrive in today's shape (ttscale.runstore.runformat): unreadable, r None.
    kept = [[Verdict(r=None if src == "unreadable" else float(r), chain_tokens=int(t), verdict_tokens=int(k),
                     source=src)
             for r, t, k, src in x[:v]] for x in kept_chains[:s]]
    if any(len(x) < v for x in kept):
        return f"V={v} chains per solution and the source has {min(len(x) for x in kept)}"
    if any(x.chain_tokens > p.verify_tokens for vs in kept for x in vs):
        return "the source's chains are longer than verify_tokens"
    chains = SamplingParams(n=v, temperature=p.verify_temperature, max_tokens=p.verify_tokens)
    # The run reserves every solution's chains before any returns (they are in flight together), then settles.
    # The verifier's prompt tokens are not stored: 0 (they cost nothing under a token budget).
    held = [ledger.reserve(chains, prompt_tokens=0, role="verifier") for _ in kept]
    if any(r is None or r.params != chains for r in held):
        for r in held:
            if r is not None:
                ledger.settle(r, None)
        return "the verifications would not fit uncapped"
    for r, vs in zip(held, kept, strict=True):
        assert r is not None
        batch = tuple(Completion(text="", token_ids=(0,) * x.chain_tokens) for x in vs)
        ledger.settle(r, Generation(completions=batch, prompt_tokens=0))
    one = SamplingParams(n=1, temperature=0.0, max_tokens=1)
    if not all(spend(ledger, one, [x.verdict_tokens], prompt=0, role="verifier")
               for vs in kept for x in vs if x.verdict_tokens):
        return "an appended verdict would not fit"
    verifier = GenRM(verifications=v, max_tokens=p.verify_tokens, temperature=p.verify_temperature)
    scores = [verifier.score(vs) for vs in kept]
    sub = [replace(x, score=r) for x, r in zip(samples[:s], scores, strict=True)]
    prediction, votes = select(sub, p)
    usage = ledger.usage
    info = answer_info(p, s=s, v=v, verdicts=kept, scores=scores, votes=votes,
                       policy_tokens=usage["policy"].generated_tokens,
                       verifier_tokens=usage["verifier"].generated_tokens)
    info["replayed"] = "exact generated tokens; the verifier's prompt tokens are not stored (0)"
    return Derived(prediction=prediction, samples=sub, info=info)


def select(samples: list[Any], p: GenRMParams) -> tuple[str | None, Mapping[str, float]]:
    """The weighted vote, or the best-scored solution."""
    if p.select == "weighted":
        return weighted_vote(samples)
    best = best_scored(samples)
    return (best.answer if best else None), {}


def replays(entry: EntryParams, budgets: int) -> bool:
    """Every chain is stored: a smaller S, V or budget replays (or is refused)."""
    return budgets > 1 or varies(entry, "n", "verifications")


@strategy(GenRMParams, replay=Replay(derive=derive, varied=("n", "verifications"), applies=replays,
                                     source=largest("n", "verifications")))
async def genrm(problem: Problem, ctx: Context, p: GenRMParams) -> Answer:
    chain = p.verify_tokens + 1
    c = ctx.ledger.affordable_samples(p.max_tokens)
    s, _ = budget_split(c, lam=chain / p.max_tokens, solution_share=p.solution_share, s=p.n, v=p.verifications)
    # Counted from this strategy's own requests: under `adaptive` the ledger also holds the probe's tokens.
    verifier_before = ctx.ledger.usage["verifier"].generated_tokens
    solutions = await sample_pool(ctx, replace(p, n=s))
    v = plan_verifications(
        remaining=ctx.ledger.remaining, solutions=len(solutions), chain_tokens=chain, wanted=p.verifications
    )
    verifier = GenRM(verifications=v, max_tokens=p.verify_tokens, temperature=p.verify_temperature)
    verdicts = await verifier.verify(ctx, [sol.text for sol in solutions])
    scores = [verifier.score(vs) for vs in verdicts]
    samples = [ctx.sample(sol, score=r) for sol, r in zip(solutions, scores, strict=True)]
    prediction, votes = await asyncio.to_thread(select, samples, p)  # a symbolic merge waits on the grader
    info = answer_info(p, s=s, v=v, verdicts=verdicts, scores=scores, votes=votes,
                       policy_tokens=sum(sol.num_tokens for sol in solutions),
                       verifier_tokens=ctx.ledger.usage["verifier"].generated_tokens - verifier_before)
    return Answer(prediction=prediction, samples=tuple(samples), info=info)
