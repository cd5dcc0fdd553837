"""The function families of the synthetic `code` task, levels 1-3, and what a family is (`Spec`).

A family draws one problem from an RNG: its constants, its visible example and its hidden test inputs. Levels 4-5
are in ttscale.evals.code_specs_hard; the task is ttscale.evals.code_synthetic.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Args = tuple[Any, ...]


@dataclass(frozen=True)
class Spec:
    """One generated function: its prompt parts, canonical body, reference implementation and test inputs."""

    name: str
    params: str
    """The signature after the name: `a: int, b: int) -> int`."""
    doc: str
    body: str
    fn: Callable[..., Any]
    example: Args
    hidden: tuple[Args, ...]

    def prompt(self) -> str:
        call = f"{self.name}({', '.join(map(repr, self.example))})"
        return (f'def {self.name}({self.params}:\n    """{self.doc}\n\n    >>> {call}\n    {self.fn(*self.example)!r}\n'
                '    """\n')

    def solution(self) -> str:
        return f"def {self.name}({self.params}:\n{self.body}\n"

    def test(self) -> str:
        lines = [f"    assert candidate({', '.join(map(repr, args))}) == {self.fn(*args)!r}" for args in self.hidden]
        return "def check(candidate):\n" + "\n".join(lines) + "\n"


Family = Callable[[random.Random], Spec]
FAMILIES: dict[int, list[Family]] = {1: [], 2: [], 3: []}
"""level → the function families problems of that level are drawn from."""


def family(registry: dict[int, list[Family]], level: int) -> Callable[[Family], Family]:
    """Register a family in `registry` under `level`."""

    def wrap(fn: Family) -> Family:
        registry[level].append(fn)
        return fn

    return wrap


def _family(level: int) -> Callable[[Family], Family]:
    return family(FAMILIES, level)


def ints(rng: random.Random, n: int, lo: int = -20, hi: int = 20) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


def word(rng: random.Random, lo: int = 3, hi: int = 8, letters: str = string.ascii_lowercase) -> str:
    return "".join(rng.choice(letters) for _ in range(rng.randint(lo, hi)))


# -- level 1: one expression ------------------------------------------------------------------------------


@_family(1)
def _add(rng: random.Random) -> Spec:
    return Spec("add", "a: int, b: int) -> int", "Return the sum of a and b.", "    return a + b",
                lambda a, b: a + b, tuple(ints(rng, 2, 1, 20)), ((0, 0), (-3, 3), (100, -250), tuple(ints(rng, 2))))


@_family(1)
def _add_constant(rng: random.Random) -> Spec:
    k = rng.randint(2, 20)
    return Spec("add_constant", "x: int) -> int", f"Return x plus {k}.", f"    return x + {k}",
                lambda x: x + k, (rng.randint(1, 30),), ((0,), (-k,), (1000,), (rng.randint(-50, -1),)))


@_family(1)
def _multiply(rng: random.Random) -> Spec:
    return Spec("multiply", "a: int, b: int) -> int", "Return the product of a and b.", "    return a * b",
                lambda a, b: a * b, tuple(ints(rng, 2, 2, 9)), ((0, 5), (-2, 3), (-4, -5), tuple(ints(rng, 2))))


@_family(1)
def _is_even(rng: random.Random) -> Spec:
    return Spec("is_even", "n: int) -> bool", "Return True if n is even, otherwise False.", "    return n % 2 == 0",
                lambda n: n % 2 == 0, (rng.randint(1, 50),), ((0,), (-3,), (-4,), (7,), (rng.randint(51, 99),)))


@_family(1)
def _larger(rng: random.Random) -> Spec:
    a = rng.randint(-9, 9)
    return Spec("larger", "a: int, b: int) -> int", "Return the larger of a and b.", "    return max(a, b)",
                max, tuple(ints(rng, 2, 1, 20)), ((a, a), (-1, -5), (-5, -1), tuple(ints(rng, 2))))


@_family(1)
def _shout(rng: random.Random) -> Spec:
    return Spec("shout", "s: str) -> str", "Return s in upper case.", "    return s.upper()",
                str.upper, (word(rng),), (("",), ("Hello World",), ("abc123",), (word(rng),)))


# -- level 2: one built-in or comprehension -----------------------------------------------------------------


@_family(2)
def _largest(rng: random.Random) -> Spec:
    return Spec("largest", "numbers: list[int]) -> int", "Return the largest number of a non-empty list.",
                "    return max(numbers)", max, (ints(rng, 5, 0, 50),),
                (([5],), ([-3, -1, -7],), ([4, 9, 9, 2],), (ints(rng, 7),)))


@_family(2)
def _total(rng: random.Random) -> Spec:
    return Spec("total", "numbers: list[int]) -> int", "Return the sum of the numbers (0 for an empty list).",
                "    return sum(numbers)", sum, (ints(rng, 4, 1, 20),), (([],), ([-1, 1],), (ints(rng, 8),)))


@_family(2)
def _reverse(rng: random.Random) -> Spec:
    return Spec("reverse", "s: str) -> str", "Return s reversed.", "    return s[::-1]",
                lambda s: s[::-1], (word(rng),), (("",), ("a",), ("ab cd",), (word(rng, 5, 12),)))


