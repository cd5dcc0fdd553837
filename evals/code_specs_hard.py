"""The function families of the synthetic `code` task, levels 4-5 (see ttscale.evals.code_specs)."""

from __future__ import annotations

import math
import random
import string
from collections.abc import Callable

from ttscale.evals.code_specs import Family, Spec, family, ints, word

FAMILIES: dict[int, list[Family]] = {4: [], 5: []}
"""level → the function families problems of that level are drawn from."""


def _family(level: int) -> Callable[[Family], Family]:
    return family(FAMILIES, level)


# -- level 4: a small algorithm ------------------------------------------------------------------------------


@_family(4)
def _fizz_buzz(rng: random.Random) -> Spec:
    a, b = rng.choice([(3, 5), (2, 7), (3, 4), (4, 5), (2, 3)])
    w1, w2 = rng.choice([("Fizz", "Buzz"), ("Foo", "Bar"), ("Ping", "Pong"), ("Tic", "Tac")])

    def say(n: int) -> str:
        return (w1 if n % a == 0 else "") + (w2 if n % b == 0 else "") or str(n)

    return Spec("fizz_buzz", "n: int) -> str",
                f"Return '{w1}{w2}' if n is divisible by both {a} and {b}, '{w1}' if only by {a}, '{w2}' if only by "
                f"{b}, and otherwise n as a string.",
                f"    if n % {a} == 0 and n % {b} == 0:\n        return {w1 + w2!r}\n    if n % {a} == 0:\n"
                f"        return {w1!r}\n    if n % {b} == 0:\n        return {w2!r}\n    return str(n)",
                say, (a * b,), ((a,), (b,), (1,), (2 * a * b,), (0,), (a * b + 1,), (rng.randint(1, 100),)))


@_family(4)
def _sequence(rng: random.Random) -> Spec:
    a, b = rng.randint(0, 3), rng.randint(1, 4)

    def nth(n: int) -> int:
        x, y = a, b
        for _ in range(n):
            x, y = y, x + y
        return x

    return Spec("sequence", "n: int) -> int",
                f"Return the n-th number (counting from 0) of the sequence that starts {a}, {b} and in which every "
                "later number is the sum of the two before it.",
                f"    x, y = {a}, {b}\n    for _ in range(n):\n        x, y = y, x + y\n    return x",
                nth, (rng.randint(4, 7),), ((0,), (1,), (2,), (10,), (rng.randint(15, 30),)))


@_family(4)
def _is_prime(rng: random.Random) -> Spec:
    def prime(n: int) -> bool:
        return n > 1 and all(n % d for d in range(2, int(n**0.5) + 1))

    return Spec("is_prime", "n: int) -> bool", "Return True if n is a prime number, otherwise False.",
                "    if n < 2:\n        return False\n    d = 2\n    while d * d <= n:\n        if n % d == 0:\n"
                "            return False\n        d += 1\n    return True",
                prime, (rng.choice([11, 13, 17, 19, 23]),),
                ((0,), (1,), (2,), (9,), (25,), (97,), (-7,), (rng.randint(100, 400),)))


@_family(4)
def _digit_sum(rng: random.Random) -> Spec:
    return Spec("digit_sum", "n: int) -> int", "Return the sum of the decimal digits of n (of -n when n is negative).",
                "    return sum(int(d) for d in str(abs(n)))", lambda n: sum(map(int, str(abs(n)))),
                (rng.randint(100, 999),), ((0,), (-123,), (9,), (rng.randint(10_000, 10**9),)))


@_family(4)
def _second_largest(rng: random.Random) -> Spec:
    def second(xs: list[int]) -> int | None:
        values = sorted(set(xs))
        return values[-2] if len(values) > 1 else None

    return Spec("second_largest", "numbers: list[int]) -> int | None",
                "Return the second largest distinct value in the list, or None if it has fewer than two distinct "
                "values.",
                "    values = sorted(set(numbers))\n    return values[-2] if len(values) > 1 else None",
                second, (rng.sample(range(20), 5),), (([],), ([5],), ([5, 5],), ([3, 3, 2],), (ints(rng, 8),)))


@_family(4)
def _gcd(rng: random.Random) -> Spec:
    k = rng.randint(2, 9)
    return Spec("gcd", "a: int, b: int) -> int", "Return the greatest common divisor of two positive integers.",
                "    while b:\n        a, b = b, a % b\n    return a", math.gcd,
                (k * rng.randint(2, 9), k * rng.randint(2, 9)),
                ((1, 1), (17, 5), (7, 7), (12, 18), (rng.randint(1, 500), rng.randint(1, 500))))


@_family(4)
def _running_total(rng: random.Random) -> Spec:
    def running(xs: list[int]) -> list[int]:
        out, total = [], 0
        for x in xs:
            total += x
            out.append(total)
        return out

    return Spec("running_total", "numbers: list[int]) -> list[int]",
                "Return the running sums of the list: element i is the sum of the first i + 1 numbers.",
                "    out, total = [], 0\n    for n in numbers:\n        total += n\n        out.append(total)\n"
                "    return out",
                running, (ints(rng, 4, 1, 9),), (([],), ([5],), ([-1, 1, -1],), (ints(rng, 8),)))


# -- level 5: several cases to get right -------------------------------------------------------------------


