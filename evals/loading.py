"""Reading benchmark files: JSON lines in, validated `Problem`s out.

Every fault in a file is reported as one line naming the file, the line and what was expected,
so a broken local copy is fixed in a minute rather than debugged.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jsonlines

from ttscale.schema import Problem

BOXED_INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


@dataclass(frozen=True, kw_only=True)
class DatasetSpec:
    """What a benchmark is: where it lives, which fields hold what, how it is asked and graded."""

    name: str
    hub_path: str | None
    """`datasets.load_dataset` path (None: local files only)."""
    hub_config: str | None = None
    hub_split: str = "test"
    question_field: str = "question"
    answer_field: str = "answer"
    id_field: str | None = None
    """Field with a stable id (None: the row number)."""
    level_field: str | None = None
    meta_fields: tuple[str, ...] = ()
    """Fields copied into `Problem.meta`."""
    reference_format: Literal["plain", "gsm8k", "auto"] = "plain"
    """`gsm8k`: the reference is the number after the solution's final `#### ` (required);
    `auto`: that number when the answer ends in `#### N`, else the answer as written."""
    grading: Literal["math", "integer"] = "math"
    """`integer`: compared as integers when both sides are (`'025'` = `25`), else by `math_equal`."""
    instruction: str = BOXED_INSTRUCTION
    """What follows the question in the user message."""
    repair_escapes: bool = False
    """Restore LaTeX backslashes that a lost JSON escaping turned into control characters."""
    final_number: bool = False
    """Whether a text's last number counts as its answer when it states none otherwise (GSM8K asks for a
    bare number); elsewhere only a boxed answer, `#### N`, an "answer is" phrase or a final math span count."""
    param_defaults: tuple[tuple[str, Any], ...] = (("max_tokens", 2048), ("max_steps", 40), ("verify_tokens", 1024))
    """Strategy parameters this benchmark suggests (`ttscale.kit.params.task_defaults`): search-and-learn runs
    MATH-style problems with solutions of up to 2048 tokens and 40 search iterations; GenRM's verification
    chains get 1024 tokens (sc-genrm-scaling's MATH setting)."""


def read_jsonl(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """`(where, row)` for each non-blank line of a `.jsonl` or gzip-compressed `.jsonl.gz` file; raises ValueError
    naming the file and line on bad input."""
    try:
        # Bytes, decoded line by line: a bad byte is reported at its line. Closed by the `with` below.
        handle = gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb")  # noqa: SIM115
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    empty = True
    lines = _Numbered(handle, path)
    with handle, jsonlines.Reader(lines) as reader:
        while True:
            try:
                row = reader.read(type=dict, skip_empty=True)
            except EOFError:
                break
            except jsonlines.InvalidLineError as exc:
                raise ValueError(f"{path}:{exc.lineno}: {_why(exc)}") from exc
            empty = False
            yield f"{path}:{lines.number}", row
    if empty:
        raise ValueError(f"{path}: no problems (the file is empty)")


def _why(exc: jsonlines.InvalidLineError) -> str:
    cause = exc.__cause__
    if isinstance(cause, UnicodeDecodeError):
        return f"not UTF-8 text ({cause.reason})"
    if isinstance(cause, json.JSONDecodeError):
        return f"expected one JSON object per line ({cause.msg})"
    try:
        value = json.loads(exc.line)
    except ValueError:
        return f"expected one JSON object per line ({exc})"
    return f"expected a JSON object, got {type(value).__name__}"


class _Numbered:
    """A file's lines, counted as they are read (jsonlines gives a line's number only in its errors); a broken
    gzip stream becomes one ValueError (the EOFError of a truncated one would read as the end of the file)."""

    def __init__(self, handle: Iterable[bytes], path: Path) -> None:
        self.handle, self.path, self.number = handle, path, 0

    def __iter__(self) -> Iterator[bytes]:
        try:
            for number, raw in enumerate(self.handle, start=1):
                self.number = number
                yield raw
        except (OSError, EOFError, zlib.error) as exc:
            why = " ".join(str(exc).split())
            after = f" after line {self.number}" if self.number else ""
            raise ValueError(f"{self.path}: not a readable gzip file{after} ({why})") from None


def to_problems(spec: DatasetSpec, rows: Iterator[tuple[str, dict[str, Any]]], *, where: str) -> list[Problem]:
    """Validated problems from `(where, row)` pairs, in order; ValueError names the row on any fault."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, (at, row) in enumerate(rows):
        question = _text_field(row, spec.question_field, at)
        answer = _text_field(row, spec.answer_field, at)
        reference = _reference(spec.reference_format, answer, at, spec.answer_field)
        meta = {f: row[f] for f in spec.meta_fields if f in row}
        if spec.repair_escapes:
            question, repaired = repair_escapes(question)
            if repaired:
                meta["repaired_escapes"] = repaired
        raw_id = row.get(spec.id_field) if spec.id_field else None
        ident = str(raw_id) if raw_id is not None and raw_id != "" else f"{index:04d}"
        if spec.id_field != "unique_id":
            ident = f"{spec.name}-{ident}"
        if ident in seen:
            raise ValueError(f"{at}: duplicate id {ident!r}")
        seen.add(ident)
        level = row.get(spec.level_field) if spec.level_field else None
        problems.append(
            Problem(
                id=ident,
                question=question,
                reference=reference,
                level=level if isinstance(level, int) and not isinstance(level, bool) else None,
                meta=meta,
            )
        )
    if not problems:
        raise ValueError(f"{where}: no problems")
    return problems


def _text_field(row: dict[str, Any], field: str, at: str) -> str:
    if field not in row:
        raise ValueError(f"{at}: missing field {field!r} (fields: {', '.join(sorted(row)) or 'none'})")
    value = row[field]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{at}: field {field!r} must be a string or an integer, got {type(value).__name__}")
    text = str(value)
    if not text.strip():
        raise ValueError(f"{at}: field {field!r} is empty")
    return text


_GSM8K_FINAL = re.compile(r"####\s*([-−]?[\d,]*\.?\d+)\s*$")


def _reference(fmt: str, answer: str, at: str, field: str) -> str:
    """The reference answer as graded: GSM8K's `#### 1,234` becomes `1234`."""
    match = _GSM8K_FINAL.search(answer)
    if fmt == "gsm8k" and match is None:
        raise ValueError(f"{at}: field {field!r} has no final '#### N' line")
    if match is not None and fmt in ("gsm8k", "auto"):
        return match.group(1).replace(",", "").replace("−", "-")
    return answer.strip()


def gsm8k_reference(answer: str) -> str | None:
    """The number after a GSM8K solution's final `#### ` (commas removed), or None."""
    match = _GSM8K_FINAL.search(answer)
    return match.group(1).replace(",", "").replace("−", "-") if match else None


# A JSON file written without escaping its backslashes turns `\frac` into a form feed + "rac",
# `\binom` into a backspace + "inom", `\right` into a carriage return + "ight" and `\triangle`
# into a tab + "riangle". Only control characters followed by what can only be the rest of a
# LaTeX command are restored; a tab before ordinary words ("have\tequal") is left alone.
_BROKEN_ESCAPES = re.compile(
    r"\x0c(?=[a-z])|\x08(?=[a-z])|\r(?=[a-z])|\t(?=(?:riangle|imes|heta|an|ext|frac|au|ilde|extbf)\b)"
)
_ESCAPE_LETTER = {"\x0c": "\\f", "\x08": "\\b", "\r": "\\r", "\t": "\\t"}


def repair_escapes(text: str) -> tuple[str, int]:
    """`text` with lost LaTeX backslashes restored, and how many were."""
    repaired, count = _BROKEN_ESCAPES.subn(lambda m: _ESCAPE_LETTER[m.group()], text)
    return repaired, count
