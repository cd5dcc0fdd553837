"""One reader of run directories: what fit, report, compare and `ttscale.load_runs` all read a run through.

A run directory holds config.json (what ran: `identity` — strategy, params, task, budget, seed, engine — and
the environment), results.jsonl (one record per finished problem) and summary.json. Reading it:
- a torn last line (a run killed mid-write, or one still writing) is left out, as `--resume` leaves it, and
  said so (a `TornTailWarning` naming the file: one line on stderr from the CLI); a last record whole but for its
  newline is a record; a bad line with more after it is an error naming the line;
- errored problems (the strategy raised) are kept and counted: they are wrong answers, as in summary.json;
- records of problems not in the run's task are left out with a warning, as summary.json leaves them out, and a
  record with a field of the wrong type is refused in one line (see `ttscale.runstore.records`);
- config.json and every record are read in today's shape whatever format version wrote them, and a version
  newer than this code reads is refused in one line (`ttscale.runstore.runformat`);
- each sample's correctness is the task grader's verdict the run stored; a sample of a run written before samples
  were graded (its `correct` reads as None) is graded here with its own task's grader (exact match when that task
  cannot load on this machine, or no task loader was handed over);
- the tasks come from the caller: `read_run(s)(..., tasks=load_task)` (`TaskLoader`; every reader above the run
  store passes `ttscale.evals.load_task`), since the run store sits below the tasks and never imports them;
- the model label comes from config.json's `identity.engine.model`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from ttscale.runstore.records import TaskLoader, task_problem_ids
from ttscale.runstore.runfiles import StorageError, parse_json
from ttscale.runstore.runformat import migrate_config
from ttscale.runstore.storage import CONFIG, RESULTS, SUMMARY, RunDir, RunDirError

Grade = Callable[[Any, str], bool]


class RunLoadError(ValueError):
    """A path that is not a readable run directory (one line, for the CLI)."""


class ForeignRecordsWarning(UserWarning):
    """A run's results.jsonl holds records of problems that are not in its task: they were left out."""


class UnfinishedWarning(UserWarning):
    """A run's results.jsonl holds attempts a passing server fault cut short, with no finished record: left out."""


class TornTailWarning(UserWarning):
    """A run's results.jsonl ends in a torn line (a run cut off mid-write, or still writing): it was left out."""


@dataclass(frozen=True)
class RunData:
    """A run directory read back."""

    path: Path
    """The run directory."""
    label: str
    """A short name, unique among the runs read together (the folder name, with its parent's when two clash)."""
    config: dict[str, Any]
    """config.json in today's shape (`ttscale.runstore.runformat`; {} when absent: a directory of copied results)."""
    summary: dict[str, Any]
    """summary.json ({} when absent)."""
    records: list[dict[str, Any]]
    """Every finished problem, first record per id, errored ones included (each in today's shape)."""
    torn_tail: bool = False
    """Whether results.jsonl ends in a torn line (left out)."""
    foreign: int = 0
    """Records of problems not among the run's own (its task's first `limit`), left out as summary.json leaves
    them (0 when the task cannot be loaded here without the network: see `ttscale.runstore.records`)."""
    _grade: Grade | None = field(default=None, repr=False, compare=False)
    _tasks: TaskLoader | None = field(default=None, repr=False, compare=False)

    @property
    def identity(self) -> dict[str, Any]:
        identity = self.config.get("identity")
        return identity if isinstance(identity, dict) else {}

    @property
    def errored(self) -> list[dict[str, Any]]:
        """Records of problems whose strategy raised (counted as wrong)."""
        return [r for r in self.records if r.get("error")]

    @property
    def model(self) -> str:
        """The model that ran (a local folder by its last part), from config.json; '?' when it does not say."""
        engine = _object(self.identity.get("engine"))
        engine_env = _object(_object(self.config.get("environment")).get("engine"))
        model = str(engine.get("model") or engine_env.get("model_path") or "?")
        return Path(model).name if model.startswith(("/", "~", ".")) else model

    def sample_correct(self, sample: dict[str, Any], record: dict[str, Any]) -> bool:
        """A sample's correctness: the verdict the run stored, else its task grader's (see the module doc)."""
        if sample.get("correct") is not None:
            return bool(sample["correct"])
        return self._grader(sample.get("answer"), str(record.get("reference")))

    @cached_property
    def _grader(self) -> Grade:
        return self._grade or task_grader(self.identity, tasks=self._tasks)


def read_runs(paths: str | Path | Iterable[str | Path], *, tasks: TaskLoader | None = None) -> list[RunData]:
    """The runs named by `paths` (run directories, or folders searched for them), each once, labelled apart;
    `tasks` loads each run's task (see `read_run`)."""
    folders = find_runs(paths)
    labels = _labels(folders)
    return [read_run(folder, label=labels[folder], tasks=tasks) for folder in folders]


