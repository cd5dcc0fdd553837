"""The `ttscale` command line. Each subcommand lives in its own module and registers itself.

Bad input never shows a traceback: it prints one line on stderr and exits with code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ttscale.errors import Stopped, UsageError
from ttscale.messages import one_line

#: subcommand → "module:function" that adds its parser (imported lazily, so `--help` stays fast).
SUBCOMMANDS: dict[str, str] = {
    "run": "ttscale.cli.run:register",
    "list": "ttscale.cli.listing:register_list",
    "prepare": "ttscale.cli.run:register_prepare",
    "cost": "ttscale.cli.cost:register",
    "fit": "ttscale.cli.fit:register",
    "report": "ttscale.cli.report:register",
    "sweep": "ttscale.cli.sweep:register",
    "policy": "ttscale.cli.sweep:register_policy",
    "compare": "ttscale.cli.compare:register",
    "allocate": "ttscale.cli.allocate:register",
    "plan": "ttscale.cli.plan:register",
}

EXIT_USAGE = 2
#: OS errors the user fixes (a path they gave and cannot use; a full disk, a quota, a file size limit: free space and
#: `--resume`) exit 2; the rest exit 1.
_USER_FIXABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR, errno.EISDIR,
                           errno.ENOSPC, errno.EDQUOT, errno.EFBIG})




class _Parser(argparse.ArgumentParser):
    """argparse prints the usage block before its error; we print only the one line."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see --help)")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command's arguments, whole: the settings of its `--config FILE` (`run`, `sweep`) fill the flags not given,
    before the command's function sees them (`ttscale.cli.config`)."""
    args = build_parser().parse_args(argv)
    if getattr(args, "config", None):
        from ttscale.cli.config import apply_config_file

        apply_config_file(args, args.command)
    return args


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ttscale", description="Test-time compute scaling on vLLM, budget-matched.")
    parser.add_argument("--version", action="version", version=f"ttscale {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for target in SUBCOMMANDS.values():
        module_name, func = target.split(":")
        getattr(importlib.import_module(module_name), func)(sub)
    return parser


def _end_now(code: int) -> NoReturn:
    """End a stopped run's program once its output is out, skipping the interpreter's teardown.

    By then what the run finished is durable, its run directory closed and its engine's processes ended. What is
    left is garbage collection of vLLM's, torch's and pydantic's objects: about 5 s of the 10 s from SIGTERM to exit
    (py-spy: in `gc_collect_main`, on 2 cores), time that a scheduler's grace period counts, and finalizers of
    libraries that nothing here needs to run. The second stop ends the same way
    (`ttscale.running.signals.StopSignals`)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can reach it
            stream.flush()
    os._exit(code)


def _version() -> str:
    from ttscale.version import __version__

    return __version__


def _one_line_warnings(show: Callable[..., None]) -> Callable[..., None]:
    """ttscale's own warnings (a torn last line left out) as one line on stderr, as its errors are; the rest as
    Python shows them."""

    def shown(message: Any, category: type[Warning], *where: Any, **more: Any) -> None:
        if category.__module__.startswith("ttscale."):
            print(f"ttscale: warning: {one_line(message, limit=500)}", file=sys.stderr)
        else:
            show(message, category, *where, **more)

    return shown


def main(argv: Sequence[str] | None = None) -> int:
    from ttscale.budget import BudgetError
    from ttscale.engine.args import EngineArgError
    from ttscale.engine.models import ModelError
    from ttscale.registry import UnknownNameError

    try:
        args = parse_args(argv)
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(warnings.showwarning)
            code: int = args.func(args)
        return code
    except (UsageError, BudgetError, UnknownNameError, ModelError, EngineArgError) as exc:
        print(f"ttscale: error: {one_line(exc, limit=500)}", file=sys.stderr)
        return EXIT_USAGE
    except Stopped as exc:
        print(f"ttscale: {one_line(exc, limit=500)}", file=sys.stderr)
        if argv is None:  # the program itself (`ttscale`, `python -m ttscale.cli`), not a caller in this process
            _end_now(exc.code)
        return exc.code
    except KeyboardInterrupt:
        print(
            "ttscale: interrupted (finished problems are saved; continue with --resume DIR)", file=sys.stderr
        )
        return 130
    except OSError as exc:  # disk full, permission denied, read-only file system: the file and the reason
        reason = exc.strerror or str(exc)
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) not in reason else ""
        print(f"ttscale: error: {' '.join(reason.split())}{where}", file=sys.stderr)
        return EXIT_USAGE if exc.errno in _USER_FIXABLE else 1
    except Exception as exc:
        if os.environ.get("TTSCALE_DEBUG"):
            raise
        print(
            f"ttscale: error: {type(exc).__name__}: {one_line(exc, limit=500)} (set TTSCALE_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1

