"""The task contract: where problems come from, how they are asked, how answers are graded."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ttscale.evals.extract import Extraction
from ttscale.types import Problem

Message = dict[str, str]


@runtime_checkable
class Task(Protocol):
    """A set of problems together with its prompt template, answer extraction and grader."""

    name: str

    def problems(self) -> list[Problem]:
        """All problems, in a stable order (runs take the first `--limit`)."""
        ...

    def messages(self, problem: Problem) -> list[Message]:
        """The chat messages that ask `problem` (the engine applies the model's chat template)."""
        ...

    def extract(self, text: str) -> str | None:
        """The final answer stated in a model's text, or None."""
        ...

    def extraction(self, text: str) -> Extraction:
        """`extract` with the name of the rule that found the answer (stored with every sample)."""
        ...

    def grade(self, prediction: str | None, problem: Problem) -> bool:
        """Whether `prediction` answers `problem` (bounded time, never evaluates the text)."""
        ...

    def config(self) -> dict[str, Any]:
        """What identifies this task's problems (stored in a run's config.json)."""
        ...


def param_defaults(task: Task, params_cls: type) -> dict[str, Any]:
    """The strategy parameters `task` sets by default (`param_defaults`, e.g. longer solutions for MATH), kept
    to the fields `params_cls` has; the user's own `--param` values override them."""
    import dataclasses

    wanted = dict(getattr(task, "param_defaults", None) or {})
    names = {f.name for f in dataclasses.fields(params_cls)} if dataclasses.is_dataclass(params_cls) else set()
    return {k: v for k, v in wanted.items() if k in names}


def extraction_of(task: Task, text: str) -> Extraction:
    """The task's answer in `text` with its rule; a plugin task that only has `extract` gets rule None."""
    method = getattr(task, "extraction", None)
    if method is not None:
        found: Extraction = method(text)
        return found
    return Extraction(task.extract(text), None)


def load_task(spec: str, **options: Any) -> Task:
    """Build a task from `name` or `name:argument` (e.g. `arithmetic:1-3`, `jsonl:PATH`) and keyword options."""
    from ttscale import TASKS

    name, _, arg = spec.partition(":")
    factory = TASKS.get(name)
    try:
        task: Task = factory(arg, **options) if arg else factory(**options)
    except TypeError as exc:  # an option this task does not take
        raise ValueError(f"task {name!r}: {exc}") from None
    return task
