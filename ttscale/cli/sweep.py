"""`ttscale sweep` (a grid of runs, generated once per pool) and `ttscale policy` (a per-difficulty policy from one).

A thin adapter: the sweep is `ttscale.api.sweep` (which runs `ttscale.sweeps` and reads the results back with
`ttscale.sweeps.outcomes`), the policy is learned by `ttscale.sweeps.holdout.learn_from_sweep`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ttscale.api import sweep
from ttscale.budget import Budget
from ttscale.engine import ENGINES
from ttscale.engine.base import EngineConfig
from ttscale.errors import UsageError
from ttscale.routing.policy import LearnOptions
from ttscale.running.flags import (
    add_backend_flags,
    add_data_dir_flag,
    add_engine_flags,
    add_task_option_flag,
    backend_options,
    engine_settings,
    task_options,
    vllm_only,
)
from ttscale.sweeps import SWEEP
from ttscale.sweeps.holdout import SOURCES, learn_from_sweep


def register(sub: Any) -> None:
    p = sub.add_parser("sweep", help="run a grid of strategies × parameters × budgets × seeds over a task")
    p.add_argument(
        "--strategy",
        action="append",
        metavar="'NAME key=v1|v2 ...'",
        help="a strategy and the values of its parameters to sweep (repeatable)",
    )
    p.add_argument("--budgets", help="per-problem budgets, comma-separated: 256,512,1k")
    p.add_argument("--seeds", default="0", help="engine seeds, comma-separated (default 0)")
    p.add_argument("--task", help="task spec, as for `ttscale run` (default arithmetic)")
    p.add_argument("--limit", type=int, help="only the first N problems")
    p.add_argument("--model", help="embedded (default), a local HF model folder, or a hub id")
    p.add_argument("--out", help="sweep directory to write (default sweeps/<task>-<time>)")
    p.add_argument("--resume", metavar="DIR", help="finish an interrupted sweep")
    p.add_argument("--concurrency", type=int, help="problems in flight at once within a cell (default 64)")
    add_data_dir_flag(p)
    add_task_option_flag(p)
    p.add_argument("--no-subsample", action="store_true", help="run every budget directly (no generate-once)")
    p.add_argument("--holdout", type=int, default=0, metavar="N",
                   help="a held-out pool of N samples per problem for the policy's probe and pass@1 (default 0: none)")
    add_engine_flags(p)
    add_backend_flags(p)
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--verbose", action="store_true",
                   help="show the engine's own logs here instead of in the sweep directory's engine.log")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.set_defaults(func=cmd_sweep)


def register_policy(sub: Any) -> None:
    p = sub.add_parser("policy", help="learn a per-difficulty compute-optimal policy from a sweep")
    p.add_argument("--sweep", required=True, metavar="DIR", help="a finished sweep directory")
    p.add_argument("--out", help="policy JSON to write (default DIR/policy-<bins>.json)")
    p.add_argument(
        "--bins",
        choices=("predicted", "verifier", "oracle"),
        default="predicted",
        help="predicted: a fit of pass@1 on probe features; verifier: the probe's mean verifier score (both usable "
        "by --strategy adaptive); oracle: the true pass@1",
    )
    p.add_argument("--difficulty-from", choices=SOURCES, default="auto",
                   help="holdout: the sweep's held-out pool; pools: the candidates' own samples (leaky); auto: "
                   "holdout when the sweep has one (default)")
    p.add_argument("--n-bins", type=int, default=5, help="difficulty bins (default 5)")
    p.add_argument("--folds", type=int, default=2, help="cross-validation folds (default 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the fold assignment (default 0)")
    p.add_argument("--probe-n", type=int, default=4, help="probe samples per problem (default 4)")
    p.add_argument(
        "--probe-verifier",
        default="arithmetic",
        help="engine-free verifier of the probe's score feature, or none (default arithmetic)",
    )
    p.set_defaults(func=cmd_policy)


# -- reading a sweep ------------------------------------------------------------------------------


# -- commands -------------------------------------------------------------------------------------


def cmd_sweep(args: argparse.Namespace) -> int:
    # --resume DIR is the API's `out` alone; a new sweep's --out must not hold one (the API would finish it).
    from ttscale.engine.base import EngineFatalError
    from ttscale.runstore.runfiles import StorageError

    settings: dict[str, Any] = {}
    try:
        # ValueError: bad settings (an engine flag out of range included), a cell directory held by another
        # process, or one that differs from the grid
        settings = {"out": args.resume, **_served_again(args)} if args.resume else _settings_from_flags(args)
        result = sweep(**settings, progress=not args.no_progress, command=sys.argv, verbose=args.verbose)
    except (ValueError, KeyError) as exc:
        raise UsageError(f"sweep: {exc}") from None
    except (EngineFatalError, StorageError) as exc:
        # The server gave out (a model without log-probs, a fault past its retries) or the disk did: one line, with
        # how to go on, as `run` says it. Every finished problem of every cell is saved.
        hint = f"; finished problems are saved: continue with ttscale sweep --resume {settings.get('out') or 'DIR'}"
        if isinstance(exc, StorageError):
            raise StorageError(exc.errno, f"{exc.strerror}{hint}") from None
        raise UsageError(f"sweep: {exc}{hint}") from None
    table, matched, root = result.cells, result.matched, result.path
    if args.json:
        print(json.dumps({"cells": table, "matched_compute": matched}, indent=2))
    else:
        print(_format(table))
        if len({r["strategy"] for r in table}) > 1:
            print(format_matched(matched))
    print(f"sweep: {root}", file=sys.stderr)
    return 0


def cmd_policy(args: argparse.Namespace) -> int:
    from ttscale.outputs import OutputError, check_output, write_output

    verifier = None if args.probe_verifier.lower() == "none" else args.probe_verifier
    if args.out:
        try:  # the sweep's files are the policy's input: never written over
            check_output(args.out, inputs=[args.sweep], flag="--out")
        except OutputError as exc:
            raise UsageError(f"policy: {exc}") from None
    try:
        options = LearnOptions(bins=args.bins, n_bins=args.n_bins, folds=args.folds, seed=args.seed)
        policy = learn_from_sweep(args.sweep, options=options, probe_n=args.probe_n, probe_verifier=verifier,
                                  source=args.difficulty_from)
    except (ValueError, KeyError) as exc:
        raise UsageError(f"policy: {exc}") from None
    out = Path(args.out) if args.out else Path(args.sweep) / f"policy-{args.bins}.json"
    try:
        write_output(out, json.dumps(policy, indent=2) + "\n")
    except OSError as exc:
        raise UsageError(f"policy: cannot write {str(out)!r}: {exc.strerror or exc}") from None
    print(format_policy(policy))
    if policy.get("leakage"):
        print(f"policy: warning: {policy['leakage']}", file=sys.stderr)
    print(f"policy: {out}", file=sys.stderr)
    return 0


def format_policy(policy: Mapping[str, Any]) -> str:
    """The policy as a table: per bin, the choice at each budget and its accuracy; then held-out accuracy."""
    lines = [
        f"policy ({policy['bins']} bins, {policy['cross_validation']['folds']}-fold CV, "
        f"{policy.get('problems')} problems)"
    ]
    for k, entry in policy["policy"].items():
        lines.append(f"  bin {k}  ({entry['problems']} problems; probe alone {_pct(entry['probe_only_accuracy'])})")
        for b, rec in entry["budgets"].items():
            where = " (chosen over all problems: an empty bin)" if rec["chosen_over_all_problems"] else ""
            lines.append(f"    {b:>7}  {rec['choice']['candidate']:<58} acc {_pct(rec['accuracy'])}{where}")
    lines.append("  held-out accuracy    policy        best single candidate")
    for b, rec in policy["cross_validation"]["budgets"].items():
        pol, one = rec["policy"], rec["best_single_candidate"]
        lines.append(
            f"    {b:>7}  {_pct(pol['value'])} [{_pct(pol['ci95'][0])}, {_pct(pol['ci95'][1])}]"
            f"   {_pct(one['value'])} [{_pct(one['ci95'][0])}, {_pct(one['ci95'][1])}]"
        )
    agreement = policy["difficulty"].get("predicted_vs_oracle_heldout")
    if agreement:
        lines.append(
            f"  {policy['bins']} vs oracle bins (held out): exact {_pct(agreement['exact'])}, within one "
            f"{_pct(agreement['within_one'])}, spearman {agreement.get('spearman_score_vs_pass1', 'n/a')}"
        )
    saved = policy["cross_validation"].get("tokens_saved") or {}
    if saved.get("budgets"):
        bounds = {"exact": "", "at_most": " (upper bound)", "at_least": " (lower bound: never reached)"}
        lines.append(f"  P4, tokens saved at equal accuracy vs {saved['baseline']}:")
        for b, rec in saved["budgets"].items():
            low, high = (f"{x:.2f}" if x is not None else "unbounded" for x in rec["ci95"])
            lines.append(f"    {b:>7}  policy {_pct(rec['policy_accuracy'])} @ {rec['policy_tokens']:.0f} tokens, "
                         f"baseline @ {rec['baseline_tokens']:.0f}: {rec['ratio']}x [{low}, {high}]"
                         f"{bounds[rec['bound']]}")
    return "\n".join(lines)


def _format(table: list[dict[str, Any]]) -> str:
    lines = [f"{'candidate':<58} {'budget':>7} {'seed':>4} {'acc':>6} {'spent':>8}  source"]
    for r in sorted(table, key=lambda r: (r["candidate"], Budget.parse(r["budget"]).limit, r["seed"])):
        lines.append(
            f"{r['candidate']:<58} {r['budget']:>7} {r['seed']:>4} {_pct(r['accuracy']):>6} "
            f"{r['mean_spent']:>8.1f}  {_source(r)}"
        )
    return "\n".join(lines)


def _source(row: dict[str, Any]) -> str:
    """Where a cell's records came from: all replayed from its source, all run, or some of each."""
    derived = row.get("derived_problems", row["problems"] if row["derived_from"] else 0)
    if not derived:
        return "run"
    return "derived" if derived == row["problems"] else f"derived {derived} of {row['problems']}, run the rest"


