"""A second, independent answer normalizer, used only to cross-check the main grader.

It shares no code with `canonical.py` or math-verify: it is a string normalizer in the style of
the MATH paper's `is_equiv` (Hendrycks et al. 2021), extended with thousands separators, `\\text`
unwrapping, units and a float comparison of plain numbers. It is weaker than math-verify (no
algebra), so disagreements are leads to look at, not errors: a run summary reports their rate,
and a sudden jump (a new answer format, an extraction bug) shows up there first.
"""

from __future__ import annotations

import re

_MAX_CHARS = 2_000
_UNIT_WORDS = (
    r"(?:units?|degrees?|cm|m|km|mm|inches|inch|in|feet|foot|ft|meters?|miles?|mph|hours?|minutes?|"
    r"seconds?|days?|weeks?|years?|dollars?|cents?|pounds?|kg|g|liters?|ml|square|sq|cubic)"
)
_TRAILING_UNITS = re.compile(rf"(?:\\(?:text|mbox|mathrm)\{{\s*{_UNIT_WORDS}[^{{}}]*\}}|\s+{_UNIT_WORDS}\b.*)$")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox|mathbf)\{([^{}]*)\}")
_LHS = re.compile(r"^[a-zA-Z](?:_\{?\w+\}?)?\s*=(?!=)")
_SIMPLE_FRAC = re.compile(r"^(-?\d+)/(\d+)$")
_PLAIN_NUMBER = re.compile(r"^-?(?:\d+\.?\d*|\.\d+)$")


def normalize(answer: str) -> str:
    """A normal form of a short LaTeX answer: equal normal forms mean equal answers."""
    text = " ".join(answer[:_MAX_CHARS].split())  # one space between words: keeps the regexes linear
    text = text.replace("\\!", "").replace("\\\\", "\\")
    for old, new in (("tfrac", "frac"), ("dfrac", "frac"), ("\\left", ""), ("\\right", ""), ("−", "-")):
        text = text.replace(old, new)
    for token in ("^{\\circ}", "^\\circ", "°", "\\%", "%", "\\$", "$"):
        text = text.replace(token, "")
    text = _TRAILING_UNITS.sub("", text).strip()
    text = _TEXT.sub(r"\1", text)
    text = text.replace("{,}", "")
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", text.strip()):
        text = text.replace(",", "")
    if text.count("=") == 1 and _LHS.match(text):  # "x = 5" -> "5", but not chains "x = y = 5"
        text = _LHS.sub("", text)
    text = text.replace(" .", " 0.").replace("{.", "{0.")
    if text.startswith("."):
        text = "0" + text
    text = _braces_for_sqrt(text.replace(" ", ""))
    text = _braces_for_frac(text)
    match = _SIMPLE_FRAC.match(text)
    if match:
        text = f"\\frac{{{match[1]}}}{{{match[2]}}}"
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    return text


def normalized_equal(prediction: str, reference: str) -> bool:
    """Whether the two answers have the same normal form, or are plain numbers within 1e-9 (relative)."""
    pred, ref = normalize(prediction), normalize(reference)
    if not pred or not ref:
        return False
    if pred == ref:
        return True
    a, b = _as_float(pred), _as_float(ref)
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _as_float(text: str) -> float | None:
    if _PLAIN_NUMBER.match(text) and len(text) <= 40:
        return float(text)
    match = re.fullmatch(r"(-?)\\frac\{(\d{1,20})\}\{(\d{1,20})\}", text)
    if match and int(match[3]) != 0:
        return (-1 if match[1] else 1) * int(match[2]) / int(match[3])
    return None


def _braces_for_sqrt(text: str) -> str:
    """`\\sqrt3` -> `\\sqrt{3}`."""
    return re.sub(r"\\sqrt(\w)", r"\\sqrt{\1}", text)


def _braces_for_frac(text: str) -> str:
    """`\\frac12` -> `\\frac{1}{2}`, `\\frac1{2}` -> `\\frac{1}{2}`, `\\frac{1}2` -> `\\frac{1}{2}`."""
    parts = text.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part.startswith("{"):
            close = part.find("}")
            if close == -1:
                return text
            head, part = part[: close + 1], part[close + 1 :]
        elif part:
            head, part = "{" + part[0] + "}", part[1:]
        else:
            return text
        out += head
        if part.startswith("{"):
            out += part
        elif part:
            out += "{" + part[0] + "}" + part[1:]
        else:
            return text
    return out
