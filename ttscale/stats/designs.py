"""Sequential designs for a claim: which looks and which spending a comparison that stops when decided uses, the
cap that gives it the fixed design's power, and what it costs, all by simulating ttscale's own verdict.

A design (`Design`) is a spending function (ttscale.stats.sequential: O'Brien-Fleming-like, Pocock-like or Hwang,
Shih and DeCani's γ family), a first look at `first` problems that spends at least `first_spend` per side, and
`looks` looks in all, the rest equally spaced up to the cap N. For a claim with a planned effect, `recommend` takes
the fixed design's size n (80% power, ttscale.stats.power.accuracy_problems), searches the smallest cap N ≥ n at
which the design keeps that power, and simulates it at the claim's line (the false-verdict rate), at half, the
whole and twice the planned effect: the expected problems there, against n.

Why the recommended design is what it is (`RECOMMENDED`; the table is docs/how-to/compare-and-plan.md's, from
benchmarks/sequential.py):
- Spending α τ (Hwang-Shih-DeCani γ = 0) with 20 looks keeps the cap within 1.25 n and stops early at every effect
  (expected problems about 0.76 n at the planned effect, 0.30 n at twice it). O'Brien-Fleming-like spending wastes
  little at the cap but stops late (about 0.80 n and 0.45 n); Pocock-like stops sooner at twice the effect but
  needs a cap of about 1.27 n.
- No design here reaches 0.70 n at the planned effect with 80% power: at that power a fifth of the sequences never
  cross, and each of them runs to the cap (≥ n), while the ones that do cross cannot all cross early. Wald's test,
  looking after every problem and also stopping when the claim is lost, needs about 0.63 n; a verdict that only
  stops on evidence (as ttscale's "reproduced" and "not reproduced" do) cannot get there.
- The first look at 10 problems spends at least 0.1% per side, so its boundary is at most z = 3.09: ten pairs that
  all go one way (Tango's T = √10 = 3.16 for `better:0`) stop there, whatever the cap. That costs the later looks
  0.1% of 2.5%.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ttscale.stats.power import ALPHA, Accuracy, Claim, accuracy_problems
from ttscale.stats.sequential import SequentialPlan, check_spending, simulate

#: How large a cap the search for the design's power goes up to, as a multiple of the fixed design's size.
MAX_INFLATION = 2.0
#: The effects a design is simulated at, as multiples of the planned difference's distance from the claim's line.
EFFECTS: tuple[tuple[str, float], ...] = (("line", 0.0), ("half", 0.5), ("planned", 1.0), ("twice", 2.0))


@dataclass(frozen=True, kw_only=True)
class Design:
    """How a comparison that stops when decided looks: spending, the number of looks and the first one."""

    spending: str = "hsd:-1"
    """The error spending function: obrien_fleming, pocock or hsd:γ (ttscale.stats.sequential.SPENDINGS)."""
    looks: int = 20
    """K: looks in all (fewer when the cap leaves fewer problems than looks), the last at the cap."""
    first: int | None = 10
    """Problems at the first look; the others equally spaced from there to the cap. None: a look every
    ⌈cap / looks⌉ problems (the first at that many)."""
    first_spend: float = 0.001
    """The least error each side spends at the first look (0.001: its boundary is at most z = 3.09)."""

    def __post_init__(self) -> None:
        check_spending(self.spending)
        for name, low in (("looks", 1), ("first", 2)):
            value = getattr(self, name)
            if value is None and name == "first":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be a whole number ≥ {low}, got {value!r}")
        if not 0 <= self.first_spend < ALPHA / 2:
            raise ValueError(f"first_spend must be in [0, {ALPHA / 2:g}) (the error of one side), "
                             f"got {self.first_spend}")

    def schedule(self, cap: int) -> tuple[int, ...]:
        """The problems at each look for a cap of `cap` problems."""
        if self.first is None:
            batch = max(2, -(-cap // self.looks))
            return (*range(batch, cap, batch), cap)
        if cap <= self.first or self.looks == 1:
            return (cap,)
        points = np.linspace(self.first, cap, min(self.looks, cap - self.first + 1))
        return tuple(sorted({round(float(x)) for x in points}))

    def plan(self, claim: Claim, cap: int, *, alpha: float = ALPHA, batch: int | None = None) -> SequentialPlan:
        """The plan of `claim` under this design with cap `cap`; `batch`: looks every `batch` problems instead of
        the design's own (the spending and first-look floor stay the design's)."""
        schedule = None if batch is not None else self.schedule(cap)
        return SequentialPlan(claim=claim, max_problems=cap, batch=batch, schedule=schedule, alpha=alpha,
                              spending=self.spending, floor=self.first_spend)

    def spec(self) -> str:
        """This design as `--design` takes it."""
        return f"{self.spending},looks={self.looks},first={self.first or 'none'},first_spend={self.first_spend:g}"

    def text(self) -> str:
        words = {"obrien_fleming": "O'Brien-Fleming-like", "pocock": "Pocock-like"}
        name = words.get(self.spending) or f"Hwang-Shih-DeCani γ = {self.spending.removeprefix('hsd:')}"
        first = "equally spaced" if self.first is None else f"the first at {self.first} problems"
        floor = f" spending at least {100 * self.first_spend:g}% per side" if self.first_spend else ""
        return f"{name} alpha spending, {self.looks} looks, {first}{floor}"

    def to_dict(self) -> dict[str, Any]:
        return {"spending": self.spending, "looks": self.looks, "first": self.first, "first_spend": self.first_spend}


RECOMMENDED = Design()
#: What `compare --until-decided` used before designs (a look every N/10 problems, O'Brien-Fleming-like spending).
LEGACY = Design(spending="obrien_fleming", looks=10, first=None, first_spend=0.0)
_KEYS = ("looks", "first", "first_spend")


def parse_design(text: str) -> Design:
    """`SPENDING[,looks=K][,first=N][,first_spend=A]` (the rest as `RECOMMENDED`; `first=none`: equally spaced
    looks), e.g. `pocock,looks=10`; bad input raises ValueError in one line."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a design is SPENDING[,looks=K][,first=N][,first_spend=A], got {text!r}")
    head, *options = [part.strip() for part in text.split(",")]
    values: dict[str, Any] = {"spending": head}
    for option in options:
        key, sep, value = option.partition("=")
        key = key.strip()
        if not sep or key not in _KEYS:
            raise ValueError(f"design option {option!r}: give one of {', '.join(k + '=' for k in _KEYS)}")
        if key in values:
            raise ValueError(f"design option {key} given twice")
        try:
            values[key] = (None if key == "first" and value.strip().lower() == "none"
                           else float(value) if key == "first_spend" else int(value))
        except ValueError:
            raise ValueError(f"design option {key} must be a number, got {value.strip()!r}") from None
    return Design(**values)


