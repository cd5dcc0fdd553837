"""`RunSpec`: everything that determines a run's results, and its three sources in one place — Python (the
constructor, `ttscale.run`), the command line (`add_cli_args` / `from_cli_args`, as vLLM's EngineArgs has them) and
a stored run's config.json (`from_stored`, for `--resume`). `ttscale.running.runner` re-exports it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ttscale.engine import ENGINES, check_backend
from ttscale.engine.base import EngineConfig
from ttscale.engine.determinism import refuse_served
from ttscale.errors import UsageError
from ttscale.running.flags import (
    add_backend_flags,
    add_data_dir_flag,
    add_engine_flags,
    add_task_option_flag,
    backend_options,
    engine_settings,
    positive_int,
    task_options,
    vllm_only,
)
from ttscale.runstore.run_config import check_spec_types

#: The flags that set a RunSpec field of the same name as they are given.
_AS_GIVEN = ("strategy", "budget", "task", "limit", "seed", "concurrency", "hardware", "total_budget")


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """Everything that determines a run's results (stored in config.json, compared on resume)."""

    strategy: str
    """A registered strategy name (or alias)."""
    budget: str = "8k"
    """Per-problem budget, as `Budget.parse` reads it."""
    task: str = "arithmetic"
    """A task spec: `name` or `name:argument`."""
    task_options: dict[str, Any] = field(default_factory=dict)
    """Keyword options of the task factory (data_dir, field names, ...)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Strategy parameters (strings from the CLI or typed values)."""
    limit: int | None = None
    """Only the first `limit` problems of the task."""
    seed: int = 0
    """The engine's sampling seed."""
    engine: EngineConfig = field(default_factory=EngineConfig)
    """The engine settings, model included."""
    concurrency: int = 64
    """Problems in flight at once (the engine batches their requests)."""
    hardware: str = "B200"
    """Hardware profile that prices FLOPs and eFLOPs (budgets in those units, and every run's record)."""
    backend: str = "vllm"
    """A registered backend (`ttscale.engine.ENGINES`): `vllm`, an engine in this process (or one per Ray worker);
    `openai`, a served model (see `server`); or a plugin's."""
    server: Any = None
    """The options of a backend with a config class of its own (an OpenAIConfig for `openai`: the server, the
    served model's name and where its tokenizer is); None for `vllm`."""
    total_budget: str | None = None
    """A budget over the whole task (`200k`), in the unit of `budget`: one pool ledger funds every problem, so
    the sum of their spend never passes it (`budget` still caps each problem). In-process runs only."""

    def __post_init__(self) -> None:
        check_spec_types(self)
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be ≥ 1, got {self.limit}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be ≥ 1, got {self.concurrency}")
        check_backend(self.backend, self.server)
        refuse_served(served=self.server is not None, deterministic=self.engine.deterministic)

    def engine_config(self) -> Any:
        """What `start_engine` starts for this run: the backend's config, or the EngineConfig for `vllm`."""
        return self.server if self.server is not None else self.engine

    def model_ref(self) -> str:
        """The local model (folder, hub id or `embedded`) whose tokenizer and shape this run uses."""
        if self.server is not None:  # a backend's config may name neither (a plugin's): the engine's model then
            return getattr(self.server, "tokenizer", None) or getattr(self.server, "model", None) or self.engine.model
        return self.engine.model

    @staticmethod
    def add_cli_args(p: argparse.ArgumentParser) -> None:
        """Declare the flags of every setting a spec holds (`ttscale run`'s, besides where the run goes and how it
        is shown); none has a default, so `from_cli_args` tells the flags given from the rest."""
        p.add_argument("--strategy", help="strategy name (see `ttscale list`)")
        p.add_argument("--budget", help="per-problem budget: 8k = 8,000 generated tokens (default 8k)")
        p.add_argument("--total-budget", help="a budget over the whole task (e.g. 200k), shared by its problems and "
                       "never exceeded; --budget still caps each problem (default: the total)")
        p.add_argument("--task", help=_task_help())
        p.add_argument("--model", help="embedded (default), a local HF model folder, or a hub id")
        p.add_argument("--limit", type=positive_int, help="only the first N problems")
        p.add_argument("--seed", type=int, help="engine sampling seed (default 0)")
        p.add_argument("--param", action="append", metavar="KEY=VALUE", help="strategy parameter (repeatable)")
        p.add_argument("--concurrency", type=positive_int, help="problems in flight at once (default 64)")
        p.add_argument("--hardware", help="hardware profile pricing FLOPs/eFLOPs (default B200; see `ttscale cost`)")
        add_data_dir_flag(p)
        add_task_option_flag(p)
        p.add_argument("--question-field", help="jsonl tasks: the field holding the question")
        p.add_argument("--answer-field", help="jsonl tasks: the field holding the reference answer")
        p.add_argument("--allow-unisolated-code", dest="allow_network", action="store_true", default=None,
                       help="code tasks: run model-written code even where the machine cannot cut its network off")
        add_engine_flags(p)
        add_backend_flags(p)

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace, base: RunSpec | None = None) -> RunSpec:
        """The spec of the flags `add_cli_args` declared: those given override `base` (a stored run's spec, on
        `--resume`; None = a new run's defaults, of `--strategy`). One-line `UsageError`s."""
        from ttscale.kit.params import parse_assignments

        if base is None and not getattr(args, "strategy", None):
            raise UsageError("run: --strategy is required (see `ttscale list`)")
        spec = _with_flags(cls(strategy=args.strategy) if base is None else base, args, new=base is None)
        try:
            return replace(spec, params={**spec.params, **parse_assignments(getattr(args, "param", None))})
        except ValueError as exc:
            raise UsageError(str(exc)) from None

    @classmethod
    def from_stored(cls, data: Any, where: Path | str) -> RunSpec:
        """The spec stored in config.json's `spec` (at `where`); a one-line UsageError naming the file and the field
        otherwise. Fields this version does not know are left out."""
        if not isinstance(data, dict):
            raise UsageError(f"run: {where}: spec is not a JSON object (got {type(data).__name__}); the file was "
                             "edited or not written by ttscale")
        for name in ("engine", "server"):
            if data.get(name) is not None and not isinstance(data[name], dict):
                raise UsageError(f"run: {where}: spec.{name} is not a JSON object (got {type(data[name]).__name__})")
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        engine = values.pop("engine", None) or {}
        server = values.pop("server", None)
        engine_known = {f.name for f in fields(EngineConfig)}
        try:
            if isinstance(server, dict):
                values["server"] = stored_server(str(values.get("backend", "vllm")), server)
            return cls(**values, engine=EngineConfig(**{k: v for k, v in engine.items() if k in engine_known}))
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise UsageError(f"run: {where}: spec cannot be read back: {exc}") from None


