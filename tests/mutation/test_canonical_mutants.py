"""ttscale.answers.canonical: behaviour that the mutation run (tools/mutation) found unchecked.

Pure functions only (no worker process): every expected value is worked out by hand in the comment beside it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from ttscale.answers import canonical as canonical_module
from ttscale.answers.canonical import (
    MAX_RESULT_DIGITS,
    canonical,
    exact_number,
    fast_verdict,
    nesting_depth,
    prose_words,
    too_large,
    unsupported_words,
)
from ttscale.answers.grading import math_equal


def log10_of(text: str) -> tuple[float, int]:
    """The size estimate `too_large` makes of the literal `text` starts with, and where it stopped reading."""
    tokens = [t for t in canonical_module._TOWER_TOKEN.findall(text) if not t.isspace()]
    return canonical_module._literal_log10(tokens, 0, 0)


# -- canonical ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("5$", "5"),  # a stray dollar delimits nothing
        ("$\\$18", "\\$18"),  # a stray opening dollar before an escaped dollar sign
        ("$5$", "5"),
        ("\\(5\\)", "5"),
        ("$$", ""),  # empty math
        ("\\(\\)", ""),
        ("$$$", "$"),  # "$$" cannot both open and close three dollars: the outer "$" pair encloses one
        ("$x$ = 5", "$x$=5"),  # delimiters that do not enclose the whole text stay
        ("−5", "-5"),  # U+2212 minus
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\frac{\\pi}{2})"),
        ("x = 5", "x=5"),
        ("2 1/2", "2 1/2"),  # a space between two word characters is kept
        ("5.", "5"),  # a trailing full stop
        ("1, 2, 3, ...", "1,2,3,..."),  # an ellipsis is not a full stop
        ("X", "X"),  # a one-letter answer (a choice, a variable) keeps its letter
    ],
)
def test_canonical_forms(text: str, form: str) -> None:
    assert canonical(text) == form


def test_empty_math_on_both_sides_is_no_answer() -> None:
    assert fast_verdict("$$", "$$") is False
    assert fast_verdict("X", "X") is True


# -- exact_number -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("5", (Fraction(5), False)),
        ("+5", (Fraction(5), False)),
        ("-5", (Fraction(-5), False)),
        ("-1/2", (Fraction(-1, 2), False)),
        ("\\frac{-1}{2}", (Fraction(-1, 2), False)),  # the sign inside the numerator
        ("\\frac{3}{5}", (Fraction(3, 5), False)),
        ("3/5", (Fraction(3, 5), False)),  # a fraction is exact, not a decimal
        ("1,000/3", (Fraction(1000, 3), False)),  # thousands separators in a numerator
        ("1,234\\frac{1}{2}", (Fraction(2469, 2), False)),  # and in a mixed number's whole part
        (".5", (Fraction(1, 2), True)),
        ("0.50", (Fraction(1, 2), True)),
        ("12.", (Fraction(12), False)),  # a trailing point is not a decimal point
    ],
)
def test_exact_number_values_and_decimal_flag(text: str, value: tuple[Fraction, bool]) -> None:
    assert exact_number(text) == value


def test_exact_number_reads_numerals_up_to_the_length_limit() -> None:
    assert exact_number("1" * 400) == (Fraction(int("1" * 400)), False)
    assert exact_number("1" * 401) is None


# -- fast_verdict -------------------------------------------------------------------------------


def test_fast_verdict_signs_and_plain_numbers() -> None:
    assert fast_verdict("-5", "5") is False
    assert fast_verdict("−5", "-5") is True
    assert fast_verdict("24", "25") is False
    assert fast_verdict("1/2", "1/3") is False  # unequal exact fractions: decided in process


def test_degree_or_dollar_leaves_unequal_numbers_to_the_full_grader() -> None:
    assert fast_verdict("48^\\circ", "47") is None
    assert fast_verdict("\\$18", "17") is None


def test_unit_words_on_either_side() -> None:
    assert fast_verdict("18", "18 dollars") is True  # the unit on the reference
    assert fast_verdict("5 sq. ft", "5 sq ft") is True  # abbreviation points do not make units differ
    assert fast_verdict("2 BOX", "2 box") is True  # units compare case-insensitively
    assert fast_verdict("2 pi", "2") is None  # "pi" is mathematics, not a unit


def test_without_unit_words_docstring_examples() -> None:
    assert canonical_module._without_unit_words("18 dollars") == ("18", "dollars")
    assert canonical_module._without_unit_words("5 sq. ft") == ("5", "sq ft")


# -- prose --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("the cat", {"the", "cat"}),
        ("sqrt(2) is it", {"is", "it"}),  # two-letter English words are prose, function names are not
        ("sqrt(2xy)", set()),  # a product of variables is not prose
        ("\\int_0^1 x\\,\\mathrm{d}x", set()),  # the content of \mathrm{} is not glued to what follows
    ],
)
def test_prose_words(text: str, words: set[str]) -> None:
    assert prose_words(text) == words


def test_words_the_reference_uses_are_supported_whatever_their_case() -> None:
    assert unsupported_words("Evelyn", "Evelyn") == set()
    assert unsupported_words("evelyn", "EVELYN") == set()


# -- nesting_depth ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("f(X(X(1)))", 3),  # letters neither open nor close
        ("\\frac{(a)}{((b))}", 3),
        ("((a)(b(c)))", 3),
        ("))((", 2),  # unbalanced closers are ignored
    ],
)
def test_nesting_depth(text: str, depth: int) -> None:
    assert nesting_depth(text) == depth


# -- too_large ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        # 10^100000 has exactly MAX_RESULT_DIGITS + 1 digits, so log10 = MAX_RESULT_DIGITS: the last one allowed
        ("10^{100000}", False),
        ("10^{100001}", True),
        ("10^100001", True),  # an unbraced exponent at the very end
        ("2^{300000}", False),  # 90 309 digits
        ("2^{400000}", True),  # 120 412 digits
        ("(2^{1000000})", True),  # a power after an opening parenthesis
        ("0^{5}", False),
        ("00^{5}", False),  # leading zeros
        ("1" + "0" * 19 + "^{5200}", False),  # a 20-digit base: 19 x 5200 = 98 800 digits
        ("1" + "0" * 19 + "^{5300}", True),  # 19 x 5300 = 100 700
        ("10!!", True),  # (10!)! = 3 628 800!
        ("100!^{633}", False),  # log10(100!) = 157.97; x 633 = 99 995
        ("100!^{634}", True),  # x 634 = 100 153
        ("1000000!^{0}", True),  # a factorial past a few hundred thousand is refused whatever follows
        ("2^{500000!}", True),  # an exponent past any limit, base above 1
        ("1^{500000!}", False),  # ... base 1: one, whatever the exponent
        ("1^{10^{100}}", False),  # an exponent above 10^15, base 1
        ("2^2^2^2^2^2^0", False),  # a 7-level tower (2^65536, 19 729 digits) is still estimated
        ("2^" * 3000 + "2", True),  # a very tall one is refused without deep recursion
        ("2^{1000000+1}", False),  # a braced exponent that is not a literal is left to the worker
        ("2^{1000000", False),  # an unclosed brace likewise
        ("2^{", False),
        ("10^", False),
    ],
)
def test_too_large_boundaries(text: str, refused: bool) -> None:
    assert too_large(text) is refused


def test_literal_size_estimates() -> None:
    assert log10_of("2") == (pytest.approx(math.log10(2)), 1)
    assert log10_of("1" + "0" * 19) == (pytest.approx(19.0), 1)  # long numerals: 15 digits read, the rest counted
    assert log10_of("10!") == (pytest.approx(math.log10(3_628_800)), 2)
    assert log10_of("0!") == (0.0, 2)  # 0! = 1
    assert log10_of("1^{500000!}") == (0.0, 5)  # 1 to an astronomic power is 1
    assert log10_of("1^{10^{100}}") == (0.0, 9)
    # Past the factorial limit: at once, and the next position is right after the "!".
    assert canonical_module._literal_log10(["500000", "!", "7"], 0, 0) == (math.inf, 2)
    assert MAX_RESULT_DIGITS == 100_000


@pytest.mark.parametrize(("text", "other"), [("x² + 2^3", "x^2+8"), ("2^²", "4"), ("①!", "1")])
def test_superscript_and_circled_digits_near_a_power_or_factorial_get_a_verdict_not_an_error(
    text: str, other: str
) -> None:
    # They pass str.isdigit() but neither `\d` nor int() reads them: too_large raised ValueError on them, and the
    # grader with it, on either side of a pair (found by the mutation run).
    assert too_large(text) is False
    assert math_equal(text, other) is False and math_equal(other, text) is False