@_family(5)
def _run_length(rng: random.Random) -> Spec:
    def encode(s: str) -> str:
        out, i = [], 0
        while i < len(s):
            j = i
            while j < len(s) and s[j] == s[i]:
                j += 1
            out.append(f"{s[i]}{j - i}")
            i = j
        return "".join(out)

    return Spec("run_length", "s: str) -> str",
                "Encode s by runs: each run of one repeated character becomes the character followed by the "
                "run's length.",
                "    out = ''\n    i = 0\n    while i < len(s):\n        j = i\n"
                "        while j < len(s) and s[j] == s[i]:\n"
                "            j += 1\n        out += s[i] + str(j - i)\n        i = j\n    return out",
                encode, ("".join(c * rng.randint(1, 4) for c in rng.sample("abcdef", 3)),),
                (("",), ("a",), ("abc",), ("z" * 12,), ("aabba",), (word(rng, 8, 14, "ab"),)))


@_family(5)
def _balanced(rng: random.Random) -> Spec:
    def ok(s: str) -> bool:
        stack: list[str] = []
        for c in s:
            if c in "([{":
                stack.append(c)
            elif c in ")]}" and (not stack or "([{"[")]}".index(c)] != stack.pop()):
                return False
        return not stack

    return Spec("balanced", "s: str) -> bool",
                "Return True if the brackets (), [] and {} in s are balanced and properly nested; other characters "
                "do not matter.",
                "    pairs = {')': '(', ']': '[', '}': '{'}\n    stack = []\n    for c in s:\n        if c in '([{':\n"
                "            stack.append(c)\n        elif c in pairs:\n"
                "            if not stack or stack.pop() != pairs[c]:\n"
                "                return False\n    return not stack",
                ok, (rng.choice(["([]{})", "a(b)[c]", "{[()]}"]),),
                (("",), ("(]",), (")(",), ("((",), ("a(b)c",), ("([)]",),
                 ("".join(rng.choice("()[]") for _ in range(6)),)))


@_family(5)
def _common_prefix(rng: random.Random) -> Spec:
    def prefix(words: list[str]) -> str:
        out = ""
        for chars in zip(*words, strict=False):  # as far as the shortest word
            if len(set(chars)) > 1:
                break
            out += chars[0]
        return out

    stem = word(rng, 2, 4)
    return Spec("common_prefix", "words: list[str]) -> str",
                "Return the longest prefix all the words share ('' for an empty list).",
                "    if not words:\n        return ''\n    prefix = words[0]\n    for word in words[1:]:\n"
                "        while not word.startswith(prefix):\n            prefix = prefix[:-1]\n    return prefix",
                prefix, ([stem + word(rng, 1, 3) for _ in range(3)],),
                (([],), (["abc"],), (["ab", "abc", "abd"],), (["x", "y"],), (["", "a"],),
                 ([word(rng, 2, 4, "ab") for _ in range(3)],)))


@_family(5)
def _roman(rng: random.Random) -> Spec:
    table = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
             (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))

    def roman(n: int) -> str:
        out = ""
        for value, letters in table:
            count, n = divmod(n, value)
            out += letters * count
        return out

    return Spec("to_roman", "n: int) -> str", "Return n (1 to 3999) in Roman numerals.",
                f"    out = ''\n    for value, letters in {[list(t) for t in table]!r}:\n        while n >= value:\n"
                "            out += letters\n            n -= value\n    return out",
                roman, (rng.randint(11, 39),),
                ((1,), (4,), (9,), (40,), (90,), (400,), (1994,), (3999,), (rng.randint(40, 3999),)))


@_family(5)
def _caesar(rng: random.Random) -> Spec:
    k = rng.randint(1, 25)

    def shift(s: str) -> str:
        out = ""
        for c in s:
            base = "a" if c.islower() else "A"
            out += chr((ord(c) - ord(base) + k) % 26 + ord(base)) if c.isascii() and c.isalpha() else c
        return out

    return Spec("caesar", "s: str) -> str",
                f"Shift every letter of s {k} places forward in the alphabet (wrapping from z to a) and keep its "
                "case; other characters stay as they are.",
                "    out = ''\n    for c in s:\n        if c.isascii() and c.isalpha():\n"
                "            base = ord('a') if c.islower() else ord('A')\n"
                f"            c = chr((ord(c) - base + {k}) % 26 + base)\n        out += c\n    return out",
                shift, (word(rng, 4, 6),),
                (("",), ("xyz",), ("Hello, World!",), (word(rng, 6, 12, string.ascii_letters),)))


@_family(5)
def _longest_run(rng: random.Random) -> Spec:
    def run(xs: list[int]) -> int:
        best = length = 0
        for i, x in enumerate(xs):
            length = length + 1 if i and x > xs[i - 1] else 1
            best = max(best, length)
        return best

    return Spec("longest_run", "numbers: list[int]) -> int",
                "Return the length of the longest stretch of consecutive, strictly increasing numbers (0 for an "
                "empty list).",
                "    best = length = 0\n    for i, n in enumerate(numbers):\n"
                "        length = length + 1 if i and n > numbers[i - 1] else 1\n        best = max(best, length)\n"
                "    return best",
                run, (ints(rng, 7, 0, 9),),
                (([],), ([5],), ([3, 3, 3],), ([1, 2, 3, 1, 2],), ([5, 4, 3],), (ints(rng, 12),)))


@_family(5)
def _most_common(rng: random.Random) -> Spec:
    def common(s: str) -> str:
        return min(set(s), key=lambda c: (-s.count(c), c)) if s else ""

    return Spec("most_common", "s: str) -> str",
                "Return the character that appears most often in s; on a tie, the one that comes first in "
                "alphabetical order ('' for an empty string).",
                "    if not s:\n        return ''\n    return min(set(s), key=lambda c: (-s.count(c), c))",
                common, (word(rng, 6, 9, "abcd"),),
                (("",), ("a",), ("abab",), ("bbaa",), ("zzy",), (word(rng, 10, 20),)))


