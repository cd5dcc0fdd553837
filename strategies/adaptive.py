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
import weakref
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ttscale.budget import Budget, Ledger
from ttscale.context import Context
from ttscale.difficulty import ProbeSettings, run_probe
from ttscale.params import check_positive, params_class, parse_params, strategy, task_defaults
from ttscale.policy import Policy
from ttscale.types import Answer, Problem

Curves = Mapping[int, Sequence[tuple[float, float]]]


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
        from ttscale import STRATEGIES

        if STRATEGIES.canonical(self.fallback) == "adaptive":
            raise ValueError("fallback must be another strategy than adaptive")
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
    from ttscale import STRATEGIES

    for k in range(1, policy.n_bins + 1):
        for b in policy.budgets:
            name, params = policy.choice(k, b)
            if STRATEGIES.canonical(name) == "adaptive":
                raise ValueError(f"policy {path!r} chooses adaptive itself (bin {k}, budget {b:g})")
            parse_params(params_class(STRATEGIES.get(name)), params)  # a bad entry fails before any engine starts
    return policy


@strategy(AdaptiveParams)
async def adaptive(problem: Problem, ctx: Context, p: AdaptiveParams) -> Answer:
    from ttscale import STRATEGIES

    policy = _load(p.policy, p.digest) if p.policy else None
    settings = policy.probe if policy else ProbeSettings()
    ledger = ctx.budget
    # Created before this problem's first await, so its view of the pool is the pool before any probe.
    allocator = _allocator(ledger, policy, settings, ctx) if ledger.pool is not None else None
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
    values under the policy's own (`ttscale.params.task_defaults`), capped at the row's budget as the cell's were.
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


# -- total budget ---------------------------------------------------------------------------------

_ALLOCATORS: weakref.WeakKeyDictionary[Ledger, Allocator] = weakref.WeakKeyDictionary()


def _allocator(ledger: Ledger, policy: Policy | None, settings: ProbeSettings, ctx: Context) -> Allocator:
    """The allocator of this problem's pool, made by the pool's first problem (shared by all of them)."""
    pool = ledger.pool
    assert pool is not None
    if pool not in _ALLOCATORS:
        problems = pool.extra.get("problems")
        if not isinstance(problems, int) or problems < 1:
            raise ValueError("a total budget needs its pool to say how many problems it funds "
                             "(pool.extra['problems']; see ttscale.cli_sweep.with_total_budget)")
        if policy is not None and policy.data.get("budget_unit", "tokens") != pool.budget.unit:
            raise ValueError(f"the policy's budgets are in {policy.data.get('budget_unit')}, the run's in "
                             f"{pool.budget.unit}")
        reserve = ledger.meter.cost(prompt_tokens=len(ctx.prompt()), cached_prompt_tokens=0,
                                    gen_lengths=[settings.max_tokens] * settings.n)
        _ALLOCATORS[pool] = Allocator(curves=policy.curves() if policy else None,
                                      prior=policy.prior() if policy else {}, problems=problems,
                                      available=pool.remaining, probe_reserve=reserve)
    return _ALLOCATORS[pool]


def plan_budget(*, curves: Curves, this_bin: int, others: Mapping[int, float], available: float, cap: float) -> float:
    """This problem's budget when it and `others` (expected problems per bin) share `available`.

    The Lagrangian of the multiple-choice knapsack: every bin takes argmax_b acc(b) − λ·b (ties to the
    smaller b, so compute that buys nothing is never taken) with λ the smallest whose expected spend fits.
    This problem's options are capped at `cap` (what its own ledger allows).
    """
    def pick(k: int, lam: float, limit: float) -> float:
        options = [(b, a) for b, a in curves.get(k, [(0.0, 0.0)]) if b <= limit] or [(0.0, 0.0)]
        return min(options, key=lambda o: (-(o[1] - lam * o[0]), o[0]))[0]

    def spend(lam: float) -> float:
        return pick(this_bin, lam, cap) + sum(n * pick(k, lam, float("inf")) for k, n in others.items())

    lam = 0.0
    if spend(0.0) > available:
        smallest = min((b for pts in curves.values() for b, _ in pts if b > 0), default=1.0)
        lo, hi = 0.0, 2.0 / smallest  # at λ = hi no accuracy gain (≤ 1) pays for even the smallest budget
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if spend(mid) <= available else (mid, hi)
        lam = hi
    b = pick(this_bin, lam, cap)
    # The multiplier plans in expectation; this problem's own grant must fit what is free now.
    return b if b <= available else pick(this_bin, lam, min(cap, max(available, 0.0)))


class Allocator:
    """Grants budgets under a total, one problem at a time as its probe finishes (see `plan_budget`).

    `free` is what nobody has been promised: the pool's remaining at the start, less what is committed
    (probes spent, grants not yet returned, what finished strategies spent), less a reserve for the u probes
    still to come. The reserve is u × the worst case until three probes have been seen, then u·m + 2·s·√u
    (m, s: mean and sd of the probes seen; at most u × the worst case): the sum of u probes concentrates
    around u·m, and reserving every probe's worst case starves the plan of tokens the probes never use.
    The pool ledger, not this plan, guarantees the total: a probe that finds the pool short is capped,
    never paid beyond it. Without curves (no policy) every problem gets an equal share of what is free.
    """

    def __init__(self, *, curves: Curves | None, prior: Mapping[int, float], problems: int, available: float,
                 probe_reserve: float, prior_weight: float = 10.0) -> None:
        check_positive("problems", problems)
        self.curves, self.prior, self.prior_weight = curves, dict(prior), prior_weight
        self.available = available
        """The pool's remaining when the plan began."""
        self.probe_worst = probe_reserve
        """A probe's worst case (n × max_tokens, in the budget's unit)."""
        self.unprobed = problems
        """Problems whose probe has not reported yet."""
        self.committed = 0.0
        """Probes spent + grants outstanding + what finished strategies spent."""
        self.probes: list[float] = []
        """What each probe spent."""
        self.seen: Counter[int] = Counter()
        """Bins of the problems granted so far."""

    @property
    def free(self) -> float:
        return self.available - self.committed - self.probe_reserve()

    def probe_reserve(self) -> float:
        """What the probes still to come are expected to need (see the class docstring)."""
        u = self.unprobed
        if len(self.probes) < 3:
            return u * self.probe_worst
        return min(u * self.probe_worst, u * float(np.mean(self.probes)) + 2 * float(np.std(self.probes)) * u**0.5)

    def grant(self, *, k: int, probe_spent: float, cap: float) -> float:
        self.unprobed = max(0, self.unprobed - 1)
        self.probes.append(probe_spent)
        self.committed += probe_spent
        self.seen[k] += 1
        available = max(0.0, self.free)
        if self.curves is None:
            b = float(int(min(cap, available / (self.unprobed + 1))))
        else:
            b = plan_budget(curves=self.curves, this_bin=k, others=self._expected_others(), available=available,
                            cap=cap)
        self.committed += b
        return b

    def release(self, *, granted: float, spent: float) -> None:
        """A problem finished: what it was granted and did not spend goes back to the others."""
        self.committed -= max(0.0, granted - spent)

    def _expected_others(self) -> dict[int, float]:
        # Bins of the problems still to come: the training shares, updated by the bins seen so far.
        total = self.prior_weight + sum(self.seen.values())
        return {k: self.unprobed * (self.prior_weight * self.prior.get(k, 0.0) + self.seen[k]) / total
                for k in set(self.prior) | set(self.seen)}
