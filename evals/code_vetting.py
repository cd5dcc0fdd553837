"""Hidden tests that can fail, by behaviour: a code file's tests are run against functions that must fail them.

The AST rule (`ttscale.evals.code.never_fails`) is the fast first pass: it refuses a test source in which no assert,
raise or assert…() call runs. It cannot see `assert f(2) == 4 or True`, an assert inside `if False:` or after a
`return`, `try: ... except AssertionError: pass`, or `assert callable(candidate)`; a test like these passes every
answer, and a benchmark made of them scores every strategy 100%. So, when a code file is loaded, each problem's
tests also run in the sandbox against three functions that must fail them (`MUST_FAIL`: one that returns None, one
that returns a fresh object, one that raises), and a problem whose tests pass any of them is refused, naming the
file and the problem.

A file's verdict is kept (a marker named by the hash of its problems' tests, prompts and entry points under the
cache directory, `$TTSCALE_CACHE` or the user cache), so a file is vetted once per machine: HumanEval's 164 problems
take about 9 s on 2 cores the first time.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ttscale.evals.code import build_program, tests_context
from ttscale.schema import Problem

if TYPE_CHECKING:
    from ttscale.evals.code import CodeTask
    from ttscale.sandbox import Execution, Sandbox

MUST_FAIL = (
    ("returns None", "return None"),
    ("returns a fresh object", "return object()"),
    ("raises an exception", "raise RuntimeError('a function that must fail the tests')"),
)
"""(what the function does, its body): every problem's tests must fail each of them."""
VETTING_VERSION = 1
"""Part of every file's key: a change to the candidates or the rule makes every file vetted again."""
_VETTED: set[str] = set()
_LOCK = threading.Lock()


def vet_tests(task: CodeTask, problems: Sequence[Problem], *, where: str) -> None:
    """Raise ValueError naming `where` and the first problem whose tests pass a function of `MUST_FAIL`.

    Skipped where the machine has no sandbox the task may use (grading says so, in one line, when it starts)."""
    from ttscale.engine.models import cache_dir
    from ttscale.sandbox import SandboxUnavailable

    key = _key(problems)
    marker = cache_dir() / "vetted-tests" / key
    with _LOCK:
        if key in _VETTED or marker.is_file():
            return
    try:
        sandbox = task.sandbox
    except SandboxUnavailable:
        return
    jobs = [(problem, what, body) for problem in problems for what, body in MUST_FAIL]
    with ThreadPoolExecutor(sandbox.max_parallel) as pool:
        results = list(pool.map(lambda job: _run(sandbox, *job), jobs))
    for (problem, what, _), execution in zip(jobs, results, strict=True):
        if execution.passed:
            raise ValueError(f"{where}: problem {problem.id!r}: its tests pass a function that {what}, so they can "
                             "never fail an answer (they must assert on what the function returns)")
    with _LOCK:
        _VETTED.add(key)
    try:  # best effort: a cache that cannot be written only means vetting again next time
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"problems": len(problems), "version": VETTING_VERSION}) + "\n")
    except OSError:
        pass


def _run(sandbox: Sandbox, problem: Problem, what: str, body: str) -> Execution:
    entry = problem.meta["entry_point"]
    program = build_program(prompt=problem.meta["prompt"], code=f"def {entry}(*args, **kwargs):\n    {body}\n",
                            entry_point=entry)
    return sandbox.run(program=program, test=problem.meta["test"], entry_point=entry, context=tests_context(problem))


def _key(problems: Sequence[Problem]) -> str:
    digest = hashlib.sha256(f"ttscale vetted tests {VETTING_VERSION}\n".encode())
    for problem in problems:
        fields = [problem.id, problem.meta["prompt"], problem.meta["entry_point"], problem.meta["test"]]
        digest.update(json.dumps(fields).encode() + b"\n")
    return digest.hexdigest()
