"""Answer extraction from model text.

Rules in order of preference (the first that finds something wins; its name is stored with
every sample, so a reader can see how each answer was found):

1. `boxed`: the last complete `\\boxed{...}` / `\\fbox{...}` (nested braces balanced; `\\boxed 5` too);
2. `hashes`: the last `#### N` (GSM8K style; only a number counts, so `#### Step 2` does not);
3. `answer_phrase`: the last "answer is …" / "Answer: …" / "final answer is …" phrase (the math span
   after it when there is one, else the phrase up to the end of its sentence);
4. `math_span`: the last math span (`$…$`) when nothing numeric follows it ("Therefore, $3!$");
5. `final_number`: the last number in the text — only where the task declares it (`final_number=True`:
   the arithmetic task and GSM8K ask for a bare number). Elsewhere a text that states no answer has
   none: "I think it is 12 apples, not 5" does not answer 5.

Everything is bounded: only the last `MAX_SCAN` characters are searched, every regex is linear
(no nested quantifiers over the same characters), and a phrase is at most `_MAX_PHRASE` long.
"""

from __future__ import annotations

import re
from typing import NamedTuple

MAX_SCAN = 100_000
"""Characters from the end of a text that are searched: bounds the time on huge outputs."""
_MAX_PHRASE = 200

# A number as models write it: thousands separators only in groups of three (so "1,2" stays a
# list), an optional decimal part, and a leading-dot decimal such as ".5".
_NUMBER = r"[-+−]?(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)"
_NUMBER_RE = re.compile(rf"(?<![\w.])(?:{_NUMBER})")
_BOX_OPEN = re.compile(r"\\(?:boxed|fbox)\s*\{")
_BOX_BARE = re.compile(r"\\boxed[ \t]+([^\s${}\\]+)")
_HASHES = re.compile(rf"####\s*\$?\s*({_NUMBER})(?![\d\w])")
_ANSWER_IS = re.compile(r"(?:final\s+answer|answer)\s*(?:is|:|=|\*\*:?|:\s*\*\*)\s*(?:\*\*)?\s*:?\s*", re.IGNORECASE)
_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
_SENTENCE_END = re.compile(r"\.(?=\s|$)|\n")
# Words after a number that are units ("12 apples"), unless they are mathematics ("2 pi").
_MATH_WORDS = frozenset(
    {"pi", "sqrt", "ln", "log", "sin", "cos", "tan", "sec", "csc", "cot", "mod", "i", "e"}
    | {"or", "and", "to", "plus", "minus", "times", "over"}
)


def last_boxed(text: str) -> str | None:
    """Content of the last complete `\\boxed{...}` or `\\fbox{...}`, nested braces balanced.

    An unclosed box (a truncated output) is skipped in favour of the previous complete one.
    An empty box counts as nothing. `\\boxed 5` (LaTeX's brace-less form) is read too.
    """
    text = text[-MAX_SCAN:]
    best_pos, best = -1, None
    openings = list(_BOX_OPEN.finditer(text))
    if openings:
        # Usually the last box closes within a few characters: try it alone first. When it does
        # not (a truncated output) or is empty, match every brace in one pass, so that the search
        # stays linear even over thousands of unclosed boxes.
        content = _balanced(text, openings[-1].end())
        if content is not None and content.strip():
            best_pos, best = openings[-1].start(), content.strip()
        else:
            closing = _closing_braces(text)
            for match in reversed(openings[:-1]):
                end = closing.get(match.end() - 1)
                if end is not None and text[match.end() : end].strip():
                    best_pos, best = match.start(), text[match.end() : end].strip()
                    break
    bare = _last_match(_BOX_BARE, text)
    if bare is not None and bare.start() > best_pos:
        return bare.group(1).rstrip(".,;")
    return best


def _is_grouping(text: str, i: int) -> bool:
    """Whether the brace at `i` groups (`\\{` and `\\}` are literal braces of set notation)."""
    return i == 0 or text[i - 1] != "\\"


def _balanced(text: str, start: int) -> str | None:
    """`text[start:i]` where `i` is the brace closing the one just before `start`, or None."""
    depth = 1
    for i in range(start, len(text)):
        char = text[i]
        if char == "{" and _is_grouping(text, i):
            depth += 1
        elif char == "}" and _is_grouping(text, i):
            depth -= 1
            if depth == 0:
                return text[start:i]
    return None


