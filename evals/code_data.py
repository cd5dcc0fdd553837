r"""Code benchmarks from files or the hub: `humaneval` and `code_jsonl:PATH`.

`humaneval` (OpenAI's 164 problems, Chen et al. 2021, arXiv:2107.03374) comes from, first match wins:

1. the task's argument, `humaneval:PATH` (a `.jsonl` / `.jsonl.gz` file, or a data directory);
2. `data_dir=` (the CLI's `--data-dir`), then the `TTSCALE_DATA_DIR` environment variable: the file is
   `<dir>/humaneval/HumanEval.jsonl.gz` (the file openai/human-eval ships: its data/HumanEval.jsonl.gz) or
   `<dir>/humaneval/test.jsonl`; a location that is not there is one error naming it as given;
3. the Hugging Face hub through `datasets.load_dataset("openai/openai_humaneval", split="test")`.

`code_jsonl:PATH` reads your own problems, one JSON object a line (`.jsonl`, or gzip-compressed `.jsonl.gz`).
One line of such a file, shown wrapped:

    {"id": "add-1",
     "prompt": "def add(a: int, b: int) -> int:\n    \"\"\"Sum of a and b.\n    >>> add(1, 2)\n    3\n    \"\"\"\n",
     "entry_point": "add",
     "tests": ["assert add(2, 2) == 4", "assert add(-1, 1) == 0"],
     "solution": "    return a + b\n"}

- `id` (string or integer, unique in the file): the problem's id in the results.
- `prompt` (string): what the model sees, the function's signature and docstring (imports and helper functions
  may come before it); it must define `entry_point`. Put examples the model may see in the docstring as
  `>>> call` / result lines (the `visible_tests` verifier runs those).
- `entry_point` (string): the name of the function to complete.
- `tests` (hidden from the model): either a test source that defines `check(candidate)`, which is called with
  the candidate's function (HumanEval's form), or a list of assert lines that call the function by its name.
  Either way the function must return plain builtin values (numbers, strings, bytes, None, and lists, tuples,
  dicts and sets of those): the sandbox refuses others, so that no answer can claim to equal anything.
- `solution` (optional string): a known correct answer, either a whole function or the body that completes the
  prompt; kept as the problem's reference.
- `level` (optional integer): a difficulty level, for per-level reports.

A file that is missing, empty or malformed (a bad JSON line, a missing field, a field of the wrong type, a
duplicate id, a test that is not valid Python, a test that can never fail: one that asserts nothing the harness
runs, see `ttscale.evals.code.never_fails`) raises `ValueError` with one line naming the file and the line. So does
a problem whose tests pass a function that returns None, returns a fresh object or raises: they are run against
those in the sandbox when the file is loaded (`ttscale.evals.code_vetting`).
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ttscale.evals.code import CodeTask, code_problem, defines_function, never_fails
from ttscale.evals.code_vetting import vet_tests
from ttscale.evals.datasets import DATA_DIR_ENV, local_file
from ttscale.evals.loading import read_jsonl
from ttscale.schema import Problem

HUMANEVAL_HUB = "openai/openai_humaneval"
"""The hub's copy of HumanEval (the name `openai_humaneval` redirects to it)."""
HUMANEVAL_FILES = ("HumanEval.jsonl.gz", "test.jsonl")
"""What a data directory's `humaneval/` folder may hold, first found wins."""
HUMANEVAL_OFFLINE = "; offline, the file is data/HumanEval.jsonl.gz of https://github.com/openai/human-eval"
"""Where HumanEval's file comes from, said wherever a local copy is missing."""

Rows = Iterable[tuple[str, dict[str, Any]]]


def _text(row: dict[str, Any], field: str, at: str, *, empty_ok: bool = False) -> str:
    if field not in row:
        raise ValueError(f"{at}: missing field {field!r} (fields: {', '.join(sorted(row)) or 'none'})")
    value = row[field]
    if not isinstance(value, str):
        raise ValueError(f"{at}: field {field!r} must be a string, got {type(value).__name__}")
    if not empty_ok and not value.strip():
        raise ValueError(f"{at}: field {field!r} is empty")
    return value


