from __future__ import annotations

import pytest

from ttscale.evals import load_task
from ttscale.evals.arithmetic import LEVELS, ArithmeticTask, parse_levels


def test_problems_are_reproducible_and_interleaved() -> None:
    a, b = ArithmeticTask().problems(), ArithmeticTask().problems()
    assert a == b and len(a) == 500
    assert [p.level for p in a[:10]] == [1, 2, 3, 4, 5] * 2
    assert len({p.id for p in a}) == 500
    assert ArithmeticTask(seed=1).problems()[:5] != a[:5]


def value_of(expression: str) -> int:
    """Recompute an expression of the task's forms with integer arithmetic (no eval)."""
    t = expression.split()
    if t[1] == "*":
        return int(t[0]) * int(t[2]) + int(t[4])
    value = int(t[0])
    for op, operand in zip(t[1::2], t[2::2], strict=True):
        value = value + int(operand) if op == "+" else value - int(operand)
    return value


def test_references_are_the_true_values() -> None:
    for p in ArithmeticTask(per_level=20).problems():
        assert int(p.reference) == value_of(p.meta["expression"])
        assert p.level in LEVELS


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("3 + 4 = 7", "7"),
        ("The answer is 1,024.", "1024"),
        ("The answer is actually 11", "11"),
        ("\\boxed{-5}", "-5"),
        ("no numbers here", None),
    ],
)
def test_extract_integers(text: str, answer: str | None) -> None:
    assert ArithmeticTask().extract(text) == answer


def test_grading_is_exact_integer() -> None:
    task = ArithmeticTask()
    p = task.problems()[0]
    assert task.grade(p.reference, p)
    assert task.grade(f"{p.reference}.", p)
    assert not task.grade(str(int(p.reference) + 1), p)
    assert not task.grade(None, p)
    assert not task.grade("9" * 5000, p)  # huge input: refused quickly, no int() of 5,000 digits


def test_levels_spec() -> None:
    assert parse_levels("1-3") == (1, 2, 3)
    assert parse_levels("1,4") == (1, 4)
    assert [p.level for p in load_task("arithmetic:2").problems()[:3]] == [2, 2, 2]
    with pytest.raises(ValueError, match="within 1-5"):
        parse_levels("0-2")
