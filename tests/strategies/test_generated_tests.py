"""generated_tests (CodeMonkeys / CodeT selection) on the SIMULATED code policy, with real sandboxed executions."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ttscale.budget import Budget, Ledger
from ttscale.context import Context
from ttscale.evals.code_synthetic import SyntheticCodeTask
from ttscale.params import parse_params
from ttscale.strategies.generated_tests import GeneratedTestsParams, generated_tests, parse_tests
from ttscale.testing import SimulatedCodePolicy

TASK = SyntheticCodeTask(levels=(1, 2, 3), per_level=4, timeout=5.0)


def _solve(policy: SimulatedCodePolicy, index: int, budget: str = "4k", **params: Any) -> tuple[Any, Ledger]:
    problem = TASK.problems()[index]
    ledger = Ledger(Budget.parse(budget))
    ctx = Context(problem=problem, task=TASK, engine=policy, ledger=ledger)
    given = {k: v for k, v in params.items() if v is not None}
    p = parse_params(GeneratedTestsParams, given)
    if "n" in params and params["n"] is None:
        p = replace(p, n=None)
    answer = asyncio.run(generated_tests(problem, ctx, p))
    return answer, ledger


def test_parse_tests_keeps_one_assert_per_line_about_the_entry_point_never_running_it() -> None:
    texts = [
        "```python\nassert f(1) == 2\nassert f(1) == 2\nassert g(1) == 2\nassert f(2) == 3; import os\n```",
        "assert f(3) ==\nassert (f(4) == 5)\nprint(f(5))\nassert __import__('os').system('x') or f(6) == 7",
    ]
    # The duplicate, another function, two statements on a line, a syntax error and a non-assert are dropped.
    assert parse_tests(texts, entry_point="f", limit=10) == [
        "assert f(1) == 2", "assert (f(4) == 5)", "assert __import__('os').system('x') or f(6) == 7"
    ]
    assert parse_tests(texts, entry_point="f", limit=1) == ["assert f(1) == 2"]
    assert parse_tests(["assert f(" + "(" * 5000 + ")" * 5000 + ") == 1"], entry_point="f", limit=3) == []


def test_the_candidate_the_generated_tests_favour_is_chosen_and_every_execution_is_metered() -> None:
    policy = SimulatedCodePolicy(TASK, seed=3, p_correct=0.4, p_wrong_test=0.0)
    answer, ledger = _solve(policy, 0, n="6")
    samples = answer.samples
    problem = TASK.problems()[0]
    passing = [TASK.grade(s.answer, problem) for s in samples]
    assert any(passing) and not all(passing), passing  # the seed gives both kinds
    assert TASK.grade(answer.prediction, problem)  # right tests: a right candidate wins
    tests = answer.info["tests"]
    assert tests >= 2 and ledger.extra["executions"] == len(samples) * tests
    assert ledger.extra["execution_seconds"] > 0 and ledger.spent <= 4000
    # Scores are the generated tests passed: all of them for the right candidates, fewer for the wrong.
    assert {s.score for s, ok in zip(samples, passing, strict=True) if ok} == {float(tests)}
    # The test-writing generations are the verifier's, apart from the 6 candidates (issue 49: "samples / problem"
    # read 10.0 for n=8: the candidates and the two test generations).
    record = ledger.to_dict()
    assert record["verifier"]["samples"] == GeneratedTestsParams().test_samples >= 1
    assert record["samples"] - record["verifier"]["samples"] == len(samples) == 6
    assert record["verifier"]["generated_tokens"] == record["tests_tokens"] > 0
    assert all(s.score is not None and s.score < tests for s, ok in zip(samples, passing, strict=True) if not ok)


def test_the_test_writer_sees_the_prompt_and_never_the_hidden_tests() -> None:
    policy = SimulatedCodePolicy(TASK, seed=1)
    _solve(policy, 1, n="2")
    hidden = TASK.problems()[1].meta["test"]
    assert len(policy.requests) == 2 and "test cases for the function" in policy.requests[0]
    assert all("def check" not in r and hidden.splitlines()[1].strip() not in r for r in policy.requests)


def test_selection_beats_one_sample_on_the_same_problems() -> None:
    # Paired over 12 problems: picking by generated tests (a fifth of them wrong) vs the first sample. With
    # P(right) = 0.35 per candidate, 5 candidates hold a right one on ~88% of problems, one sample on ~35%.
    chosen, first, reachable = 0, 0, 0
    for index, problem in enumerate(TASK.problems()):
        policy = SimulatedCodePolicy(TASK, seed=index, p_correct=0.35, p_wrong_test=0.2)
        answer, _ = _solve(policy, index, n="5", select="codet", max_tests="4")
        chosen += TASK.grade(answer.prediction, problem)
        first += TASK.grade(answer.samples[0].answer, problem)
        reachable += any(TASK.grade(s.answer, problem) for s in answer.samples)
    assert chosen >= first + 3 and chosen >= reachable - 2, (chosen, first, reachable)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(budget=st.integers(1, 3000), max_tokens=st.integers(1, 300), seed=st.integers(0, 1000),
       index=st.integers(0, 11))
def test_tests_and_candidates_share_one_budget_that_is_never_passed(
    budget: int, max_tokens: int, seed: int, index: int
) -> None:
    policy = SimulatedCodePolicy(TASK, seed=seed)
    answer, ledger = _solve(policy, index, budget=str(budget), n=None, max_tokens=str(max_tokens), max_tests="2")
    record = ledger.to_dict()
    assert record["spent"] <= budget and record["generated_tokens"] == policy.generated_tokens
    assert ledger.reserved == 0
    # The tests' tokens are metered apart, and the candidates got what the tests left.
    candidates = sum(s.num_tokens for s in answer.samples)
    assert record.get("tests_tokens", 0) + candidates == record["generated_tokens"]
    assert all(0 < s.num_tokens <= max_tokens for s in answer.samples)
    runnable = sum(s.answer is not None for s in answer.samples)
    assert record.get("executions", 0) == runnable * answer.info["tests"]


def test_a_math_task_is_refused_with_one_line() -> None:
    from ttscale.testing import SimulatedArithmeticPolicy, make_context

    ctx = make_context(SimulatedArithmeticPolicy(seed=0), "1k")
    with pytest.raises(ValueError, match="generated_tests needs a code task with an entry point"):
        asyncio.run(generated_tests(ctx.problem, ctx, GeneratedTestsParams()))


@pytest.mark.parametrize("task", ["arithmetic", "arithmetic_stateful:1"])
def test_a_task_that_is_not_code_is_refused_before_anything_starts(
    task: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 43, item 8: the run started, recorded every problem as an error and exited 0."""
    import ttscale
    from ttscale.cli import main
    from ttscale.testing import SimulatedArithmeticPolicy

    out = tmp_path / "run"
    policy = SimulatedArithmeticPolicy(seed=0)
    with pytest.raises(ValueError, match=r"generated_tests needs a code task with an entry point .*; problem '"):
        ttscale.run(strategy="generated_tests", budget="1k", limit=2, engine=policy, task=task, out=out)
    assert not out.exists() and policy.requests == []
    # The command line: one line, exit 2, before any engine starts (the embedded model is never loaded).
    assert main(["run", "--strategy", "generated_tests", "--task", task, "--limit", "2", "--out", str(out),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ttscale: error: run: generated_tests needs a code task") and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize(
    ("params", "message"),
    [({"max_tests": "0"}, "max_tests must be ≥ 1, got 0"),
     ({"temperature": "0", "test_samples": "2", "n": "1"}, "test_samples must be 1 at temperature 0")],
)
def test_parameters_are_validated(params: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_params(GeneratedTestsParams, params)