def _ident(row: dict[str, Any], field: str, at: str) -> str:
    if field not in row:
        raise ValueError(f"{at}: missing field {field!r} (fields: {', '.join(sorted(row)) or 'none'})")
    value = row[field]
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise ValueError(f"{at}: field {field!r} must be a non-empty string or an integer, got {value!r:.40}")
    return str(value)


def _entry_point(row: dict[str, Any], prompt: str, at: str) -> str:
    name = _text(row, "entry_point", at)
    if not name.isidentifier():
        raise ValueError(f"{at}: field 'entry_point' must be a function name, got {name!r:.40}")
    if not defines_function(prompt, name):
        raise ValueError(f"{at}: the prompt defines no function {name!r} (the entry_point)")
    return name


def _python(source: str, field: str, at: str) -> None:
    """Refuse a test that does not parse: every candidate would fail it, and nobody would know why."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        where = f"line {exc.lineno}: " if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise ValueError(f"{at}: field {field!r} is not valid Python ({where}{getattr(exc, 'msg', exc)})") from None


def _can_fail(source: str, field: str, at: str) -> None:
    """Refuse a test that can never fail: every candidate would pass it, `return -1` included."""
    why = never_fails(source)
    if why is not None:
        raise ValueError(f"{at}: field {field!r} can never fail, so every answer would pass: {why}")


def _tests(row: dict[str, Any], at: str) -> str:
    if "tests" not in row:
        raise ValueError(f"{at}: missing field 'tests' (fields: {', '.join(sorted(row)) or 'none'})")
    value = row["tests"]
    if isinstance(value, list) and value and all(isinstance(line, str) and line.strip() for line in value):
        source = "\n".join(line.strip() for line in value) + "\n"
    elif isinstance(value, str) and value.strip():
        source = value
    else:
        got = "an empty list" if value == [] else f"a {type(value).__name__}"
        if isinstance(value, list) and value:
            got = "a list with a non-string or empty line"
        raise ValueError(
            f"{at}: field 'tests' must be a test source defining check(candidate) or a list of assert lines, got {got}"
        )
    _python(source, "tests", at)
    _can_fail(source, "tests", at)
    return source


def _unique(ident: str, seen: set[str], at: str) -> None:
    if ident in seen:
        raise ValueError(f"{at}: duplicate id {ident!r}")
    seen.add(ident)


def humaneval_problems(rows: Rows, *, where: str) -> list[Problem]:
    """HumanEval rows (task_id, prompt, canonical_solution, test, entry_point) as validated problems."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for at, row in rows:
        ident = _ident(row, "task_id", at)
        prompt = _text(row, "prompt", at)
        test = _text(row, "test", at)
        _python(test, "test", at)
        _can_fail(test, "test", at)
        _unique(ident, seen, at)
        problems.append(
            code_problem(ident=ident, prompt=prompt, entry_point=_entry_point(row, prompt, at), test=test,
                         reference=_text(row, "canonical_solution", at, empty_ok=True))
        )
    if not problems:
        raise ValueError(f"{where}: no problems")
    return problems


