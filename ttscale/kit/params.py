"""Strategy parameters: validated dataclasses, filled from `--param key=value` strings.

A strategy declares its parameters as a frozen, keyword-only dataclass with a docstring under
each field and checks in `__post_init__`; `parse_params` turns CLI strings into that object,
so a typo or a bad value is refused before any engine starts.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import numbers
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ttscale.kit.capabilities import Capabilities, Replay

if TYPE_CHECKING:
    from ttscale.schema import Problem

P = TypeVar("P")
F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V")


def strategy(params: type[Any], *, replay: Replay | None = None, difficulty_pool: bool = False,
             adaptive_candidate: bool = True,
             check_problems: Callable[[list[Problem]], None] | None = None) -> Callable[[F], F]:
    """Attach a strategy's parameter class and its capabilities (ttscale.kit.capabilities) to it:
    `@strategy(Params, replay=pool_replay(vote)) async def name(problem, ctx, p)`."""
    declared = Capabilities(replay=replay, difficulty_pool=difficulty_pool, adaptive_candidate=adaptive_candidate,
                            check_problems=check_problems)

    def attach(fn: F) -> F:
        fn.Params = params  # type: ignore[attr-defined]
        fn.capabilities = declared  # type: ignore[attr-defined]
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
    """Build `cls` from strings (or already-typed values); unknown names and bad values raise ValueError.

    A typed value (from Python: `ttscale.run(params=...)`, a policy file) is held to the rules a string is read
    by: a bool is not a number, a float with a fraction is not an int, a number is not a string, and no number
    is NaN or infinite; an int is taken where a float goes.

    A class may name other spellings of its fields in `ALIASES` (`{"width": "n"}`: the ETS paper's "width 16"
    is REBASE's and ETS's N, a deprecated spelling since beam's `width` is M); giving a field under both names is
    refused.
    """
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in _public_fields(cls)}
    values: dict[str, Any] = {}
    for name, value in field_names(cls, raw).items():
        if name not in fields:
            raise ValueError(f"unknown parameter {name!r}; allowed: {', '.join(sorted(fields)) or 'none'}")
        read = _convert if isinstance(value, str) else _check
        values[name] = read(name, value, hints[name])
    try:
        return cls(**values)
    except TypeError as exc:  # e.g. a wrong type passed from Python
        raise ValueError(str(exc)) from None


class DeprecatedParameter(FutureWarning):
    """A parameter given under an old spelling that still works (`rebase width=16`: N, which beam calls `n` and
    whose `width` is M). A FutureWarning, so Python shows it to users; the CLI prints it on one line."""


def field_names(cls: type[Any], raw: Mapping[str, V]) -> dict[str, V]:
    """`raw` with each alias of `cls.ALIASES` replaced by its field's name; a field given twice (under two
    of its names) raises ValueError. An alias listed in `cls.DEPRECATED_ALIASES` (alias → why) still works and
    warns (`DeprecatedParameter`), naming the field to give instead."""
    aliases: Mapping[str, str] = getattr(cls, "ALIASES", {})
    deprecated: Mapping[str, str] = getattr(cls, "DEPRECATED_ALIASES", {})
    out: dict[str, V] = {}
    given_as: dict[str, str] = {}
    for given, value in raw.items():
        name = aliases.get(given, given)
        if given in deprecated:  # a sweep's values come as a list: shown as they were written, 16|64
            shown = "|".join(map(str, value)) if isinstance(value, list | tuple) else value
            warnings.warn(DeprecatedParameter(f"parameter {given!r} is deprecated here: give {name}={shown} instead "
                                              f"({deprecated[given]})"), stacklevel=2)
        if name in given_as:
            raise ValueError(f"parameter {name!r} given twice (as {given_as[name]!r} and as {given!r}): give one")
        given_as[name], out[name] = given, value
    return out


def task_defaults(cls: type[Any], *, task: Any, budget: Any) -> dict[str, Any]:
    """The values `task` suggests for the fields of `cls` (a strategy's Params), capped by `budget`.

    A task may suggest parameters through a `param_defaults()` method (MATH-style benchmarks: solutions of
    up to 2048 tokens, each step capped at the same 2048 and 40 search steps, as search-and-learn runs them,
    and answers of a whole solution for the sequential strategies; the arithmetic task suggests none). Only
    fields `cls` has are taken. Under a token budget, `max_tokens` (one solution) and `answer_tokens` (one
    answer) are capped at the budget, so that a budget below the suggestion still pays for one shorter
    solution or answer instead of none, and `step_tokens` at that `max_tokens` (a step is part of a solution).
    This is the one place such defaults are resolved: `prepare` uses it for a new run, `ttscale sweep` per
    cell (through `prepare`), and `adaptive` for the strategy it routes to, at the budget of the policy row it
    was learned at. An explicit parameter always wins: callers merge these *under* the user's values.
    """
    from ttscale.evals.base import param_defaults

    suggested = param_defaults(task)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    out = {k: v for k, v in suggested.items() if k in names}
    if getattr(budget, "unit", None) == "tokens":
        limit = max(1, int(budget.limit))
        for name in ("max_tokens", "answer_tokens"):
            if name in out:
                out[name] = max(1, min(int(out[name]), limit))
        if "step_tokens" in out:
            out["step_tokens"] = max(1, min(int(out["step_tokens"]), int(out.get("max_tokens", limit))))
    if "task_defaults" in names:  # a strategy that routes to others (adaptive) passes the suggestions on
        out["task_defaults"] = True
    return out


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
    allowed = " or ".join(_option_name(o) for o in options)
    raise ValueError(f"parameter {name} must be {allowed}, got {text!r}")


def _check(name: str, value: Any, annotation: Any) -> Any:
    """`value` given as itself (not as a string) for a field of type `annotation`: the value, an int as a float
    where a float goes; ValueError naming the parameter, the value and the allowed types otherwise."""
    options = typing.get_args(annotation) if _is_union(annotation) else (annotation,)
    for option in options:
        checked = _check_one(value, option)
        if checked is not _REFUSED:
            return checked
    allowed = " or ".join(_type_name(o) for o in options)
    raise ValueError(f"parameter {name} must be {allowed}, got {value!r} ({type(value).__name__})")


_REFUSED = object()


def _check_one(value: Any, kind: Any) -> Any:
    if kind is type(None):
        return value if value is None else _REFUSED
    if kind is bool:
        return value if isinstance(value, bool) else _REFUSED
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if kind is int:
        if isinstance(value, numbers.Integral) and number:
            return int(value)
        # 4.0 is the whole number 4 (a JSON writer's float); 4.5 and NaN are no int
        return int(value) if number and math.isfinite(value) and float(value).is_integer() else _REFUSED
    if kind is float:
        return float(value) if number and math.isfinite(value) else _REFUSED
    if kind is str:
        return _REFUSED  # strings are read by `_convert`
    if typing.get_origin(kind) is typing.Literal:
        # `==` alone would take True for 1: the value's type must match too
        return value if any(type(value) is type(a) and value == a for a in typing.get_args(kind)) else _REFUSED
    return value  # a type this module does not read from strings either (a list, a class): the dataclass checks


def _type_name(kind: Any) -> str:
    return "a finite float" if kind is float else _option_name(kind)


def _option_name(kind: Any) -> str:
    """How a message names what a field takes: a Literal by its values (`Literal` alone tells a user nothing)."""
    if typing.get_origin(kind) is typing.Literal:
        return "one of " + ", ".join(map(repr, typing.get_args(kind)))
    return getattr(kind, "__name__", str(kind))


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


@dataclasses.dataclass(frozen=True)
class ParamDoc:
    """One parameter as `ttscale list --params` shows it."""

    name: str
    """The field's name (what `--param NAME=value` sets)."""
    type: str
    """The annotation as written (`int | None`)."""
    default: Any
    """The default (dataclasses.MISSING when there is none)."""
    doc: str
    """The docstring under the field (empty when it has none)."""


def describe_params(cls: type[Any]) -> list[ParamDoc]:
    """Every public init field of a parameter dataclass with its type, default and the docstring written under it.

    Fields named with a leading underscore (an engine handle, a cache) are the object's own state, not parameters.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # a subclass's docstring overrides its base's
        if dataclasses.is_dataclass(klass):
            docs.update(_field_docstrings(klass))
    out = []
    for f in _public_fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        out.append(ParamDoc(f.name, kind, default, docs.get(f.name, "")))
    return out


def _public_fields(cls: type[Any]) -> list[dataclasses.Field[Any]]:
    """The fields a user may set: init fields whose names do not start with an underscore."""
    return [f for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")]


def _field_docstrings(cls: type[Any]) -> dict[str, str]:
    """`name: type = value` followed by a string literal: that string is the field's docstring (PEP 257)."""
    import ast
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):  # no source (a frozen or generated class): no docstrings
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    out = {}
    for stmt, after in itertools.pairwise(body):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            out[stmt.target.id] = inspect.cleandoc(after.value.value)
    return out
