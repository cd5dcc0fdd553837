"""`ttscale run`, `ttscale list`, `ttscale prepare`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from ttscale.cli.config import (
    add_backend_flags,
    add_engine_flags,
    add_task_option_flag,
    engine_settings,
    server_settings,
    vllm_only,
)
from ttscale.cli.config import task_options as options_of
from ttscale.distributed import DistributedConfig, DistributedError
from ttscale.engine.base import EngineConfig, EngineFatalError
from ttscale.engine.openai import OpenAIConfig
from ttscale.errors import Stopped, UsageError
from ttscale.launch import launch
from ttscale.registry import UnknownNameError
from ttscale.runner import (
    Prepared,
    RunSpec,
    check_resume,
    default_out,
    prepare,
)
from ttscale.signals import StopSignals
from ttscale.storage import CONFIG, ENGINE_LOG, RunDir, StorageError

#: Ray settings (DistributedConfig fields besides workers and address).
_RAY_FLAGS = {
    "cpus_per_worker": (float, "CPUs Ray reserves for each worker (default 1)"),
    "gpus_per_worker": (float, "GPUs Ray reserves for each worker (default: the engine's GPUs on a GPU cluster)"),
}


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run a strategy over a task and write a run directory")
    p.add_argument("--strategy", help="strategy name (see `ttscale list`)")
    p.add_argument("--budget", help="per-problem budget: 8k = 8,000 generated tokens (default 8k)")
    p.add_argument("--total-budget", help="a budget over the whole task (e.g. 200k), shared by its problems and "
                   "never exceeded; --budget still caps each problem (default: the total)")
    p.add_argument("--task", help="task: arithmetic, arithmetic:1-3, gsm8k, math500, aime24, aime25, jsonl:PATH")
    p.add_argument("--model", help="embedded (default), a local HF model folder, or a hub id")
    p.add_argument("--limit", type=_positive_int, help="only the first N problems")
    p.add_argument("--seed", type=int, help="engine sampling seed (default 0)")
    p.add_argument("--out", help="run directory to write (default runs/<strategy>-<task>-<budget>-<time>)")
    p.add_argument("--resume", metavar="DIR", help="finish an interrupted run: only unfinished problems run")
    p.add_argument("--param", action="append", metavar="KEY=VALUE", help="strategy parameter (repeatable)")
    p.add_argument("--concurrency", type=_positive_int, help="problems in flight at once (default 64)")
    p.add_argument("--hardware", help="hardware profile pricing FLOPs/eFLOPs (default B200; see `ttscale cost`)")
    p.add_argument("--data-dir", help="folder with local copies of the datasets (<dir>/<task>/test.jsonl)")
    add_task_option_flag(p)
    p.add_argument("--question-field", help="jsonl tasks: the field holding the question")
    p.add_argument("--answer-field", help="jsonl tasks: the field holding the reference answer")
    p.add_argument("--allow-unisolated-code", dest="allow_network", action="store_true", default=None,
                   help="code tasks: run model-written code even where the machine cannot cut its network off")
    add_engine_flags(p)
    add_backend_flags(p)
    p.add_argument("--workers", type=int, help="spread problems over N Ray workers, one engine each")
    p.add_argument("--ray-address", help="run the workers on an existing Ray cluster (e.g. ray://host:10001)")
    for flag, (kind, text) in _RAY_FLAGS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind, help=text)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--verbose", action="store_true",
                   help="show the engine's own logs here instead of in the run directory's engine.log")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    p.set_defaults(func=cmd_run)


def register_prepare(sub: Any) -> None:
    p = sub.add_parser("prepare", help="convert the embedded model into the user cache (done once)")
    p.set_defaults(func=cmd_prepare)


def build_spec(args: argparse.Namespace) -> tuple[RunSpec, RunDir, bool]:
    """The spec from flags; with --resume, from the stored run, flags given on top (and then compared)."""
    from ttscale.params import parse_assignments

    if args.config:
        from ttscale.cli.config import apply_config_file

        apply_config_file(args)
    if args.resume:
        run_dir = RunDir(args.resume)
        stored = run_dir.read_config().get("spec") or {}
        base = _spec_from_dict(stored, where=run_dir.path / CONFIG)
    else:
        if not args.strategy:
            raise UsageError("run: --strategy is required (see `ttscale list`), or --resume DIR")
        base = RunSpec(strategy=args.strategy)
        run_dir = RunDir(args.out) if args.out else RunDir(default_out(_with_flags(base, args)))
    spec = _with_flags(base, args)
    try:
        spec = replace(spec, params={**spec.params, **parse_assignments(args.param)})
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.out and args.resume and args.out != args.resume:
        raise UsageError("run: give --resume DIR alone (the run continues in DIR), not with another --out")
    return spec, run_dir, bool(args.resume)


def cmd_run(args: argparse.Namespace) -> int:
    from ttscale.summary import format_table

    try:
        spec, run_dir, resuming = build_spec(args)
        distributed = _distributed(args, spec)
        # A resumed run keeps the parameters stored with it, whatever the task suggests today.
        prepared = prepare(spec, task_defaults=not resuming)
        if resuming:
            check_resume(run_dir, prepared)
        elif run_dir.has_results():
            raise UsageError(
                f"{str(run_dir.path)!r} already holds a run: continue it with --resume, or pick another --out"
            )
        else:  # never a run mixed into someone's files (a failed start would then clean up among them)
            run_dir.check_new()
    except (ValueError, UnknownNameError) as exc:
        raise UsageError(f"run: {exc}") from None
    except RecursionError:
        raise UsageError("run: an input file is nested too deeply to read") from None

    stop = StopSignals()
    try:
        summary = asyncio.run(_run(prepared, run_dir, resuming=resuming, distributed=distributed, args=args, stop=stop))
    except (KeyboardInterrupt, asyncio.CancelledError) as exc:
        # SIGINT or SIGTERM: the engine was shut down on the way out; end whatever it left behind.
        stop.note(exc)
        stop.end_children()
        raise Stopped(f"stopped by {stop.name or 'SIGINT'}{_saved_hint(run_dir)}", code=stop.exit_code) from None
    except ValueError as exc:  # a run directory that cannot be used (held by another run, edited by hand)
        raise UsageError(str(exc)) from None
    except (EngineFatalError, DistributedError) as exc:  # the server or the cluster gave out: say what is kept
        raise UsageError(f"{exc}{_saved_hint(run_dir)}") from None
    except StorageError as exc:  # disk full, permissions: say what is kept and how to go on
        raise StorageError(exc.errno, f"{exc.strerror}{_saved_hint(run_dir)}") from None
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    log = run_dir.path / ENGINE_LOG
    print(f"results: {run_dir.path}" + (f" (engine log: {log})" if log.is_file() else ""), file=sys.stderr)
    return _unfinished_exit(summary, run_dir)


#: Exit code of a run that ended with problems a passing server fault left unfinished (`--resume` retries them).
EXIT_UNFINISHED = 1


def _unfinished_exit(summary: dict[str, Any], run_dir: RunDir) -> int:
    """0, or `EXIT_UNFINISHED` with one line on stderr when some problems did not finish."""
    from ttscale.messages import one_line

    count = int(summary.get("unfinished") or 0)
    if not count:
        return 0
    example = (summary.get("unfinished_examples") or [{}])[0]
    print(f"ttscale: error: {count} problem{'s' * (count > 1)} did not finish (e.g. {example.get('id')}: "
          f"{one_line(example.get('error'), limit=300)}); retry them with: ttscale run --resume {run_dir.path}",
          file=sys.stderr)
    return EXIT_UNFINISHED


async def _run(
    prepared: Prepared,
    run_dir: RunDir,
    *,
    resuming: bool,
    distributed: DistributedConfig | None,
    args: argparse.Namespace,
    stop: StopSignals,
) -> dict[str, Any]:
    stop.install(asyncio.get_running_loop())
    return await launch(prepared, run_dir, resuming=resuming, distributed=distributed,
                        progress=not args.no_progress, log=not args.verbose)


def _saved_hint(run_dir: RunDir) -> str:
    try:
        saved = len(run_dir.records())
    except (OSError, ValueError):
        return ""
    return f"; {saved} finished problems are saved: continue with --resume {run_dir.path}" if saved else ""


def _distributed(args: argparse.Namespace, spec: RunSpec) -> DistributedConfig | None:
    """The Ray settings, when --workers or --ray-address asks for workers."""
    ray_flags = [f for f in _RAY_FLAGS if getattr(args, f, None) is not None]
    if spec.total_budget is not None and (args.workers is not None or args.ray_address is not None):
        raise UsageError("run: --total-budget needs one process (its pool ledger is in memory); drop --workers")
    if args.workers is None and args.ray_address is None:
        if ray_flags:
            raise UsageError(f"run: --{ray_flags[0].replace('_', '-')} applies with --workers or --ray-address")
        return None
    if spec.backend != "vllm":
        raise UsageError("run: --workers and --ray-address start vLLM engines; they do not apply to --backend openai")
    try:
        return DistributedConfig(
            workers=args.workers,
            address=args.ray_address,
            **{f: getattr(args, f) for f in ray_flags},
        )
    except ValueError as exc:
        raise UsageError(f"run: {exc}") from None


def cmd_prepare(args: argparse.Namespace) -> int:
    from ttscale.models import prepare_embedded

    print(prepare_embedded())
    return 0


def _with_flags(spec: RunSpec, args: argparse.Namespace) -> RunSpec:
    """Override the spec with the flags the user actually gave."""
    changes: dict[str, Any] = {}
    for name in ("strategy", "budget", "task", "limit", "seed", "concurrency", "hardware", "total_budget"):
        if getattr(args, name, None) is not None:
            changes[name] = getattr(args, name)
    if getattr(args, "total_budget", None) is not None and args.budget is None and not args.resume:
        changes["budget"] = args.total_budget  # no per-problem cap asked: a problem may use all of the total
    task_options = {**spec.task_options, **options_of(args, "run", **{
        name: getattr(args, name, None) for name in ("data_dir", "question_field", "answer_field", "allow_network")})}
    backend = args.backend or spec.backend
    engine_changes = engine_settings(args, "run")
    if backend == "openai" and "engine_args" in engine_changes:
        raise UsageError("run: --engine-arg applies to --backend vllm; a served model is configured where it is served")
    if args.model is not None and backend == "vllm":
        engine_changes["model"] = args.model
    if args.seed is not None:
        engine_changes["seed"] = args.seed
    try:
        if backend == "openai":  # the template is rendered here, with the served model's tokenizer
            engine_changes.pop("chat_template_kwargs", None)
        for name in ("engine_args", "chat_template_kwargs"):  # on resume: the stored ones, with the flags on top
            if name in engine_changes:
                engine_changes[name] = {**getattr(spec.engine, name), **engine_changes[name]}
        engine = replace(spec.engine, **engine_changes)
        server = server_settings(args, spec.server, "run") if backend == "openai" else None
        if backend == "vllm":
            vllm_only(args, "run")
        return replace(spec, **changes, task_options=task_options, engine=engine, backend=backend, server=server)
    except ValueError as exc:
        raise UsageError(f"run: {exc}") from None


def _spec_from_dict(data: Any, *, where: Path) -> RunSpec:
    """The RunSpec stored in config.json's `spec`; a one-line UsageError naming the file and the field otherwise."""
    if not isinstance(data, dict):
        raise UsageError(f"run: {where}: spec is not a JSON object (got {type(data).__name__}); the file was "
                         "edited or not written by ttscale")
    for name in ("engine", "server"):
        if data.get(name) is not None and not isinstance(data[name], dict):
            raise UsageError(f"run: {where}: spec.{name} is not a JSON object (got {type(data[name]).__name__})")
    known = {f.name for f in fields(RunSpec)}
    values = {k: v for k, v in data.items() if k in known}
    engine = values.pop("engine", None) or {}
    server = values.pop("server", None)
    engine_known = {f.name for f in fields(EngineConfig)}
    server_known = {f.name for f in fields(OpenAIConfig)}
    try:
        if isinstance(server, dict):
            values["server"] = OpenAIConfig(**{k: v for k, v in server.items() if k in server_known})
        return RunSpec(**values, engine=EngineConfig(**{k: v for k, v in engine.items() if k in engine_known}))
    except (TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"run: {where}: spec cannot be read back: {exc}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number ≥ 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {value}")
    return value


__all__ = ["register", "register_prepare"]