def code_jsonl_problems(rows: Rows, *, where: str) -> list[Problem]:
    """Rows of the `code_jsonl` format (see the module docstring) as validated problems."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for at, row in rows:
        ident = _ident(row, "id", at)
        prompt = _text(row, "prompt", at)
        _python(prompt, "prompt", at)
        entry_point = _entry_point(row, prompt, at)
        test = _tests(row, at)
        solution = _text(row, "solution", at) if "solution" in row else ""
        level = row.get("level")
        if level is not None and (isinstance(level, bool) or not isinstance(level, int)):
            raise ValueError(f"{at}: field 'level' must be an integer, got {type(level).__name__}")
        _unique(ident, seen, at)
        problems.append(code_problem(ident=ident, prompt=prompt, entry_point=entry_point, test=test,
                                     reference=solution, level=level))
    if not problems:
        raise ValueError(f"{where}: no problems")
    return problems


class FileCodeTask(CodeTask):
    """A code benchmark read from a local file, or (HumanEval) from the hub when `path` is None."""

    def __init__(self, name: str, *, path: Path | None, allow_network: bool = False, timeout: float = 10.0) -> None:
        super().__init__(allow_network=allow_network, timeout=timeout)
        self.name = name
        self.path = path
        self._sha256: str | None = None

    def _load(self) -> list[Problem]:
        convert = code_jsonl_problems if self.name == "code_jsonl" else humaneval_problems
        where = str(self.path) if self.path is not None else HUMANEVAL_HUB
        problems = convert(read_jsonl(self.path) if self.path is not None else _hub_rows(), where=where)
        vet_tests(self, problems, where=where)  # tests that pass functions that must fail them are refused
        return problems

    def _source(self) -> dict[str, Any]:
        if self.path is None:
            return {"hub": HUMANEVAL_HUB, "split": "test"}
        if self._sha256 is None:
            self._sha256 = hashlib.sha256(self.path.read_bytes()).hexdigest()
        return {"path": str(self.path), "sha256": self._sha256}


def _hub_rows() -> Iterator[tuple[str, dict[str, Any]]]:
    where = f"{HUMANEVAL_HUB} (test split)"
    hint = ("or give a local copy (humaneval:PATH, or --data-dir with <dir>/humaneval/HumanEval.jsonl.gz)"
            + HUMANEVAL_OFFLINE)
    try:
        import datasets
    except ImportError as exc:
        raise ValueError(f"humaneval: loading from the hub needs `pip install datasets`, {hint}") from exc
    try:
        table = datasets.load_dataset(HUMANEVAL_HUB, split="test")
    except Exception as exc:  # offline, renamed, gated: say what to do instead
        message = " ".join(str(exc).split())[:200]
        raise ValueError(f"humaneval: could not load {where} ({type(exc).__name__}: {message}); {hint}") from exc
    return ((f"{where} row {i}", dict(row)) for i, row in enumerate(table))


def _local_file(source: str | None, data_dir: str | os.PathLike[str] | None) -> Path | None:
    """HumanEval's local file, or None to use the hub; a named location must hold one."""
    origins = (("argument", source), ("data_dir", data_dir), (DATA_DIR_ENV, os.environ.get(DATA_DIR_ENV)))
    return local_file("humaneval", origins, files=HUMANEVAL_FILES, hint=HUMANEVAL_OFFLINE)


# -- factories (registered in ttscale.TASKS) -----------------------------------------------------


def humaneval(
    source: str | None = None,
    /,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    allow_network: bool = False,
    timeout: float = 10.0,
) -> FileCodeTask:
    """HumanEval (164 problems): complete a function from its signature and docstring; hidden unit tests grade it.

    `timeout` is each test run's wall-clock limit in seconds; `allow_network` lets the tests reach the network
    (and runs where the machine cannot cut it off).
    """
    return FileCodeTask("humaneval", path=_local_file(source, data_dir), allow_network=allow_network, timeout=timeout)


def code_jsonl(
    path: str | None = None,
    /,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    allow_network: bool = False,
    timeout: float = 10.0,
) -> FileCodeTask:
    """Your own code problems, one JSON object a line: `code_jsonl:PATH` (the format is in the module docstring).

    `data_dir` is ignored (the path says where the file is); it is accepted so every task takes the same options.
    """
    del data_dir
    if not path:
        raise ValueError("the code_jsonl task needs a file: --task code_jsonl:PATH")
    file = Path(path).expanduser()
    if not file.is_file():
        raise ValueError(f"code_jsonl: no such file: {file}")
    return FileCodeTask("code_jsonl", path=file, allow_network=allow_network, timeout=timeout)