@_family(2)
def _count_letter(rng: random.Random) -> Spec:
    c = rng.choice("aeiorst")
    return Spec("count_letter", "s: str) -> int", f"Return how many times the letter '{c}' appears in s.",
                f"    return s.count({c!r})", lambda s: s.count(c), (word(rng, 6, 10) + c,),
                (("",), ("xyz",), (c * 3,), (word(rng, 10, 20),)))


@_family(2)
def _squares(rng: random.Random) -> Spec:
    return Spec("squares", "n: int) -> list[int]", "Return the list of the squares of 0, 1, ..., n - 1.",
                "    return [i * i for i in range(n)]", lambda n: [i * i for i in range(n)], (rng.randint(3, 6),),
                ((0,), (1,), (rng.randint(7, 12),)))


@_family(2)
def _repeat(rng: random.Random) -> Spec:
    k = rng.randint(2, 5)
    return Spec("repeat", "s: str) -> str", f"Return s repeated {k} times, with nothing in between.",
                f"    return s * {k}", lambda s: s * k, (word(rng, 2, 4),), (("",), ("a b",), (word(rng),)))


@_family(2)
def _distance(rng: random.Random) -> Spec:
    return Spec("distance", "a: int, b: int) -> int", "Return the absolute difference between a and b.",
                "    return abs(a - b)", lambda a, b: abs(a - b), tuple(ints(rng, 2, 1, 20)),
                ((3, 3), (-2, 5), (5, -2), tuple(ints(rng, 2))))


# -- level 3: a loop with a condition -----------------------------------------------------------------------


@_family(3)
def _count_vowels(rng: random.Random) -> Spec:
    return Spec("count_vowels", "s: str) -> int", "Return the number of vowels (a, e, i, o, u, in either case) in s.",
                "    return sum(1 for c in s.lower() if c in 'aeiou')",
                lambda s: sum(c in "aeiouAEIOU" for c in s), (word(rng, 5, 9),),
                (("",), ("xyz",), ("AEIOU",), ("Hello World",), (word(rng, 10, 20, string.ascii_letters),)))


@_family(3)
def _sum_of_evens(rng: random.Random) -> Spec:
    return Spec("sum_of_evens", "numbers: list[int]) -> int", "Return the sum of the even numbers in the list.",
                "    return sum(n for n in numbers if n % 2 == 0)", lambda xs: sum(x for x in xs if x % 2 == 0),
                (ints(rng, 6, 1, 20),), (([],), ([1, 3, 5],), ([-2, -4, 3],), (ints(rng, 9),)))


@_family(3)
def _is_palindrome(rng: random.Random) -> Spec:
    half = word(rng, 2, 4, "abc")
    return Spec("is_palindrome", "s: str) -> bool", "Return True if s reads the same forwards and backwards.",
                "    return s == s[::-1]", lambda s: s == s[::-1], (half + half[::-1],),
                (("",), ("a",), ("ab",), ("abcba",), ("abca",), (word(rng, 3, 6, "ab"),)))


@_family(3)
def _factorial(rng: random.Random) -> Spec:
    def fact(n: int) -> int:
        return n * fact(n - 1) if n > 1 else 1

    return Spec("factorial", "n: int) -> int", "Return n! = 1 * 2 * ... * n for n >= 0 (0! is 1).",
                "    result = 1\n    for i in range(2, n + 1):\n        result *= i\n    return result",
                fact, (rng.randint(3, 6),), ((0,), (1,), (10,), (rng.randint(7, 15),)))


@_family(3)
def _count_above(rng: random.Random) -> Spec:
    k = rng.randint(0, 10)
    return Spec("count_above", "numbers: list[int]) -> int",
                f"Return how many numbers in the list are greater than {k}.",
                f"    return sum(1 for n in numbers if n > {k})", lambda xs: sum(x > k for x in xs),
                (ints(rng, 5, 0, 20),), (([],), ([k, k],), ([k + 1, -k - 1],), (ints(rng, 9),)))


@_family(3)
def _unique(rng: random.Random) -> Spec:
    return Spec("unique", "items: list[int]) -> list[int]",
                "Return the items without repeats, keeping the first occurrence of each, in order.",
                "    seen = []\n    for item in items:\n        if item not in seen:\n            seen.append(item)\n"
                "    return seen", lambda xs: list(dict.fromkeys(xs)), (ints(rng, 6, 1, 4),),
                (([],), ([1, 1, 1],), ([3, 1, 3, 2, 1],), (ints(rng, 10, -3, 3),)))


@_family(3)
def _sum_of_multiples(rng: random.Random) -> Spec:
    k = rng.randint(2, 7)
    return Spec("sum_of_multiples", "n: int) -> int",
                f"Return the sum of the multiples of {k} from 0 up to but not including n.",
                f"    return sum(i for i in range(n) if i % {k} == 0)", lambda n: sum(range(0, max(n, 0), k)),
                (rng.randint(10, 20),), ((0,), (1,), (k,), (k + 1,), (rng.randint(21, 60),)))


