"""Code tasks graded in the sandbox: canonical solutions pass, wrong and mutated ones fail.

HumanEval: all 164 canonical solutions and a mutant of each, through a thread pool of 2 over `sandbox.run` as the
runner's grading threads would; the counts and times are printed (`-s`).
"""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ttscale.evals.code import CodeTask, build_program
from ttscale.evals.code_data import code_jsonl, humaneval
from ttscale.evals.code_synthetic import SyntheticCodeTask
from ttscale.schema import Problem

sandbox = pytest.importorskip("ttscale.sandbox")
HUMANEVAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "humaneval" / "HumanEval.jsonl.gz"
needs_humaneval = pytest.mark.skipif(not HUMANEVAL.is_file(), reason=f"shared data not found at {HUMANEVAL}")


def usable(task: CodeTask) -> CodeTask:
    try:
        task.sandbox  # noqa: B018 - made here so that a machine without isolation skips, saying why
    except sandbox.SandboxUnavailable as exc:
        pytest.skip(str(exc))
    return task


def run_all(task: CodeTask, jobs: Sequence[tuple[str | None, Problem]]) -> list[Any]:
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda job: task.execute(*job), jobs))


def one_per_family() -> list[Problem]:
    firsts: dict[str, Problem] = {}
    for problem in SyntheticCodeTask(per_level=60).problems():
        firsts.setdefault(problem.meta["entry_point"], problem)
    return list(firsts.values())


def visible_answer(problem: Problem) -> str:
    """A body that returns the prompt's example output whatever the input: it fits what the model saw."""
    return f"    return {problem.question.split('>>> ')[1].splitlines()[1].strip()}"


def test_every_synthetic_family_passes_its_canonical_solution_and_fails_wrong_ones() -> None:
    task = usable(SyntheticCodeTask())
    problems = one_per_family()
    assert len(problems) >= 30
    jobs = [(p.reference, p) for p in problems] + [("    return None", p) for p in problems]
    jobs += [(visible_answer(p), p) for p in problems]
    results = run_all(task, jobs)
    n = len(problems)
    canonical, none, visible = results[:n], results[n : 2 * n], results[2 * n :]
    failed = [(p.meta["entry_point"], r.status, r.reason) for p, r in zip(problems, canonical, strict=True)]
    assert [f for f, r in zip(failed, canonical, strict=True) if not r.passed] == []
    assert not any(r.passed for r in none) and {r.status for r in none} == {"failed"}
    # The hidden tests hold cases the prompt does not show: echoing the visible example fails every problem.
    assert [p.meta["entry_point"] for p, r in zip(problems, visible, strict=True) if r.passed] == []


def test_whole_functions_and_bodies_from_model_text_both_grade() -> None:
    task = usable(SyntheticCodeTask("3", per_level=1))
    problem = task.problems()[0]
    body = problem.reference.split("\n", 1)[1]
    for text in (f"Sure!\n```python\n{problem.reference}```\nIt works.", f"```python\n{body}```", body):
        assert task.grade(task.extract(text), problem), text
    assert task.grade(None, problem) is False
    assert task.execute(None, problem).status == "failed"


@needs_humaneval
def test_a_whole_humaneval_function_gets_the_prompts_imports() -> None:
    task = usable(humaneval(str(HUMANEVAL)))
    problem = task.problems()[0]  # has_close_elements(numbers: List[float], ...) needs `from typing import List`
    signature = problem.question.split("\n")[3]
    assert signature.startswith("def has_close_elements(numbers: List[float]")
    text = f"Here it is:\n```python\n{signature}\n{problem.reference}```"
    assert task.extraction(text).rule == "fenced_python" and task.grade(task.extract(text), problem)


def test_a_looping_answer_times_out_and_the_config_names_the_sandbox() -> None:
    task = usable(SyntheticCodeTask("1", per_level=2, timeout=1.0))
    problem = task.problems()[0]
    started = time.perf_counter()
    execution = task.execute("    while True:\n        pass", problem)
    assert execution.status == "timeout" and not execution.passed and time.perf_counter() - started < 10
    config = task.config()
    assert config["name"] == "code" and config["levels"] == [1] and config["problems"] == 2
    assert config["sandbox"] == task.sandbox.config() and "isolation" in str(config["sandbox"])


