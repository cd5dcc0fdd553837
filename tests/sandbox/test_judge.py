"""The tests' process (`_judge.py`) and the candidate's (`_runner.serve`): the tests see the program's functions as
calls with plain data, its plain values and modules as their own copies, the context's names as the context's, and
what a call raised as the builtin class it derives from (issue 59: a pass no program can forge)."""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import SQUARE, SQUARE_TEST, WRONG
from ttscale.sandbox import Sandbox

POLY_CONTEXT = (
    "import math\n\n\ndef poly(xs: list, x: float):\n"
    "    return sum(coeff * math.pow(x, i) for i, coeff in enumerate(xs))\n"
    "\n\ndef find_zero(xs: list):\n    \"\"\"A zero of the polynomial xs.\"\"\"\n"
)
POLY_TEST = ("def check(candidate):\n    for coeffs in ([1, 2], [-6, 11, -6, 1]):\n"
             "        assert math.fabs(poly(coeffs, candidate(coeffs))) < 1e-4\n")
# A zero-finder that is wrong, and a `poly` of its own that says every point is a zero.
FORGED_POLY = "import math\n\ndef poly(xs, x):\n    return 0.0\n\ndef find_zero(xs):\n    return 123.0\n"
HONEST_POLY = ("import math\n\ndef poly(xs, x):\n    return sum(c * math.pow(x, i) for i, c in enumerate(xs))\n\n"
               "def find_zero(xs):\n    lo, hi = -100.0, 100.0\n    while hi - lo > 1e-10:\n"
               "        mid = (lo + hi) / 2\n        if poly(xs, mid) * poly(xs, lo) > 0:\n            lo = mid\n"
               "        else:\n            hi = mid\n    return lo\n")


def _run(sandbox: Sandbox, program: str, test: str, entry_point: str | None = "solve", context: str | None = None):
    return sandbox.run(program=program, test=test, entry_point=entry_point, context=context)


@pytest.mark.parametrize(
    ("program", "test"),
    [
        # What the program's function raised, as the builtin class it derives from.
        ("def solve(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n",
         "def check(candidate):\n    try:\n        candidate(-1)\n    except ValueError as error:\n"
         "        assert 'negative' in str(error)\n    else:\n        raise AssertionError('no error')\n"),
        ("class Mine(KeyError):\n    pass\ndef solve(x):\n    raise Mine(x)\n",
         "def check(candidate):\n    try:\n        candidate(1)\n    except LookupError:\n        pass\n"),
        # SystemExit in a call is an Exception in the tests' process: it cannot end the tests.
        ("def solve(x):\n    raise SystemExit(0)\n",
         "def check(candidate):\n    try:\n        candidate(1)\n    except Exception:\n        pass\n"),
        # Keyword arguments, and every plain type both ways.
        ("def solve(x, *, scale=1):\n    return [x * scale, (str(x), b'b'), {x}, {'k': None}, 1.5, 2j, True]\n",
         "def check(candidate):\n"
         "    assert candidate(2, scale=3) == [6, ('2', b'b'), {2}, {'k': None}, 1.5, 2j, True]\n"),
        # Arguments are copies: what the function does to its argument stays in the candidate's process.
        ("def solve(xs):\n    xs.append(1)\n    return len(xs)\n",
         "def check(candidate):\n    xs = []\n    assert candidate(xs) == 1 and candidate(xs) == 1 and xs == []\n"),
        # With no entry point, the asserts call the program's functions and read its plain values and modules.
        ("import math\nLIMIT = 10\ndef add(a, b):\n    return a + b\n",
         "assert add(1, 2) == 3\nassert LIMIT == 10\nassert math.sqrt(4) == 2\n"),
    ],
    ids=["raises_builtin", "raises_own_subclass", "system_exit_in_call", "kwargs_and_types", "copies", "no_entry"],
)
def test_the_tests_call_the_program_with_plain_data(namespaced: Sandbox, program: str, test: str) -> None:
    entry = None if "add(" in test else "solve"
    execution = _run(namespaced, program, test, entry)
    assert execution.passed, execution


@pytest.mark.parametrize(
    ("program", "test", "reason"),
    [
        (SQUARE, "def check(candidate):\n    assert candidate(lambda: 1) == 1\n",
         "TypeError: an argument of solve cannot be passed to the program: an object of type function"),
        ("def solve(x):\n    return [x, object()]\n", SQUARE_TEST,
         "TypeError: the program's solve returned an object of type object: only plain builtin values"),
        ("def solve(x):\n    raise ValueError('no')\n", SQUARE_TEST,
         "ValueError: no (program line 2: raise ValueError('no'))"),
        ("import os\ndef solve(x):\n    os.write(4, b'\\x00\\x00\\x00\\x01?')\n    return x\n", SQUARE_TEST,
         "the program's process answered something unreadable: "),
        ("import os\ndef solve(x):\n    os._exit(7)\n", SQUARE_TEST, "exited 7 before the tests ended"),
        ("x = 1\n", SQUARE_TEST, "NameError: name 'solve' is not defined by the program"),
    ],
    ids=["argument", "result", "raised", "garbage_answer", "exits_in_call", "no_function"],
)
def test_what_cannot_cross_or_ends_early_fails_with_its_reason(namespaced: Sandbox, program: str, test: str,
                                                               reason: str) -> None:
    execution = _run(namespaced, program, test)
    assert execution.status == "failed", execution
    assert execution.reason.startswith(reason), execution


def test_the_contexts_helpers_are_the_ones_the_tests_use(namespaced: Sandbox) -> None:
    """HumanEval/32's shape: the test checks the answer with the prompt's `poly`. With the prompt as context, an
    answer that redefines `poly` checks nothing with it; without, the program's `poly` is the one (HumanEval's)."""
    forged = _run(namespaced, FORGED_POLY, POLY_TEST, "find_zero", POLY_CONTEXT)
    assert forged.status == "failed", forged
    assert _run(namespaced, FORGED_POLY, POLY_TEST, "find_zero").passed
    assert _run(namespaced, HONEST_POLY, POLY_TEST, "find_zero", POLY_CONTEXT).passed


def test_the_contexts_stub_of_the_entry_point_is_never_called(namespaced: Sandbox) -> None:
    context = "def solve(x):\n    return x * x\n"  # a stub that would pass: the program's function is the one called
    execution = _run(namespaced, WRONG, SQUARE_TEST, context=context)
    assert execution.status == "failed", execution
    missing = _run(namespaced, "y = 1\n", SQUARE_TEST, context=context)
    assert missing.reason.startswith("NameError: name 'solve' is not defined by the program"), missing


def test_a_context_that_raises_is_a_sandbox_error(namespaced: Sandbox) -> None:
    execution = _run(namespaced, SQUARE, SQUARE_TEST, context="raise RuntimeError('broken prompt')\n")
    assert execution.status == "crashed", execution
    assert execution.reason.startswith("sandbox error: the problem's context raised RuntimeError: broken prompt")


def test_output_of_the_program_and_the_tests_comes_in_order(namespaced: Sandbox) -> None:
    program = "print('loaded')\ndef solve(x):\n    print('called', x)\n    return x * x\n"
    test = "def check(candidate):\n    print('before')\n    assert candidate(2) == 4\n    print('after')\n"
    execution = _run(namespaced, program, test)
    assert execution.passed, execution
    assert execution.output.split("\n")[:4] == ["loaded", "before", "called 2", "after"]
