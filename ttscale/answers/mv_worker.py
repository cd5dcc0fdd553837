"""The code that runs inside a grader worker process: math-verify behind two pipes.

Only worker processes import this module (and with it sympy and math-verify); the parent never
does. math-verify's own timeouts use SIGALRM, which works only in a main thread; here they are
switched off and the parent's deadline (kill on overrun) bounds every call instead, wherever
the caller runs.
"""

from __future__ import annotations

import functools
import logging
import re
import signal
from multiprocessing.connection import Connection
from typing import Any

from math_verify import LatexExtractionConfig, parse, verify

_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")
_LATEX_ONLY = [LatexExtractionConfig()]

READY = "ready"
"""First message a worker sends, once its limits are set."""


def as_latex(answer: str) -> str:
    """What math-verify is given: a bare answer is boxed so that its LaTeX parser reads all of it.

    Text that already delimits its math (`$…$`, `\\(…\\)`, `\\boxed{}`) is passed unchanged and
    math-verify extracts the answer from it.
    """
    dollars = len(_UNESCAPED_DOLLAR.findall(answer))
    if dollars % 2:  # a stray "$" ("5$") delimits nothing: drop it
        answer, dollars = _UNESCAPED_DOLLAR.sub("", answer), 0
    if "\\boxed" in answer or "\\(" in answer or "\\[" in answer or dollars:
        return answer
    return "\\boxed{" + answer + "}"


@functools.lru_cache(maxsize=4096)
def parsed(answer: str) -> tuple[Any, ...]:
    """math-verify's parse of an answer, remembered: a problem's reference is graded against
    every sample, and samples repeat answers (that is what majority voting counts on)."""
    # LaTeX extraction only: math-verify's plain-expression extractor hands text to sympy's
    # `parse_expr`, which is built on `eval`; model text never reaches it. (A bare answer is
    # boxed first, and the LaTeX parser reads plain `1/2` or `x^2+1` as well.)
    return tuple(parse(as_latex(answer), extraction_config=_LATEX_ONLY, parsing_timeout=None))


def mv_equal(prediction: str, reference: str) -> bool:
    """math-verify's verdict on `prediction` against `reference` (no timeout: the parent's)."""
    gold, target = parsed(reference), parsed(prediction)
    if not gold or not target:
        return False
    return bool(verify(list(gold), list(target), timeout_seconds=None))


def main(read_fd: int, write_fd: int, memory_limit_mb: int | None) -> None:
    """Entry point of a worker process (see `pool._BOOT`): serve on the two inherited pipe ends."""
    serve(Connection(read_fd, writable=False), Connection(write_fd, readable=False), memory_limit_mb)


def serve(requests: Connection, replies: Connection, memory_limit_mb: int | None) -> None:
    """Answer `(prediction, reference)` requests until EOF.

    Replies: True/False (a verdict); None (math-verify raised: no verdict, the worker is fine);
    a string (out of memory or recursion: the parent replaces this worker).
    """
    # Ctrl-C in the terminal reaches the whole process group: the parent handles it and
    # ends the workers; a traceback from each worker would only bury its message.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)
    logging.getLogger("latex2sympy2_extended").setLevel(logging.CRITICAL)
    if memory_limit_mb is not None:
        _limit_memory(memory_limit_mb)
    replies.send(READY)
    while True:
        try:
            request: Any = requests.recv()
        except (EOFError, OSError):
            return  # the parent went away (or closed the pipe): nothing left to do
        result: bool | str | None
        try:
            result = mv_equal(*request)
        except MemoryError:
            result = "memory limit"
        except RecursionError:
            result = "nesting too deep"
        except Exception:  # a grader bug or odd input costs one verdict, not the worker
            result = None
        try:
            replies.send(result)
        except OSError:
            return


def _limit_memory(megabytes: int) -> None:
    """Cap the address space, so `10^{10^{9}}` raises MemoryError here instead of swapping the host."""
    try:
        import resource
    except ImportError:  # not on Windows: the deadline still bounds the time
        return
    limit = megabytes * 1024 * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
