"""Compute under a total budget: one plan shared by the problems a pool ledger funds.

Snell et al., arXiv:2408.03314 (2024), §5, route each problem to the strategy its difficulty bin pays for; under a
total budget T over P problems the grants b_i maximise Σ_i acc_{k_i}(b_i) subject to Σ_i b_i ≤ T, a
multiple-choice knapsack solved by its Lagrangian (`plan_budget`). `Allocator` grants one problem at a time, as its
probe finishes; the pool ledger, not the plan, guarantees the total. `with_total_budget` sets a total on a
prepared run, as `ttscale run --total-budget` does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import numpy as np

from ttscale.budget import Budget, Ledger
from ttscale.kit.params import check_positive

if TYPE_CHECKING:
    from ttscale.kit.context import Context
    from ttscale.routing.difficulty import ProbeSettings
    from ttscale.routing.policy import Policy

Curves = Mapping[int, Sequence[tuple[float, float]]]
"""Per difficulty bin, (budget, accuracy) points."""


def allocator_for(ledger: Ledger, policy: Policy | None, settings: ProbeSettings, ctx: Context) -> Allocator:
    """The allocator of this problem's pool, made by the pool's first problem and kept in the pool's shared state
    (every problem the pool funds plans with the same one; it goes with the pool)."""
    pool = ledger.pool
    assert pool is not None
    if "allocator" not in pool.shared:
        problems = pool.extra.get("problems")
        if not isinstance(problems, int) or problems < 1:
            raise ValueError("a total budget needs its pool to say how many problems it funds "
                             "(pool.extra['problems']; see with_total_budget)")
        if policy is not None and policy.data.get("budget_unit", "tokens") != pool.budget.unit:
            raise ValueError(f"the policy's budgets are in {policy.data.get('budget_unit')}, the run's in "
                             f"{pool.budget.unit}")
        reserve = ledger.meter.cost(prompt_tokens=len(ctx.prompt()), cached_prompt_tokens=0,
                                    gen_lengths=[settings.max_tokens] * settings.n)
        pool.shared["allocator"] = Allocator(curves=policy.curves() if policy else None,
                                      prior=policy.prior() if policy else {}, problems=problems,
                                      available=pool.remaining, probe_reserve=reserve)
    allocator: Allocator = pool.shared["allocator"]
    return allocator


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


class _Funded(Protocol):
    """What `with_total_budget` reads of a prepared run (`ttscale.running.runner.Prepared`, a dataclass of the
    running layer above, which routing never imports): its per-problem budget and the meters its ledgers convert
    with."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def budget(self) -> Budget: ...
    @property
    def meters(self) -> Any: ...


Prepared = TypeVar("Prepared", bound=_Funded)


def with_total_budget(prepared: Prepared, total: Budget, *, problems: int, spent: float = 0.0) -> Prepared:
    """`prepared` with a total budget over the task, as `ttscale run --total-budget` sets it (for benchmarks and
    tests that build `Prepared` themselves). The run pipeline (`ttscale.pipeline.execute`) makes the pool ledger
    every problem's ledger draws on, counting what finished problems already spent; `problems` and `spent` are
    kept for callers that call `solve` directly, who get the pool here.
    """
    prepared.budget.check_total(total)
    pool = Ledger(total, meter=prepared.meters.budget)
    pool.spent = spent
    pool.extra["problems"] = problems
    return replace(prepared, total=total, pool=pool)
