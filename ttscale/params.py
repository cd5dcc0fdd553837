"""Strategy parameters: validated dataclasses, filled from `--param key=value` strings.

A strategy declares its parameters as a frozen, keyword-only dataclass with a docstring under
each field and checks in `__post_init__`; `parse_params` turns CLI strings into that object,
so a typo or a bad value is refused before any engine starts.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

P = TypeVar("P")
F = TypeVar("F", bound=Callable[..., Any])


def strategy(params: type[Any]) -> Callable[[F], F]:
    """Attach a strategy's parameter class to it: `@strategy(Params) async def name(problem, ctx, p)`."""

    def attach(fn: F) -> F:
        fn.Params = params  # type: ignore[attr-defined]
        return fn

    return attach


def params_class(fn: Callable[..., Any]) -> type[Any]:
    cls = getattr(fn, "Params", None)
    if cls is None or not dataclasses.is_dataclass(cls):
        raise TypeError(
            f"strategy {getattr(fn, '__name__', fn)!r} has no Params dataclass (use @strategy(Params))"
        )
    return cls  # type: ignore[return-value]


def parse_params(cls: type[P], raw: Mapping[str, Any]) -> P:
    """Build `cls` from strings (or already-typed values); unknown names and bad values raise ValueError."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    values: dict[str, Any] = {}
    for name, value in raw.items():
        if name not in fields:
            raise ValueError(f"unknown parameter {name!r}; allowed: {', '.join(sorted(fields)) or 'none'}")
        values[name] = _convert(name, value, hints[name]) if isinstance(value, str) else value
    try:
        return cls(**values)
    except TypeError as exc:  # e.g. a wrong type passed from Python
        raise ValueError(str(exc)) from None


def parse_assignments(items: list[str] | None) -> dict[str, str]:
    """`["n=8", "temperature=0.7"]` → `{"n": "8", "temperature": "0.7"}`."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--param must look like key=value, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def check_positive(name: str, value: int | float | None, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if value is None or not math.isfinite(value) or value < 1:
        raise ValueError(f"{name} must be ≥ 1, got {value!r}")


def check_range(name: str, value: float, low: float, high: float, *, low_open: bool = False) -> None:
    ok = math.isfinite(value) and (low < value if low_open else low <= value) and value <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise ValueError(f"{name} must be in {bracket}{low:g}, {high:g}], got {value!r}")


def _convert(name: str, text: str, annotation: Any) -> Any:
    options = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    if type(None) in options and text.lower() in ("none", "null", ""):
        return None
    for option in options:
        if option is type(None):
            continue
        try:
            return _convert_one(text, option)
        except ValueError:
            continue
    allowed = " or ".join(getattr(o, "__name__", str(o)) for o in options)
    raise ValueError(f"parameter {name} must be {allowed}, got {text!r}")


def _convert_one(text: str, kind: Any) -> Any:
    if kind is bool:
        lowered = text.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ValueError(text)
    if kind is int:
        return int(text)
    if kind is float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(text)
        return value
    if kind is str:
        return text
    if typing.get_origin(kind) is typing.Literal:
        if text in typing.get_args(kind):
            return text
        raise ValueError(text)
    raise ValueError(f"unsupported parameter type {kind!r}")


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)
