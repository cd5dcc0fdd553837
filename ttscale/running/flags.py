"""The command-line flags of a run's settings that several commands share (`run`, `sweep`, `compare`,
`allocate`), declared once, with the readers that turn the flags given into settings (checked: one-line
`UsageError`s prefixed with the command). Core code: `RunSpec.add_cli_args` declares a run's flags with these,
and the CLI's modules import them from here.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from ttscale.engine.args import chat_template_kwargs
from ttscale.engine.openai_config import SERVER_FLAGS
from ttscale.errors import UsageError

#: Engine settings with a flag of their own (EngineConfig fields); every other one is an --engine-arg.
ENGINE_FLAGS = {"max_model_len": int, "kv_cache_gib": float, "dtype": str, "gpu_memory_utilization": float}
#: Engine settings that are on/off flags (`--deterministic` / `--no-deterministic`; true or false in a file).
ENGINE_SWITCHES = ("deterministic",)

def positive_int(text: str) -> int:
    """An argparse type: a whole number ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number ≥ 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {value}")
    return value


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


def data_dir_help() -> str:
    """`--data-dir`'s help, from `ttscale.evals.LOCAL_COPIES` (what the loaders read): a layout written by hand said
    `<dir>/<task>/test.jsonl`, which HumanEval does not use."""
    from ttscale.evals import LOCAL_COPIES

    files = ", ".join(f"<dir>/{path}" for path in LOCAL_COPIES.values())
    return f"folder with local copies of the datasets ({files})"


def add_data_dir_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", help=data_dir_help())


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
    from ttscale.engine import ENGINES

    names = ENGINES.names()  # the registered backends, plugins' included
    p.add_argument("--backend", choices=names, help=f"{', '.join(names)}: vllm (default) starts the engine in this "
                   "process; openai talks to a served model")
    p.add_argument("--base-url", help="--backend openai: the server's API root, e.g. http://127.0.0.1:8000/v1 (a "
                   "query string is sent; run files show key/token/sig/password/secret values in it as ***)")
    for flag, (kind, text) in SERVER_FLAGS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind, help=text)
    for name in names:
        _add_option_flags(p, name, ENGINES.get(name))


#: The argparse dest of a generated backend option flag: `backend_option:NAME:FIELD` (no flag of its own has one).
_OPTION = "backend_option"


def _add_option_flags(p: argparse.ArgumentParser, name: str, backend: Any) -> None:
    """One flag per field of a backend's config class, `--NAME-FIELD`, its docstring as help: as `RunSpec` owns its
    flags, a backend's options are declared once, by its class (`Backend.own_flags`: it declares its own)."""
    from ttscale.kit.params import describe_params

    options: Any = backend.config
    if backend.own_flags or not isinstance(options, type) or not dataclasses.is_dataclass(options):
        return
    group = p.add_argument_group(f"--backend {name}")
    for option in describe_params(options):
        flag = f"--{name}-{option.name}".replace("_", "-")
        default = "" if option.default is dataclasses.MISSING else f" (default {option.default!r})"
        text = f"--backend {name}: {option.doc or option.name}{default}".replace("%", "%%")
        dest = f"{_OPTION}:{name}:{option.name}"
        if _plain(option.type) == "bool":
            group.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction, default=None, help=text)
        else:
            group.add_argument(flag, dest=dest, type=_option_type(option.type), metavar=option.name.upper(),
                               help=text)


def _plain(annotation: str) -> str:
    """`int | None` -> `int`: the type a flag's value is read as (None is the flag left out)."""
    kinds = [k.strip() for k in annotation.split("|") if k.strip() not in ("None", "")]
    return kinds[0] if len(kinds) == 1 else annotation


def _option_type(annotation: str) -> Any:
    """How a generated flag reads its value: int, float and str by name; anything else as JSON (else as text)."""
    readers: dict[str, Any] = {"int": int, "float": float, "str": str}
    return readers.get(_plain(annotation), _json_or_text)


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def backend_options(args: argparse.Namespace, backend: str, command: str) -> dict[str, Any]:
    """The options of `backend` given as its generated flags (field -> value); another backend's refused in one line."""
    given: dict[str, Any] = {}
    for key, value in vars(args).items():
        if not key.startswith(f"{_OPTION}:") or value is None:
            continue
        _, owner, option = key.split(":", 2)
        if owner != backend:
            raise UsageError(f"{command}: --{owner}-{option}".replace("_", "-") + f" applies to --backend {owner} only")
        given[option] = value
    return given


def server_settings(args: argparse.Namespace, stored: Any, command: str) -> Any:
    """The --backend openai settings (an OpenAIConfig): the `stored` ones (on resume) with the flags on top."""
    from ttscale.engine.openai_config import server_from_flags

    return server_from_flags(args, stored, command)


def vllm_only(args: argparse.Namespace, command: str) -> None:
    """Refuse the served model's flags without --backend openai."""
    given = [f for f in ("base_url", *SERVER_FLAGS) if getattr(args, f, None) is not None]
    if given:
        raise UsageError(f"{command}: --{given[0].replace('_', '-')} applies to --backend openai only")


__all__ = ["ENGINE_FLAGS", "ENGINE_SWITCHES", "SERVER_FLAGS", "add_backend_flags", "add_engine_flags",
           "add_task_option_flag", "backend_options", "chat_template_kwargs", "engine_settings", "positive_int",
           "server_settings", "task_options", "vllm_only"]