LIAR = "class _Yes:\n    def __eq__(self, other):\n        return True\n\n\ndef add(a, b):\n    return _Yes()\n"


def test_code_jsonl_assert_lines_and_check_functions_run_guarded(tmp_path: Path) -> None:
    prompt = 'def add(a: int, b: int) -> int:\n    """Sum.\n    >>> add(1, 2)\n    3\n    """\n'
    rows = [{"id": "lines", "prompt": prompt, "entry_point": "add", "solution": "    return a + b\n",
             "tests": ["assert add(2, 2) == 4", "assert add(-1, 1) == 0"]},
            {"id": "check", "prompt": prompt, "entry_point": "add", "solution": "def add(a, b):\n    return a + b\n",
             "tests": "def check(candidate):\n    assert candidate(2, 2) == 4\n"}]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    task = usable(code_jsonl(str(path)))
    for problem in task.problems():
        assert task.grade(problem.reference, problem), problem.id
        assert not task.grade("    return a - b", problem)
        # An answer whose value claims to equal anything: the sandbox accepts only plain values from the function.
        lied = task.execute(LIAR, problem)
        assert lied.status == "failed" and "plain" in lied.reason, lied


# -- HumanEval ------------------------------------------------------------------------------------------------

#: Mutations that change behaviour, tried in this order on the first node of the solution that has one.
_FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv}


def mutate(problem: Problem) -> str:
    """The canonical solution (a whole function) with one off-by-one style change: a comparison flipped
    (`<` ↔ `<=`, `==` ↔ `!=`), else an integer constant + 1, else an arithmetic operator swapped."""
    module = ast.parse(build_program(prompt=problem.meta["prompt"], code=problem.reference,
                                     entry_point=problem.meta["entry_point"]))
    function = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == problem.meta["entry_point"])
    first = function.body[0]
    doc = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)
    nodes = [n for stmt in function.body[int(doc) :] for n in ast.walk(stmt)]
    for kind, change in ((ast.Compare, _flip), (ast.Constant, _plus_one), (ast.BinOp, _swap)):
        for node in nodes:
            if isinstance(node, kind) and change(node):
                return ast.unparse(function)
    function.body[int(doc) :] = [ast.Return(ast.Constant(None))]
    return ast.unparse(function)


def _flip(node: Any) -> bool:
    new = _FLIP.get(type(node.ops[0]))
    if new is not None:
        node.ops[0] = new()
    return new is not None


def _plus_one(node: Any) -> bool:
    ok = type(node.value) is int
    if ok:
        node.value += 1
    return ok


def _swap(node: Any) -> bool:
    new = _SWAP.get(type(node.op))
    if new is not None:
        node.op = new()
    return new is not None


def timed(task: CodeTask, jobs: Sequence[tuple[str | None, Problem]]) -> tuple[list[Any], float]:
    started = time.perf_counter()
    return run_all(task, jobs), time.perf_counter() - started


