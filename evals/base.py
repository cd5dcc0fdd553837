"""The task contract: where problems come from, how they are asked, how answers are graded."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, overload, runtime_checkable

from ttscale.answers.extract import Extraction
from ttscale.schema import Problem

Message = dict[str, str]


@runtime_checkable
class Task(Protocol):
    """A set of problems together with its prompt template, answer extraction and grader."""

    name: str

    def problems(self) -> Sequence[Problem]:
        """All problems, in a stable order (runs take the first `--limit`; a generated task may make them on
        demand, see `GeneratedProblems`)."""
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


class GeneratedProblems(Sequence[Problem]):
    """A generated task's problems, made in order on first use: `problems()[:limit]` makes `limit` of them.

    Generating every problem before taking the first `--limit` made `per_level=100000000` wait for ever before
    the run started (issue 43); a length is known without making any. Thread-safe; equal to any sequence of the
    same problems.
    """

    def __init__(self, count: int, generate: Callable[[], Iterator[Problem]]) -> None:
        self._count = count
        self._generate = generate
        self._source: Iterator[Problem] | None = None
        self._made: list[Problem] = []
        self._lock = threading.Lock()

    def _make(self, count: int) -> None:
        with self._lock:
            if self._source is None:
                self._source = self._generate()
                for _ in self._made:  # made before a copy was pickled (a Ray worker's): the same problems again
                    next(self._source)
            while len(self._made) < min(count, self._count):
                self._made.append(next(self._source))

    def __len__(self) -> int:
        return self._count

    def __getstate__(self) -> dict[str, Any]:
        # A task travels to Ray workers pickled: its half-read generator and its lock cannot, the problems made can.
        with self._lock:
            return {"count": self._count, "generate": self._generate, "made": list(self._made)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["count"], state["generate"])  # type: ignore[misc]
        self._made = state["made"]

    @overload
    def __getitem__(self, index: int) -> Problem: ...

    @overload
    def __getitem__(self, index: slice) -> list[Problem]: ...

    def __getitem__(self, index: int | slice) -> Problem | list[Problem]:
        if isinstance(index, slice):
            picked = range(self._count)[index]
            if picked:
                self._make(max(picked[0], picked[-1]) + 1)
            return [self._made[i] for i in picked]
        at = range(self._count)[index]  # IndexError as a list raises it
        self._make(at + 1)
        return self._made[at]

    def __iter__(self) -> Iterator[Problem]:
        for at in range(self._count):
            self._make(at + 1)
            yield self._made[at]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable cache, compared by value

    def __repr__(self) -> str:
        return f"GeneratedProblems({self._count} problems, {len(self._made)} made)"


def count_option(name: str, value: Any) -> int:
    """`value` as a count ≥ 1, else ValueError naming the option (a float, NaN or text is not a count)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer ≥ 1, got {value!r}")
    return value


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
