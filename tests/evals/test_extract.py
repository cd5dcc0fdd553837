from __future__ import annotations

import time

import pytest

from ttscale.evals.extract import MAX_SCAN, extract_answer, last_boxed, last_number

CASES = [
    # boxed, nested, fbox, brace-less
    ("so the total is \\boxed{42}.", "42"),
    ("$\\boxed{\\frac{1}{2}}$", "\\frac{1}{2}"),
    ("\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}", "\\left( 3, \\frac{\\pi}{2} \\right)"),
    ("\\fbox{5}", "5"),
    ("thus \\boxed 7.", "7"),
    ("first \\boxed{1}, finally \\boxed{2}", "2"),
    ("x = \\boxed{\\{1,2\\}}", "\\{1,2\\}"),  # escaped braces do not close the box
    ("\\boxed{2} then a truncated \\boxed{3", "2"),  # an unclosed box falls back to the previous one
    ("\\boxed{} The answer is 4", "4"),  # an empty box counts as nothing
    # GSM8K style
    ("She makes 9 * 2 = 18 dollars.\n#### 18", "18"),
    ("#### 1,234", "1234"),
    ("#### -5", "-5"),
    ("#### Step 2\nthe total is 7", "7"),  # a markdown heading is not an answer
    # "the answer is"
    ("The answer is 42.", "42"),
    ("The answer is $\\frac{1}{2}$.", "\\frac{1}{2}"),
    ("The answer is \\(x^2+1\\)", "x^2+1"),
    ("Final Answer: The final answer is $5$. I hope it is correct.", "5"),
    ("**Answer:** 12", "12"),
    ("The answer is: 12 dollars.", "12"),
    ("The answer is 3.14.", "3.14"),
    ("The answer is (B).", "(B)"),
    ("the answer is 2 pi", "2 pi"),  # "pi" is mathematics, not a unit
    ("Our answer is wrong, let us redo this. We get 7.", "7"),  # prose after "answer is": fall back
    # last number
    ("I think it is 3 or maybe 4", "4"),
    ("It costs $1,000,000.", "1000000"),
    ("about .5 of it", "0.5"),
    ("It is −5", "-5"),
    ("value 12,34", "34"),
    ("", None),
    ("no numbers here", None),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected


def test_boxed_beats_later_phrases_and_numbers() -> None:
    assert extract_answer("\\boxed{9}. Check: 3 * 3 = 9, so the answer is 9 and 10 more") == "9"


def test_last_boxed_and_last_number_directly() -> None:
    assert last_boxed("no box") is None
    assert last_boxed("\\boxed{a}\\boxed{\\frac{b}{c}}") == "\\frac{b}{c}"
    assert last_number("1, 2, and 3,000") == "3000"
    assert last_number("words") is None


@pytest.mark.parametrize(
    "text",
    [
        "\\boxed{" * 200_000,  # thousands of unclosed boxes: one linear brace-matching pass
        "\\boxed{}" * 100_000,
        "x" * 1_000_000,
        "{" * 1_000_000 + "\\boxed{5}",
        "\\frac{" * 500 + "1" + "}" * 500,
        "The answer is " * 100_000,
        "#### " * 200_000,
        "1" * 1_000_000,
    ],
)
def test_hostile_text_is_fast(text: str) -> None:
    start = time.perf_counter()
    extract_answer(text)
    assert time.perf_counter() - start < 1.0


def test_only_the_tail_is_scanned() -> None:
    text = "\\boxed{early}" + "x" * (MAX_SCAN + 10)
    assert extract_answer(text) is None