def read_run(path: str | Path, *, label: str | None = None, finished: bool = True,
             tasks: TaskLoader | None = None) -> RunData:
    """One run directory; RunLoadError (one line) when it is not one, or (`finished`) holds no finished problem.
    `tasks` loads the run's task (`ttscale.evals.load_task`), which tells its own problems from others and grades
    samples stored ungraded; without it every record is kept and such samples are graded by exact match."""
    folder = Path(path)
    if finished and not (folder / RESULTS).is_file():
        raise RunLoadError(f"{str(folder)!r} is not a run directory (no {RESULTS})")
    run_dir = RunDir(folder)
    try:
        records = run_dir.records()
        torn = run_dir.torn_tail()
        finished_ids = {str(r.get("id")) for r in records}
        unfinished = {str(r.get("id")) for r in run_dir.unfinished_attempts()} - finished_ids
    except RunDirError as exc:
        raise RunLoadError(str(exc)) from None
    except StorageError as exc:  # its text already says what could not be read, and why
        raise RunLoadError(exc.strerror) from None
    except OSError as exc:
        raise RunLoadError(f"cannot read {folder / RESULTS}: {exc.strerror}") from None
    if torn:  # fit, report, compare and load_runs all read through here: each says what it left out
        warnings.warn(f"{folder / RESULTS}: its torn last line was left out (a run cut off mid-write, or still "
                      "writing)", TornTailWarning, stacklevel=2)
    if unfinished:  # server faults outlived their retries: not answers, and `--resume` runs them again
        warnings.warn(f"{folder / RESULTS}: {len(unfinished)} problem{'s' if len(unfinished) > 1 else ''} a server "
                      f"fault left unfinished left out (ttscale run --resume {folder} runs them again)",
                      UnfinishedWarning, stacklevel=2)
    config = _read_config(folder / CONFIG)
    records, foreign = _belonging(records, config, tasks=tasks, where=folder / RESULTS)
    if finished and not records:
        raise RunLoadError(f"{str(folder)!r} holds no finished problem yet ({RESULTS} is empty)")
    return RunData(path=folder, label=label or folder.name, config=config, summary=_read_json(folder / SUMMARY),
                   records=records, torn_tail=torn, foreign=foreign, _tasks=tasks)


def _belonging(records: list[dict[str, Any]], config: dict[str, Any], *, tasks: TaskLoader | None,
               where: Path) -> tuple[list[dict[str, Any]], int]:
    """The records of the run's own problems (each checked as `RunDir` read it), and how many were left out."""
    identity = config.get("identity")
    wanted = task_problem_ids(identity, tasks=tasks) if isinstance(identity, dict) else None
    if wanted is None:
        return records, 0
    kept = [r for r in records if str(r["id"]) in wanted]
    foreign = len(records) - len(kept)
    if foreign:  # as summary.json counts the run: only the problems it asked
        warnings.warn(f"{where}: {foreign} record{'s' if foreign > 1 else ''} of problems not in the run's task "
                      "left out (as summary.json leaves them out)", ForeignRecordsWarning, stacklevel=3)
    return kept, foreign


def find_runs(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    """The run directories named by `paths` (each a run, or a folder holding runs), in order, once each."""
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    if not items:
        raise RunLoadError("no run directories given")
    found: list[Path] = []
    for item in items:
        path = Path(item)
        if (path / RESULTS).is_file():
            found.append(path)
        elif path.is_dir():
            inner = sorted(p.parent for p in path.rglob(RESULTS))
            if not inner:
                raise RunLoadError(f"{str(path)!r} holds no run (no {RESULTS} in it or below it)")
            found.extend(inner)
        else:
            raise RunLoadError(f"{str(path)!r} is not a run directory (no {RESULTS})")
    return list(dict.fromkeys(p.resolve() for p in found))


def grade_samples(
    task: Any, problem: Any, answers: Sequence[str | None], *, details: dict[str, Any] | None = None
) -> dict[str | None, bool]:
    """The task grader's verdict on each distinct answer (None, and an answer the grader chokes on, are wrong).

    A task that runs code (`execute(answer, problem)`: a code task's sandbox) is graded by the execution's
    `passed`, and each execution's detail (status, reason, seconds) goes into `details` under its answer.
    """
    verdicts: dict[str | None, bool] = {None: False}
    execute = getattr(task, "execute", None)
    for answer in answers:
        if answer not in verdicts:
            try:
                if execute is None:
                    verdicts[answer] = bool(task.grade(answer, problem))
                    continue
                execution = execute(answer, problem)
                verdicts[answer] = bool(execution.passed)
                if details is not None and answer is not None:
                    details[answer] = execution.to_dict()
            except Exception:  # hostile model output: wrong, never fatal to the run
                verdicts[answer] = False
    return verdicts


def task_grader(identity: dict[str, Any], *, tasks: TaskLoader | None) -> Grade:
    """grade(answer, reference) with the run's own task grader (its task loaded by `tasks`), cached; exact match
    if there is no loader or the task cannot load."""
    task_info = identity.get("task") or {}
    task = None
    if task_info.get("spec") and tasks is not None:
        try:
            task = tasks(str(task_info["spec"]), **(task_info.get("options") or {}))
        except Exception:  # a dataset absent on this machine: fall back rather than refuse to read
            task = None
    from ttscale.schema import Problem

    @lru_cache(maxsize=65536)
    def grade(answer: Any, reference: str) -> bool:
        if answer is None:
            return False
        if task is None:
            return str(answer).strip() == reference.strip()
        return bool(grade_samples(task, Problem(id="", question="", reference=reference), [str(answer)])[str(answer)])

    return grade


def _labels(folders: list[Path]) -> dict[Path, str]:
    """Short unique names: the folder name, with its parent's when two runs share a name."""
    names = [f.name for f in folders]
    out: dict[Path, str] = {}
    for folder in folders:
        label = folder.name if names.count(folder.name) == 1 else f"{folder.parent.name}/{folder.name}"
        while label in out.values():
            label += "'"
        out[folder] = label
    return out


def _object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else {} (a field edited into another type reads as absent)."""
    return value if isinstance(value, dict) else {}


def _read_config(path: Path) -> dict[str, Any]:
    """config.json in today's shape ({} when absent or not an object); RunLoadError for a version not read here."""
    data = _read_json(path)
    if not data:  # absent, not an object, or an empty one: nothing to read in any version
        return data
    try:
        return migrate_config(data, where=path)
    except RunDirError as exc:
        raise RunLoadError(str(exc)) from None


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = parse_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunLoadError(f"cannot read {path}: {exc}") from None
    return data if isinstance(data, dict) else {}
