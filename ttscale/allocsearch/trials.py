"""Trials of an allocation search and their log on disk, resumable after a crash.

AgentTTS (2025) counts what a search costs in trials: each trial evaluates one allocation on the task, which is
the expensive part (a sweep cell's worth of generation), so a trial once evaluated is never paid for twice.
`TrialLog` keeps them in a directory: `search.json` (what is searched: the space, the proposer, its seed, the
trials asked) and `trials.jsonl`, one line per trial, flushed and fsynced before the search goes on, so a
`kill -9` loses at most the trial being written. Only newline-ended lines count: a torn last line is ignored
on read and cut on the next append. A bad line before the last is someone else's edit and is refused, never
cut. The log touches only the two files it creates (and a temporary file renamed onto `search.json`).
"""

from __future__ import annotations

import contextlib
import json
import math
import numbers
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ttscale.allocsearch.space import Allocation, Space, Value
from ttscale.runstore.names import SEARCH as HEADER
from ttscale.runstore.names import TRIALS as LINES
from ttscale.runstore.runfiles import append_line, open_regular, storage_error, whole_lines, write_atomic

FORMAT = 1
"""The version of `search.json` and `trials.jsonl`; a log of another version is refused."""


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """What evaluating one allocation measured: an accuracy with its interval, what it spent, over how many."""

    accuracy: float
    """The fraction of problems solved, in [0, 1]."""
    ci_low: float
    """Lower end of the accuracy's confidence interval."""
    ci_high: float
    """Upper end of the accuracy's confidence interval."""
    cost: float
    """What the evaluation spent per problem (tokens, FLOPs), as measured; ≥ 0."""
    n: int
    """The number of problems the accuracy is over."""

    def __post_init__(self) -> None:
        for name in ("accuracy", "ci_low", "ci_high", "cost"):
            object.__setattr__(self, name, _number(name, getattr(self, name)))
        if not 0 <= self.ci_low <= self.accuracy <= self.ci_high <= 1:
            raise ValueError(f"need 0 ≤ ci_low ≤ accuracy ≤ ci_high ≤ 1, got {self.ci_low!r}, {self.accuracy!r}, "
                             f"{self.ci_high!r}")
        if self.cost < 0:
            raise ValueError(f"cost must be ≥ 0, got {self.cost!r}")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"n must be ≥ 1, got {self.n!r}")


Evaluator = Callable[[Allocation], Awaitable[Evaluation]]
"""Evaluates one allocation on the task: the expensive step a search counts."""


