from __future__ import annotations

import json
import re
import time
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttscale.verifiers.safe_eval import EvalLimits, UnsafeExpressionError, check_step, safe_eval


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("0.1 + 0.2", Fraction(3, 10)),  # exact: the literal's text, not a float
        ("3 × 4", 12),
        ("12 ÷ 4", 3),
        ("3 \\times 4 - 2 \\cdot 5", 2),
        ("7 \\div 2", Fraction(7, 2)),
        ("(3 + 4) * 2", 14),
        ("-3 + 5", 2),
        ("5 − −3", 8),
        ("007 + 1", 8),
        ("1,200 - 300", 900),
        ("$12 + $7", 19),
        ("3 x 4", 12),
        (".5 + .5", 1),
        ("¾ x 3/3", Fraction(3, 4)),
        ("2½ + ⅓", Fraction(17, 6)),
    ],
)
def test_values(expression: str, value: Fraction | int) -> None:
    assert safe_eval(expression) == value


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("2**3", "BinOp is not allowed"),
        ("7 // 2", "BinOp is not allowed"),
        ("7 % 2", "not plain arithmetic"),
        ("__import__('os').system('true')", "not plain arithmetic"),
        ("abs(-3)", "not plain arithmetic"),
        ("1e5", "not plain arithmetic"),
        ("x + 1", "not plain arithmetic"),
        ("\\frac{1}{2}", "not plain arithmetic"),
        ("3.5.2", "not an expression"),
        ("", "not plain arithmetic"),
        ("9" * 31, "more than 30 digits"),
        ("(" * 25 + "1" + ")" * 25, "nested deeper than 20"),
        ("1" + " + 1" * 80, "more than 64 operations"),
        ("1 " * 600, "longer than 1000"),
        ("99999999999999999999 * 99999999999999999999" + " * 99999999999999999999" * 8, "exceeds 512 bits"),
    ],
)
def test_refusals(expression: str, message: str) -> None:
    limits = EvalLimits(max_bits=512, max_chars=1000)
    with pytest.raises(UnsafeExpressionError, match=message):
        safe_eval(expression, limits=limits)


def test_division_by_zero_and_limits_validation() -> None:
    with pytest.raises(ZeroDivisionError):
        safe_eval("1 / (2 - 2)")
    with pytest.raises(ValueError, match="max_nodes must be an integer"):
        EvalLimits(max_nodes=0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=8),
    st.lists(st.sampled_from("+-*"), min_size=7),
)
def test_agrees_with_integer_arithmetic(numbers: list[int], ops: list[str]) -> None:
    # Build the expression and its value side by side (left to right with precedence by Python's
    # own integer arithmetic on the same tree is what we compare against, computed without eval).
    expression = " ".join(f"{n} {op}" for n, op in zip(numbers[:-1], ops, strict=False)) + f" {numbers[-1]}"
    terms: list[int] = [numbers[0]]
    signs: list[int] = [1]
    for n, op in zip(numbers[1:], ops, strict=False):
        if op == "*":
            terms[-1] *= n
        else:
            terms.append(n)
            signs.append(1 if op == "+" else -1)
    assert safe_eval(expression, limits=EvalLimits(max_chars=400)) == sum(
        s * t for s, t in zip(signs, terms, strict=True)
    )


@pytest.mark.parametrize(
    ("step", "expected"),
    [
        ("12 + 7 = 19", [("12 + 7", "19", True)]),
        ("So 3 × 4 = 13.", [("3 * 4", "13", False)]),
        ("Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs", [("16-3-4", "9", True)]),
        ("$1,200 - $300 = $900", [("1200 - 300", "900", True)]),
        ("1/3 = 0.33 and 1/3 = 0.34", [("1/3", "0.33", True), ("1/3", "0.34", False)]),  # rounded decimals
        ("2 + 3 = 5 + 1 = 6", [("2 + 3", "5 + 1", False), ("5 + 1", "6", True)]),  # a sloppy chain is wrong
        ("Then -3 + 5 = 2.", [("-3 + 5", "2", True)]),
        ("(see 3 + 4 = 7)", [("3 + 4", "7", True)]),
        ("so 6*7=42, 42+2=44", [("6*7", "42", True), ("42+2", "44", True)]),
        ("12 - 4 = 8 apples", [("12 - 4", "8", True)]),
        ("total: 3+4 = 7\n7*2 = 15", [("3+4", "7", True), ("7*2", "15", False)]),
        ("5 / 0 = 1", [("5 / 0", "1", None)]),
        # not arithmetic statements: skipped, not judged
        ("2x + 3 = 7", []),
        ("x = 5", []),
        ("x2 + 1 = 3", []),
        ("2^3 + 1 = 9", []),
        ("3 + 4 = 7x", []),
        ("1 + 1 = 50%", []),
        ("125 = 125", []),
    ],
)
def test_check_step(step: str, expected: list[tuple[str, str, bool | None]]) -> None:
    checked = check_step(step)
    assert [(eq.left, eq.right, eq.correct) for eq in checked.equations] == expected
    assert checked.all_correct == all(c is not False for _, _, c in expected)
    assert checked.n_wrong == sum(c is False for _, _, c in expected)


def test_check_step_is_bounded() -> None:
    start = time.perf_counter()
    hostile = ["1 + " * 100_000 + "1 = 2", "(" * 100_000 + "=", "1=" * 100_000, "9" * 100_000 + " + 1 = 2"]
    hostile += ["0" * 100_000, "1 x " * 100_000, "½" * 100_000, " " * 100_000 + "=", "1." * 100_000]
    for text in hostile:
        check_step(text)
    assert time.perf_counter() - start < 2.0
    assert len(check_step("1 + 1 = 2, " * 1000).equations) == 256


def test_gsm8k_calculator_annotations_all_check_out(shared_data: Path) -> None:
    """Every `<<a op b = c>>` in the GSM8K test solutions (4,282 of them) is a calculator output."""
    rows = [json.loads(line) for line in (shared_data / "gsm8k" / "test.jsonl").read_text().splitlines()]
    annotations = [a for row in rows for a in re.findall(r"<<([^<>]*)>>", row["answer"])]
    assert len(annotations) == 4282
    checks = [check_step(a) for a in annotations]
    assert sum(len(c.equations) for c in checks) == 4282 - 76  # 76 state no operation ("125=125")
    assert all(eq.correct is True for c in checks for eq in c.equations)


def test_gsm8k_solutions_text_has_two_known_slips(shared_data: Path) -> None:
    """Checking the written solutions (not the annotations) finds the two slips that are there."""
    rows = [json.loads(line) for line in (shared_data / "gsm8k" / "test.jsonl").read_text().splitlines()]
    wrong = {
        i: [(e.left, e.right) for e in check_step(r["answer"]).equations if e.correct is False]
        for i, r in enumerate(rows)
    }
    assert {i: w for i, w in wrong.items() if w} == {
        410: [("3/2", "1.50+3.00")],  # "$3/2 = $1.50+$3.00=$4.50": a running total written as a chain
        1024: [("32 - 20", "300")],  # "$32 - $20 = $300": a typo for $320 - $20
    }
