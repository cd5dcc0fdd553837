"""Messages for people: what an error or a value says, on one line."""

from __future__ import annotations


def one_line(value: object, *, limit: int = 1000) -> str:
    """`str(value)` with every run of whitespace (newlines included) as one space, cut at `limit` characters."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["one_line"]