def design_of(stored: Mapping[str, Any]) -> Design:
    """A design as `Design.to_dict` stored it."""
    first = stored["first"]
    return Design(spending=str(stored["spending"]), looks=int(stored["looks"]),
                  first=None if first is None else int(first), first_spend=float(stored["first_spend"]))


@dataclass(frozen=True, kw_only=True)
class Characteristics:
    """A sequential plan simulated at one true difference."""

    difference: float
    expected_problems: float
    reproduced: float
    not_reproduced: float


@dataclass(frozen=True, kw_only=True)
class Recommendation:
    """A design for one claim: its cap and what it does, beside the fixed design's size."""

    design: Design
    fixed_problems: int
    max_problems: int
    power: float
    at: dict[str, Characteristics]
    """By `EFFECTS` name: the claim's line, half, the planned and twice the planned effect (absent: impossible at
    the assumed discordance)."""

    def false_verdicts(self) -> float | None:
        """The chance of any verdict at the claim's line, where both ("reproduced" and "not reproduced") are wrong:
        at most α over all looks (None: the line is beyond the assumed discordance)."""
        line = self.at.get("line")
        return None if line is None else line.reproduced + line.not_reproduced

    def to_dict(self) -> dict[str, Any]:
        return {"design": self.design.to_dict(), "spec": self.design.spec(), "fixed_problems": self.fixed_problems,
                "max_problems": self.max_problems, "power": round(self.power, 4),
                "false_verdicts": None if (false := self.false_verdicts()) is None else round(false, 4),
                "expected_problems": {k: round(v.expected_problems, 1) for k, v in self.at.items()},
                "at": {k: {"difference": v.difference, "expected_problems": round(v.expected_problems, 2),
                           "reproduced": round(v.reproduced, 4), "not_reproduced": round(v.not_reproduced, 4)}
                       for k, v in self.at.items()}}


def line_of(claim: Claim) -> float:
    """The true difference at which the claim is just false (where its false-verdict rate is largest)."""
    return {"better": claim.value, "not_worse": -claim.value, "equal": claim.value}[claim.kind]


def characteristics(plan: SequentialPlan, acc: Accuracy, *, sims: int, seed: int) -> Characteristics:
    result, used = simulate(plan, acc, sims=sims, seed=seed)
    return Characteristics(difference=acc.difference, expected_problems=float(used.mean()),
                           reproduced=float(np.mean(result == "reproduced")),
                           not_reproduced=float(np.mean(result == "not reproduced")))


def recommend(claim: Claim, acc: Accuracy, *, design: Design = RECOMMENDED, power: float = 0.8, sims: int = 2000,
              seed: int = 0, fixed: int | None = None) -> Recommendation | None:
    """`design`'s cap for `claim` at the planned `acc` (the smallest at which its simulated power reaches the
    fixed design's `power`) and its characteristics; None when no fixed size decides the claim. `fixed`: the fixed
    design's size when already known (else ttscale.stats.power.accuracy_problems)."""
    if fixed is None:
        fixed = accuracy_problems(claim, acc, power, sims=sims, seed=seed)
    if fixed is None:
        return None

    def power_at(cap: int) -> float:
        return characteristics(design.plan(claim, cap), acc, sims=sims, seed=seed).reproduced

    low, high = fixed, max(fixed + 1, math.ceil(MAX_INFLATION * fixed))
    if power_at(low) < power:
        if power_at(high) < power:
            low = high
        else:
            while high - low > 1:  # the smallest cap with the power: common random numbers keep it monotone enough
                middle = (low + high) // 2
                low, high = (low, middle) if power_at(middle) >= power else (middle, high)
            low = high
    cap = low
    plan = design.plan(claim, cap)
    line = line_of(claim)
    at = {}
    for name, factor in EFFECTS:
        difference = line + factor * (acc.difference - line)
        if abs(difference) > acc.discordance:
            continue  # more than the assumed discordance allows
        at[name] = characteristics(plan, replace(acc, difference=difference), sims=sims, seed=seed)
    return Recommendation(design=design, fixed_problems=fixed, max_problems=cap, power=at["planned"].reproduced,
                          at=at)


__all__ = ["EFFECTS", "LEGACY", "RECOMMENDED", "Characteristics", "Design", "Recommendation", "characteristics",
           "design_of", "line_of", "parse_design", "recommend"]
