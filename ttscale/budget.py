"""Budgets and the per-problem ledger: every engine call of a problem is metered here.

A `Budget` is a limit in one unit (generated tokens by default; FLOP units come from the
cost model). The `Ledger` reserves the worst case of each request *before* it reaches
the engine (n × max_tokens, lowered to what is left) and settles the true cost when it
returns, so the sum of all requests of a problem can never pass the limit, however many
requests a strategy has in flight at once.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from ttscale.quantities import parse_quantity
from ttscale.schema import Generation, SamplingParams

Role = Literal["policy", "verifier"]

_TOKEN_UNITS = {"", "tok", "tokens", "t"}
#: Multipliers a budget reads: not T, which would make `512Tokens` 512e12 of a unit 'okens'.
_BUDGET_SUFFIXES = "kKMGB"
#: Largest limit accepted: far above any real budget, small enough to stay exact in float arithmetic.
MAX_LIMIT = 1e30


class BudgetError(ValueError):
    """A budget string or value that is not allowed."""


class CostMeter(Protocol):
    """Converts a request's token counts into the budget's unit.

    Must be monotone in every generated length, so that the reserved worst case
    (every sample at max_tokens) bounds the settled cost.
    """

    unit: str

    def cost(self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: Sequence[int]) -> float: ...


class TokenMeter:
    """The default unit: generated tokens (policy and verifier alike)."""

    unit = "tokens"

    def cost(self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: Sequence[int]) -> float:
        return float(sum(gen_lengths))


def _lazy_meter(target: str) -> Callable[..., CostMeter]:
    """A factory that imports "module:attr" on first use, so `import ttscale` stays light."""

    def factory(**kwargs: Any) -> CostMeter:
        module, attr = target.split(":")
        meter: CostMeter = getattr(importlib.import_module(module), attr)(**kwargs)
        return meter

    return factory


class Costing(Protocol):
    """Prices a request in several units at once (the cost model's meters are one)."""

    def breakdown(
        self, *, prompt_tokens: int, cached_prompt_tokens: int, gen_lengths: Sequence[int]
    ) -> dict[str, float]: ...


#: Units other than tokens, registered by the cost model: unit name → factory of a meter.
#: The cost-model factories take `model_config=` (the served model's config.json dict) and
#: `hardware=` (default B200); see ttscale.cost.meter.
METERS: dict[str, Callable[..., CostMeter]] = {
    "flop": _lazy_meter("ttscale.cost.meter:flop_meter"),
    "eflop": _lazy_meter("ttscale.cost.meter:eflop_meter"),
}


@dataclass(frozen=True, kw_only=True)
class Budget:
    """A per-problem compute limit: `Budget.parse("8k")` is 8,000 generated tokens."""

    limit: float
    """The limit in `unit` (> 0)."""
    unit: str = "tokens"
    """`tokens` (generated tokens), or a unit of the cost model such as `flop` / `eflop`."""

    def __post_init__(self) -> None:
        if not isinstance(self.limit, int | float) or not math.isfinite(self.limit):
            raise BudgetError(f"budget must be a finite number, got {self.limit!r}")
        if self.limit <= 0:
            raise BudgetError(f"budget must be > 0, got {self.limit:g}")
        if self.limit > MAX_LIMIT:
            raise BudgetError(f"budget must be ≤ {MAX_LIMIT:g}, got {self.limit:g}")
        if self.unit == "tokens" and self.limit != int(self.limit):
            raise BudgetError(f"a token budget must be a whole number of tokens, got {self.limit:g}")
        if self.unit != "tokens" and self.unit not in METERS:
            raise BudgetError(f"unknown budget unit {self.unit!r}; allowed: {', '.join(_allowed_units())}")

    @classmethod
    def parse(cls, text: str | int | float) -> Budget:
        """Parse `8000`, `8k`, `1.5M`, `8ktokens`, or a cost-model unit such as `3e15eflop`."""
        if isinstance(text, bool):
            raise BudgetError(f"budget must be a number or a string like '8k', got {text!r}")
        if isinstance(text, int | float):
            return cls(limit=float(text))
        parsed = parse_quantity(str(text), unit=True, suffixes=_BUDGET_SUFFIXES)
        if parsed is None:
            raise BudgetError(
                f"cannot read budget {text!r}; write a positive number with an optional k/M suffix "
                f"and unit, e.g. 8k, 8000, 1.5M, 3e15eflop"
            )
        value, written = parsed
        unit = "tokens" if written in _TOKEN_UNITS else written.lower()
        if unit != "tokens" and unit not in METERS:
            raise BudgetError(
                f"cannot read budget {text!r}: unknown unit {written!r}; allowed: {', '.join(_allowed_units())}"
            )
        if unit == "tokens" and math.isfinite(value):
            if value != int(value):
                raise BudgetError(f"a token budget must be a whole number of tokens, got {text!r}")
            value = float(int(value))
        return cls(limit=value, unit=unit)

    @classmethod
    def parse_with_total(cls, budget: str | int | float, total: str | int | float | None
                         ) -> tuple[Budget, Budget | None]:
        """A run's budget per problem and its total budget over the task (None: none), in one unit."""
        each, whole = (None if text is None else cls.parse(text) for text in (budget, total))
        assert each is not None
        if whole is not None:
            each.check_total(whole)
        return each, whole

    def check_total(self, total: Budget) -> None:
        """Refuse a total budget over the task in another unit than this budget per problem."""
        if total.unit != self.unit:
            raise BudgetError(f"the total budget must be in the unit of the budget ({self.unit}), got {total.unit}")

    def meter(self, **kwargs: Any) -> CostMeter:
        """The meter that converts token counts into this budget's unit."""
        if self.unit == "tokens":
            return TokenMeter()
        return METERS[self.unit](**kwargs)

    def __str__(self) -> str:
        if self.unit == "tokens":
            return f"{int(self.limit)} tokens"
        return f"{self.limit:g} {self.unit}"


def _allowed_units() -> list[str]:
    return ["tokens (default)", *sorted(METERS)]


@dataclass
class Usage:
    """Counts of one role (policy or verifier) within a problem."""

    calls: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    generated_tokens: int = 0
    samples: int = 0
    engine_seconds: float = 0.0


@dataclass
class Reservation:
    """What the ledger set aside for one request in flight."""

    params: SamplingParams | None
    """The request as it will be sent: max_tokens (and maybe n) lowered to what the budget allows.
    None for a scoring request (a reward model's forward pass: prompt only, nothing generated)."""
    amount: float
    """The worst-case cost reserved, in the budget's unit."""
    role: Role
    started: float = field(default_factory=time.perf_counter)


class Ledger:
    """The accountant of one problem: meters every engine call and never lets the budget be passed."""

    def __init__(
        self,
        budget: Budget,
        *,
        meter: CostMeter | None = None,
        costing: Costing | None = None,
        pool: Ledger | None = None,
    ) -> None:
        self.budget: Budget = budget
        if pool is not None and pool.budget.unit != budget.unit:
            raise BudgetError(f"a pool in {pool.budget.unit} cannot fund a budget in {budget.unit}")
        self.pool = pool
        """A ledger shared by many problems (a total budget over a task): every reservation is taken
        from it too, so the sum over problems never passes the total either."""
        self.meter: CostMeter = meter or budget.meter()
        self.costing = costing
        """Prices every settled request in FLOPs, bytes and eFLOPs for the record, whatever the budget's unit."""
        self.compute: dict[str, float] = {}
        self.usage: dict[Role, Usage] = {"policy": Usage(), "verifier": Usage()}
        self.spent = 0.0
        """Settled cost, in the budget's unit."""
        self.reserved = 0.0
        """Worst-case cost of the requests still in flight."""
        self.capped_requests = 0
        """Requests whose max_tokens or n the ledger lowered to fit the budget."""
        self.refused_requests = 0
        """Requests that got nothing because nothing was left."""
        self.extra: dict[str, Any] = {}
        """Counters that other layers add (tree KV tokens, verifier calls, ...)."""
        self.views: dict[str, Callable[[], Any]] = {}
        """Entries of the record computed when it is written (a search's tree statistics): a layer registers
        one instead of rewriting `extra` every round, which grew with the rounds squared."""
        self.shared: dict[str, Any] = {}
        """State the problems drawing on this ledger share (a total budget's allocator); never recorded."""

    def tally(self, key: str, amount: int = 1) -> None:
        """Add `amount` to the counter `key` of `extra` (written into the record with the ledger)."""
        self.extra[key] = self.extra.get(key, 0) + amount

    # -- the view strategies use ------------------------------------------------------------
    @property
    def remaining(self) -> float:
        """What can still be reserved, in the budget's unit."""
        own = max(0.0, self.budget.limit - self.spent - self.reserved)
        return own if self.pool is None else min(own, self.pool.remaining)

    @property
    def exhausted(self) -> bool:
        """True when not even one more token can be generated."""
        return self._request_cost(prompt_tokens=0, n=1, max_tokens=1) > self.remaining

    def affordable_samples(self, max_tokens: int, *, prompt_tokens: int = 0) -> int:
        """How many full samples of `max_tokens` the rest of the budget pays for (worst case)."""
        one = self._request_cost(prompt_tokens=prompt_tokens, n=1, max_tokens=max_tokens)
        return int(self.remaining // one) if one > 0 else 0

    # -- the engine side --------------------------------------------------------------------
    def reserve(self, params: SamplingParams, *, prompt_tokens: int, role: Role = "policy") -> Reservation | None:
        """Set aside the worst case of a request, lowered to fit; None when nothing is left.

        Synchronous on purpose: between two awaits nothing else runs, so concurrent requests of
        one problem cannot both take the same remainder.
        """
        n, max_tokens = params.n, params.max_tokens
        remaining = self.remaining
        if self._request_cost(prompt_tokens=prompt_tokens, n=n, max_tokens=max_tokens) > remaining:
            max_tokens = self._largest_max_tokens(prompt_tokens, n, max_tokens, remaining)
            while max_tokens == 0 and n > 1:  # not even one token each: fewer samples
                n = max(1, n // 2)
                max_tokens = self._largest_max_tokens(prompt_tokens, n, params.max_tokens, remaining)
            if max_tokens == 0:
                self.refused_requests += 1
                return None
            self.capped_requests += 1
        amount = self._request_cost(prompt_tokens=prompt_tokens, n=n, max_tokens=max_tokens)
        self._hold(amount)
        sent = (
            params if (n, max_tokens) == (params.n, params.max_tokens) else replace(params, n=n, max_tokens=max_tokens)
        )
        return Reservation(params=sent, amount=amount, role=role)

    def reserve_prompt(self, *, prompt_tokens: int, role: Role = "verifier") -> Reservation | None:
        """Set aside a scoring request (forward pass over a prompt, no generation); None if it does not fit.

        Free under a token budget (nothing is generated); FLOP units charge the prompt's prefill.
        Settle it with a `Generation` that has no completions.
        """
        amount = self.meter.cost(prompt_tokens=prompt_tokens, cached_prompt_tokens=0, gen_lengths=[])
        if amount > self.remaining:
            self.refused_requests += 1
            return None
        self._hold(amount)
        return Reservation(params=None, amount=amount, role=role)

    def settle(self, reservation: Reservation, generation: Generation | None) -> None:
        """Replace the reservation by the request's true cost (none if it failed)."""
        self._hold(-reservation.amount)
        usage = self.usage[reservation.role]
        usage.engine_seconds += time.perf_counter() - reservation.started
        if generation is None:
            return
        lengths = [c.num_tokens for c in generation.completions]
        cost = self.meter.cost(
            prompt_tokens=generation.prompt_tokens,
            cached_prompt_tokens=generation.cached_prompt_tokens,
            gen_lengths=lengths,
        )
        if cost > reservation.amount + 1e-9 * max(1.0, reservation.amount):
            # An engine that ignores max_tokens would break the guarantee: fail loudly, never silently.
            raise RuntimeError(
                f"engine returned more than was reserved ({cost:g} > {reservation.amount:g} {self.meter.unit})"
            )
        self.spent += cost
        if self.pool is not None:
            self.pool.spent += cost
        if self.costing is not None:
            priced = self.costing.breakdown(
                prompt_tokens=generation.prompt_tokens,
                cached_prompt_tokens=generation.cached_prompt_tokens,
                gen_lengths=lengths,
            )
            for key, value in priced.items():
                self.compute[key] = self.compute.get(key, 0.0) + value
        usage.calls += 1
        usage.samples += len(lengths)
        usage.prompt_tokens += generation.prompt_tokens
        usage.cached_prompt_tokens += generation.cached_prompt_tokens
        usage.generated_tokens += sum(lengths)

    # -- reporting --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        pol, ver = self.usage["policy"], self.usage["verifier"]
        return {
            "budget": self.budget.limit,
            "unit": self.budget.unit,
            "spent": self.spent,
            "generated_tokens": pol.generated_tokens + ver.generated_tokens,
            "prompt_tokens": pol.prompt_tokens + ver.prompt_tokens,
            "cached_prompt_tokens": pol.cached_prompt_tokens + ver.cached_prompt_tokens,
            "calls": pol.calls + ver.calls,
            "samples": pol.samples + ver.samples,
            "engine_seconds": round(pol.engine_seconds + ver.engine_seconds, 4),
            "verifier": {
                "calls": ver.calls,
                "prompt_tokens": ver.prompt_tokens,
                "cached_prompt_tokens": ver.cached_prompt_tokens,
                "generated_tokens": ver.generated_tokens,
                # The verifier's generations apart from the policy's samples (`samples` counts both): an LLM
                # judge's one-token verdicts are not samples of the answer (issue 49).
                "samples": ver.samples,
            },
            **self.compute,
            "capped_requests": self.capped_requests,
            "refused_requests": self.refused_requests,
            # Always present (0 = nothing scored), so a comparison reads it for every strategy alike.
            "reward_evaluations": 0,
            **self.extra,
            **{key: view() for key, view in self.views.items()},
        }

    # -- internals --------------------------------------------------------------------------
    def _hold(self, amount: float) -> None:
        """Reserve (amount > 0) or release (amount < 0), here and in the pool."""
        for ledger in (self, self.pool):
            if ledger is not None:
                ledger.reserved = max(0.0, ledger.reserved + amount)

    def _request_cost(self, *, prompt_tokens: int, n: int, max_tokens: int) -> float:
        return self.meter.cost(prompt_tokens=prompt_tokens, cached_prompt_tokens=0, gen_lengths=[max_tokens] * n)

    def _largest_max_tokens(self, prompt_tokens: int, n: int, upper: int, remaining: float) -> int:
        """Largest m ≤ upper with cost(n samples of m tokens) ≤ remaining (the cost is monotone in m)."""
        lo, hi = 0, upper
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._request_cost(prompt_tokens=prompt_tokens, n=n, max_tokens=mid) <= remaining:
                lo = mid
            else:
                hi = mid - 1
        return lo
