"""The embedded code task: small Python functions generated from a seed, in five difficulty levels.

Needs no download, like the arithmetic task. Each problem is one function family of its level (add two numbers,
the largest of a list, count the vowels, a FizzBuzz with its own divisors and words, Roman numerals, ...) with
its constants and examples drawn from the seed. The prompt is the signature and a docstring with ONE visible
`>>>` example; the hidden `check(candidate)` asserts several more cases, edge cases among them (empty inputs,
zero, negatives, ties) that the prompt does not show, so an answer that only fits the example fails.

Levels: 1 one-line expressions (`return a + b`: the embedded 135M model solves some), 2 one built-in or a short
comprehension, 3 a loop with a condition, 4 a small algorithm (primes, Fibonacci-like sequences, FizzBuzz-like
rules), 5 several cases to get right (run-length encoding, bracket matching, Roman numerals). Every family has
a canonical solution (the problem's `reference`, a whole function) and an independent Python implementation
that computes the expected values; the tests check that the two agree through the sandbox.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from ttscale.evals import code_specs, code_specs_hard
from ttscale.evals.arithmetic import parse_levels
from ttscale.evals.base import GeneratedProblems, count_option
from ttscale.evals.code import CodeTask, code_problem
from ttscale.schema import Problem

FAMILIES = {**code_specs.FAMILIES, **code_specs_hard.FAMILIES}
"""level → the function families problems of that level are drawn from."""


class SyntheticCodeTask(CodeTask):
    """`code` (levels 1-5 interleaved) or `code:1-3`; graded by hidden unit tests in the sandbox."""

    name = "code"
    #: A generated function is a few lines: 512 tokens hold it and a sentence around it, and cut the embedded
    #: model's rambling sooner (every cut token is budget a search can spend on another sample).
    defaults = (
        ("max_tokens", 512), ("step_tokens", 512), ("max_steps", 40), ("verify_tokens", 1024), ("answer_tokens", 512),
    )

    def __init__(
        self,
        levels: str | tuple[int, ...] = (1, 2, 3, 4, 5),
        *,
        per_level: int = 100,
        seed: int = 0,
        allow_network: bool = False,
        timeout: float = 10.0,
        data_dir: object = None,
    ) -> None:
        """`data_dir` is ignored (the problems are generated); it is accepted so every code task takes the same
        options (`--data-dir` given to a sweep over several tasks)."""
        del data_dir
        super().__init__(allow_network=allow_network, timeout=timeout)
        self.levels = parse_levels(levels, allowed=FAMILIES, task="code") if isinstance(levels, str) else tuple(levels)
        if not self.levels or not set(self.levels) <= set(FAMILIES):
            raise ValueError(f"code levels must be within 1-5, got {self.levels!r}")
        self.per_level = count_option("per_level", per_level)
        self.seed = seed
        self._generated: GeneratedProblems | None = None

    def problems(self) -> GeneratedProblems:
        """Made on demand (see `GeneratedProblems`): a run's `--limit` makes only the problems it asks."""
        if self._generated is None:
            self._generated = GeneratedProblems(self.per_level * len(self.levels), self._generate)
        return self._generated

    def _load(self) -> list[Problem]:
        return list(self.problems())

    def _generate(self) -> Iterator[Problem]:
        # Interleaved by level, as arithmetic is, so `--limit 20` over levels 1-5 asks 4 of each.
        rngs = {level: random.Random(f"code-{self.seed}-{level}") for level in self.levels}
        for i in range(self.per_level):
            for level in self.levels:
                rng = rngs[level]
                spec = rng.choice(FAMILIES[level])(rng)
                yield code_problem(ident=f"code-L{level}-{i:04d}", prompt=spec.prompt(), entry_point=spec.name,
                                   test=spec.test(), reference=spec.solution(), level=level)

    def _source(self) -> dict[str, Any]:
        return {"levels": list(self.levels), "per_level": self.per_level, "seed": self.seed}
