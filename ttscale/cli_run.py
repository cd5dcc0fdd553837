"""`ttscale run`, `ttscale list`, `ttscale prepare`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import fields, replace
from typing import Any

from ttscale.cli import UsageError
from ttscale.engine.base import EngineConfig
from ttscale.registry import UnknownNameError
from ttscale.runner import RunSpec, check_resume, default_out, execute, prepare, write_config
from ttscale.storage import RunDir

_ENGINE_FLAGS = {"max_model_len": int, "kv_cache_gib": float, "dtype": str, "gpu_memory_utilization": float}


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run a strategy over a task and write a run directory")
    p.add_argument("--strategy", help="strategy name (see `ttscale list`)")
    p.add_argument("--budget", help="per-problem budget: 8k = 8,000 generated tokens (default 8k)")
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
    p.add_argument("--question-field", help="jsonl tasks: the field holding the question")
    p.add_argument("--answer-field", help="jsonl tasks: the field holding the reference answer")
    for flag, kind in _ENGINE_FLAGS.items():
        p.add_argument(f"--{flag.replace('_', '-')}", dest=flag, type=kind, help=f"engine setting {flag}")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    p.set_defaults(func=cmd_run)


def register_list(sub: Any) -> None:
    p = sub.add_parser("list", help="list strategies and tasks")
    p.set_defaults(func=cmd_list)


def register_prepare(sub: Any) -> None:
    p = sub.add_parser("prepare", help="convert the embedded model into the user cache (done once)")
    p.set_defaults(func=cmd_prepare)


def build_spec(args: argparse.Namespace) -> tuple[RunSpec, RunDir, bool]:
    """The spec from flags; with --resume, from the stored run, flags given on top (and then compared)."""
    from ttscale.params import parse_assignments

    if args.resume:
        run_dir = RunDir(args.resume)
        stored = run_dir.read_config().get("spec") or {}
        base = _spec_from_dict(stored)
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
    from ttscale.engine import start_engine
    from ttscale.summary import format_table

    try:
        spec, run_dir, resuming = build_spec(args)
        prepared = prepare(spec)
        if resuming:
            check_resume(run_dir, prepared)
        elif run_dir.has_results():
            raise UsageError(
                f"{str(run_dir.path)!r} already holds a run: continue it with --resume, or pick another --out"
            )
    except (ValueError, UnknownNameError) as exc:
        raise UsageError(f"run: {exc}") from None

    async def main() -> dict[str, Any]:
        with run_dir.open_for_writing():
            engine = await start_engine(spec.engine)
            try:
                if not resuming:
                    write_config(run_dir, prepared, engine)
                return await execute(prepared, engine, run_dir, progress=not args.no_progress)
            finally:
                await engine.close()

    try:
        summary = asyncio.run(main())
    except ValueError as exc:  # run-directory problems found when taking the lock
        raise UsageError(str(exc)) from None
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    print(f"results: {run_dir.path}", file=sys.stderr)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from ttscale import STRATEGIES, TASKS

    print("strategies:")
    for name in STRATEGIES.names():
        print(f"  {name:<20} {_first_line(STRATEGIES, name)}")
    print("tasks:")
    for name in TASKS.names():
        print(f"  {name:<20} {_first_line(TASKS, name)}")
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    from ttscale.models import prepare_embedded

    print(prepare_embedded())
    return 0


def _first_line(registry: Any, name: str) -> str:
    try:
        obj = registry.get(name)
        doc = obj.__doc__ or sys.modules[obj.__module__].__doc__ or ""
    except Exception as exc:  # a broken plugin must not break `list`
        return f"(cannot load: {type(exc).__name__})"
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _with_flags(spec: RunSpec, args: argparse.Namespace) -> RunSpec:
    """Override the spec with the flags the user actually gave."""
    changes: dict[str, Any] = {}
    for name in ("strategy", "budget", "task", "limit", "seed", "concurrency", "hardware"):
        if getattr(args, name, None) is not None:
            changes[name] = getattr(args, name)
    task_options = dict(spec.task_options)
    for name in ("data_dir", "question_field", "answer_field"):
        if getattr(args, name, None) is not None:
            task_options[name] = getattr(args, name)
    engine_changes = {k: getattr(args, k) for k in _ENGINE_FLAGS if getattr(args, k, None) is not None}
    if args.model is not None:
        engine_changes["model"] = args.model
    if args.seed is not None:
        engine_changes["seed"] = args.seed
    try:
        engine = replace(spec.engine, **engine_changes)
        return replace(spec, **changes, task_options=task_options, engine=engine)
    except ValueError as exc:
        raise UsageError(f"run: {exc}") from None


def _spec_from_dict(data: dict[str, Any]) -> RunSpec:
    known = {f.name for f in fields(RunSpec)}
    values = {k: v for k, v in data.items() if k in known}
    engine = values.pop("engine", None) or {}
    engine_known = {f.name for f in fields(EngineConfig)}
    try:
        return RunSpec(**values, engine=EngineConfig(**{k: v for k, v in engine.items() if k in engine_known}))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"run: the stored config cannot be read back: {exc}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number ≥ 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1, got {value}")
    return value


__all__ = ["register", "register_list", "register_prepare"]
