"""The space an allocation search explores: named dimensions with allowed values, a cost, a total budget.

AgentTTS (2025, "AgentTTS: Large Language Model Agent for Test-time Compute-optimal Scaling Strategy in
Complex Tasks"): for a multi-stage task the model and the budget of each stage are chosen together, and the
choices form a combinatorial space under a total compute budget. A `Space` is that space written down: each
`Dimension` a stage's choice (a model, a number of samples, a number of verifications), `cost` what an
allocation spends, and `total_budget` what it may spend. Its feasible points are enumerated once (in grid
order: lexicographic over the dimensions as declared), so that proposers can draw among the unseen ones and a
grid search can be the ground truth.
"""

from __future__ import annotations

import itertools
import json
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeAlias

Value: TypeAlias = int | float | str
Allocation: TypeAlias = Mapping[str, Value]

MAX_COMBINATIONS = 1_000_000
"""The most combinations of values a space may have: its feasible points are enumerated and kept."""


def _is_value(value: object) -> bool:
    # A bool is an int to Python but not a size or a model name: True == 1 would make two values one.
    if isinstance(value, bool):
        return False
    if isinstance(value, str | numbers.Integral):
        return True  # an int is finite, and float() of one above 1e308 would raise
    return isinstance(value, numbers.Real) and math.isfinite(float(value))


def _show(value: object) -> str:
    return json.dumps(value) if isinstance(value, str) else repr(value)


@dataclass(frozen=True, kw_only=True)
class Dimension:
    """One choice of an allocation: a stage's model, its number of samples, its number of verifications."""

    name: str
    """The key of the choice in an allocation (`"S"`, `"verifier_model"`)."""
    values: tuple[Value, ...]
    """The allowed values, in the order a grid search visits them."""
    doc: str = ""
    """What the choice means, for people and for an agent's prompt."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a dimension's name must be a non-empty string, got {self.name!r}")
        if isinstance(self.values, str | bytes):  # a string is a sequence of letters, not of values
            raise ValueError(f"dimension {self.name!r}: values must be a tuple, got the string {self.values!r}")
        values = tuple(self.values)
        if not values:
            raise ValueError(f"dimension {self.name!r} needs at least one value")
        bad = [v for v in values if not _is_value(v)]
        if bad:
            raise ValueError(f"dimension {self.name!r}: values must be finite numbers or strings, got {bad[0]!r}")
        # Plain int and float (not numpy's): values go into JSON logs and prompts as they are.
        values = tuple(v if isinstance(v, str) else int(v) if isinstance(v, numbers.Integral) else float(v)
                       for v in values)
        object.__setattr__(self, "values", values)
        seen: list[Value] = []
        for value in values:
            # 2 and 2.0 are equal: two of them would be one point proposed twice.
            if any(value == s and isinstance(value, str) == isinstance(s, str) for s in seen):
                raise ValueError(f"dimension {self.name!r} lists the value {value!r} twice")
            seen.append(value)

    def match(self, value: object) -> Value | None:
        """The allowed value `value` stands for, or None: equal numbers match (8.0 is 8), and a number written
        as a string matches too ("8" is 8), since a language model's JSON often quotes numbers."""
        if not _is_value(value):
            return None
        for allowed in self.values:
            if isinstance(allowed, str):
                if isinstance(value, str) and value == allowed:
                    return allowed
            elif isinstance(value, str):
                try:
                    if float(value.strip()) == allowed:
                        return allowed
                except ValueError:
                    continue
            elif value == allowed:
                return allowed
        return None


