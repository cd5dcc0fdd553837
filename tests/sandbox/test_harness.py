"""The harness's pieces that need no process: the plain data that crosses between the tests' process and the
candidate's (`_wire`), the pass message and the description of an error (none of which may run code of the
candidate's)."""

from __future__ import annotations

from typing import Any

import pytest

from ttscale.sandbox import Limits
from ttscale.sandbox._runner import PASS_TAG, _describe, pass_message
from ttscale.sandbox._wire import WireError, decode, encode


def plain_copy(value: Any) -> Any:
    """What the tests' process gets for `value` the candidate's function returned."""
    return decode(encode(value))


class Yes:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class Int(int):
    pass


class Str(str):
    pass


def _same_in_every_process(value: Any) -> str:
    # A set's repr follows string hashing, which differs per process: pytest-xdist's workers must collect one id.
    if isinstance(value, (set, frozenset)) and value:
        return f"{type(value).__name__}({{{', '.join(sorted(map(repr, value)))}}})"
    return repr(value)


@pytest.mark.parametrize(
    "value",
    [0, -1, 10**100, 1.5, float("nan"), 1j, True, None, "", "é", b"\x00", [], (), {}, set(), frozenset(),
     [1, [2, [3, (4, {5: "6"})]]], {"a": [1, 2], 3: (None, b"x")}, {1, "a", (2, 3)}, frozenset({(1,), "b"})],
    ids=_same_in_every_process,
)
def test_plain_values_come_back_equal(value: Any) -> None:
    copied = plain_copy(value)
    assert type(copied) is type(value)
    if value == value:  # nan is not equal to itself
        assert copied == value


def test_containers_are_copied_not_shared() -> None:
    value: list[Any] = [[1], {"k": [2]}]
    copied = plain_copy(value)
    assert copied == value and copied is not value
    assert copied[0] is not value[0] and copied[1]["k"] is not value[1]["k"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (Yes(), "^an object of type Yes: only plain builtin values$"),
        (Int(3), "type Int"),
        ([1, Str("a")], "type Str"),
        ({"k": Yes()}, "type Yes"),
        (iter([1]), "type list_iterator"),
        (bytearray(b"x"), "type bytearray"),
    ],
)
def test_anything_else_is_rejected(value: Any, message: str) -> None:
    with pytest.raises(WireError, match=message):
        plain_copy(value)


def test_depth_is_bounded_and_cycles_end() -> None:
    deep: list[Any] = []
    for _ in range(150):
        deep = [deep]
    with pytest.raises(WireError, match="nested deeper than 100"):
        plain_copy(deep)
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(WireError, match="nested deeper than 100"):
        plain_copy(cycle)
    ok: list[Any] = []
    for _ in range(99):
        ok = [ok]
    assert plain_copy(ok) == ok


def test_the_pass_message_is_not_the_secret() -> None:
    secret = bytes(range(32))
    message = pass_message(secret)
    assert message.startswith(PASS_TAG) and secret not in message and len(message) == len(PASS_TAG) + 32
    assert pass_message(secret) == message and pass_message(bytes(32)) != message


class _SaysEqual(type):
    """A metaclass whose classes say they equal every type and hash like int (issue 42's forged pass)."""

    calls = 0

    def __eq__(cls, other: object) -> bool:
        _SaysEqual.calls += 1
        return True

    def __hash__(cls) -> int:
        _SaysEqual.calls += 1
        return hash(int)


class Forged(metaclass=_SaysEqual):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


@pytest.mark.parametrize("value", [Forged(), [Forged()], {"k": (1, Forged())}], ids=["alone", "in_list", "nested"])
def test_types_are_compared_by_identity_never_by_their_eq(value: Any) -> None:
    _SaysEqual.calls = 0
    with pytest.raises(WireError, match="type Forged"):
        plain_copy(value)
    assert _SaysEqual.calls == 0, "the guard ran the metaclass's __eq__ or __hash__"


class _Loud(Exception):
    """An exception of the candidate's whose message and class would run its code if the harness asked."""

    ran: list[str] = []  # noqa: RUF012 - a record of calls, written by the methods below

    def __str__(self) -> str:
        _Loud.ran.append("__str__")
        return "forged"

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        _Loud.ran.append("__class__")
        return SyntaxError


class _Name:
    def __repr__(self) -> str:
        _Loud.ran.append("__repr__")
        return "name"


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (_Loud("boom"), "_Loud: boom"),
        (ValueError(_Name()), "ValueError: <the message holds objects of the program's>"),
        (OSError(5, "I/O error", _Name()), "OSError: (5, 'I/O error')"),
        (KeyError("k"), "KeyError: 'k'"),
        (AssertionError((4, [5.0])), "AssertionError: (4, [5.0])"),
        (AssertionError((4, [_Name()])), "AssertionError: <the message holds objects of the program's>"),
        (MemoryError(), "MemoryError: memory limit: 64 MiB per process, 512 MiB for the execution"),
        (OSError(27, "File too large"), "OSError: [Errno 27] File too large: file-size limit of 8 MiB"),
    ],
    ids=["own_class", "object_argument", "os_error_filename", "key_error", "plain_tuple", "object_in_tuple",
         "memory", "file_size"],
)
def test_describing_an_error_runs_no_code_of_the_candidates(error: BaseException, reason: str) -> None:
    _Loud.ran = []
    limits = Limits(memory_mib=512, processes=8).to_dict()
    assert _describe(error, {"<program>": "", "<test>": ""}, limits) == reason
    assert _Loud.ran == []