def stored_server(backend: str, data: dict[str, Any]) -> Any:
    """A backend's config read back from a stored spec (config.json, sweep.json): the fields its class knows."""
    options = ENGINES.get(backend).config
    if options is None:
        raise ValueError(f"backend {backend} takes no server")
    known = {f.name for f in fields(options)}
    return options(**{k: v for k, v in data.items() if k in known})


def _with_flags(spec: RunSpec, args: argparse.Namespace, *, new: bool) -> RunSpec:
    """`spec` with the flags the user actually gave on top."""
    given = {name: getattr(args, name) for name in _AS_GIVEN if getattr(args, name, None) is not None}
    if given.get("total_budget") is not None and getattr(args, "budget", None) is None and new:
        given["budget"] = given["total_budget"]  # no per-problem cap asked: a problem may use all of the total
    options = {**spec.task_options, **task_options(args, "run", **{
        name: getattr(args, name, None) for name in ("data_dir", "question_field", "answer_field", "allow_network")})}
    backend = getattr(args, "backend", None) or spec.backend
    try:
        served = ENGINES.get(backend).config is not None  # options of its own: not the in-process engine
    except KeyError as exc:  # a stored run of a plugin's backend that is not installed here
        raise UsageError(f"run: {exc}") from None
    args = argparse.Namespace(**vars(args), backend_options=backend_options(args, backend, "run"))
    engine_changes = engine_settings(args, "run")
    if served and "engine_args" in engine_changes:
        raise UsageError(f"run: --engine-arg applies to --backend vllm; a served model is configured where it is "
                         f"served (--backend {backend})")
    if getattr(args, "model", None) is not None and not served:
        engine_changes["model"] = args.model
    if getattr(args, "seed", None) is not None:
        engine_changes["seed"] = args.seed
    try:
        if served:  # the template is rendered here, with the served model's tokenizer
            engine_changes.pop("chat_template_kwargs", None)
        for name in ("engine_args", "chat_template_kwargs"):  # on resume: the stored ones, with the flags on top
            if name in engine_changes:
                engine_changes[name] = {**getattr(spec.engine, name), **engine_changes[name]}
        engine = replace(spec.engine, **engine_changes)
        stored = spec.server if backend == spec.backend else None
        server = ENGINES.get(backend).from_flags(args, stored, "run") if served else None
        if not served:
            vllm_only(args, "run")
        return replace(spec, **given, task_options=options, engine=engine, backend=backend, server=server)
    except ValueError as exc:
        raise UsageError(f"run: {exc}") from None



def _task_help() -> str:
    """`--task`'s help, from the task registry (plugins included): a list written by hand missed the code,
    stateful and HumanEval tasks."""
    from ttscale.evals import TASKS

    return f"task (default arithmetic): {', '.join(TASKS.names())}; NAME:ARG picks levels or a file, e.g. " \
        "arithmetic:1-3, jsonl:PATH, code_jsonl:PATH"

__all__ = ["RunSpec", "stored_server"]