def format_matched(matched: list[dict[str, Any]]) -> str:
    """Per compute level L (mean ledger tokens per problem), each strategy's best cell within L."""
    names = sorted({name for level in matched for name in level["best"]})
    lines = ["best at matched compute: ledger tokens per problem ≤ L; accuracy [95% CI] @tokens, parameters, budget"]
    lines.append(f"{'L':>8}  " + "  ".join(f"{n:<52}" for n in names))
    for level in matched:
        cols = []
        for name in names:
            b = level["best"].get(name)
            text = "—" if b is None else (
                f"{_pct(b['accuracy'])} [{_pct(b['ci95'][0])}, {_pct(b['ci95'][1])}] @{b['mean_tokens']:.0f} "
                f"{b['candidate'].removeprefix(name).strip()} b={b['budget']}"
            )
            cols.append(f"{text:<52}")
        lines.append(f"{level['tokens']:>8.1f}  " + "  ".join(cols))
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _served_again(args: argparse.Namespace) -> dict[str, Any]:
    """`--resume DIR` of a served model's sweep with its flags given again (`--base-url`: sweep.json masks a URL's
    secrets; a new address or key): the stored server with them on top, as `server=` (`ttscale.sweeps.grid.on_server`
    refuses another model). Nothing where none is given, or for engines in this process."""
    from ttscale.sweeps import load_spec

    stored = load_spec(args.resume)
    backend = ENGINES.get(stored.backend)
    if backend.config is None:
        return {}
    args = argparse.Namespace(**vars(args), backend_options=backend_options(args, stored.backend, "sweep"))
    server = backend.from_flags(args, stored.server, "sweep")
    return {} if server == stored.server else {"server": server}


