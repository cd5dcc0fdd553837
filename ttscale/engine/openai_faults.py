"""What an OpenAI-compatible server's answer means to `ttscale.engine.openai`: which failures are retried (and after
how long), which are fatal, and which leave a problem unfinished for `--resume` (`is_transient`, the `openai`
backend's classification); a 200's body read as a completion's choices, or found to be no answer (`Garbled`).
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

from ttscale.messages import one_line

RETRY_STATUS = frozenset({408, 409, 429})  # plus every 5xx
FATAL_STATUS = frozenset({401, 402, 403, 404})  # every later request would get the same answer


class RequestError(RuntimeError):
    """One request the server refused or answered with nonsense; recorded against its problem."""


class MalformedAnswerError(RequestError):
    """Every try was answered 200 with no usable answer (not JSON, no or too few choices, a malformed choice, too
    large a body).

    Transient, not the problem's fault: the runner records the problem as unfinished, and `--resume` runs it again.
    """


class Garbled(Exception):
    """A 200 that is no answer (one try): retried like a 5xx."""


def is_transient(exc: BaseException) -> bool:
    """Whether `exc` is, or came from, a `MalformedAnswerError` (raised from it, or in an exception group)."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, MalformedAnswerError):
            return True
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        inner = getattr(current, "exceptions", None)  # BaseExceptionGroup (Python 3.11+)
        if isinstance(inner, tuple):
            stack.extend(e for e in inner if isinstance(e, BaseException))
    return False


def retried(status: int) -> bool:
    """Whether an error answer of `status` is retried (408, 409, 429, every 5xx): a passing fault."""
    return status in RETRY_STATUS or status >= 500


def backoff(attempt: int, retry_after: float | None, *, base: float, cap: float) -> float:
    """Seconds to wait before try `attempt + 2`: jittered exponential backoff from `base`, at most `cap`; a
    server's Retry-After (capped too) is honoured."""
    delay = min(cap, base * 2**attempt)
    delay *= random.uniform(0.5, 1.0)  # jitter: many problems retrying at once must not stampede
    if retry_after is not None:
        delay = max(delay, min(retry_after, cap))
    return delay


def decode(raw: bytes | None, *, limit: int) -> Any:
    """A 200's body as JSON; None: a body cut at `limit` bytes."""
    if raw is None:
        raise Garbled(f"with more than {limit:,} bytes, more than any answer")
    # Invalid UTF-8 in a model's text is the server's fault, not the run's: keep what can be read.
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise Garbled(f"that is not JSON ({one_line(exc)[:200]})") from None


def choices(data: Any, n: int) -> list[dict[str, Any]]:
    """The `n` choices of a completion answer; `Garbled` when it holds no such list (a proxy's page, a cut body)."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not all(isinstance(c, dict) for c in choices):
        raise Garbled(f"with no list of choices (a JSON {type(data).__name__})")
    if len(choices) != n:
        raise Garbled(f"with {len(choices)} choices where {n} were asked")
    return choices


def declared_size(headers: Any) -> int:
    try:
        return int(headers.get("content-length") or 0)
    except ValueError:
        return 0  # an unreadable length: the streamed count bounds the body


def error_message(raw: bytes) -> str:
    """The `error.message` of an OpenAI-style error body, else the start of the body."""
    try:
        data = json.loads(raw[:65536].decode("utf-8", errors="replace"))
        error = data.get("error", data) if isinstance(data, dict) else data
        message = error.get("message", error) if isinstance(error, dict) else error
        return one_line(message)[:300]
    except (ValueError, RecursionError):
        return one_line(raw[:300].decode("utf-8", errors="replace")) or "(no message)"


def retry_after_seconds(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the exponential backoff is a fine substitute
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


__all__ = ["FATAL_STATUS", "RETRY_STATUS", "Garbled", "MalformedAnswerError",
           "RequestError", "backoff", "choices", "declared_size", "decode", "error_message", "is_transient",
           "retried", "retry_after_seconds"]