@dataclass(frozen=True, kw_only=True)
class Space:
    """Allocations over `dimensions` whose `cost` is at most `total_budget`."""

    name: str
    """What is being allocated; stored in a trial log, whose resume refuses another space."""
    dimensions: tuple[Dimension, ...]
    """The choices, in grid order (the first varies slowest)."""
    cost: Callable[[Allocation], float] = field(repr=False, compare=False)
    """What an allocation spends, in the unit of `total_budget`."""
    total_budget: float
    """The most an allocation may spend."""
    doc: str = ""
    """What the task is, for people and for an agent's prompt."""
    cost_doc: str = ""
    """The cost formula in words (`"S·(1+V)·tokens"`), for an agent's prompt."""
    rule: Callable[[Allocation], str | None] | None = field(default=None, repr=False, compare=False)
    """Why an allocation is not allowed whatever it costs (GRM's k_meta ≤ k), in one line; None = allowed. No
    rule: every combination within the budget is."""
    rule_doc: str = ""
    """The rule in words (`"verifier.meta_top ≤ verifier.samples"`), for an agent's prompt."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"a space's name must be a non-empty string, got {self.name!r}")
        dims = tuple(self.dimensions)
        object.__setattr__(self, "dimensions", dims)
        if not dims:
            raise ValueError(f"space {self.name!r} needs at least one dimension")
        names = [d.name for d in dims]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise ValueError(f"space {self.name!r} names the dimension {twice!r} twice")
        budget = self.total_budget
        if isinstance(budget, bool) or not isinstance(budget, numbers.Real) or not math.isfinite(budget) or budget <= 0:
            raise ValueError(f"total_budget must be a finite number > 0, got {budget!r}")
        combinations = math.prod(len(d.values) for d in dims)
        if combinations > MAX_COMBINATIONS:
            raise ValueError(f"space {self.name!r} has {combinations:,} combinations; at most "
                             f"{MAX_COMBINATIONS:,} are enumerated")
        if not self.points():
            raise ValueError(f"space {self.name!r}: no allocation costs at most the total budget {budget:g}"
                             + (f" and keeps its rule ({self.rule_doc})" if self.rule is not None else ""))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dimensions)

    def check(self, allocation: object) -> str | None:
        """Why `allocation` is not a feasible point, in one line; None when it is."""
        if not isinstance(allocation, Mapping):
            return f"an allocation must be a JSON object of {', '.join(self.names)}, got {type(allocation).__name__}"
        extra = [k for k in allocation if k not in self.names]
        if extra:
            return f"unknown key {str(extra[0])!r}; the keys are {', '.join(self.names)}"
        missing = [n for n in self.names if n not in allocation]
        if missing:
            return f"missing key {missing[0]!r}; an allocation gives every one of {', '.join(self.names)}"
        for dim in self.dimensions:
            if dim.match(allocation[dim.name]) is None:
                allowed = ", ".join(_show(v) for v in dim.values)
                return f"{dim.name}={_show(allocation[dim.name])} is not allowed; allowed: {allowed}"
        broken = self._broken(self._resolve(allocation))
        if broken is not None:
            return f"{self.render(allocation)} is not allowed: {broken}"
        spend = self._cost(self._resolve(allocation))
        if not math.isfinite(spend) or spend < 0:
            return f"the cost of {self.render(allocation)} is {spend!r}, not a finite number ≥ 0"
        if spend > self.total_budget:
            return f"{self.render(allocation)} costs {spend:g}, over the total budget {self.total_budget:g}"
        return None

    def feasible(self, allocation: object) -> bool:
        return self.check(allocation) is None

    def canonical(self, allocation: object) -> dict[str, Value]:
        """`allocation` with the declared values, keys in dimension order; ValueError (`check`'s line) if it is
        not feasible."""
        reason = self.check(allocation)
        if reason is not None:
            raise ValueError(reason)
        assert isinstance(allocation, Mapping)
        return self._resolve(allocation)

    def key(self, allocation: Allocation) -> tuple[Value, ...]:
        """The declared values in dimension order: equal for allocations that are the same point (8 and 8.0)."""
        return tuple(self.canonical(allocation).values())

    def points(self) -> tuple[dict[str, Value], ...]:
        """Every feasible allocation, in grid order (lexicographic over the dimensions as declared)."""
        return tuple(dict(p) for p in self._points)

    def index(self, allocation: Allocation) -> int:
        """The position of `allocation` in `points()` (its grid index)."""
        return self._grid_index[self.key(allocation)]

    def render(self, allocation: Allocation) -> str:
        """`S=4, V=2`: an allocation in one short line."""
        return ", ".join(f"{k}={_show(v)}" for k, v in allocation.items())

    def describe(self) -> str:
        """The space in words, for an agent's prompt: the task, each dimension, the cost and the budget."""
        lines = [f"Task: {self.name}" + (f". {self.doc}" if self.doc else "")]
        lines.append("Dimensions (choose one allowed value for each):")
        for dim in self.dimensions:
            doc = f" ({dim.doc})" if dim.doc else ""
            lines.append(f"- {dim.name}{doc}: one of {', '.join(_show(v) for v in dim.values)}")
        formula = self.cost_doc or "computed from the allocation"
        lines.append(f"Cost of an allocation: {formula}.")
        lines.append(f"Total budget: an allocation's cost must be at most {self.total_budget:g}.")
        if self.rule is not None:
            lines.append(f"Rule: {self.rule_doc or 'some combinations are not allowed'}.")
        lines.append(f"Feasible allocations: {len(self._points)} of "
                     f"{math.prod(len(d.values) for d in self.dimensions)} combinations.")
        return "\n".join(lines)

    # -- internals --------------------------------------------------------------------------------------------

    def _resolve(self, allocation: Mapping[str, object]) -> dict[str, Value]:
        out: dict[str, Value] = {}
        for dim in self.dimensions:
            value = dim.match(allocation[dim.name])
            assert value is not None
            out[dim.name] = value
        return out

    def _broken(self, allocation: dict[str, Value]) -> str | None:
        return None if self.rule is None else self.rule(dict(allocation))

    def _cost(self, allocation: dict[str, Value]) -> float:
        try:
            return float(self.cost(dict(allocation)))
        except (TypeError, ValueError, ArithmeticError):
            return math.nan  # a cost function that cannot price a point: `check` says so instead of raising

    @cached_property
    def _points(self) -> tuple[dict[str, Value], ...]:
        out = []
        for values in itertools.product(*(d.values for d in self.dimensions)):
            point = dict(zip(self.names, values, strict=True))
            spend = self._cost(point)
            if math.isfinite(spend) and 0 <= spend <= self.total_budget and self._broken(point) is None:
                out.append(point)
        return tuple(out)

    @cached_property
    def _grid_index(self) -> dict[tuple[Value, ...], int]:
        return {tuple(p.values()): i for i, p in enumerate(self._points)}


__all__ = ["MAX_COMBINATIONS", "Allocation", "Dimension", "Space", "Value"]