def _closing_braces(text: str) -> dict[int, int]:
    """Position of every grouping `{` that is closed → position of its `}` (one linear pass)."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for i, char in enumerate(text):
        if char == "{" and _is_grouping(text, i):
            stack.append(i)
        elif char == "}" and _is_grouping(text, i) and stack:
            pairs[stack.pop()] = i
    return pairs


class Extraction(NamedTuple):
    """An answer found in a text, and the rule that found it (None, None when none did)."""

    answer: str | None
    rule: str | None


RULES = ("boxed", "hashes", "answer_phrase", "math_span", "final_number")
"""The extraction rules, in order of preference."""


def extract(text: str, *, final_number: bool = False) -> Extraction:
    """The final answer a text states and the rule that found it; `final_number` allows rule 5."""
    if not text:
        return Extraction(None, None)
    text = text[-MAX_SCAN:]
    boxed = last_boxed(text)
    if boxed:
        return Extraction(boxed, "boxed")
    hashes = _last_match(_HASHES, text)
    if hashes is not None:
        return Extraction(_clean_number(hashes.group(1)), "hashes")
    phrase = _answer_phrase(text)
    if phrase:
        return Extraction(phrase, "answer_phrase")
    span = _final_math(text)
    if span:
        return Extraction(span, "math_span")
    number = last_number(text) if final_number else None
    return Extraction(number, "final_number" if number is not None else None)


def extract_answer(text: str, *, final_number: bool = False) -> str | None:
    """The final answer a text states, or None when it states nothing recognisable (see `extract`)."""
    return extract(text, final_number=final_number).answer


def last_number(text: str) -> str | None:
    """The last number in `text` (thousands separators removed), or None."""
    found = _last_match(_NUMBER_RE, text[-MAX_SCAN:])
    return _clean_number(found.group(0)) if found else None


def _answer_phrase(text: str) -> str | None:
    """What follows the last "answer is" / "Answer:" in `text`, trimmed to its math or sentence."""
    last = _last_match(_ANSWER_IS, text)
    if last is None:
        return None
    rest = text[last.end() : last.end() + _MAX_PHRASE]
    # "The answer is $\frac12$." -> the math span, when the phrase starts with one.
    span = _MATH_SPAN.match(rest)
    if span:
        content = next(g for g in span.groups() if g is not None)
        return _clean(content) or None
    end = _SENTENCE_END.search(rest)
    phrase = _clean(rest[: end.start()] if end else rest)
    if not phrase:
        return None
    # "The answer is 12 apples" / "is: $12 dollars": keep the number, drop the unit words.
    lead = re.fullmatch(rf"\\?\$?\s*({_NUMBER})((?:\s+[A-Za-z]{{2,}}\.?){{0,3}})", phrase)
    if lead and not _MATH_WORDS.intersection(lead.group(2).lower().replace(".", "").split()):
        return _clean_number(lead.group(1))
    # "Our answer is wrong, so let us redo it": prose, not an answer; fall back to the last number.
    if not re.search(r"[\d\\^=()]", phrase) and len(phrase.split()) > 3:
        return None
    return phrase


def _final_math(text: str) -> str | None:
    """The last math span (`$…$`, `\\(…\\)`, ...) when nothing numeric follows it: "we get $1/2$."

    Spans that read as prose ("$5 for A and $") are currency signs, not math, and are skipped;
    for `x = 5` the value after the last `=` is returned.
    """
    tail = text[-2_000:]
    span = _last_match(_MATH_SPAN, tail)
    if span is None or re.search(r"\d", tail[span.end() :]):
        return None
    content = _clean(next(g for g in span.groups() if g is not None))
    words = re.findall(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}", content)
    if not content or len(words) >= 2:
        return None
    if "=" in content and "," not in content:
        content = content.rsplit("=", 1)[1].strip() or content
    return content


def math_spans(text: str) -> list[str]:
    """The contents of the math spans (`$…$`, `$$…$$`, `\\(…\\)`, `\\[…\\]`) in the last `MAX_SCAN` characters."""
    return [next(g for g in m.groups() if g is not None) for m in _MATH_SPAN.finditer(text[-MAX_SCAN:])]


def _last_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The last match of `pattern` in `text` (matches are found left to right, without overlap)."""
    last = None
    for last in pattern.finditer(text):  # noqa: B007  (the loop is how the last one is reached)
        pass
    return last


def _clean(answer: str) -> str:
    """Strip markdown bold, surrounding `$`, whitespace and a trailing full stop."""
    answer = answer.strip().strip("*").strip()
    if answer.startswith("$") and answer.endswith("$") and len(answer) > 1:
        answer = answer.strip("$").strip()
    return answer.rstrip(".").strip().replace("−", "-")


def _clean_number(number: str) -> str:
    """`1,234` -> `1234`, `−5` -> `-5`, `+3` -> `3`, `.5` -> `0.5`."""
    number = number.replace(",", "").replace("−", "-").strip()
    if number.startswith("+"):
        number = number[1:]
    if number.startswith("-."):
        number = "-0" + number[1:]
    elif number.startswith("."):
        number = "0" + number
    return number
