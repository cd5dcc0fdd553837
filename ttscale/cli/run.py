"""`ttscale run`, `ttscale list`, `ttscale prepare`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from ttscale.engine.base import EngineFatalError
from ttscale.errors import Stopped, UsageError
from ttscale.pipeline import RunExists, SpecOver
from ttscale.registry import UnknownNameError
from ttscale.running.distributed import DistributedConfig, DistributedError
from ttscale.running.runner import RunSpec
from ttscale.running.signals import StopSignals
from ttscale.runstore.storage import ENGINE_LOG, RunDir, StorageError

#: Ray settings (DistributedConfig fields besides workers and address).
_RAY_FLAGS = {
    "cpus_per_worker": (float, "CPUs Ray reserves for each worker (default 1)"),
    "gpus_per_worker": (float, "GPUs Ray reserves for each worker (default: the engine's GPUs on a GPU cluster)"),
}


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run a strategy over a task and write a run directory")
    RunSpec.add_cli_args(p)  # every setting of the run's spec; the flags below say where it goes and how it shows
    p.add_argument("--out", help="run directory to write (default runs/<strategy>-<task>-<budget>-<time>)")
    p.add_argument("--resume", metavar="DIR", help="finish an interrupted run: only unfinished problems run")
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


def build_spec(args: argparse.Namespace) -> tuple[RunSpec | SpecOver, Path | None, bool]:
    """The spec of the flags (their `--config` file's settings filled in: `ttscale.cli.parse_args`), where the run
    goes (None: a new folder the pipeline names), and whether it is resumed. With --resume the spec is how the flags
    go over the stored run's (`SpecOver`): the run pipeline reads config.json once, and compares what it makes."""
    if args.resume:
        if args.out and args.out != args.resume:
            raise UsageError("run: give --resume DIR alone (the run continues in DIR), not with another --out")
        return _flags_over(args), Path(args.resume), True
    if not args.strategy:
        raise UsageError("run: --strategy is required (see `ttscale list`), or --resume DIR")
    return _flags_over(args)(None), Path(args.out) if args.out else None, False


def _flags_over(args: argparse.Namespace) -> SpecOver:
    """The spec of the flags given over `base` (the stored run's on --resume; None: a new run's defaults)."""
    def spec(base: RunSpec | None) -> RunSpec:
        made = RunSpec.from_cli_args(args, base=base)
        _check_workers(args, made)
        return made

    return spec


def cmd_run(args: argparse.Namespace) -> int:
    """Flags → RunSpec → the run pipeline (`ttscale.pipeline.carry_out`, which `ttscale.run` calls too); its errors
    as one line, its stop as a signal's."""
    from ttscale.pipeline import carry_out  # looked up when called
    from ttscale.runstore.summary import format_table, unfinished_note

    stop = StopSignals()
    out: Path | None = None  # the run's folder, once it has started

    def started(path: Path) -> None:  # inside the run's coroutine, once every check has passed
        nonlocal out
        out = path
        stop.hint = f"; continue with --resume {path}"
        stop.install(asyncio.get_running_loop())

    try:
        distributed = _distributed(args)
        spec, where, resuming = build_spec(args)
        # Each setting named, in the pipeline's order: the CLI hands over no engine (the run starts its own, or Ray's
        # workers do) and config.json records this process's sys.argv.
        done = carry_out(spec, out=where, engine=None, resume=resuming, distributed=distributed,
                         progress=not args.no_progress, verbose=args.verbose, argv=None, started=started)
    except BaseException as exc:
        said = _running_error(exc, out, stop) if out is not None else _checking_error(exc)
        if said is None:
            raise
        raise said from None
    finally:
        stop.restore()
    print(json.dumps(done.summary, indent=2) if args.json else format_table(done.summary))
    log = done.path / ENGINE_LOG
    print(f"results: {done.path}" + (f" (engine log: {log})" if log.is_file() else ""), file=sys.stderr)
    unfinished = unfinished_note(done.summary)
    if unfinished is None:
        return 0
    print(f"ttscale: error: {unfinished}; retry them with: ttscale run --resume {done.path}", file=sys.stderr)
    return EXIT_UNFINISHED


#: Exit code of a run that ended with problems a passing server fault left unfinished (`--resume` retries them).
EXIT_UNFINISHED = 1


def _checking_error(exc: BaseException) -> BaseException | None:
    """The one line for an error of the flags, the spec or the run directory, found before anything started."""
    if isinstance(exc, RunExists):
        return UsageError(str(exc))
    if isinstance(exc, ValueError | UnknownNameError):
        return UsageError(f"run: {exc}")
    if isinstance(exc, RecursionError):
        return UsageError("run: an input file is nested too deeply to read")
    return None


def _running_error(exc: BaseException, out: Path, stop: StopSignals) -> BaseException | None:
    """The one line for an error of a run under way, with what it saved and how to go on."""
    if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError):
        # SIGINT or SIGTERM: the engine was shut down on the way out; end whatever it left behind.
        stop.note(exc)
        stop.end_children()
        return Stopped(f"stopped by {stop.name or 'SIGINT'}{_saved_hint(out)}", code=stop.exit_code)
    if isinstance(exc, ValueError):  # a run directory that cannot be used (held by another run, edited by hand)
        return UsageError(str(exc))
    if isinstance(exc, EngineFatalError | DistributedError):  # the server or the cluster gave out: say what is kept
        return UsageError(f"{exc}{_saved_hint(out)}")
    if isinstance(exc, StorageError):  # disk full, permissions: say what is kept and how to go on
        return StorageError(exc.errno, f"{exc.strerror}{_saved_hint(out)}")
    return None


def _saved_hint(out: Path) -> str:
    try:
        saved = len(RunDir(out).records())
    except (OSError, ValueError):
        return ""
    return f"; {saved} finished problems are saved: continue with --resume {out}" if saved else ""


def _check_workers(args: argparse.Namespace, spec: RunSpec) -> None:
    """Refuse Ray workers for a spec they cannot run."""
    if args.workers is None and args.ray_address is None:
        return
    if spec.total_budget is not None:
        raise UsageError("run: --total-budget needs one process (its pool ledger is in memory); drop --workers")
    if spec.backend != "vllm":
        raise UsageError("run: --workers and --ray-address start vLLM engines; they do not apply to --backend "
                         f"{spec.backend}")


def _distributed(args: argparse.Namespace) -> DistributedConfig | None:
    """The Ray settings, when --workers or --ray-address asks for workers (the spec is checked by `_check_workers`)."""
    ray_flags = [f for f in _RAY_FLAGS if getattr(args, f, None) is not None]
    if args.workers is None and args.ray_address is None:
        if ray_flags:
            raise UsageError(f"run: --{ray_flags[0].replace('_', '-')} applies with --workers or --ray-address")
        return None
    try:
        return DistributedConfig(
            workers=args.workers,
            address=args.ray_address,
            **{f: getattr(args, f) for f in ray_flags},
        )
    except ValueError as exc:
        raise UsageError(f"run: {exc}") from None


def cmd_prepare(args: argparse.Namespace) -> int:
    from ttscale.engine.models import prepare_embedded

    print(prepare_embedded())
    return 0


__all__ = ["register", "register_prepare"]
