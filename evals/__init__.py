"""Tasks, answer extraction and metrics (installed as `ttscale.evals`), and the task registry.

Built-in tasks are registered in `TASKS` by path (imported when chosen); a plugin registers a factory with
`@TASKS.register("name")` or under the `ttscale.tasks` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ttscale.registry import Registry

if TYPE_CHECKING:
    from ttscale.evals.base import Task

TASKS: Registry[Callable[..., Task]] = Registry("task", entry_point_group="ttscale.tasks")
"""Tasks: factories `(**options) -> Task` (see ttscale.evals.base)."""
TASKS.register("arithmetic", "ttscale.evals.arithmetic:ArithmeticTask", aliases=("arith",))
TASKS.register("gsm8k", "ttscale.evals.datasets:gsm8k")
TASKS.register("math500", "ttscale.evals.datasets:math500", aliases=("math_500", "math"))
TASKS.register("aime24", "ttscale.evals.datasets:aime24", aliases=("aime2024",))
TASKS.register("aime25", "ttscale.evals.datasets:aime25", aliases=("aime2025",))
TASKS.register("jsonl", "ttscale.evals.jsonl:jsonl_task")
TASKS.register("humaneval", "ttscale.evals.code_data:humaneval", aliases=("human_eval", "openai_humaneval"))
TASKS.register("code", "ttscale.evals.code_synthetic:SyntheticCodeTask", aliases=("synthetic_code",))
TASKS.register(
    "arithmetic_stateful", "ttscale.evals.stateful:StatefulArithmeticTask", aliases=("stateful_arithmetic",)
)
TASKS.register("gsm8k_stateful", "ttscale.evals.stateful:gsm8k_stateful", aliases=("stateful_gsm8k",))
TASKS.register("code_jsonl", "ttscale.evals.code_data:code_jsonl", aliases=("jsonl_code",))

#: Where `--data-dir DIR` (and `TTSCALE_DATA_DIR`) finds each downloadable task's problems, under DIR: the first
#: file its loader looks for. One source for `--data-dir`'s help and the docs (tests/evals/test_local_copies.py
#: loads a file put at each path); the loaders also take `DIR/test.jsonl` and HumanEval's `test.jsonl`.
LOCAL_COPIES: dict[str, str] = {
    "gsm8k": "gsm8k/test.jsonl",
    "math500": "math500/test.jsonl",
    "aime24": "aime24/test.jsonl",
    "aime25": "aime25/test.jsonl",
    "humaneval": "humaneval/HumanEval.jsonl.gz",
}

from ttscale.evals.base import Task  # noqa: E402 - after the registry (the task modules import the package)


def load_task(spec: str, **options: Any) -> Task:
    """Build a task from `name` or `name:argument` (e.g. `arithmetic:1-3`, `jsonl:PATH`) and keyword options.

    It lives beside the registry it reads: the task contract (`ttscale.evals.base`) imports nothing of this package.
    """
    name, _, arg = spec.partition(":")
    factory = TASKS.get(name)
    try:
        task: Task = factory(arg, **options) if arg else factory(**options)
    except TypeError as exc:  # an option this task does not take
        raise ValueError(f"task {name!r}: {exc}") from None
    return task


__all__ = ["LOCAL_COPIES", "TASKS", "Task", "load_task"]
