"""The embedded task: arithmetic problems generated from a seed, in five difficulty levels.

Needs no download, and spans the embedded model's range from mostly right (level 1) to
never right (level 5), so coverage, voting plateaus and difficulty routing are all visible
on a laptop (see ENGINE_NOTES.md for the measured accuracy per level).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Collection, Iterator
from typing import Any

from ttscale.answers.extract import Extraction, extract
from ttscale.evals.base import GeneratedProblems, Message, count_option
from ttscale.schema import Problem

Generator = Callable[[random.Random], tuple[str, int]]
#: level → (description, generator of (expression, value) from an RNG)
LEVELS: dict[int, tuple[str, Generator]] = {}


def _level(number: int, description: str) -> Callable[[Generator], Generator]:
    def wrap(fn: Generator) -> Generator:
        LEVELS[number] = (description, fn)
        return fn

    return wrap


@_level(1, "a + b, one digit each")
def _one_digit_sum(rng: random.Random) -> tuple[str, int]:
    a, b = rng.randint(1, 9), rng.randint(1, 9)
    return f"{a} + {b}", a + b


@_level(2, "two-digit + one-digit")
def _two_plus_one(rng: random.Random) -> tuple[str, int]:
    a, b = rng.randint(10, 99), rng.randint(1, 9)
    return f"{a} + {b}", a + b


@_level(3, "two-digit + two-digit")
def _two_plus_two(rng: random.Random) -> tuple[str, int]:
    a, b = rng.randint(10, 99), rng.randint(10, 99)
    return f"{a} + {b}", a + b


@_level(4, "a * b + c")
def _product_plus(rng: random.Random) -> tuple[str, int]:
    a, b, c = rng.randint(2, 12), rng.randint(2, 12), rng.randint(10, 99)
    return f"{a} * {b} + {c}", a * b + c


@_level(5, "a + b - c, two digits each")
def _sum_minus(rng: random.Random) -> tuple[str, int]:
    a, b, c = rng.randint(10, 99), rng.randint(10, 99), rng.randint(10, 99)
    return f"{a} + {b} - {c}", a + b - c


_INT = re.compile(r"^[+-]?\d{1,30}$")
_NUMBER = re.compile(r"[-+]?\d[\d,]*")
# Measured on the embedded model (n=16, T=0.8, 8 problems a level): pass@1 0.47 / 0.04 / 0.08 / 0.02 on
# levels 1-4. "Think step by step … 'The answer is N.'" made it write a literal "N" half of the time.
PROMPT = "Calculate {expression}. Give the result as a number."


def parse_levels(text: str, *, allowed: Collection[int] = LEVELS, task: str = "arithmetic") -> tuple[int, ...]:
    """`1-3` → (1, 2, 3); `1,4` → (1, 4); `5` → (5,); each within `allowed` (a task's levels)."""
    levels: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            levels.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        levels = set()
    if not levels or not levels <= set(allowed):
        raise ValueError(f"{task} levels must be within 1-5, like '1-3' or '1,4', got {text!r}")
    return tuple(sorted(levels))


class ArithmeticTask:
    """`arithmetic` (levels 1-5 interleaved) or `arithmetic:1-3`; graded by exact integer match."""

    name = "arithmetic"

    def __init__(
        self, levels: str | tuple[int, ...] = (1, 2, 3, 4, 5), *, per_level: int = 100, seed: int = 0
    ):
        self.levels = parse_levels(levels) if isinstance(levels, str) else tuple(levels)
        self.per_level = count_option("per_level", per_level)
        self.seed = seed
        self._problems: GeneratedProblems | None = None

    def problems(self) -> GeneratedProblems:
        """Made on demand (see `GeneratedProblems`): a run's `--limit` makes only the problems it asks."""
        if self._problems is None:
            self._problems = GeneratedProblems(self.per_level * len(self.levels), self._generate)
        return self._problems

    def _generate(self) -> Iterator[Problem]:
        # Interleaved by level, so `--limit 20` over levels 1-5 asks 4 of each.
        rngs = {level: random.Random(f"arithmetic-{self.seed}-{level}") for level in self.levels}
        for i in range(self.per_level):
            for level in self.levels:
                expression, value = LEVELS[level][1](rngs[level])
                yield Problem(
                    id=f"arith-L{level}-{i:04d}",
                    question=PROMPT.format(expression=expression),
                    reference=str(value),
                    level=level,
                    meta={"expression": expression},
                )

    def messages(self, problem: Problem) -> list[Message]:
        return [{"role": "user", "content": problem.question}]

    def extract(self, text: str) -> str | None:
        return self.extraction(text).answer

    def extraction(self, text: str) -> Extraction:
        # The prompt asks for a number, so a final number counts as the answer; and the answer is an
        # integer: "The answer is actually 11" or "3 + 4 = 7" count as 11 and 7.
        stated, rule = extract(text, final_number=True)
        numbers = _NUMBER.findall(stated) if stated else []
        return Extraction(numbers[-1].replace(",", ""), rule) if numbers else Extraction(None, None)

    def grade(self, prediction: str | None, problem: Problem) -> bool:
        if prediction is None:
            return False
        cleaned = prediction.strip().replace(",", "").replace("−", "-").rstrip(".")
        return bool(_INT.match(cleaned)) and int(cleaned) == int(problem.reference)

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "levels": list(self.levels),
            "per_level": self.per_level,
            "seed": self.seed,
        }
