"""Steps: how a generation is cut into reasoning steps, and how a step's end is read from the engine.

A step ends where the policy writes the delimiter ("\\n\\n" by default: the convention of the
PRM papers), or after `step_tokens` tokens when it never does (the token-count fallback), or
at the end of the solution (EOS). vLLM drops a matched stop string from the text but keeps
the tokens that carry it, so the token ids of a step are exactly what the model produced and
a child's prompt is its parent's prompt plus these ids: the prefix cache sees a true prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from ttscale.schema import Completion

Finish = Literal["open", "stop", "length"]
"""A node's state: `open` (can be extended), `stop` (the solution ended: EOS), `length` (a limit cut it)."""

DEFAULT_DELIMITER = "\n\n"

_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r"}


def unescape(text: str) -> str:
    r"""`\n`, `\t`, `\r` written as two characters (as `--param delimiter=\n\n` gives them) → the character."""
    for written, char in _ESCAPES.items():
        text = text.replace(written, char)
    return text


def split_steps(text: str, *, delimiter: str = DEFAULT_DELIMITER) -> list[str]:
    """The steps of a whole solution: pieces between delimiters, empty pieces dropped, whitespace kept inside."""
    if not delimiter:
        raise ValueError("delimiter must be a non-empty string")
    return [piece for piece in text.split(delimiter) if piece.strip()]


def step_end(
    completion: Completion, *, delimiter: str, decode: Callable[[Sequence[int]], str]
) -> tuple[str, Finish]:
    """How a one-step completion ended: (separator to put after its text, the node's finish state).

    `finish_reason == "stop"` means either the delimiter (a stop string) or the end of the
    solution. The text never shows the delimiter, but its tokens do, so decoding the ids
    tells the two apart without any tokenizer-specific EOS id. A `length` cut is the
    token-count fallback (or the ledger's cap): the step is over, the solution is not.
    """
    if completion.finish_reason == "stop":
        if delimiter in decode(completion.token_ids):
            return delimiter, "open"
        return "", "stop"
    if completion.finish_reason == "abort":  # the engine gave up on it: never extend it again
        return "", "length"
    return "", "open"
