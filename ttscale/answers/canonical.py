"""The grader's cheap, in-process half: light canonical forms, exact numbers, hostile-input checks.

Everything here is pure Python over bounded strings (callers check `len` first), uses only
linear regexes, and never evaluates anything beyond integer parsing and `Fraction` arithmetic
on literals whose size is capped. It decides the easy cases (most pairs a run grades: equal
integers, `025` vs `25`, `\\dfrac{1}{2}` vs `0.5`) without a worker process, and refuses inputs
that would make a symbolic engine run for minutes (`10^{10^{10^{10}}}`, `(10!)!`).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_SPACING = re.compile(r"\\[,;:! ]|\\quad|\\qquad|\\displaystyle|\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|~")
_FRAC_ALIASES = re.compile(r"\\[dt]frac(?![a-zA-Z])")
_DEGREES = re.compile(r"\^\{?\\circ\}?$|°$|\\degree$")
_MATH_DELIMS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
# Whitespace is dropped except between two word characters ("2 1/2" must not become "21/2").
_WHITESPACE = re.compile(r"\s+")
_LONE_SPACE = re.compile(r"(?<!\w) | (?!\w)")

_INT = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)"
_NUMBER_RE = re.compile(
    rf"""^(?P<sign>[-+]?)(?:\\\$)?(?:
        (?P<mixed>{_INT})\\frac\{{(?P<mnum>\d+)\}}\{{(?P<mden>\d+)\}}     # 12\frac{3}{5} (a mixed number)
      | \\frac\{{(?P<fsign>-?)(?P<fnum>\d+)\}}\{{(?P<fden>\d+)\}}        # \frac{3}{5}
      | \\frac(?P<snum>\d)(?P<sden>\d)                                   # \frac35
      | (?P<inum>{_INT})/(?P<iden>\d+)                                   # 3/5
      | (?P<dec>{_INT}?\.\d+|{_INT}\.?)                                  # 12, 1,234, 0.5, .5, 12.
    )$""",
    re.VERBOSE,
)
_MAX_DIGITS = 400
"""Longest numeral the fast path turns into a Fraction (longer ones go to the worker as text)."""


def canonical(text: str) -> str:
    """A light canonical form: only rewrites that can never change the mathematical value.

    Removes math delimiters, spacing commands, `\\left`/`\\right`, insignificant whitespace and a
    trailing full stop; maps `\\dfrac`/`\\tfrac` to `\\frac`, `{,}` to `,` and `−` to `-`.
    """
    text = text.strip()
    if text.count("$") - text.count("\\$") == 1:  # a stray "$" ("5$") delimits nothing
        text = re.sub(r"(?<!\\)\$", "", text).strip()
    for left, right in _MATH_DELIMS:
        if text.startswith(left) and text.endswith(right) and len(text) >= len(left) + len(right):
            text = text[len(left) : len(text) - len(right)].strip()
            break
    text = text.replace("−", "-").replace("{,}", ",")
    text = _FRAC_ALIASES.sub(r"\\frac", _SPACING.sub(" ", text))
    text = _LONE_SPACE.sub("", _WHITESPACE.sub(" ", text)).strip()
    return text.rstrip(".") if not text.endswith("..") else text


def exact_number(text: str) -> tuple[Fraction, bool] | None:
    """`(value, is_decimal)` when the canonical `text` is a plain rational literal, else None.

    Accepts integers (with `,` thousands separators), decimals, `\\frac{a}{b}`, `a/b`, mixed
    numbers `a\\frac{b}{c}` (MATH's convention: 12 3/5), an optional sign and `\\$`, and a
    trailing degree sign. `is_decimal` tells that a decimal point was written, because graders
    compare decimals approximately and exact rationals exactly.
    """
    text = _DEGREES.sub("", text)
    if len(text) > _MAX_DIGITS:
        return None
    match = _NUMBER_RE.match(text)
    if match is None:
        return None
    sign = -1 if match["sign"] == "-" else 1
    groups = match.groupdict()
    try:
        if groups["mixed"] is not None:
            value = int(groups["mixed"].replace(",", "")) + Fraction(int(groups["mnum"]), int(groups["mden"]))
        elif groups["fnum"] is not None:
            value = Fraction(int(groups["fnum"]), int(groups["fden"])) * (-1 if groups["fsign"] else 1)
        elif groups["snum"] is not None:
            value = Fraction(int(groups["snum"]), int(groups["sden"]))
        elif groups["inum"] is not None:
            value = Fraction(int(groups["inum"].replace(",", "")), int(groups["iden"]))
        else:
            value = Fraction(groups["dec"].replace(",", "").rstrip(".") or "0")
            return sign * value, "." in groups["dec"].rstrip(".")
    except ZeroDivisionError:
        return None
    return sign * value, False


def fast_verdict(prediction: str, reference: str) -> bool | None:
    """True or False when the pair is decided without a symbolic engine, None when undecided.

    True: equal canonical forms, or equal exact values. False: only when both sides are plain
    integers/fractions (no decimals: those are compared with a tolerance by the full grader) of
    different values, so the fast path never contradicts the full grader.
    """
    pred, ref = canonical(prediction), canonical(reference)
    if not pred or not ref:
        return False
    if pred == ref:
        return True
    pred_number, ref_number = exact_number(pred), exact_number(ref)
    if pred_number is None or ref_number is None:
        # "18 dollars" vs "18": equal numbers with unit words are equal answers (never the reverse:
        # unequal ones go to the full grader, which may know the units better).
        pred_plain, pred_unit = _without_unit_words(prediction)
        ref_plain, ref_unit = _without_unit_words(reference)
        if pred_unit and ref_unit and pred_unit != ref_unit:
            return None  # "18 apples" vs "18 pears"
        a = pred_number or (exact_number(pred_plain) if pred_plain else None)
        b = ref_number or (exact_number(ref_plain) if ref_plain else None)
        return True if a is not None and b is not None and a[0] == b[0] else None
    if pred_number[0] == ref_number[0]:
        return True
    if not pred_number[1] and not ref_number[1] and _undecorated(pred) and _undecorated(ref):
        return False
    return None


_UNIT_WORDS = re.compile(r"^\s*(\\?\$?\s*[-+−]?[\d.,]*\d)((?:\s+[A-Za-z]{2,}\.?){1,3})\s*\.?\s*$")
# Words that make "2 pi", "3 and 4" or "5 mod 7" mathematics rather than a unit.
_NOT_UNITS = frozenset(
    {"pi", "sqrt", "ln", "log", "exp", "sin", "cos", "tan", "sec", "csc", "cot", "mod", "and", "or"}
    | {"to", "plus", "minus", "times", "over", "divided", "by", "squared", "cubed", "root", "of"}
    | {"percent", "degree", "degrees", "radians", "thousand", "million", "billion", "hundred", "dozen"}
)


def _without_unit_words(text: str) -> tuple[str | None, str]:
    """`18 dollars` -> (`18`, `dollars`), `5 sq. ft` -> (`5`, `sq ft`); (None, "") when `text` is
    not a number followed by unit words."""
    match = _UNIT_WORDS.match(text)
    if match is None:
        return None, ""
    words = [w.rstrip(".").lower() for w in match.group(2).split()]
    if _NOT_UNITS.intersection(words):
        return None, ""
    return canonical(match.group(1)), " ".join(words)


def _undecorated(text: str) -> bool:
    # A degree sign or a dollar may make the full grader read units: let it decide those.
    return _DEGREES.search(text) is None and "\\$" not in text


# ---------------------------------------------------------------------------------------------
# Prose and code: a prediction is an answer, not a text that happens to contain one.

_TEXT_CONTENT = re.compile(
    r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname|begin|end)\s*\{[^{}]*\}"
)  # units (`5\\text{ cm}`) and environment names (`\\begin{pmatrix}`) are not prose
_LETTER_RUN = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{2,}")
_ANY_WORD = re.compile(r"[A-Za-z]{2,}")
# Two-letter runs are usually products of variables (`2xy`); these are English, and mean prose.
_SHORT_PROSE = frozenset(
    {"am", "an", "as", "at", "be", "by", "do", "he", "if", "in", "is", "it", "me", "my", "no", "of", "on"}
    | {"or", "so", "to", "up", "us", "we"}
)
_MATH_NAMES = frozenset(
    {"sqrt", "exp", "log", "sin", "cos", "tan", "sec", "csc", "cot", "sinh", "cosh", "tanh", "arcsin"}
    | {"arccos", "arctan", "arccot", "arcsec", "arccsc", "mod", "gcd", "lcm", "max", "min", "inf", "infty"}
    | {"infinity", "deg", "degree", "degrees", "det", "lim"}
    | {"pi", "ln"}
)


def prose_words(text: str) -> set[str]:
    """Words of natural language or code in `text` (lower case): letter runs that are neither LaTeX
    commands, nor the content of `\\text{…}` (a unit: `5\\text{ cm}`), nor function names, nor
    two-letter products of variables."""
    bare = _TEXT_CONTENT.sub(" ", text)
    runs = (w.lower() for w in _LETTER_RUN.findall(bare))
    return {w for w in runs if (len(w) >= 3 or w in _SHORT_PROSE) and w not in _MATH_NAMES}


def unsupported_words(prediction: str, reference: str) -> set[str]:
    """The prediction's prose words that the reference does not use itself.

    Non-empty means the prediction is a sentence or code rather than an answer ("it is 12 apples,
    not 5", `os.system('… pytest-0')`): such a text is not equal to a reference merely because a
    symbolic parser finds one of its numbers (or reads `banana 0` as b·a·n·a·n·a·0 = 0).
    """
    used = {w.lower() for w in _ANY_WORD.findall(reference)}
    return prose_words(prediction) - used


# ---------------------------------------------------------------------------------------------
# Hostile input: cheap structural checks that refuse what a symbolic engine cannot finish.

_TOWER_TOKEN = re.compile(r"\d+|\^|\{|\}|!|\s+|.", re.DOTALL)
_MAX_TOWER = 6
MAX_RESULT_DIGITS = 100_000
"""Literal powers/factorials whose value would have more digits than this are refused."""


def nesting_depth(text: str) -> int:
    """Deepest nesting of `{}`, `()` and `[]` together (unbalanced closers are ignored)."""
    depth = deepest = 0
    for char in text:
        if char in "{([":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "})]" and depth:
            depth -= 1
    return deepest


def too_large(text: str) -> bool:
    """Whether `text` writes an integer literal power tower or factorial chain that is astronomic.

    Reads `a^b`, `a^{b}`, `a^{b^{c}}` with integer literals, and `n!`, `n!!`: the size of the value
    is estimated with logarithms (never computed), so `10^{10^{10^{10}}}` is refused in
    microseconds. Non-literal expressions (`(10^{10})!`) are left to the worker's deadline.
    """
    if "^" not in text and "!" not in text:
        return False
    tokens = [t for t in _TOWER_TOKEN.findall(text) if not t.isspace()]
    pos = 0
    while pos < len(tokens):
        if tokens[pos].isdecimal():
            log10_value, pos = _literal_log10(tokens, pos, 0)
            if log10_value > MAX_RESULT_DIGITS:
                return True
        else:
            pos += 1
    return False


def _literal_log10(tokens: list[str], pos: int, depth: int) -> tuple[float, int]:
    """log10 of the literal starting at `tokens[pos]` (`inf` when beyond any limit), and the next position.

    Follows `!` suffixes and a `^` exponent (recursively, so towers are read from the top).
    """
    if depth > _MAX_TOWER:  # 2^2^2^2^2^2^2^2: past any limit, and no deep recursion here
        return math.inf, len(tokens)
    numeral = tokens[pos].lstrip("0") or "0"
    log10_value = math.log10(int(numeral[:15])) + max(0, len(numeral) - 15) if numeral != "0" else -math.inf
    pos += 1
    while pos < len(tokens) and tokens[pos] == "!":
        # n! has lgamma(n + 1) / ln 10 digits; the factorial of anything past a few hundred
        # thousand is past the limit whatever follows.
        if log10_value > 5.5:
            return math.inf, pos + 1
        n = round(10**log10_value) if log10_value > -math.inf else 0
        log10_value = math.lgamma(n + 1) / math.log(10)
        pos += 1
    if pos + 1 < len(tokens) and tokens[pos] == "^":
        braced = tokens[pos + 1] == "{"
        start = pos + 1 + braced
        if start < len(tokens) and tokens[start].isdecimal():
            exponent_log10, after = _literal_log10(tokens, start, depth + 1)
            if exponent_log10 == math.inf:  # closed or not, nothing after this makes it small
                return (math.inf if log10_value > 0 else 0.0), after
            closed = not braced or (after < len(tokens) and tokens[after] == "}")
            if closed:
                pos = after + braced
                if exponent_log10 > 15:  # an exponent above 10^15: no base > 1 keeps this small
                    return (math.inf if log10_value > 0 else 0.0), pos
                log10_value = 10**exponent_log10 * max(log10_value, 0.0)
    return log10_value, pos