@dataclass(frozen=True, kw_only=True)
class Trial:
    """One evaluated allocation of a search."""

    index: int
    """Its position in the search, from 0."""
    allocation: dict[str, Value]
    """The allocation, with the space's declared values, keys in dimension order."""
    accuracy: float
    """The evaluation's accuracy, in [0, 1]."""
    ci_low: float
    """Lower end of the accuracy's confidence interval."""
    ci_high: float
    """Upper end of the accuracy's confidence interval."""
    cost: float
    """What the evaluation spent (as measured, in the evaluator's unit)."""
    n: int
    """The number of problems the accuracy is over."""
    proposer: str
    """The name of the proposer that proposed it."""
    reasoning: str | None = None
    """The proposer's reason (an agent's words), or None."""
    wall_seconds: float = 0.0
    """Seconds from asking the proposer to the end of the evaluation."""
    invalid_proposals: int = 0
    """Malformed, invalid or duplicate proposals the proposer made before this one."""
    fallback: bool = False
    """Whether the allocation is the proposer's seeded random fallback, not its own choice."""

    def __post_init__(self) -> None:
        if isinstance(self.index, bool) or not isinstance(self.index, int) or self.index < 0:
            raise ValueError(f"index must be an int ≥ 0, got {self.index!r}")
        if not isinstance(self.allocation, Mapping) or not all(isinstance(k, str) for k in self.allocation):
            raise ValueError(f"allocation must be a mapping of names to values, got {self.allocation!r}")
        object.__setattr__(self, "allocation", dict(self.allocation))
        Evaluation(accuracy=self.accuracy, ci_low=self.ci_low, ci_high=self.ci_high, cost=self.cost, n=self.n)
        if isinstance(self.invalid_proposals, bool) or not isinstance(self.invalid_proposals, int) \
                or self.invalid_proposals < 0:
            raise ValueError(f"invalid_proposals must be an int ≥ 0, got {self.invalid_proposals!r}")
        if not isinstance(self.proposer, str) or not isinstance(self.fallback, bool):
            raise ValueError(f"proposer must be a string and fallback a bool, got {self.proposer!r}, {self.fallback!r}")
        if self.reasoning is not None and not isinstance(self.reasoning, str):
            raise ValueError(f"reasoning must be a string or None, got {type(self.reasoning).__name__}")
        _number("wall_seconds", self.wall_seconds)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trial:
        """A trial from `to_dict`'s output; unknown or missing keys and bad values raise ValueError."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a trial is a JSON object, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown trial key {unknown[0]!r}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(str(exc)) from None

    @classmethod
    def of(cls, *, index: int, allocation: Mapping[str, Value], evaluation: Evaluation, proposer: str,
           reasoning: str | None = None, wall_seconds: float = 0.0, invalid_proposals: int = 0,
           fallback: bool = False) -> Trial:
        """A trial from an evaluation."""
        return cls(index=index, allocation=dict(allocation), accuracy=evaluation.accuracy, ci_low=evaluation.ci_low,
                   ci_high=evaluation.ci_high, cost=evaluation.cost, n=evaluation.n, proposer=proposer,
                   reasoning=reasoning, wall_seconds=wall_seconds, invalid_proposals=invalid_proposals,
                   fallback=fallback)


def best_of(trials: Sequence[Trial]) -> Trial:
    """The best trial: highest accuracy; ties go to the lower cost, then to the earlier trial."""
    if not trials:
        raise ValueError("no trials: a search's best needs at least one")
    return min(trials, key=lambda t: (-t.accuracy, t.cost, t.index))


def header_of(*, space: Space, proposer: str, seed: int | None, trials: int) -> dict[str, Any]:
    """What `search.json` holds: the identity of a search (everything but `trials`) and the trials asked."""
    return {"format": FORMAT, "kind": "ttscale.allocsearch", "space": space.name,
            "dimensions": {d.name: list(d.values) for d in space.dimensions}, "total_budget": space.total_budget,
            "proposer": proposer, "seed": seed, "trials": trials}


class TrialLog:
    """A search's trials in a directory, appended as they finish; `open` starts a new log or resumes one."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @property
    def header_path(self) -> Path:
        return self.path / HEADER

    @property
    def lines_path(self) -> Path:
        return self.path / LINES

    def open(self, *, space: Space, proposer: str, seed: int | None, trials: int) -> list[Trial]:
        """Start a log in a new or empty directory, or resume the one there; return its completed trials.

        A log made for another space, proposer or seed is refused in one line (its trials would not be what
        this search would have proposed); a larger `trials` than stored is written back (a search extended).
        """
        wanted = header_of(space=space, proposer=proposer, seed=seed, trials=trials)
        if not self.header_path.exists():
            self._start(wanted)
            return []
        stored = self._read_header()
        for key in ("space", "dimensions", "total_budget", "proposer", "seed"):
            if stored.get(key) != wanted[key]:
                raise ValueError(f"cannot resume {self.path}: the log differs in {key}: stored "
                                 f"{json.dumps(stored.get(key))} vs now {json.dumps(wanted[key])}")
        if trials > int(stored.get("trials", 0)):
            self._write_header(wanted)
        return self.read()

    def read(self) -> list[Trial]:
        """The completed trials (newline-ended lines); a torn last line is left out."""
        out: list[Trial] = []
        for number, line in enumerate(whole_lines(self.lines_path), start=1):
            try:
                trial = Trial.from_dict(json.loads(line.decode("utf-8")))
            except (ValueError, UnicodeDecodeError) as exc:
                raise ValueError(f"line {number} of {self.lines_path} is not a trial: {exc}") from None
            if trial.index != len(out):
                raise ValueError(f"line {number} of {self.lines_path} is trial {trial.index}, expected {len(out)}")
            out.append(trial)
        return out

    def append(self, trial: Trial) -> None:
        """Append one trial and make it durable before returning (a torn last line is cut first)."""
        if not self.header_path.exists():
            raise ValueError(f"{self.path} is not a trial log yet: call open() first")
        line = json.dumps(trial.to_dict(), sort_keys=True, ensure_ascii=False, allow_nan=False)
        append_line(self.lines_path, line.encode("utf-8"))

    # -- internals --------------------------------------------------------------------------------------------

    def _start(self, header: dict[str, Any]) -> None:
        if self.path.exists() and not self.path.is_dir():
            raise ValueError(f"cannot start a trial log at {self.path}: it is not a directory")
        created = not self.path.exists()
        self.path.mkdir(parents=True, exist_ok=True)
        others = sorted(p.name for p in self.path.iterdir())
        if others:
            more = f" and {len(others) - 1} more" if len(others) > 1 else ""
            raise ValueError(f"cannot start a trial log in {self.path}: it holds {others[0]!r}{more} and no "
                             f"{HEADER}; a new log needs a new or empty directory")
        try:
            self._write_header(header)
        except OSError:
            if created:  # a failed start removes what it created, and only that
                with contextlib.suppress(OSError):
                    self.path.rmdir()
            raise

    def _read_header(self) -> dict[str, Any]:
        try:
            fd, _ = open_regular(self.header_path, os.O_RDONLY)
            with os.fdopen(fd, "rb") as handle:
                data = json.loads(handle.read().decode("utf-8"))
        except OSError as exc:
            raise storage_error(exc, self.header_path, "read") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read {self.header_path}: {exc}") from None
        if not isinstance(data, dict) or data.get("kind") != "ttscale.allocsearch":
            raise ValueError(f"{self.header_path} is not a ttscale allocation-search log")
        if data.get("format") != FORMAT:
            raise ValueError(f"{self.header_path} is format {data.get('format')!r}; this version reads {FORMAT}")
        return data

    def _write_header(self, header: dict[str, Any]) -> None:
        # Atomic: a reader sees the old header or the new one, never half of one.
        write_atomic(self.header_path, (json.dumps(header, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
                     .encode("utf-8"))


__all__ = ["FORMAT", "Evaluation", "Evaluator", "Trial", "TrialLog", "best_of", "header_of"]
