"""ttscale.sandbox._runner, the pieces that run in this process: what the mutation run (tools/mutation) found
unchecked. Hand examples of the one-line reason an error gets, the limit it names, the plain-value copy."""

from __future__ import annotations

from typing import Any

import pytest

from ttscale.sandbox import Limits
from ttscale.sandbox._runner import PASS_TAG, _describe, pass_message

LIMITS = Limits(memory_mib=600, processes=4, file_mib=3, open_files=20).to_dict()
PROGRAM = "def solve(x):\n    y = x + 1\n    return 1 / 0\n"
TEST = "def check(candidate):\n\n    assert candidate(2) == 4\n"


def _raised(source: str, name: str, call: str) -> BaseException:
    namespace: dict[str, Any] = {}
    exec(compile(source, name, "exec"), namespace)
    try:
        eval(call, namespace)
    except BaseException as error:  # the error is the value under test
        return error
    raise AssertionError("no error")


def test_the_innermost_line_of_the_program_is_named_with_its_text() -> None:
    error = _raised(PROGRAM, "<program>", "solve(1)")
    sources = {"<program>": PROGRAM, "<test>": TEST}
    assert _describe(error, sources) == "ZeroDivisionError: division by zero (program line 3: return 1 / 0)"


def test_a_file_that_is_neither_program_nor_test_is_not_named() -> None:
    error = _raised(PROGRAM, "<elsewhere>", "solve(1)")
    assert _describe(error, {"<program>": PROGRAM, "<test>": TEST}) == "ZeroDivisionError: division by zero"


def test_a_line_past_the_source_is_named_without_text() -> None:
    # The source the harness holds is shorter than what raised (line 3 of a two-line source): number only.
    error = _raised(PROGRAM, "<program>", "solve(1)")
    assert _describe(error, {"<program>": "a\nb\n"}) == "ZeroDivisionError: division by zero (program line 3)"


def test_line_zero_is_named_without_text() -> None:
    # Code a candidate rebuilt with its first line at 0 raises "at line 0", which no source has: the number only,
    # not the source's last line (lines[-1]).
    program = "def solve(x):\n    return x\nlast = 'the last line'\n"
    code = compile("1 / 0", "<program>", "exec").replace(co_firstlineno=0)
    try:
        exec(code, {})
    except ZeroDivisionError as error:
        assert error.__traceback__ is not None and error.__traceback__.tb_next is not None
        assert error.__traceback__.tb_next.tb_lineno == 0  # what the innermost frame reports
        assert _describe(error, {"<program>": program}) == "ZeroDivisionError: division by zero (program line 0)"
    else:
        raise AssertionError("no error")


def test_an_empty_line_is_named_without_text() -> None:
    source = "def f():\n    raise ValueError('v')\n"
    error = _raised(source, "<test>", "f()")
    assert _describe(error, {"<test>": "x\n\n"}) == "ValueError: v (test line 2)"


def test_a_syntax_error_names_its_line() -> None:
    try:
        compile("x = 1\ny = (\n", "<test>", "exec")
    except SyntaxError as error:
        reason = _describe(error, {"<test>": "x = 1\ny = (\n"})
    assert reason == "SyntaxError: '(' was never closed (test line 2)"
    try:
        compile("x = (\n", "<other>", "exec")
    except SyntaxError as error:
        assert _describe(error, {"<test>": ""}) == "SyntaxError: '(' was never closed"


def test_an_error_without_a_message_is_its_name_alone() -> None:
    assert _describe(AssertionError(), {}) == "AssertionError"


def test_the_reason_is_one_line_of_at_most_500_characters() -> None:
    assert _describe(ValueError("a\n  b\tc"), {}) == "ValueError: a b c"
    long = _describe(ValueError("x" * 600), {})
    assert long == "ValueError: " + "x" * (500 - 3 - len("ValueError: ")) + "..."
    assert len(long) == 500
    exact = "x" * (500 - len("ValueError: "))
    assert _describe(ValueError(exact), {}) == "ValueError: " + exact


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (MemoryError(), "MemoryError: memory limit: 150 MiB per process, 600 MiB for the execution"),
        (RuntimeError("can't start new thread"),
         "RuntimeError: can't start new thread: process limit: 4 processes and threads"),
        (RuntimeError("other"), "RuntimeError: other"),
        (OSError(27, "File too large"), "OSError: [Errno 27] File too large: file-size limit of 3 MiB"),
        (OSError(28, "No space left on device"),
         "OSError: [Errno 28] No space left on device: temporary directory of 3 MiB full"),
        (OSError(24, "Too many open files"), "OSError: [Errno 24] Too many open files: open-file limit of 20"),
        # Issue 59: fork past the process limit and mmap past the address space named no limit.
        (BlockingIOError(11, "Resource temporarily unavailable"),
         "BlockingIOError: [Errno 11] Resource temporarily unavailable: process limit: 4 processes and threads"),
        (OSError(12, "Cannot allocate memory"),
         "OSError: [Errno 12] Cannot allocate memory: memory limit: 150 MiB per process, 600 MiB for the execution"),
        (OSError(26, "Text file busy"), "OSError: [Errno 26] Text file busy"),
        (OSError(29, "Illegal seek"), "OSError: [Errno 29] Illegal seek"),
        (ValueError(27), "ValueError: 27"),
    ],
    ids=["memory", "threads", "other_runtime", "efbig", "enospc", "emfile", "eagain", "enomem", "errno_26", "errno_29",
         "not_os"],
)
def test_each_limit_is_named_with_its_value(error: BaseException, reason: str) -> None:
    assert _describe(error, {}, LIMITS) == reason


def test_without_limits_no_limit_is_named() -> None:
    assert _describe(MemoryError(), {}) == "MemoryError"


def test_the_pass_message_flips_every_byte() -> None:
    assert PASS_TAG == b"\x1eP"
    assert pass_message(b"\x00\xff\xa5") == b"\x1eP\xa5\x5a\x00"


def test_a_message_that_cannot_be_formatted_is_said_so() -> None:
    # A plain argument whose str() raises (an int past Python's 4,300-digit conversion limit).
    assert _describe(ValueError(10**5000), {}) == "ValueError: <the message could not be formatted>"


def test_a_syntax_error_whose_message_is_not_a_str_shows_its_name_only() -> None:
    assert _describe(SyntaxError(5), {}) == "SyntaxError"


def test_the_first_line_is_named_with_its_text() -> None:
    source = "def f(): raise KeyError('k')\n"
    error = _raised(source, "<program>", "f()")
    assert _describe(error, {"<program>": source}) == "KeyError: 'k' (program line 1: def f(): raise KeyError('k'))"
