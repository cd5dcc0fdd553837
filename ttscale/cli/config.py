"""`ttscale run --config FILE` (and `ttscale sweep`'s): the settings from a YAML or JSON file.

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

from ttscale.errors import UsageError
from ttscale.running.flags import ENGINE_SWITCHES

_CONFIG_MAX_BYTES = 1 << 20
#: Flags a config file may not set: where the run continues and which file to read are command-line matters.
_NOT_IN_CONFIG = {"resume", "config", "func", "command"}
#: Repeatable KEY=VALUE flags and the config file's mapping of the same settings.
_LISTS = {"param": "params", "engine_arg": "engine", "chat_template_kwargs": "chat_template_kwargs"}


def apply_config_file(args: argparse.Namespace, command: str = "run") -> None:
    """Fill the flags not given on the command line from `--config FILE` (YAML or JSON).

    The file's keys are the flags' names (`max_model_len` or `max-model-len`), plus three mappings:
    `params` (strategy parameters), `engine` (vLLM engine arguments, as --engine-arg) and
    `chat_template_kwargs`. Its values pass through the same parser as the flags, so a bad value
    gets the same message, prefixed with the file's name.
    """
    from ttscale.cli import build_parser

    if command == "sweep" and args.resume:
        raise UsageError("sweep: --resume takes the settings the sweep was made with; drop --config")
    path = args.config
    tokens = _config_tokens(path, _read_config(path, command), known=set(vars(args)) - _NOT_IN_CONFIG, command=command)
    try:
        from_file = build_parser().parse_args([command, *tokens])
    except UsageError as exc:
        raise UsageError(f"{command}: in {path}: {str(exc).removeprefix(f'ttscale {command}: ')}") from None
    for name, value in vars(from_file).items():
        if name in _NOT_IN_CONFIG or value is None or value is False:
            continue
        if name in _LISTS:  # both sources count; the command line's come last, so they win
            setattr(args, name, [*value, *(getattr(args, name, None) or [])])
        elif getattr(args, name, None) is None or (getattr(args, name) is False and name not in ENGINE_SWITCHES):
            setattr(args, name, value)  # an engine switch's False is a choice (--no-deterministic), not unset


def _read_config(path: str, command: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(_CONFIG_MAX_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{command}: cannot read config {path}: {exc.strerror or exc}") from None
    if len(raw) > _CONFIG_MAX_BYTES:
        raise UsageError(f"{command}: config {path} is over {_CONFIG_MAX_BYTES >> 20} MiB; settings fit in a page")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{command}: config {path} is not UTF-8 text (byte {exc.start})") from None
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".json":
            data = json.loads(text, object_pairs_hook=_unique_keys)
        elif suffix in (".yaml", ".yml"):
            data = _load_yaml(text)
        else:
            raise UsageError(f"{command}: config {path} must end in .json, .yaml or .yml")
    except RecursionError:
        raise UsageError(f"{command}: config {path} is nested too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError and yaml.YAMLError (wrapped below) alike
        raise UsageError(f"{command}: config {path} cannot be read: {' '.join(str(exc).split())[:300]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"{command}: config {path} must be a mapping of settings, got {type(data).__name__}")
    return data


#: On/off flags (true/false in a file), and flags given once per value (a list in a file).
_SWITCHES = {"no_progress", "json", "no_subsample", "verbose", *ENGINE_SWITCHES}
_REPEATED = {"strategy"}


def _config_tokens(path: str, data: dict[str, Any], *, known: set[str], command: str) -> list[str]:
    """The file's settings as command-line tokens (`--key=value`, so a value may start with '-')."""
    tokens: list[str] = []
    for raw_key, value in data.items():
        key = str(raw_key).strip().replace("-", "_")
        flag_of = {mapping: flag for flag, mapping in _LISTS.items()}
        if key in flag_of and (key != "chat_template_kwargs" or isinstance(value, dict)):
            if not isinstance(value, dict):
                raise UsageError(f"{command}: in {path}: {key} must be a mapping of name: value")
            option = flag_of[key].replace("_", "-")
            for name, item in value.items():
                # Engine arguments may be structured (a speculative_config): JSON, as on the command line.
                text = json.dumps(item) if key == "engine" and isinstance(item, dict | list) else (
                    _scalar(path, f"{key}.{name}", item, command))
                tokens.append(f"--{option}={name}={text}")
            continue
        if key in ("api_key", "openai_api_key"):
            raise UsageError(f"{command}: in {path}: an API key is read from the environment only (see api_key_env)")
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known | {"params"}), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"{command}: in {path}: unknown setting {raw_key!r}{hint}")
        if value is None:
            continue
        flag = f"--{key.replace('_', '-')}"
        if key in _SWITCHES:
            if not isinstance(value, bool):
                raise UsageError(f"{command}: in {path}: {key} must be true or false, got {value!r}")
            tokens.extend([flag] if value else [f"--no-{flag[2:]}"] if key in ENGINE_SWITCHES else [])
        elif key in _LISTS or key in _REPEATED:
            items = value if isinstance(value, list) else [value]
            tokens.extend(f"{flag}={_scalar(path, key, item, command)}" for item in items)
        else:
            tokens.append(f"{flag}={_scalar(path, key, value, command)}")
    return tokens


def _scalar(path: str, key: str, value: Any, command: str = "run") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    # A list of budgets or seeds is the comma-separated text the flag takes.
    if isinstance(value, list) and key in ("budgets", "seeds") and all(isinstance(v, str | int) for v in value):
        return ",".join(map(str, value))
    raise UsageError(f"{command}: in {path}: {key} must be a single value, got {type(value).__name__}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise ValueError(f"key {key!r} appears twice")
        data[key] = value
    return data


def _load_yaml(text: str) -> Any:
    import yaml  # a core dependency

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
