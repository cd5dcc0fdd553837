"""A safe arithmetic evaluator and a checker for the `a op b = c` statements in a solution step.

`safe_eval` parses with `ast.parse(mode="eval")` and walks the tree itself, allowing only number
literals, `+ - * /` (binary), unary `+ -` and parentheses; everything else is refused. Values are
exact `Fraction`s (so `0.1 + 0.2 = 0.3` checks out), and every input is bounded: its length,
literal size, node count, nesting depth and the size of every intermediate value. It never calls
`eval`, `compile` on anything but the parser, or any attribute of user data.

`check_step` finds every arithmetic equation a step states (`12 + 7 = 19`, `3 × 4 = 12`,
`$1,200 - $300 = $900`, `<<16-3-4=9>>`) and checks each; this is the rule-based process
verifier of the `arithmetic` task.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from dataclasses import dataclass
from fractions import Fraction


class UnsafeExpressionError(ValueError):
    """The expression is not plain arithmetic, or it exceeds a size limit."""


@dataclass(frozen=True, kw_only=True)
class EvalLimits:
    """Size limits of `safe_eval`: an expression past any of them is refused, not evaluated."""

    max_chars: int = 200
    """Characters in the expression."""
    max_nodes: int = 64
    """Syntax-tree nodes (numbers and operators)."""
    max_depth: int = 20
    """Nesting depth of the syntax tree (parentheses and operator chains)."""
    max_digits: int = 30
    """Digits in one number literal."""
    max_bits: int = 4096
    """Bits of the numerator or denominator of any intermediate value."""

    def __post_init__(self) -> None:
        for name in ("max_chars", "max_nodes", "max_depth", "max_digits", "max_bits"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer ≥ 1, got {value!r}")


DEFAULT_LIMITS = EvalLimits()

# Unicode and LaTeX spellings of the four operations, mapped to Python's.
_OPERATOR_SPELLINGS = (
    ("\\times", "*"),
    ("\\cdot", "*"),
    ("\\div", "/"),
    ("×", "*"),
    ("⋅", "*"),
    ("·", "*"),
    ("∙", "*"),
    ("÷", "/"),
    ("−", "-"),
    ("–", "-"),
)
_ALLOWED_CHARS = re.compile(r"^[0-9.+\-*/() ]*$")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_VULGAR = re.compile(r"(\d{0,9})([\u00bc-\u00be\u2150-\u215e])")
_LETTER_TIMES = re.compile(r"(?<=[\d)])\s+x\s+(?=[\d(])")
_LEADING_ZEROS = re.compile(r"(?<![\d.])0+(?=\d)")


def normalize_operators(text: str) -> str:
    """Spell ×, ÷, ·, −, `\\times`, `\\cdot`, `\\div` and a lone `x` between numbers (`3 x 4`) as
    `* / -`, and `¾` as `(3/4)`; drop `$` signs and thousands commas."""
    for spelling, operator in _OPERATOR_SPELLINGS:
        text = text.replace(spelling, operator)
    text = _THOUSANDS.sub("", text.replace("\\$", "").replace("$", ""))
    text = _VULGAR.sub(_spell_vulgar, text)
    return _LETTER_TIMES.sub(" * ", text)


def _spell_vulgar(match: re.Match[str]) -> str:
    """`¾` -> `(3/4)`, `2½` -> `(2+1/2)`."""
    value = Fraction(unicodedata.numeric(match.group(2))).limit_denominator(16)
    whole = f"{match.group(1)}+" if match.group(1) else ""
    return f"({whole}{value.numerator}/{value.denominator})"


def safe_eval(expression: str, *, limits: EvalLimits = DEFAULT_LIMITS) -> Fraction:
    """The exact value of an arithmetic expression over numbers with + − × ÷ and parentheses.

    Raises `UnsafeExpressionError` for anything else or anything past `limits`, and
    `ZeroDivisionError` for a division by zero.
    """
    text = normalize_operators(expression).strip()
    if len(text) > limits.max_chars:
        raise UnsafeExpressionError(f"expression longer than {limits.max_chars} characters")
    if not text or not _ALLOWED_CHARS.match(text):
        raise UnsafeExpressionError(f"not plain arithmetic: {expression[:80]!r}")
    depth = deepest = 0
    for char in text:  # check nesting before the parser sees it (its recursion is not ours)
        depth += (char == "(") - (char == ")")
        deepest = max(deepest, depth)
    if deepest > limits.max_depth:
        raise UnsafeExpressionError(f"parentheses nested deeper than {limits.max_depth}")
    text = _strip_leading_zeros(text)
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise UnsafeExpressionError(f"not an expression: {expression[:80]!r}") from exc
    if sum(1 for _ in ast.walk(tree)) > limits.max_nodes + 1:
        raise UnsafeExpressionError(f"more than {limits.max_nodes} operations and numbers")
    return _Evaluator(text, limits).value(tree.body, 0)


class _Evaluator:
    """The tree walk: each node kind it knows is one small case; any other node is refused."""

    def __init__(self, source: str, limits: EvalLimits) -> None:
        self.source = source
        self.limits = limits

    def value(self, node: ast.AST, depth: int) -> Fraction:
        if depth > self.limits.max_depth:
            raise UnsafeExpressionError(f"expression nested deeper than {self.limits.max_depth}")
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return self._literal(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
            operand = self.value(node.operand, depth + 1)
            return -operand if isinstance(node.op, ast.USub) else operand
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
            left, right = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
            return self._checked(_apply(node.op, left, right))
        raise UnsafeExpressionError(f"{type(node).__name__} is not allowed in arithmetic")

    def _literal(self, node: ast.Constant) -> Fraction:
        # The literal's own text, not Python's float: "0.1" must be exactly 1/10.
        text = ast.get_source_segment(self.source, node) or ""
        if sum(char.isdigit() for char in text) > self.limits.max_digits:
            raise UnsafeExpressionError(f"number with more than {self.limits.max_digits} digits")
        try:
            return Fraction(text)
        except ValueError as exc:
            raise UnsafeExpressionError(f"not a number: {text!r}") from exc

    def _checked(self, value: Fraction) -> Fraction:
        bits = self.limits.max_bits
        if value.numerator.bit_length() > bits or value.denominator.bit_length() > bits:
            raise UnsafeExpressionError(f"an intermediate value exceeds {bits} bits")
        return value


def _strip_leading_zeros(text: str) -> str:
    """`007` -> `7` (Python's parser rejects leading zeros; `0.5` and `0` are kept)."""
    return _LEADING_ZEROS.sub("", text)


def _apply(op: ast.operator, left: Fraction, right: Fraction) -> Fraction:
    if isinstance(op, ast.Add):
        return left + right
    if isinstance(op, ast.Sub):
        return left - right
    if isinstance(op, ast.Mult):
        return left * right
    return left / right  # ZeroDivisionError propagates: the caller reports it


def has_operation(expression: str, *, limits: EvalLimits = DEFAULT_LIMITS) -> bool:
    """Whether the expression applies a binary operation (so `x = 5` or `-3 = -3` state nothing)."""
    text = normalize_operators(expression).strip()
    if len(text) > limits.max_chars or text.count("(") > limits.max_depth:
        return False
    try:
        tree = ast.parse(_strip_leading_zeros(text), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(node, ast.BinOp) for node in ast.walk(tree))


# ---------------------------------------------------------------------------------------------
# Equations in a step.


@dataclass(frozen=True, kw_only=True)
class EquationCheck:
    """One `left = right` a step states, and whether it holds."""

    left: str
    right: str
    correct: bool | None
    """True/False; None when a side could not be evaluated (division by zero, a size limit)."""
    left_value: Fraction | None = None
    right_value: Fraction | None = None


@dataclass(frozen=True, kw_only=True)
class StepCheck:
    """Every arithmetic equation found in a step, checked."""

    equations: tuple[EquationCheck, ...]

    @property
    def n_wrong(self) -> int:
        return sum(eq.correct is False for eq in self.equations)

    @property
    def n_checked(self) -> int:
        return sum(eq.correct is not None for eq in self.equations)

    @property
    def all_correct(self) -> bool:
        """No equation is wrong (vacuously true for a step that states none)."""
        return self.n_wrong == 0


MAX_STEP_CHARS = 20_000
MAX_EQUATIONS = 256
# A run of arithmetic characters; other characters (letters, `<`, `%`, `:`, `,`) end it.
_SPAN = re.compile(r"[0-9.+\-*/()= ]+")
_JOINS_BEFORE = "^_}]\\"
_JOINS_AFTER = "^_%!{[\\"
_DECIMAL = re.compile(r"^\s*-?\d*\.(\d+)\s*$")


def check_step(step: str, *, limits: EvalLimits = DEFAULT_LIMITS) -> StepCheck:
    """Find every `a op b = c` (chains `a = b = c` pairwise) in `step` and check each exactly.

    A right side written as a decimal may be rounded: `1/3 = 0.33` holds, `1/3 = 0.34` does not.
    Parts of algebra (`2x + 3 = 7`: the span after a letter) and sides that are not plain
    arithmetic are skipped, not judged.
    """
    text = normalize_operators(step[:MAX_STEP_CHARS]).replace("\n", ",")
    checks: list[EquationCheck] = []
    for span in _SPAN.finditer(text):
        if "=" not in span.group() or len(checks) >= MAX_EQUATIONS:
            continue
        raw = span.group().split("=")
        sides = _trim_sides(raw)
        first, last = 0, len(sides) - 1
        # "2x + 3 = 7", "x2 + 1 = 5", "2^3 + 1 = 9": the span continues algebra written before it.
        before = text[span.start() - 1] if span.start() else ""
        head = sides[0].lstrip()
        if (before and not raw[0][:1].isspace() and (before.isalnum() or before in _JOINS_BEFORE)) or (
            head[:1] in ("+", "*", "/") or head.startswith("- ")
        ):
            first = 1
        # "= 7x", "= 2^3", "= 50%": the last side continues after the span.
        after = text[span.end()] if span.end() < len(text) else ""
        if after and not raw[-1][-1:].isspace() and (after.isalnum() or after in _JOINS_AFTER):
            last -= 1
        for left, right in zip(sides[first:last], sides[first + 1 : last + 1], strict=True):
            if left.strip() and right.strip() and (has_operation(left) or has_operation(right)):
                checks.append(_check(left.strip(), right.strip(), limits))
    return StepCheck(equations=tuple(checks))


def _trim_sides(sides: list[str]) -> list[str]:
    """Drop a sentence's full stop and unmatched parentheses at the two ends of a chain."""
    first, last = sides[0], sides[-1].rstrip()
    while last.endswith((".", ")")) and (last.endswith(".") or last.count(")") > last.count("(")):
        last = last[:-1].rstrip()
    while True:
        head = first.lstrip()
        stray_stop = head.startswith(".") and not head[1:2].isdigit()
        unmatched = head.startswith("(") and first.count("(") > first.count(")")
        if not (stray_stop or unmatched):
            break
        first = head[1:]
    return [first, *sides[1:-1], last] if len(sides) > 1 else sides


def _check(left: str, right: str, limits: EvalLimits) -> EquationCheck:
    try:
        lhs, rhs = safe_eval(left, limits=limits), safe_eval(right, limits=limits)
    except (UnsafeExpressionError, ZeroDivisionError):
        return EquationCheck(left=left, right=right, correct=None)
    correct = lhs == rhs
    decimal = _DECIMAL.match(right)
    if not correct and decimal:  # a rounded decimal result: within half a unit of its last place
        correct = abs(lhs - rhs) <= Fraction(1, 2 * 10 ** len(decimal.group(1)))
    return EquationCheck(left=left, right=right, correct=correct, left_value=lhs, right_value=rhs)
