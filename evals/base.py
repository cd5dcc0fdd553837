"""The task contract: where problems come from, how they are asked, how answers are graded."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

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

    def grade(self, prediction: str | None, problem: Problem) -> bool:
        """Whether `prediction` answers `problem` (bounded time, never evaluates the text)."""
        ...

    def config(self) -> dict[str, Any]:
        """What identifies this task's problems (stored in a run's config.json)."""
        ...


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
