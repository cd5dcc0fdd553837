"""A SIMULATED allocation task with a known optimum, and a scripted text generator, for allocation-search tests.

Not a model and not a task: `SimulatedGenRM` is a deterministic accuracy surface over GenRM's two choices (Singhi
et al.'s S solutions and V verifications per solution, cost S·(1+V)·tokens per problem), so that a search
(`ttscale.allocsearch`, AgentTTS 2025) can be tested in milliseconds against an optimum known in advance. The
surface is a logistic of a concave quadratic in (log2 S, log2(1+V)): more of either helps with diminishing
returns, verifications help more once there are several solutions, and the unconstrained best (S=32, V=8)
costs more than the default budget, so the budget binds: the feasible optimum is unique, S=8, V=4 (grid index
20 of 26 feasible points, accuracy 0.853; the next best, S=16, V=2, is 0.844). `ScriptedGenerator` stands in
for an LLM behind `AgentProposer`: it replies from a list or a function of the prompt and keeps the prompts.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ttscale.allocsearch.space import Allocation, Dimension, Space, Value
from ttscale.allocsearch.trials import Evaluation

SOLUTIONS = (1, 2, 4, 8, 16, 32)
VERIFICATIONS = (0, 1, 2, 4, 8, 16)


def genrm_accuracy(allocation: Allocation) -> float:
    """The simulated accuracy of S solutions with V verifications each (a deterministic surface, in (0, 1))."""
    u = math.log2(float(allocation["S"]))
    w = math.log2(1.0 + float(allocation["V"]))
    z = -1.6 + 0.9 * u + 1.1 * w - 0.11 * u * u - 0.22 * w * w + 0.04 * u * w
    return 1.0 / (1.0 + math.exp(-z))


def genrm_space(*, tokens: int = 512, total_budget: float | None = None) -> Space:
    """GenRM's S × V under a per-problem token budget (default 64 · tokens: S·(1+V) ≤ 64, 26 feasible points)."""
    return Space(
        name="genrm-simulated",
        doc="SIMULATED GenRM: sample S solutions, verify each V times, pick the solution its verifications favour",
        dimensions=(
            Dimension(name="S", values=SOLUTIONS, doc="solutions sampled per problem"),
            Dimension(name="V", values=VERIFICATIONS, doc="verifications generated per solution"),
        ),
        cost=lambda a: float(a["S"]) * (1 + float(a["V"])) * tokens,
        cost_doc=f"S·(1+V)·{tokens} tokens per problem (each solution and each verification {tokens} tokens)",
        total_budget=64 * tokens if total_budget is None else total_budget,
    )


@dataclass(kw_only=True)
class SimulatedGenRM:
    """The simulated GenRM task: `evaluate` returns the surface's accuracy with a Wilson interval over `problems`."""

    space: Space = field(default_factory=genrm_space)
    """The space searched (GenRM's S × V under the budget)."""
    problems: int = 200
    """The n the interval is over (the accuracy itself is exact: the surface, not a draw)."""
    calls: list[dict[str, object]] = field(default_factory=list)
    """Every allocation evaluated, in order (tests count evaluations with it)."""

    async def evaluate(self, allocation: Allocation) -> Evaluation:
        self.calls.append(dict(allocation))
        p = genrm_accuracy(allocation)
        low, high = wilson(p, self.problems)
        return Evaluation(accuracy=p, ci_low=low, ci_high=high, cost=self.space.cost(allocation), n=self.problems)

    def optimum(self) -> dict[str, Value]:
        """The feasible allocation of highest accuracy (unique on the default space)."""
        points: list[dict[str, Value]] = list(self.space.points())
        return max(points, key=genrm_accuracy)


def wilson(p: float, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval around a proportion p observed over n (p need not be a multiple of 1/n here)."""
    z = statistics.NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


class ScriptedGenerator:
    """A SIMULATED LLM: replies from a list (in order) or from a function of the prompt; keeps every prompt."""

    def __init__(self, replies: Sequence[str] | Callable[[str], str]) -> None:
        self._replies = replies
        self.prompts: list[str] = []
        """Every prompt it was given, in order."""

    async def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if callable(self._replies):
            return self._replies(prompt)
        if len(self.prompts) > len(self._replies):
            raise RuntimeError(f"the scripted generator has {len(self._replies)} replies and was asked for more")
        return self._replies[len(self.prompts) - 1]


__all__ = ["SOLUTIONS", "VERIFICATIONS", "ScriptedGenerator", "SimulatedGenRM", "genrm_accuracy", "genrm_space",
           "wilson"]
