"""The task contract: where problems come from, how they are asked, how answers are graded."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ttscale.evals import TASKS
from ttscale.evals.extract import Extraction
from ttscale.schema import Problem

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


def extraction_of(task: Task, text: str) -> Extraction:
    """The task's answer in `text` with its rule; a plugin task that only has `extract` gets rule None."""
    method = getattr(task, "extraction", None)
    if method is not None:
        found: Extraction = method(text)
        return found
    return Extraction(task.extract(text), None)


def param_defaults(task: Task) -> dict[str, Any]:
    """Strategy parameters `task` suggests (an optional method: tasks without one suggest none)."""
    method = getattr(task, "param_defaults", None)
    return dict(method()) if method is not None else {}


def load_task(spec: str, **options: Any) -> Task:
    """Build a task from `name` or `name:argument` (e.g. `arithmetic:1-3`, `jsonl:PATH`) and keyword options."""
    name, _, arg = spec.partition(":")
    factory = TASKS.get(name)
    try:
        task: Task = factory(arg, **options) if arg else factory(**options)
    except TypeError as exc:  # an option this task does not take
        raise ValueError(f"task {name!r}: {exc}") from None
    return task