def _settings_from_flags(args: argparse.Namespace) -> dict[str, Any]:
    """`ttscale.api.sweep`'s keyword arguments for a new sweep, from the flags (one-line errors)."""
    if not args.strategy or not args.budgets:
        raise UsageError("sweep: give at least one --strategy 'NAME key=v1|v2' and --budgets 256,512,...")
    if args.out and (Path(args.out) / SWEEP).exists():
        raise UsageError(f"sweep: {str(Path(args.out))!r} already holds a sweep: continue it with --resume, or pick "
                         "another --out")
    engine = engine_settings(args, "sweep")
    backend = ENGINES.get(args.backend or "vllm")
    args = argparse.Namespace(**vars(args), backend_options=backend_options(args, args.backend or "vllm", "sweep"))
    if backend.config is not None:  # options of its own (a served model's): not the in-process engine
        if "engine_args" in engine:
            raise UsageError("sweep: --engine-arg applies to --backend vllm; a served model is configured where it "
                             f"is served (--backend {args.backend})")
        server = backend.from_flags(args, None, "sweep")
        engine.pop("chat_template_kwargs", None)  # rendered here, with the served model's tokenizer
    else:
        vllm_only(args, "sweep")
        server = None
        if args.model:
            engine["model"] = args.model
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        raise UsageError(f"sweep: --seeds must be whole numbers separated by commas, got {args.seeds!r}") from None
    given = {k: getattr(args, k) for k in ("task", "limit", "concurrency", "holdout") if getattr(args, k) is not None}
    return {"strategies": args.strategy, "budgets": [b.strip() for b in args.budgets.split(",") if b.strip()],
            "seeds": seeds, "task_options": task_options(args, "sweep", data_dir=args.data_dir),
            "engine_config": replace(EngineConfig(), **engine), "server": server, "out": args.out,
            "subsample": not args.no_subsample, **given}


__all__ = ["register", "register_policy"]