@needs_humaneval
def test_all_164_humaneval_canonical_solutions_pass_and_mutants_fail() -> None:
    # 164 + 164 runs take about 11 s on 2 busy cores (measured: canonical 4.7 s, mutated 6.2 s, of which the
    # HumanEval/44 mutant loops to the 3 s limit): fast enough to run unmarked. The 16 mutants that pass are
    # boundary flips (`<` → `<=`) or a constant + 1 at values HumanEval's tests never probe: HumanEval/25, 31, 32,
    # 35, 46, 59, 108, 111, 114, 116, 127, 128, 145, 146, 151 and 159.
    task = usable(humaneval(str(HUMANEVAL), timeout=3.0))  # HumanEval's own harness allows 3 s
    problems = task.problems()
    canonical, canonical_s = timed(task, [(p.reference, p) for p in problems])
    mutated, mutated_s = timed(task, [(mutate(p), p) for p in problems])
    # Every problem gets a mutated copy that fails: where the off-by-one mutant survives, a body that returns None.
    survivors = [p for p, r in zip(problems, mutated, strict=True) if r.passed]
    nothing, nothing_s = timed(task, [("    return None", p) for p in survivors])
    failures = [(p.id, r.status, r.reason) for p, r in zip(problems, canonical, strict=True) if not r.passed]
    counts = sum(r.passed for r in canonical), sum(not r.passed for r in mutated), sum(not r.passed for r in nothing)
    print(f"\nHumanEval: canonical {counts[0]}/164 pass ({canonical_s:.1f} s); mutated {counts[1]}/164 fail "
          f"({mutated_s:.1f} s); `return None` {counts[2]}/{len(survivors)} of the rest fail ({nothing_s:.1f} s)")
    assert failures == []
    assert counts[1] >= 145 and counts[2] == len(survivors)


def test_mutations_change_the_code() -> None:
    problem = SyntheticCodeTask("4", per_level=1).problems()[0]
    assert mutate(problem) != ast.unparse(ast.parse(problem.reference))


# Issue 59: answers that forged a pass while the tests ran in the candidate's process, each a whole module that also
# defines the function wrongly (it returns its first argument). Graded as `ttscale run --task code` grades them.
FORGERIES = {
    "secret_fd": "import os\nsecret = os.read(3, 64)\nflip = bytes(range(256)).translate(bytes(b ^ 0xA5 for b in "
                 "range(256)))\nos.write(4, b'\\x1eP' + secret.translate(flip))\nos._exit(0)\n",
    "deliver_through_gc": "import gc\nfor o in gc.get_objects():\n    if getattr(o, '__name__', '') in "
                          "('deliver', '_report'):\n        try:\n            o()\n        except Exception:\n"
                          "            pass\n",
    "check_code_swapped_by_a_thread": "import gc, threading\ncheck = None\nfor i in range(300000):\n"
                                      "    globals()[f'g{i}'] = i\ndef nothing(candidate):\n    pass\ndef swap():\n"
                                      "    while True:\n        for o in gc.get_objects():\n"
                                      "            if getattr(o, '__name__', '') == 'check':\n"
                                      "                o.__code__ = nothing.__code__\n"
                                      "threading.Thread(target=swap, daemon=True).start()\n",
    "patched_modules": "import os.path, math, builtins\nos.path.join = lambda *a: None\nmath.fabs = lambda x: 0.0\n"
                       "builtins.abs = lambda x: 0\n",
    "builtin_named_global": "def abs(x):\n    return 0\ndef len(x):\n    return 0\n",
}


@needs_humaneval
@pytest.mark.parametrize("attack", sorted(FORGERIES))
def test_answers_that_target_the_harness_forge_no_humaneval_pass(attack: str) -> None:
    task = usable(humaneval(str(HUMANEVAL), timeout=2.0))
    problems = task.problems()
    chosen = [problems[index] for index in (0, 2, 4, 32)]  # 2 and 4 test with abs(); 32 with the prompt's poly
    for problem in chosen:
        entry = problem.meta["entry_point"]
        args = problem.meta["prompt"].split(f"def {entry}(")[-1].split(")")[0]
        first = args.split(",")[0].split(":")[0].strip()
        wrong = f"{FORGERIES[attack]}\ndef {entry}({args}):\n    return {first}\n"
        assert not task.grade(wrong, problem), (attack, problem.id)
        assert task.grade(problem.reference, problem), problem.id


@needs_humaneval
def test_humaneval_32_is_checked_with_the_prompts_poly_not_the_answers() -> None:
    task = usable(humaneval(str(HUMANEVAL), timeout=3.0))
    problem = task.problems()[32]
    assert problem.meta["entry_point"] == "find_zero"
    forged = "import math\n\ndef poly(xs, x):\n    return 0.0\n\ndef find_zero(xs):\n    return 0.5\n"
    execution = task.execute(forged, problem)
    assert execution.status == "failed", execution
