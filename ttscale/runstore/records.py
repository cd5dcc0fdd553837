"""What the readers of run directories require of a record, and which records belong to a run.

`ttscale.runstore.runs` reads every run through these two rules, so report, fit, compare and `load_runs` agree:

- a record whose fields have the wrong type (a ledger that is a list, a token count that is NaN or a string, a
  verdict that is a string) is refused with one line naming the file, the problem and the field: a value a
  reader would silently turn into nonsense, or choke on with an internal exception, is an edited file;
- a record of a problem that is not among the run's problems (its task's first `limit`, as config.json's
  identity says) is left out, as summary.json leaves it out. Telling needs the task: the reader's caller hands
  over a `TaskLoader` (the run store sits below the tasks and never imports them; `ttscale.evals.load_task` is
  the one every reader above passes), and the task is loaded (once per process, loader and task) when that needs
  no network, and is the task the run asked (the same identity). Where it is not (no loader, a hub dataset, a
  task missing on this machine, a file changed since), every record is kept, as before this rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

TaskLoader = Callable[..., Any]
"""`load(spec, **options) -> task` (`ttscale.evals.load_task`): how a reader of runs gets a run's task, handed
over by the layer above (the run store never imports the tasks). A task has `problems()`, `config()` and
`grade(answer, problem)`, and may have `execute(answer, problem)` (a code task) and `path` (None: the hub's)."""

#: The largest magnitude a stored number may have (a larger one is an edited file).
LARGEST = 1e30
#: Ledger fields that count something: whole numbers ≥ 0.
_COUNTS = ("generated_tokens", "prompt_tokens", "cached_prompt_tokens", "calls", "samples", "cut_samples",
           "context_cut_samples", "capped_requests", "refused_requests", "reward_evaluations")
#: Ledger fields that measure something: finite numbers.
_AMOUNTS = ("budget", "spent", "flops", "eflops", "memory_bytes", "wall_seconds", "engine_seconds",
            "thinking_tokens", "answer_tokens")
#: `info` fields the scaling laws read as numbers (`ttscale.scaling.inputs`).
_INFO_NUMBERS = ("thinking_budget", "S", "V", "num_solutions", "n_solutions", "num_verifications",
                 "n_verifications")


def record_problem(record: Mapping[str, Any]) -> str | None:
    """What is wrong with one record for the readers, as `field …` (None: nothing)."""
    if not isinstance(record.get("id"), str | int) or isinstance(record.get("id"), bool):
        return f"id {_shown(record.get('id'))} it must be a string"
    for name, kinds, what in (("correct", bool, "true or false"), ("error", str, "a string"),
                              ("ledger", dict, "an object"), ("info", dict, "an object"),
                              ("samples", list, "a list"), ("level", int, "a whole number")):
        value = record.get(name)
        if value is not None and (not isinstance(value, kinds) or (kinds is int and isinstance(value, bool))):
            return f"{name} {_shown(value)} it must be {what} or null"
    ledger = record.get("ledger") or {}
    for key in _COUNTS:
        if key in ledger and not _whole(ledger[key]):
            return f"ledger.{key} {_shown(ledger[key])} it must be a whole number in [0, {LARGEST:g}]"
    for key in _AMOUNTS:
        if key in ledger and not _finite(ledger[key]):
            return f"ledger.{key} {_shown(ledger[key])} it must be a finite number of at most {LARGEST:g} in size"
    info = record.get("info") or {}
    for key in _INFO_NUMBERS:
        if key in info and not _finite(info[key]):
            return f"info.{key} {_shown(info[key])} it must be a finite number of at most {LARGEST:g} in size"
    for i, sample in enumerate(record.get("samples") or ()):
        if not isinstance(sample, dict):
            return f"samples[{i}] {_shown(sample)} it must be an object"
        if sample.get("correct") is not None and not isinstance(sample["correct"], bool):
            return f"samples[{i}].correct {_shown(sample['correct'])} it must be true, false or null"
    return None


def task_problem_ids(identity: Mapping[str, Any], *, tasks: TaskLoader | None) -> frozenset[str] | None:
    """The ids of the problems a run asked (config.json's `identity`), with its task loaded by `tasks`; None when
    there is no loader, this machine cannot tell without the network, or the task here is not the one the run
    asked (see the module doc)."""
    if tasks is None:
        return None
    task, limit = identity.get("task"), identity.get("limit")
    if not isinstance(task, dict) or not isinstance(task.get("spec"), str) or task.get("hub") is not None:
        return None  # copied results, an edited config, or a hub dataset (loading it may wait on the network)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        return None
    try:
        key = json.dumps(task, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return _problem_ids(tasks, key, limit)


@lru_cache(maxsize=32)
def _problem_ids(load_task: TaskLoader, task_identity: str, limit: int | None) -> frozenset[str] | None:
    stored = json.loads(task_identity)
    options = stored.get("options") or {}
    if not isinstance(options, dict):
        return None
    try:
        task = load_task(stored["spec"], **options)
        if getattr(task, "path", "") is None:  # here its problems would come from the hub (no local copy): no wait
            return None
        problems = task.problems()[:limit]
        here = json.loads(json.dumps({"spec": stored["spec"], "options": options, **task.config()}, default=str))
    except Exception:  # a task that does not load here (a file gone, a plugin not installed): keep every record
        return None
    return frozenset(str(p.id) for p in problems) if here == stored else None


def _whole(value: Any) -> bool:
    return _finite(value) and value >= 0 and float(value).is_integer()


def _finite(value: Any) -> bool:
    # Bounded: a 400-digit integer is no float (OverflowError), and 1e308 sums to infinity that no count converts
    # back from. 1e30 is far above any real ledger (a problem's FLOPs are ~1e12-1e18).
    # Python compares an int with a float exactly, and NaN or infinity is never ≤ LARGEST.
    return isinstance(value, int | float) and not isinstance(value, bool) and abs(value) <= LARGEST


def _shown(value: Any) -> str:
    """A value as the line shows it (JSON), cut short."""
    text = json.dumps(value, default=str)
    return f"is {text if len(text) <= 40 else text[:37] + '...'};"


__all__ = ["TaskLoader", "record_problem", "task_problem_ids"]
