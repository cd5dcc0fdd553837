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

from ttscale.errors import UsageError

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


#: Engine settings with a flag of their own (EngineConfig fields); every other one is an --engine-arg.
ENGINE_FLAGS = {"max_model_len": int, "kv_cache_gib": float, "dtype": str, "gpu_memory_utilization": float}
#: Engine settings that are on/off flags (`--deterministic` / `--no-deterministic`; true or false in a file).
ENGINE_SWITCHES = ("deterministic",)


def add_engine_flags(p: argparse.ArgumentParser) -> None:
    """The engine flags `run` and `sweep` share."""
    for flag, kind in ENGINE_FLAGS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind, help=f"engine setting {flag}")
    p.add_argument("--deterministic", action=argparse.BooleanOptionalAction, default=None,
                   help="samples that do not depend on the batch, the concurrency or the workers: float32 on a CPU, "
                        "vLLM's batch-invariant kernels on an H100-class GPU (refused elsewhere); kept on --resume")
    p.add_argument("--engine-arg", action="append", metavar="KEY=VALUE",
                   help="any argument of the installed vLLM's engine, e.g. tensor_parallel_size=2, "
                        "quantization=fp8, kv_cache_dtype=fp8, max_num_seqs=128 (repeatable; JSON for structures)")
    p.add_argument("--chat-template-kwargs", action="append", metavar="KEY=VALUE",
                   help="an option of the model's chat template, e.g. enable_thinking=false (repeatable; JSON values)")


def engine_settings(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The EngineConfig changes the engine flags given ask for (checked: one-line errors)."""
    from ttscale.engine.args import EngineArgError, parse_engine_args

    changes: dict[str, Any] = {k: getattr(args, k) for k in (*ENGINE_FLAGS, *ENGINE_SWITCHES)
                               if getattr(args, k, None) is not None}
    if getattr(args, "engine_arg", None):
        try:
            changes["engine_args"] = parse_engine_args(args.engine_arg)
        except EngineArgError as exc:
            raise UsageError(f"{command}: {exc}") from None
    if getattr(args, "chat_template_kwargs", None):
        changes["chat_template_kwargs"] = chat_template_kwargs(args.chat_template_kwargs, command)
    return changes


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


#: --backend openai settings (OpenAIConfig fields besides base_url and model).
SERVER_FLAGS = {
    "tokenizer": (str, "the served model's tokenizer: embedded, a local folder or a hub id (default: --model)"),
    "api_key_env": (str, "environment variable holding the API key (default OPENAI_API_KEY; the key is never stored)"),
    "max_concurrency": (int, "requests in flight to the server at once (default 64)"),
    "request_timeout": (float, "seconds one request may take before it is retried (default 600)"),
    "max_retries": (int, "retries after a timeout, a dropped connection, 408/409/429, 5xx or a malformed 200 "
                    "(default 6)"),
}


def add_task_option_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task-option", action="append", metavar="KEY=VALUE",
                   help="an option of the task's factory, repeatable (arithmetic_stateful: queries=5 per_level=20)")


def task_options(args: argparse.Namespace, command: str, **given: Any) -> dict[str, Any]:
    """`--task-option` items (values read as JSON where they are JSON) over the options other flags gave."""
    return {**{k: v for k, v in given.items() if v is not None},
            **chat_template_kwargs(getattr(args, "task_option", None) or [], command, flag="--task-option")}


def add_backend_flags(p: argparse.ArgumentParser) -> None:
    """`--config`, `--backend` and the served model's flags, as `run` and `sweep` share them."""
    p.add_argument("--config", metavar="FILE", help="a YAML or JSON file of these settings (flags given here win)")
    p.add_argument("--backend", choices=("vllm", "openai"), help="vllm (default) or openai: a served model")
    p.add_argument("--base-url", help="--backend openai: the server's API root, e.g. http://127.0.0.1:8000/v1 (a "
                   "query string is sent; run files show key/token/sig/password/secret values in it as ***)")
    for flag, (kind, text) in SERVER_FLAGS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind, help=text)


def server_settings(args: argparse.Namespace, stored: Any, command: str) -> Any:
    """The --backend openai settings (an OpenAIConfig): the `stored` ones (on resume) with the flags on top."""
    from ttscale.engine.openai import OpenAIConfig

    values: dict[str, Any] = dict(vars(stored)) if stored is not None else {}
    values.update({f: getattr(args, f) for f in ("base_url", *SERVER_FLAGS) if getattr(args, f, None) is not None})
    if getattr(args, "chat_template_kwargs", None):
        values["chat_template_kwargs"] = chat_template_kwargs(args.chat_template_kwargs, command)
    if args.model is not None:
        values["model"] = args.model
    if not values.get("base_url"):
        raise UsageError(f"{command}: --backend openai needs --base-url URL (the server's API root)")
    if not values.get("model"):
        raise UsageError(f"{command}: --backend openai needs --model NAME (the name the server serves the model under)")
    try:
        return OpenAIConfig(**values)
    except ValueError as exc:
        raise UsageError(f"{command}: {exc}") from None


def vllm_only(args: argparse.Namespace, command: str) -> None:
    """Refuse the served model's flags without --backend openai."""
    given = [f for f in ("base_url", *SERVER_FLAGS) if getattr(args, f, None) is not None]
    if given:
        raise UsageError(f"{command}: --{given[0].replace('_', '-')} applies to --backend openai only")


__all__ = ["ENGINE_FLAGS", "ENGINE_SWITCHES", "SERVER_FLAGS", "add_backend_flags", "add_engine_flags",
           "apply_config_file", "chat_template_kwargs", "engine_settings", "server_settings", "vllm_only"]
