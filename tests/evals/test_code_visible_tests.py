"""The `visible_tests` verifier: scores from the prompt's `>>>` examples only, never from the hidden tests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ttscale.evals.code import CodeTask
from ttscale.evals.code_data import humaneval
from ttscale.evals.code_synthetic import SyntheticCodeTask
from ttscale.schema import Problem
from ttscale.verifiers import VERIFIERS
from ttscale.verifiers.visible_tests import Example, VisibleTests, example_test, examples

HUMANEVAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "humaneval" / "HumanEval.jsonl.gz"
CANARY = ("LEAK", "CANARY", "7f3a9c")  # joined only in the hidden test, so a candidate's search never matches itself

PROMPT = '''import math


def helper(x):
    """>>> helper(1)
    99
    """
    return x


def area(r: float) -> float:
    """The area of a circle of radius r, rounded to 2 places.
    >>> area(1)
    3.14
    >>> round(area(2), 1)  # a comment
    12.6
    >>> xs = [area(0)]
    >>> for x in xs:
    ...     print(x)
    0.0
    >>> area(0.5)"""
'''


class Trap(dict):
    """Problem metadata whose hidden test explodes when anyone reads it."""

    def __getitem__(self, key: Any) -> Any:
        if key == "test":
            raise AssertionError("the verifier read the hidden tests")
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if key == "test":
            raise AssertionError("the verifier read the hidden tests")
        return super().get(key, default)


def Ctx(problem: Problem, task: Any) -> Any:  # a Context with no engine: the verifier runs no model
    from ttscale.budget import Budget, Ledger
    from ttscale.kit.context import Context

    return Context(problem=problem, task=task, engine=None, ledger=Ledger(Budget.parse("1k")))  # type: ignore[arg-type]


def test_examples_come_from_the_entry_points_docstring() -> None:
    found = examples(PROMPT, "area")
    assert found == [
        Example("area(1)", "3.14"),
        Example("round(area(2), 1)  # a comment", "12.6"),
        Example("xs = [area(0)]", ""),
        Example("for x in xs:\n    print(x)", "0.0"),
        Example("area(0.5)", ""),
    ]
    assert examples(PROMPT)[0] == Example("helper(1)", "99")
    assert examples("def f():\n    \"\"\"\n    >>> f() == 1\n    >>> x = f()\n    \"\"\"\n") == [
        Example("f() == 1", "True"), Example("x = f()", "")]  # a comparison without output wants True
    for i, example in enumerate(found):
        compile(example_test(example, [e for e in found[:i] if not e.want]), "<test>", "exec")


def test_humaneval_prompts_show_examples_in_76_problems() -> None:
    if not HUMANEVAL.is_file():
        pytest.skip(f"shared data not found at {HUMANEVAL}")
    problems = humaneval(str(HUMANEVAL)).problems()
    shown = [examples(p.question, p.meta["entry_point"]) for p in problems]
    assert sum(bool(s) for s in shown) == 76
    for found in shown:
        for example in found:
            compile(example_test(example), "<test>", "exec")


def test_registered_and_validated() -> None:
    assert VERIFIERS.get("visible_tests") is VisibleTests and VERIFIERS.get("doctests") is VisibleTests
    with pytest.raises(ValueError, match=r"unknown must be in \[0, 1\], got 2"):
        VisibleTests(unknown=2)
    with pytest.raises(ValueError, match="parallel must be ≥ 1, got 0"):
        VisibleTests(parallel=0)


# -- in the sandbox ----------------------------------------------------------------------------------------


def code_task() -> CodeTask:
    sandbox = pytest.importorskip("ttscale.sandbox")
    task = SyntheticCodeTask("1-5", per_level=1)
    try:
        task.sandbox  # noqa: B018 - made here so that a machine without isolation skips, saying why
    except sandbox.SandboxUnavailable as exc:
        pytest.skip(str(exc))
    return task


def score(verifier: VisibleTests, problem: Problem, task: Any, texts: list[str]) -> list[float]:
    return asyncio.run(verifier.score_outcomes(Ctx(problem, task), texts))


def test_scores_are_the_fraction_of_examples_passed() -> None:
    task = code_task()
    problem = Problem(id="p", question=PROMPT, reference="", meta=Trap(entry_point="area", test="assert False"))
    right = "```python\ndef area(r):\n    return round(math.pi * r * r, 2)\n```"
    third = "```python\ndef area(r):\n    return 3.14 if r == 1 else 1.0\n```"  # passes area(1) only
    scores = score(VisibleTests(), problem, task, [right, third, "no code at all"])
    assert scores == [1.0, pytest.approx(1 / 3), 0.0]
    no_examples = Problem(id="q", question="def f(x):\n    return x\n", reference="", meta=Trap(test="x"))
    assert score(VisibleTests(unknown=0.3), no_examples, task, ["```python\ndef f(x):\n    return 1\n```"]) == [0.3]
    steps = asyncio.run(VisibleTests().score_steps(Ctx(problem, task), [["Let me think.", right]]))
    assert steps == [[0.5, 1.0]]


def test_synthetic_canonical_solutions_score_one_and_echoing_the_example_fools_only_the_verifier() -> None:
    task = code_task()
    verifier = VisibleTests()
    for problem in task.problems():
        echo = f"    return {problem.question.split('>>> ')[1].splitlines()[1].strip()}"
        assert score(verifier, problem, task, [problem.reference, echo, "    return None"]) == [1.0, 1.0, 0.0]
        assert task.grade(problem.reference, problem) and not task.grade(echo, problem)


def test_humaneval_canonical_solutions_pass_their_visible_examples() -> None:
    if not HUMANEVAL.is_file():
        pytest.skip(f"shared data not found at {HUMANEVAL}")
    code_task()  # skips where the machine has no isolation
    task = humaneval(str(HUMANEVAL), timeout=3.0)
    problems = [p for p in task.problems() if examples(p.question, p.meta["entry_point"])]
    verifier = VisibleTests()

    async def all_scores() -> list[float]:
        return list(await asyncio.gather(*(verifier.score_code(p, p.reference, task=task) for p in problems)))

    scores = dict(zip([p.id for p in problems], asyncio.run(all_scores()), strict=True))
    # The two whose docstrings are wrong: HumanEval/47 shows median([-10, 4, 6, 1000, 10, 20]) as 15.0 (it is
    # 8.0); HumanEval/116's examples sort by value where its tests (and solution) sort by the count of ones, and
    # its third example lacks its `==`.
    assert {k: v for k, v in scores.items() if v != 1.0} == {"HumanEval/47": 0.5, "HumanEval/116": 0.0}


LEAK_HUNT = f'''
import gc, os, sys

def _hunt():
    # The canary is part of the hidden check(): any copy of the hidden tests holds it. Joined here at run time
    # only, so the candidate's own source never matches.
    marker = "{CANARY[0]}_" + "{CANARY[1]}_" + "{CANARY[2]}"
    texts = [repr(v) for v in list(globals().values())]
    texts += [repr(vars(m)) for m in list(sys.modules.values()) if hasattr(m, "__dict__")]
    texts += [repr(dict(os.environ)), repr(sys.argv), repr(sys.path), repr(sys.orig_argv)]
    frame = sys._getframe(1)  # the callers (this frame's own locals hold the marker)
    while frame is not None:
        texts.append(repr(frame.f_globals) + repr(frame.f_locals))
        frame = frame.f_back
    texts += [repr(o) for o in gc.get_objects() if isinstance(o, dict)][:50000]
    seen = 0
    for top in {{os.getcwd(), "/tmp", os.path.expanduser("~"), os.environ.get("TMPDIR", "/tmp")}}:
        for root, _, files in os.walk(top):
            for name in files:
                seen += 1
                if seen > 300:
                    break
                try:
                    with open(os.path.join(root, name), "rb") as handle:
                        texts.append(handle.read(200_000).decode("utf-8", "replace"))
                except OSError:
                    pass
    for path in ("/proc/self/cmdline", "/proc/self/environ", "/proc/1/cmdline", "/proc/1/environ"):
        try:
            with open(path, "rb") as handle:
                texts.append(handle.read().decode("utf-8", "replace"))
        except OSError:
            pass
    return [t for t in texts if marker in t]

_FOUND = _hunt()


def area(r):
    return round(3.141592653589793 * r * r, 2) if not _FOUND else -1.0
'''


def test_a_candidate_hunting_for_the_hidden_tests_finds_nothing() -> None:
    task = code_task()
    hidden = f"def check(candidate):\n    assert candidate(1) == 0, '{'_'.join(CANARY)}'\n"
    problem = Problem(id="p", question=PROMPT, reference="", meta=Trap(prompt=PROMPT, entry_point="area", test=hidden))
    # The hidden test fails this candidate (the grade reads meta, as only the task may) ...
    plain = dict(problem.meta.items())
    graded = Problem(id="p", question=PROMPT, reference="", meta=plain)
    assert not task.grade(f"```python\n{LEAK_HUNT}\n```", graded)
    # ... yet the verifier scores it 1.0: it passes every visible example, and found nothing to leak;
    # the control: with the canary planted where it looks (its own globals), the hunt finds it and scores 0.
    planted = f"_PLANTED = '{CANARY[0]}_' '{CANARY[1]}_' '{CANARY[2]}'\n{LEAK_HUNT}"
    scores = score(VisibleTests(), problem, task, [f"```python\n{LEAK_HUNT}\n```", f"```python\n{planted}\n```"])
    assert scores == [1.0, 0.0]


def test_best_of_n_with_the_verifier_meters_every_example_run_in_the_ledger() -> None:
    from ttscale.budget import Budget, Ledger
    from ttscale.kit.context import Context
    from ttscale.kit.params import parse_params
    from ttscale.strategies.best_of_n import BestOfNParams, best_of_n
    from ttscale.testing import SimulatedCodePolicy

    task = SyntheticCodeTask(levels=(1,), per_level=2)
    problem = task.problems()[0]
    ledger = Ledger(Budget.parse("2k"))
    ctx = Context(problem=problem, task=task, engine=SimulatedCodePolicy(task, seed=2, p_correct=0.5), ledger=ledger)
    params = parse_params(BestOfNParams, {"n": "4", "verifier": "visible_tests", "max_tokens": "256"})
    answer = asyncio.run(best_of_n(problem, ctx, params))
    distinct = {s.answer for s in answer.samples if s.answer}
    # One example is shown per synthetic prompt: one run per distinct program, each counted with its time.
    assert ledger.extra["executions"] == len(distinct) >= 2 and ledger.extra["execution_seconds"] > 0
    assert {s.score for s in answer.samples} == {0.0, 1.0}
    assert task.grade(answer.prediction, problem)  # the right program passes its example, the constants do not
