"""The harness's pieces that need no process: the plain-value guard and the pass message."""

from __future__ import annotations

from typing import Any

import pytest

from ttscale.sandbox._runner import PASS_TAG, pass_message, plain_copy


class Yes:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class Int(int):
    pass


class Str(str):
    pass


@pytest.mark.parametrize(
    "value",
    [0, -1, 10**100, 1.5, float("nan"), 1j, True, None, "", "é", b"\x00", [], (), {}, set(), frozenset(),
     [1, [2, [3, (4, {5: "6"})]]], {"a": [1, 2], 3: (None, b"x")}, {1, "a", (2, 3)}, frozenset({(1,), "b"})],
    ids=repr,
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
        (Yes(), "returned an object of type Yes"),
        (Int(3), "returned an object of type Int"),
        ([1, Str("a")], "holding an object of type Str"),
        ({"k": Yes()}, "holding an object of type Yes"),
        (iter([1]), "returned an object of type list_iterator"),
        (bytearray(b"x"), "returned an object of type bytearray"),
    ],
)
def test_anything_else_is_rejected(value: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        plain_copy(value)


def test_depth_is_bounded_and_cycles_end() -> None:
    deep: list[Any] = []
    for _ in range(150):
        deep = [deep]
    with pytest.raises(TypeError, match="nested deeper than 100"):
        plain_copy(deep)
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(TypeError, match="nested deeper than 100"):
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
