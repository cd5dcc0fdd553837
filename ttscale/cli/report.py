"""`ttscale report`: a budget-matched leaderboard of run directories, as Markdown or one HTML file.

ttscale report runs/sc runs/bon                       # Markdown on stdout
ttscale report runs/ --out report.html                # every run under runs/, one self-contained page
ttscale report runs/sc runs/bon --format md --out report.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ttscale.errors import UsageError

FORMATS = ("md", "html")


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "report",
        help="leaderboard with 95%% CIs and charts of run directories (Markdown or HTML)",
        description=(
            "Rank runs by accuracy within groups of matched budget, with 95% confidence intervals, the "
            "budget and spend in every unit, tokens and wall time, and a warning wherever compared runs are "
            "not budget-matched. HTML adds charts (accuracy vs budget, Pareto frontier vs eFLOPs, coverage) "
            "with fitted laws, in one file that needs no network."
        ),
    )
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run directories, or folders searched for them")
    parser.add_argument("--format", choices=FORMATS, help="md or html (default: from --out's suffix, else md)")
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")
    parser.add_argument("--title", default="ttscale report", help="the report's heading")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ttscale.outputs import OutputError, check_output, write_output

    fmt = args.format or _format_from(args.out)
    if args.out:
        try:  # before anything is read or written: a report never replaces what it reports on
            check_output(args.out, inputs=args.runs, flag="--out")
        except OutputError as exc:
            raise UsageError(f"report: {exc}") from None
    try:
        import pandas  # noqa: F401 - only to turn a missing dependency into a usage message
    except ImportError:
        raise UsageError("ttscale report needs pandas: pip install 'ttscale[report]'") from None
    from ttscale.api import report
    from ttscale.runstore.runs import RunLoadError, find_runs

    try:
        runs = len(find_runs(args.runs))
        text = report(args.runs, title=args.title, format=fmt)
    except RunLoadError as exc:
        raise UsageError(str(exc)) from None
    if args.out:
        out = Path(args.out)
        try:
            write_output(out, text)
        except OSError as exc:
            raise UsageError(f"cannot write {str(out)!r}: {exc.strerror or exc}") from None
        print(f"wrote {out} ({fmt}, {runs} runs)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _format_from(out: str | None) -> str:
    if out is None:
        return "md"
    suffix = Path(out).suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    if suffix in (".md", ".markdown", ".txt", ""):
        return "md"
    raise UsageError(f"cannot tell the format from {out!r}: give --format md or --format html")
