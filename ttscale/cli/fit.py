"""`ttscale fit`: fit a test-time scaling law with bootstrap confidence intervals.

ttscale fit --law coverage --points coverage.csv --json
ttscale fit --law saturation --form power runs/sc-*/ --plot saturation.png
ttscale fit --law kinetics --points frontier.csv
ttscale fit --law genrm --points grid.csv --lambda 1.0
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Sequence
from typing import Any

from ttscale.errors import UsageError


class _Laws(Sequence[str]):
    """`ttscale.scaling.laws.LAWS`, read when argparse first looks (help, or checking --law): importing the laws
    takes numpy and scipy (0.8 s), which no other command should pay for."""

    def _names(self) -> tuple[str, ...]:
        from ttscale.scaling.laws import LAWS

        return LAWS

    def __getitem__(self, index: Any) -> Any:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())


LAWS = _Laws()


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "fit",
        help="fit a scaling law (--law, see `ttscale fit --help`) with bootstrap CIs",
        description=(
            "Fit a test-time scaling law to run directories or to a CSV of points. CSV columns: "
            "coverage: k,coverage; saturation: budget,accuracy; kinetics: model,cost,accuracy; "
            "genrm: S,V,accuracy (with --lambda). An "
            "optional problem (kinetics: query) column makes the bootstrap resample problems instead of rows."
        ),
    )
    parser.add_argument("runs", nargs="*", metavar="RUN_DIR", help="run directories holding results.jsonl")
    parser.add_argument("--law", required=True, choices=LAWS, metavar="LAW", help="the law: %(choices)s")
    parser.add_argument(
        "--points", metavar="FILE.csv", help="a CSV of the law's variables instead of run directories"
    )
    parser.add_argument("--json", action="store_true", help="print parameters with CIs as one JSON object")
    parser.add_argument(
        "--plot", metavar="OUT.png", help="draw the data and the fitted law (needs matplotlib)"
    )
    parser.add_argument(
        "--n-boot", type=int, default=1000, metavar="B", help="bootstrap resamples (default 1000)"
    )
    parser.add_argument(
        "--level", type=float, default=0.95, help="confidence level of the intervals (default 0.95)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    parser.add_argument(
        "--form",
        choices=("ttspm", "power"),
        default="ttspm",
        help="saturation: TTSPM F_max·(1−(1−p)^N) (default) or A − B·C^(−alpha)",
    )
    parser.add_argument(
        "--mode",
        choices=("parallel", "sequential"),
        default="parallel",
        help="saturation (ttspm): what N counts",
    )
    parser.add_argument(
        "--epsilon", type=float, default=0.01, help="saturation: marginal gain threshold (default 0.01)"
    )
    parser.add_argument(
        "--x",
        choices=("budget", "spent", "samples", "thinking_budget", "thinking_tokens"),
        default="budget",
        help="saturation from runs: the ledger field used as the budget (sequential runs: thinking_budget, the "
        "budget_forcing parameter, or thinking_tokens, what was thought)",
    )
    parser.add_argument(
        "--scope",
        choices=("query", "dataset"),
        help="kinetics: per-query (default with query ids) or dataset-level frontier",
    )
    parser.add_argument(
        "--lambda",
        dest="lam",
        type=float,
        metavar="L",
        help="genrm: verification tokens per solution token (C = S·(1 + L·V))",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ttscale.scaling._resample import FitInputError

    if bool(args.runs) == bool(args.points):
        raise UsageError("give either run directories or --points FILE.csv (one of the two)")
    if args.law == "genrm" and args.lam is None:
        raise UsageError("--law genrm needs --lambda (verification tokens per solution token, e.g. 1.0)")
    if args.plot:
        from ttscale.outputs import OutputError, check_output

        try:  # checked before the fit: the plot is drawn last, and must never land on the data it plots
            check_output(args.plot, inputs=[*args.runs, *([args.points] if args.points else [])], flag="--plot")
        except OutputError as exc:
            raise UsageError(f"fit: {exc}") from None
    try:
        fit = _fit(args)
        text = json.dumps(fit.to_dict()) if args.json else _report(fit)
        if args.plot:
            _plot(fit, args.plot, law=args.law)
    except (FitInputError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # the plot's file (StorageError names it)
        raise UsageError(f"fit: cannot write {args.plot!r}: {exc}") from None
    print(text)
    return 0


def _fit(args: argparse.Namespace) -> Any:
    from ttscale.api import fit

    return fit(law=args.law, runs=args.runs or None, points=args.points, x=args.x, form=args.form, mode=args.mode,
               epsilon=args.epsilon, lam=args.lam, scope=args.scope, n_boot=args.n_boot, level=args.level,
               seed=args.seed)


def _report(fit: Any) -> str:
    pct = f"{100 * fit.level:g}%"
    lines = [
        f"law        {fit.law}: {fit.formula}",
        f"data       {fit.n_points} points from {fit.n_obs} observations; bootstrap over {fit.n_units} "
        f"{fit.resampled} ({fit.boot.shape[0]} resamples"
        + (f", {fit.n_failed} not fittable" if fit.n_failed else "")
        + ")",
    ]
    ci = fit.ci
    for name, value in fit.params.items():
        lines.append(f"{name:<10} {value:.6g}   {pct} CI [{_g(ci[name][0])}, {_g(ci[name][1])}]")
    for name, (value, low, high) in fit.derived.items():
        beyond = (
            f"   (beyond the largest measured N = {_g(fit.details['largest_N'])}: an extrapolation, not a finding)"
            if fit.details.get(f"{name}_extrapolated")
            else ""
        )
        lines.append(f"{name:<10} {_g(value)}   {pct} CI [{_g(low)}, {_g(high)}]{beyond}")
    lines.append(f"fit        R² {fit.r2:.5f}, RMSE {fit.rmse:.4g}")
    if fit.law == "coverage" and "forms" in fit.details:
        for form, values in fit.details["forms"].items():
            line = "log c" if form == "log" else "log(−log c)"
            better = "  ← better" if form == fit.details["better"] else ""
            lines.append(
                f"on {line:<12} a {values['a']:.4g}, b {values['b']:.4g}: R² {values['r2']:.5f}, "
                f"RMSE {values['rmse']:.4g}{better}"
            )
    if fit.law == "kinetics":
        lines.append(f"frontier   ({fit.details['scope']} level) cost range → model")
        for r in fit.details["owners"]:
            high = "∞" if r["high"] is None else f"{r['high']:.4g}"
            lines.append(f"           [{r['low']:.4g}, {high})  {r['model']}")
    if fit.law == "genrm":
        lines.append("optimal    budget C → S, V (accuracy)")
        for o in fit.details["optimal"][:30]:
            lines.append(f"           {o['budget']:.4g} → S={o['S']:g}, V={o['V']:g} ({o['accuracy']:.4f})")
    lines.extend(f"warning    {w}" for w in fit.warnings)
    lines.extend(f"read       {note}" for note in fit.details.get("read", ()))
    return "\n".join(lines)


def _g(value: float) -> str:
    return "nan" if not math.isfinite(value) else f"{value:.6g}"


def _plot(fit: Any, path: str, *, law: str) -> None:
    try:
        import matplotlib  # noqa: F401  (the charts import it where they draw)
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'ttscale[report]'") from None
    import io

    import numpy as np

    from ttscale.outputs import write_output
    from ttscale.reporting.charts import new_chart

    observed = fit.observed is not None and fit.observed[0].size
    log_x = bool(observed and fit.observed[0].min() > 0)
    figure, axis = new_chart(
        title=fit.formula, x_label=_X_LABELS[law], y_label=_Y_LABELS.get(law, "accuracy"),
        log_x=log_x, y_range=None, y_percent=False,
    )
    axis.title.set_fontsize(9)  # a formula, not a headline
    if observed:
        xs, ys = fit.observed
        label = {"genrm": "S_opt", "kinetics": "frontier"}.get(fit.law, "observed")
        axis.scatter(xs, ys, s=12, label=label, zorder=3)
        grid = np.geomspace(xs.min(), xs.max(), 200) if log_x else np.linspace(xs.min(), xs.max(), 200)
        mean, low, high = fit.predict(grid, interval=True)
        (curve,) = axis.plot(grid, mean, label="fit")
        axis.fill_between(grid, low, high, color=curve.get_color(), alpha=0.2, label=f"{100 * fit.level:g}% band")
        if fit.law == "genrm":
            points = fit.details["optimal"]
            axis.scatter([p["budget"] for p in points], [p["V"] for p in points], s=12, label="V_opt", zorder=3)
            axis.set_yscale("log")
    axis.legend(frameon=False)
    # Drawn into memory, then written as a new file renamed into place (never through another hard link's name).
    drawn = io.BytesIO()
    kind = os.path.splitext(path)[1].lstrip(".").lower() or None  # the format from the name (.png, .svg)
    figure.savefig(drawn, format=kind, dpi=120, bbox_inches="tight", facecolor="white")
    write_output(path, drawn.getvalue())


_X_LABELS = {"coverage": "samples k", "saturation": "budget", "kinetics": "cost", "genrm": "budget"}
_Y_LABELS = {"coverage": "coverage", "genrm": "optimal S and V"}
