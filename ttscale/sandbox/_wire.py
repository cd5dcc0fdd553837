"""Plain data between the sandbox's two processes: the tests' (trusted) and the candidate's (hostile).

Not imported by ttscale: like `_runner.py`, its compiled code runs in the sandbox's `python -I -S` child, standard
library only, nothing slow to import. The tests call the candidate's functions through `encode`d arguments and read
back `decode`d results; nothing that crosses can run code, here or on decoding (no pickle, no marshal, whose
decoder is not made for hostile bytes): the decoder is plain Python over a small tagged format, checks every length
against what is left, nests at most `MAX_DEPTH` deep and builds only fresh builtin values of exact types.

What crosses: None, bool, int (any size), float (nan, infinities and -0.0 included), complex, str (lone surrogates
included), bytes, and list, tuple, set, frozenset and dict of those. Anything else, a subclass of one of them
included, cannot be encoded: `WireError` names its type.

A frame is a 4-byte big-endian length and that many bytes, at most `MAX_FRAME`.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing takes 20 ms to import
if TYPE_CHECKING:
    from typing import Any

MAX_DEPTH = 100
MAX_FRAME = 32 << 20
_HEADER = 4
_type, _len, _str, _bytes, _int, _float = type, len, str, bytes, int, float
_CONTAINER_TAGS: dict[Any, bytes] = {list: b"l", tuple: b"t", set: b"s", frozenset: b"z", dict: b"d"}
_BUILD: dict[bytes, Any] = {b"l": list, b"t": tuple, b"s": set, b"z": frozenset}


class WireError(ValueError):
    """A value that cannot cross (its type, its depth, its size) or bytes that are not a value."""


def _sized(tag: bytes, payload: bytes) -> bytes:
    return tag + _len(payload).to_bytes(_HEADER, "big") + payload


def _type_name(kind: type) -> str:
    # The C-level getter: a metaclass of the candidate's cannot run code for it.
    name = _type.__dict__["__name__"].__get__(kind)
    return name if _type(name) is _str else "value"


def encode(value: Any) -> bytes:
    """`value` as bytes, by exact type checked by identity (no `__eq__`, `__hash__` or `__iter__` of a subclass
    runs); WireError for anything else, deeper than MAX_DEPTH, or larger than MAX_FRAME."""
    out: list[bytes] = []
    size = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = _type(item)
        if item is None:
            chunk = b"N"
        elif item is True or item is False:
            chunk = b"T" if item is True else b"F"
        elif kind is _int:
            chunk = _sized(b"i", _int.__format__(item, "x").encode())  # hex: no limit on the digits of a str
        elif kind is _float:
            chunk = _sized(b"f", _float.hex(item).encode())
        elif kind is complex:
            chunk = _sized(b"c", (_float.hex(item.real) + " " + _float.hex(item.imag)).encode())
        elif kind is _str:
            chunk = _sized(b"u", item.encode("utf-8", "surrogatepass"))
        elif kind is _bytes:
            chunk = _sized(b"b", item)
        elif kind is list or kind is tuple or kind is set or kind is frozenset or kind is dict:
            if depth >= MAX_DEPTH:
                raise WireError(f"a value nested deeper than {MAX_DEPTH}")
            items = list(item.items()) if kind is dict else list(item)
            chunk = _CONTAINER_TAGS[kind] + _len(items).to_bytes(_HEADER, "big")
            for each in reversed(items):  # popped, so written, in order
                if kind is dict:
                    stack.append((each[1], depth + 1))
                    stack.append((each[0], depth + 1))
                else:
                    stack.append((each, depth + 1))
        else:
            raise WireError(f"an object of type {_type_name(kind)}: only plain builtin values")
        size += _len(chunk)
        if size > MAX_FRAME:
            raise WireError(f"a value larger than {MAX_FRAME >> 20} MiB")
        out.append(chunk)
    return b"".join(out)


def decode(data: bytes) -> Any:
    """The value `encode` made `data` from; WireError for any other bytes."""
    try:
        return _decode(data)
    except WireError:
        raise
    except (ValueError, TypeError, OverflowError, IndexError, UnicodeDecodeError) as error:
        raise WireError(f"not a value ({_type_name(_type(error))})") from None


def _decode(data: bytes) -> Any:
    end, position = _len(data), 0
    # Open containers: [tag, items still to read, items read]; a finished value goes into the innermost one.
    open_: list[list[Any]] = []
    result: list[Any] = []
    while True:
        if position >= end:
            raise WireError("the bytes end inside a value")
        tag = data[position : position + 1]
        position += 1
        if tag in (b"N", b"T", b"F"):
            value: Any = None if tag == b"N" else tag == b"T"
        elif tag in (b"l", b"t", b"s", b"z", b"d"):
            count = _int.from_bytes(data[position : position + _HEADER], "big")
            position += _HEADER
            wanted = count * 2 if tag == b"d" else count
            if wanted > end - position:  # every item takes a byte at least: no allocation the bytes cannot back
                raise WireError("a container longer than the bytes that follow")
            if _len(open_) >= MAX_DEPTH:
                raise WireError(f"a value nested deeper than {MAX_DEPTH}")
            open_.append([tag, wanted, []])
            if wanted:
                continue
            value = _close(open_.pop())
        else:
            size = _int.from_bytes(data[position : position + _HEADER], "big")
            position += _HEADER
            if size > end - position:
                raise WireError("a value longer than the bytes that follow")
            payload = data[position : position + size]
            position += size
            value = _scalar(tag, payload)
        while True:  # put the value in its container, closing every container it completes
            if not open_:
                result.append(value)
                if position != end:
                    raise WireError("bytes left after the value")
                return result[0]
            top = open_[-1]
            top[2].append(value)
            top[1] -= 1
            if top[1]:
                break
            value = _close(open_.pop())


def _scalar(tag: bytes, payload: bytes) -> Any:
    if tag == b"i":
        text = payload.decode("ascii")
        if not text or text.strip() != text or "_" in text:  # int() would accept spaces and underscores
            raise WireError("not a value (int)")
        return _int(text, 16)
    if tag == b"f":
        return _float.fromhex(payload.decode("ascii"))
    if tag == b"c":
        real, imag = payload.decode("ascii").split(" ")
        return complex(_float.fromhex(real), _float.fromhex(imag))
    if tag == b"u":
        return payload.decode("utf-8", "surrogatepass")
    if tag == b"b":
        return _bytes(payload)
    raise WireError(f"not a value (tag {tag!r})")


def _close(container: list[Any]) -> Any:
    tag, _, items = container
    if tag == b"d":
        return dict(zip(items[0::2], items[1::2], strict=True))
    return _BUILD[tag](items)


def write_frame(fd: int, payload: bytes) -> None:
    """`payload` as one frame on `fd` (OSError, such as BrokenPipeError, if the other end is gone)."""
    data = memoryview(_len(payload).to_bytes(_HEADER, "big") + payload)
    while data:
        data = data[os.write(fd, data) :]


def read_frame(fd: int) -> bytes | None:
    """The next frame on `fd`; None at end of file between frames; WireError for a cut or oversized frame."""
    header = _read_exactly(fd, _HEADER)
    if header is None:
        return None
    size = _int.from_bytes(header, "big")
    if size > MAX_FRAME:
        raise WireError(f"a message of {size:,} bytes: over the {MAX_FRAME >> 20} MiB limit")
    payload = _read_exactly(fd, size) if size else b""
    if payload is None:
        raise WireError("the message ends early")
    return payload


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            if left == size:
                return None
            raise WireError("the message ends early")
        chunks.append(chunk)
        left -= _len(chunk)
    return b"".join(chunks)
