"""Any vLLM engine argument, by name: `--engine-arg KEY=VALUE`, `engine_args:` in a config, `engine_args=`.

The names and types come from the installed vLLM's own `AsyncEngineArgs` dataclass, read when the
arguments are checked (at the command line, or when an engine starts), never at `import ttscale`:
so every field of the vLLM a user has works, typed as vLLM types it (tensor parallelism, quantization,
KV-cache dtype, max_num_seqs, ...), and an unknown name gets a one-line error with the closest names.
Values: booleans, numbers and strings as their field says; anything structured (dicts, lists) as JSON.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from ttscale.errors import UsageError

#: Engine arguments ttscale owns: the model comes from `--model` (it resolves `embedded` to a folder).
_OWN = frozenset({"model"})


class EngineArgError(ValueError):
    """An engine argument vLLM does not have, or a value its field cannot take; the message is one line."""


def engine_arg_fields() -> dict[str, Any]:
    """vLLM's engine arguments: name → the field's type (imports vLLM)."""
    if "vllm.engine.arg_utils" in sys.modules:
        from vllm.engine.arg_utils import AsyncEngineArgs
    else:  # the first import prints (Triton, platform detection) before an answer that is one line
        from ttscale.engine.logs import held_output

        with held_output():
            from vllm.engine.arg_utils import AsyncEngineArgs

    return {f.name: f.type for f in dataclasses.fields(AsyncEngineArgs) if not f.name.startswith("_")}


def parse_engine_args(items: Iterable[str] | Mapping[str, Any]) -> dict[str, Any]:
    """`KEY=VALUE` strings (or a mapping of values) checked against vLLM's fields and typed by them.

    Keys may use dashes (`max-num-seqs`). Raises EngineArgError naming the closest valid keys.
    """
    raw: dict[str, Any] = {}
    if isinstance(items, Mapping):
        raw = {str(k): v for k, v in items.items()}
    else:
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise EngineArgError(f"engine arguments look like KEY=VALUE, got {item!r}")
            raw[key.strip()] = value
    if not raw:
        return {}
    known = engine_arg_fields()
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name not in known or name in _OWN:
            close = difflib.get_close_matches(name, [k for k in known if k not in _OWN], n=3, cutoff=0.0)
            hint = f"; the closest are {', '.join(close)}" if close else ""
            what = "is set by --model" if name in _OWN else "is not an engine argument of the installed vLLM"
            raise EngineArgError(f"{key!r} {what}{hint} (see `vllm serve --help` for the list)")
        out[name] = convert(name, value, known[name]) if isinstance(value, str) else value
    return out


def convert(name: str, text: str, annotation: Any) -> Any:
    """`text` as a value of `annotation` (vLLM's field type); JSON for structured values."""
    options = _options(annotation)
    if text.strip().lower() in ("none", "null") and type(None) in options:
        return None
    errors: list[str] = []
    for option in options:
        if option is type(None):
            continue
        try:
            return _as(option, text)
        except (ValueError, TypeError) as exc:
            errors.append(str(exc))
    allowed = " or ".join("none" if o is type(None) else _name(o) for o in options)
    raise EngineArgError(f"engine argument {name}={text!r}: expected {allowed}")


def _options(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return [o for arg in typing.get_args(annotation) for o in _options(arg)]
    return [annotation]


def _as(option: Any, text: str) -> Any:
    origin = typing.get_origin(option)
    if origin is typing.Literal:
        for choice in typing.get_args(option):
            if str(choice) == text:
                return choice
        raise ValueError(f"one of {typing.get_args(option)}")
    if option is bool:
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ValueError("true or false")
    if option is int:
        return int(text)
    if option is float:
        return float(text)
    if option is str or isinstance(option, str):  # a string annotation vLLM left unevaluated: pass it on
        return text
    return json.loads(text)  # dicts, lists, config dataclasses (vLLM accepts their dict form)


def _name(option: Any) -> str:
    if typing.get_origin(option) is typing.Literal:
        return "|".join(map(str, typing.get_args(option)))
    return getattr(option, "__name__", str(option))


def chat_template_kwargs(items: list[str], command: str, *, flag: str = "--chat-template-kwargs") -> dict[str, Any]:
    """`KEY=VALUE` items, each value read as JSON where it is JSON (false, 3, "x"), else as the text."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{command}: {flag} takes KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


__all__ = ["EngineArgError", "chat_template_kwargs", "convert", "engine_arg_fields", "parse_engine_args"]
