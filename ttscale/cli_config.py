"""`ttscale run --config FILE`: a run's settings from a YAML or JSON file.

The file's keys are the flags' names; its values go through the same parser as the flags, so a
bad value gets the flag's message, prefixed with the file's name. Flags given on the command line
win. The reader is defensive: size-capped, UTF-8 only, no YAML aliases (billion laughs) or tags,
no duplicate JSON keys, and never an API key (those come from the environment only).
"""

from __future__ import annotations

import argparse
import difflib
import json
from pathlib import Path
from typing import Any

from ttscale.cli import UsageError

_CONFIG_MAX_BYTES = 1 << 20
#: Flags a config file may not set: where the run continues and which file to read are command-line matters.
_NOT_IN_CONFIG = {"resume", "config", "func", "command"}


def apply_config_file(args: argparse.Namespace) -> None:
    """Fill the flags not given on the command line from `--config FILE` (YAML or JSON).

    The file's keys are the flags' names (`max_model_len` or `max-model-len`), plus `params`, a
    mapping of strategy parameters. Its values pass through the same parser as the flags, so a bad
    value gets the same message, prefixed with the file's name.
    """
    from ttscale.cli import build_parser

    path = args.config
    tokens = _config_tokens(path, _read_config(path), known=set(vars(args)) - _NOT_IN_CONFIG)
    try:
        from_file = build_parser().parse_args(["run", *tokens])
    except UsageError as exc:
        raise UsageError(f"run: in {path}: {str(exc).removeprefix('ttscale run: ')}") from None
    for name, value in vars(from_file).items():
        if name in _NOT_IN_CONFIG or value is None or value is False:
            continue
        if name == "param":  # both sources count; the command line's come last, so they win
            args.param = [*value, *(args.param or [])]
        elif getattr(args, name, None) in (None, False):
            setattr(args, name, value)


def _read_config(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(_CONFIG_MAX_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"run: cannot read config {path}: {exc.strerror or exc}") from None
    if len(raw) > _CONFIG_MAX_BYTES:
        raise UsageError(f"run: config {path} is over {_CONFIG_MAX_BYTES >> 20} MiB; a run's settings fit in a page")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"run: config {path} is not UTF-8 text (byte {exc.start})") from None
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".json":
            data = json.loads(text, object_pairs_hook=_unique_keys)
        elif suffix in (".yaml", ".yml"):
            data = _load_yaml(text)
        else:
            raise UsageError(f"run: config {path} must end in .json, .yaml or .yml")
    except RecursionError:
        raise UsageError(f"run: config {path} is nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError and yaml.YAMLError (wrapped below) alike
        raise UsageError(f"run: config {path} cannot be read: {' '.join(str(exc).split())[:300]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"run: config {path} must be a mapping of settings, got {type(data).__name__}")
    return data


def _config_tokens(path: str, data: dict[str, Any], *, known: set[str]) -> list[str]:
    """The file's settings as command-line tokens (`--key=value`, so a value may start with '-')."""
    tokens: list[str] = []
    for raw_key, value in data.items():
        key = str(raw_key).strip().replace("-", "_")
        if key == "params":
            if not isinstance(value, dict):
                raise UsageError(f"run: in {path}: params must be a mapping of name: value")
            for name, item in value.items():
                tokens.append(f"--param={name}={_scalar(path, f'params.{name}', item)}")
            continue
        if key in ("api_key", "openai_api_key"):
            raise UsageError(f"run: in {path}: an API key is read from the environment only (see api_key_env)")
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known | {"params"}), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"run: in {path}: unknown setting {raw_key!r}{hint}")
        if value is None:
            continue
        flag = f"--{key.replace('_', '-')}"
        if key in ("no_progress", "json"):
            if not isinstance(value, bool):
                raise UsageError(f"run: in {path}: {key} must be true or false, got {value!r}")
            tokens.extend([flag] if value else [])
        elif key == "param":
            items = value if isinstance(value, list) else [value]
            tokens.extend(f"--param={_scalar(path, key, item)}" for item in items)
        else:
            tokens.append(f"{flag}={_scalar(path, key, value)}")
    return tokens


def _scalar(path: str, key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise UsageError(f"run: in {path}: {key} must be a single value, got {type(value).__name__}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"key {key!r} appears twice")
        data[key] = value
    return data


def _load_yaml(text: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise UsageError("run: YAML configs need PyYAML (pip install pyyaml), or write the config as .json") from None

    class _NoAliases(yaml.SafeLoader):
        """Safe YAML without aliases: a few nested aliases expand to billions of nodes ('billion laughs')."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise yaml.YAMLError("aliases (*name) are not allowed in a ttscale config")
            return super().compose_node(parent, index)

    try:
        return yaml.load(text, Loader=_NoAliases)  # a SafeLoader: builds plain data only
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from None


__all__ = ["apply_config_file"]
