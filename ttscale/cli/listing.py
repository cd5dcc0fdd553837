"""`ttscale list`: the strategies, verifiers and tasks; `--params NAME` the parameters of one of them."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from typing import Any

from ttscale.errors import UsageError
from ttscale.evals import TASKS
from ttscale.strategies import STRATEGIES
from ttscale.verifiers import VERIFIERS


def register_list(sub: Any) -> None:
    p = sub.add_parser("list", help="list strategies, verifiers and tasks, or the parameters of one")
    p.add_argument("--params", metavar="NAME", help="a strategy's parameters (verifier:NAME for a verifier's): "
                   "type, default and what each does")
    p.add_argument("--task", help="with --params: also show what this task suggests (e.g. math500: max_tokens=2048)")
    p.add_argument("--budget", help="with --params --task: the per-problem budget that caps the "
                   "suggested max_tokens, answer_tokens and step_tokens (default 8k)")
    p.set_defaults(func=cmd_list)


def cmd_list(args: argparse.Namespace) -> int:
    if args.params:
        return _show_params(args)
    if args.task or args.budget:
        raise UsageError("list: --task and --budget apply with --params NAME")
    for title, registry in (("strategies", STRATEGIES), ("verifiers", VERIFIERS), ("tasks", TASKS)):
        print(f"{title}:")
        for name in registry.names():
            aliases = registry.aliases(name)  # README's `--strategy sc` must be findable here
            also = f" (also: {', '.join(aliases)})" if aliases else ""
            print(f"  {name:<20} {_first_line(registry, name)}{also}")
    print("parameters: ttscale list --params NAME (verifier:NAME for a verifier)")
    return 0


def _show_params(args: argparse.Namespace) -> int:
    from ttscale.kit.params import describe_params, params_class, task_defaults

    kind, _, name = args.params.rpartition(":")
    if kind not in ("", "strategy", "verifier"):
        raise UsageError(f"list: --params takes NAME, strategy:NAME or verifier:NAME, got {args.params!r}")
    registry = VERIFIERS if kind == "verifier" else STRATEGIES
    target = registry.get(name)  # an unknown name: one line with a did-you-mean
    cls = target if kind == "verifier" else params_class(target)
    if not dataclasses.is_dataclass(cls):
        print(f"{registry.canonical(name)}: no documented parameters")
        return 0
    suggested: dict[str, Any] = {}
    budget = args.budget or "8k"
    if args.budget and not args.task:
        raise UsageError("list: --budget applies with --params NAME --task TASK")
    if args.task:
        from ttscale.budget import Budget
        from ttscale.evals import load_task

        try:
            suggested = task_defaults(cls, task=load_task(args.task), budget=Budget.parse(budget))
        except ValueError as exc:  # a missing data file, a bad budget: one line, exit 2
            raise UsageError(f"list: {exc}") from None
    print(f"{registry.canonical(name)}: {_first_line(registry, name)}")
    for p in describe_params(cls):
        default = "required" if p.default is dataclasses.MISSING else repr(p.default)
        line = f"  {p.name} ({p.type}) = {default}"
        if p.name in suggested:
            line += f"; {args.task} at {budget}: {suggested[p.name]!r}"
        print(line)
        for text in textwrap.wrap(p.doc, width=100) or ["(undocumented)"]:
            print(f"      {text}")
    return 0


def _first_line(registry: Any, name: str) -> str:
    try:
        obj = registry.get(name)
        doc = obj.__doc__ or sys.modules[obj.__module__].__doc__ or ""
    except Exception as exc:  # a broken plugin must not break `list`
        return f"(cannot load: {type(exc).__name__})"
    return doc.strip().splitlines()[0] if doc.strip() else ""


__all__ = ["register_list"]
