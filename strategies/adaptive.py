"""Adaptive: probe the problem, predict its difficulty bin, run the strategy a learned policy chose for that bin.

Snell, Lee, Xu, Kumar, "Scaling LLM Test-Time Compute Optimally can be More Effective than Scaling Model
Parameters", arXiv:2408.03314 (2024), §3.2 and §5: the compute-optimal strategy depends on the prompt's
difficulty, predicted without the answer; the policy comes from `ttscale sweep` + `ttscale policy`.

Symbols: a probe of n samples (the policy's settings, charged to the problem's ledger) gives features
and a predicted bin k. Per-problem mode (no pool): b = what the ledger has left after the probe; the row
is the largest policy budget ≤ b, and the strategy π(k, row) runs with all of b. Total mode (the problem's
ledger draws on a pool, `ttscale run --total-budget`): an `Allocator` shared by the pool's problems grants
b_i = argmax_b acc_k(b) − λ·b, λ the smallest multiplier whose expected spend over the problems still to
come fits what is free; b_i = 0 answers with the probe's majority. The problem's own limit is lowered to
its grant, so compute moves from easy and hopeless bins to the bins where it buys accuracy, and the pool
ledger guarantees that the total is never passed, whatever the plan.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from ttscale.budget import Budget
from ttscale.kit.capabilities import capabilities
from ttscale.kit.context import Context
from ttscale.kit.params import params_class, parse_params, strategy, task_defaults
from ttscale.routing.difficulty import ProbeSettings, run_probe
from ttscale.routing.policy import Policy
from ttscale.routing.total_budget import allocator_for
from ttscale.schema import Answer, Problem
from ttscale.strategies import STRATEGIES


@dataclass(frozen=True, kw_only=True)
class AdaptiveParams:
    policy: str | None = None
    """A policy JSON from `ttscale policy` (predicted or verifier bins). None = no routing: the probe, then `fallback`
    with what is left (under a total budget, an equal share of what is free): the baseline routing is measured
    against."""
    fallback: str = "self_consistency"
    """The strategy run when there is no policy."""
    task_defaults: bool = False
    """Whether `fallback` gets the task's suggested parameters (a new run sets it; a run made before them resumes
    without). A policy's choices get them when its sweep's cells did (the policy JSON says so)."""
    digest: str = field(init=False, default="")
    """SHA-256 of the policy file, so that a run resumed with a changed policy is refused."""

    def __post_init__(self) -> None:
        if not capabilities(STRATEGIES.get(self.fallback)).adaptive_candidate:
            raise ValueError(f"fallback must be a strategy adaptive may route to, got {self.fallback!r}")
        if self.policy is not None:
            try:
                digest = hashlib.sha256(Path(self.policy).read_bytes()).hexdigest()
            except OSError as exc:
                raise ValueError(f"cannot read policy {self.policy!r}: {exc.strerror}") from None
            policy = _load(self.policy, digest)
            policy.probe  # noqa: B018 - raises when the policy has no probe settings
            if policy.data["bins"] not in ("predicted", "verifier"):
                raise ValueError("an oracle-bin policy needs each problem's true pass@1; use one learned with "
                                 "--bins predicted or --bins verifier")
            object.__setattr__(self, "digest", digest)


@lru_cache(maxsize=8)
def _load(path: str, digest: str) -> Policy:
    """One parse per file content (every problem of a run shares it); `digest` keys the cache by content."""
    policy = Policy.load(path)
    for k in range(1, policy.n_bins + 1):
        for b in policy.budgets:
            name, params = policy.choice(k, b)
            if not capabilities(STRATEGIES.get(name)).adaptive_candidate:
                raise ValueError(f"policy {path!r} chooses {name}, which adaptive cannot route to "
                                 f"(bin {k}, budget {b:g})")
            parse_params(params_class(STRATEGIES.get(name)), params)  # a bad entry fails before any engine starts
    return policy


@strategy(AdaptiveParams, adaptive_candidate=False)
async def adaptive(problem: Problem, ctx: Context, p: AdaptiveParams) -> Answer:
    policy = _load(p.policy, p.digest) if p.policy else None
    settings = policy.probe if policy else ProbeSettings()
    ledger = ctx.ledger
    # Created before this problem's first await, so its view of the pool is the pool before any probe.
    allocator = allocator_for(ledger, policy, settings, ctx) if ledger.pool is not None else None
    probe = await run_probe(ctx, settings)
    k = policy.bin_of(probe.features, problem_id=problem.id) if policy else None
    granted = None
    if allocator is not None:
        granted = allocator.grant(k=k or 0, probe_spent=probe.spent, cap=ledger.budget.limit - ledger.spent)
        if granted > 0:
            # The chosen strategy sees only the ledger: lowering this problem's own limit is what binds it to its grant.
            ledger.budget = replace(ledger.budget, limit=min(ledger.budget.limit, ledger.spent + granted))
    room = granted if granted is not None else ledger.remaining
    name, params, row = _route(policy, k, room, p.fallback)
    info: dict[str, Any] = {"bin": k, "probe": {"spent": probe.spent, "prediction": probe.prediction,
                                               **probe.features.to_dict()}, "granted": granted, "row": row}
    if name is None:  # nothing the policy knows fits: the probe's majority is the answer
        if allocator is not None and granted:
            allocator.release(granted=granted, spent=0.0)
        return Answer(prediction=probe.prediction, samples=probe.samples, info={**info, "choice": "probe"})
    fn = STRATEGIES.get(name)
    before = ledger.spent
    try:
        suggested = policy.data.get("task_defaults", False) if policy else p.task_defaults
        budget = Budget(limit=row or room, unit=ledger.budget.unit)
        answer: Answer = await fn(problem, ctx, routed_params(fn, params, task=ctx.task if suggested else None,
                                                            budget=budget))
    finally:
        if allocator is not None and granted:
            allocator.release(granted=granted, spent=ledger.spent - before)
    info.update(choice={"strategy": name, "params": params}, inner=answer.info)
    return Answer(prediction=answer.prediction, samples=answer.samples, info=info)


def routed_params(fn: Any, params: Mapping[str, Any], *, task: Any, budget: Budget) -> Any:
    """The routed strategy's parameters as the sweep cell it was learned from ran them: the task's suggested
    values under the policy's own (`ttscale.kit.params.task_defaults`), capped at the row's budget as the cell's were.
    `task` None: no suggestions (a policy from a sweep made before them, or a run made before them)."""
    cls = params_class(fn)
    suggested = task_defaults(cls, task=task, budget=budget) if task is not None else {}
    return parse_params(cls, {**suggested, **params})


def _route(
    policy: Policy | None, k: int | None, room: float, fallback: str
) -> tuple[str | None, dict[str, Any], float | None]:
    """(strategy, params, policy row) for a problem of bin k with `room` left; no strategy when nothing fits."""
    if policy is None:
        return (fallback if room >= 1 else None), {}, None
    row = policy.row(room)
    if row is None or k is None:
        return None, {}, None
    name, params = policy.choice(k, row)
    return name, params, row
