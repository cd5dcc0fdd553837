"""The plain data between the tests' process and the candidate's (`ttscale.sandbox._wire`): every plain value comes
back equal and of its exact type, anything else is refused by name, and bytes the candidate makes up decode to a
value or to WireError, never to something else (no code runs, no recursion limit is hit, no length is trusted)."""

from __future__ import annotations

import math
import os
import struct
from typing import Any

import pytest

from ttscale.sandbox._wire import MAX_DEPTH, MAX_FRAME, WireError, decode, encode, read_frame, write_frame

VALUES: list[Any] = [
    None, True, False, 0, -1, 255, -(2**70), 10**5000, 1.5, -0.0, float("inf"), float("-inf"), 5e-324,
    1.7976931348623157e308, complex(1, -2.5), "", "é\x00\U0001f600", "\ud800 lone surrogate", b"", b"\x00\xff",
    [], (), {}, set(), frozenset(),
    [1, [2, [3, (4, {5: "6"})]]], {"a": [1, 2], 3: (None, b"x"), (1, 2): frozenset({1})}, {1, "a", (2, 3)},
    [True, 1, 1.0],
]


@pytest.mark.parametrize("value", VALUES, ids=[f"v{index}" for index in range(len(VALUES))])
def test_plain_values_come_back_equal_and_of_their_exact_type(value: Any) -> None:
    back = decode(encode(value))
    assert type(back) is type(value)
    assert back == value
    if type(value) is float:
        assert math.copysign(1, back) == math.copysign(1, value)  # -0.0 stays negative


def test_nan_and_nested_types_survive() -> None:
    back = decode(encode([float("nan"), (True, 1), {"k": [1.0, 1]}]))
    assert math.isnan(back[0])
    assert [type(item) for item in back[1]] == [bool, int]
    assert [type(item) for item in back[2]["k"]] == [float, int]


def test_dict_order_and_container_types_are_kept() -> None:
    value = {"b": [1, (2, 3)], "a": {4}, 5: frozenset({6})}
    back = decode(encode(value))
    assert list(back) == ["b", "a", 5]
    assert type(back["b"][1]) is tuple and type(back["a"]) is set and type(back[5]) is frozenset


class Yes:
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class Int(int):
    pass


class Str(str):
    pass


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
    pass


@pytest.mark.parametrize(
    ("value", "name"),
    [(Yes(), "Yes"), (Int(3), "Int"), ([1, Str("a")], "Str"), ({"k": Yes()}, "Yes"), (iter([1]), "list_iterator"),
     (bytearray(b"x"), "bytearray"), ({"k": (1, Forged())}, "Forged"), (len, "builtin_function_or_method")],
)
def test_anything_else_is_refused_by_its_type_name_without_running_its_code(value: Any, name: str) -> None:
    _SaysEqual.calls = 0
    with pytest.raises(WireError, match=f"^an object of type {name}: only plain builtin values$"):
        encode(value)
    assert _SaysEqual.calls == 0


def test_depth_is_bounded_exactly_and_cycles_end() -> None:
    value: list[Any] = []
    for _ in range(MAX_DEPTH - 1):
        value = [value]  # MAX_DEPTH lists, the outermost at depth 0
    assert decode(encode(value)) == value
    with pytest.raises(WireError, match=f"nested deeper than {MAX_DEPTH}"):
        encode([value])
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(WireError, match="nested deeper than"):
        encode(cycle)


def test_a_value_larger_than_a_frame_is_refused_while_encoding() -> None:
    shared = "x" * (1 << 20)
    with pytest.raises(WireError, match="larger than 32 MiB"):
        encode([shared] * 40)  # 40 MiB from one string shared 40 times


def _header(tag: bytes, count: int) -> bytes:
    return tag + struct.pack(">I", count)


@pytest.mark.parametrize(
    "data",
    [
        b"", b"?", b"N N", b"NN", _header(b"l", 2) + b"N", _header(b"l", 2**31) + b"N", _header(b"d", 1) + b"N",
        _header(b"u", 10) + b"abc", _header(b"i", 3) + b" 1 ", _header(b"i", 3) + b"1_0", _header(b"i", 0),
        _header(b"f", 3) + b"xyz", _header(b"c", 3) + b"1.0", _header(b"u", 1) + b"\xff",
        _header(b"s", 1) + _header(b"l", 0), _header(b"d", 1) + _header(b"l", 0) + b"N",
        _header(b"l", 1) * (MAX_DEPTH + 1) + b"N", _header(b"l", 1) * 100_000 + b"N",
    ],
    ids=["empty", "unknown_tag", "two_values", "trailing", "short_list", "huge_count", "half_dict", "short_str",
         "int_spaces", "int_underscore", "int_empty", "float_text", "complex_one_part", "bad_utf8", "list_in_set",
         "list_as_key", "one_too_deep", "very_deep"],
)
def test_bytes_that_are_not_a_value_are_a_wire_error(data: bytes) -> None:
    with pytest.raises(WireError):
        decode(data)


def test_frames_round_trip_and_end_cleanly() -> None:
    read, write = os.pipe()
    try:
        write_frame(write, encode(("call", "solve", (2,), {})))
        write_frame(write, b"")
        os.close(write)
        first = read_frame(read)
        assert first is not None and decode(first) == ("call", "solve", (2,), {})
        assert read_frame(read) == b""
        assert read_frame(read) is None  # end of file between frames
    finally:
        os.close(read)


@pytest.mark.parametrize(
    ("data", "message"),
    [(struct.pack(">I", MAX_FRAME + 1), "over the 32 MiB limit"), (struct.pack(">I", 10) + b"abc", "ends early"),
     (b"\x00\x00", "ends early")],
    ids=["oversized", "cut_payload", "cut_header"],
)
def test_a_cut_or_oversized_frame_is_a_wire_error(data: bytes, message: str) -> None:
    read, write = os.pipe()
    try:
        os.write(write, data)
        os.close(write)
        with pytest.raises(WireError, match=message):
            read_frame(read)
    finally:
        os.close(read)
