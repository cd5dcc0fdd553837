from __future__ import annotations

import time

import pytest

from ttscale.answers.extract import MAX_SCAN, extract, extract_answer, last_boxed, last_number

CASES = [
    # boxed, nested, fbox, brace-less
    ("so the total is \\boxed{42}.", "42", "boxed"),
    ("$\\boxed{\\frac{1}{2}}$", "\\frac{1}{2}", "boxed"),
    ("\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}", "\\left( 3, \\frac{\\pi}{2} \\right)", "boxed"),
    ("\\fbox{5}", "5", "boxed"),
    ("thus \\boxed 7.", "7", "boxed"),
    ("first \\boxed{1}, finally \\boxed{2}", "2", "boxed"),
    ("x = \\boxed{\\{1,2\\}}", "\\{1,2\\}", "boxed"),  # escaped braces do not close the box
    ("\\boxed{2} then a truncated \\boxed{3", "2", "boxed"),  # an unclosed box falls back to the previous one
    ("\\boxed{} The answer is 4", "4", "answer_phrase"),  # an empty box counts as nothing
    # GSM8K style
    ("She makes 9 * 2 = 18 dollars.\n#### 18", "18", "hashes"),
    ("#### 1,234", "1234", "hashes"),
    ("#### -5", "-5", "hashes"),
    ("#### Step 2\nthe total is 7", "7", "final_number"),  # a markdown heading is not an answer
    # "the answer is"
    ("The answer is 42.", "42", "answer_phrase"),
    ("The answer is $\\frac{1}{2}$.", "\\frac{1}{2}", "answer_phrase"),
    ("The answer is \\(x^2+1\\)", "x^2+1", "answer_phrase"),
    ("Final Answer: The final answer is $5$. I hope it is correct.", "5", "answer_phrase"),
    ("**Answer:** 12", "12", "answer_phrase"),
    ("The answer is: 12 dollars.", "12", "answer_phrase"),
    ("The answer is 3.14.", "3.14", "answer_phrase"),
    ("The answer is (B).", "(B)", "answer_phrase"),
    ("the answer is 2 pi", "2 pi", "answer_phrase"),  # "pi" is mathematics, not a unit
    ("Our answer is wrong, let us redo this. We get 7.", "7", "final_number"),  # prose after "answer is"
    # last number
    ("I think it is 3 or maybe 4", "4", "final_number"),
    ("It costs $1,000,000.", "1000000", "final_number"),
    ("we get $1/2$.", "1/2", "math_span"),
    ("about .5 of it", "0.5", "final_number"),
    ("It is −5", "-5", "final_number"),
    ("value 12,34", "34", "final_number"),
    ("", None, None),
    ("no numbers here", None, None),
]


@pytest.mark.parametrize(("text", "expected", "rule"), CASES)
def test_extract_answer_and_its_rule(text: str, expected: str | None, rule: str | None) -> None:
    assert extract(text, final_number=True) == (expected, rule)
    assert extract_answer(text, final_number=True) == expected


@pytest.mark.parametrize(("text", "expected", "rule"), CASES)
def test_the_final_number_counts_only_where_the_task_declares_it(
    text: str, expected: str | None, rule: str | None
) -> None:
    found = extract(text)
    assert found == ((None, None) if rule == "final_number" else (expected, rule))


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
