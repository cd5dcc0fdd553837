"""generated_tests (CodeMonkeys / CodeT selection) on the SIMULATED code policy, with real sandboxed executions."""

from __future__ import annotations

import asyncio
import math
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ttscale.budget import Budget, Ledger
from ttscale.evals.code_synthetic import SyntheticCodeTask
from ttscale.kit.context import Context
from ttscale.kit.params import parse_params
from ttscale.strategies.generated_tests import (
    GeneratedTestsParams,
    codemonkeys_shortlist,
    generated_tests,
    needs_code,
    parse_tests,
    sample_tests,
    score_candidates,
    written_counts,
)
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
    # Scores are the generated tests passed, each as often as it was written (CodeMonkeys' votes): all of them for
    # the right candidates, fewer for the wrong.
    weights = answer.info["test_weights"]
    assert len(weights) == tests and all(w >= 1 for w in weights)
    assert {s.score for s, ok in zip(samples, passing, strict=True) if ok} == {float(sum(weights))}
    # The test-writing generations are the verifier's, apart from the 6 candidates (issue 49: "samples / problem"
    # read 10.0 for n=8: the candidates and the two test generations).
    record = ledger.to_dict()
    assert record["verifier"]["samples"] == GeneratedTestsParams().test_samples >= 1
    assert record["samples"] - record["verifier"]["samples"] == len(samples) == 6
    assert record["verifier"]["generated_tokens"] == record["tests_tokens"] > 0
    assert all(s.score is not None and s.score < sum(weights) for s, ok in zip(samples, passing, strict=True) if not ok)


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
     ({"tests_per_sample": "0"}, "tests_per_sample must be ≥ 1, got 0"),
     ({"shortlist": "0"}, "shortlist must be ≥ 1, got 0"),
     ({"select": "codeT"}, "parameter select must be one of 'codemonkeys', 'tests_passed', 'codet', 'codet_paper'"),
     ({"temperature": "0", "test_samples": "2", "n": "1"}, "test_samples must be 1 at temperature 0")],
)
def test_parameters_are_validated(params: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_params(GeneratedTestsParams, params)


# --- Issue 44, item 2: the references' selection rules on hand-made pass matrices -------------------------------
# The problem is `multiply(a, b)` (TASK's first). Generated tests and candidate programs are scripted, every
# execution is real (the sandbox); the pass matrix below is what the programs do on the tests, by hand.
T1, T2, T3 = "assert multiply(1, 1) == 1", "assert multiply(2, 1) == 2", "assert multiply(3, 3) == 9"
NONE_PASS = [f"assert multiply(0, {b}) == 5" for b in range(3)]  # no program here passes these
REFERENCE = TASK.problems()[0].reference  # a * b: right on the hidden tests
C1 = "def multiply(a, b):\n    return a if b == 1 else 0\n"  # [1, 1, 0] on T1-T3
C2 = "def multiply(a: int, b: int) -> int:\n    return a * b if b < 2 else -1\n"  # [1, 1, 0], other code
C4 = "def multiply(a, b):\n    return None\n"  # [0, 0, 0]
ONLY_T3 = "def multiply(a, b):\n    return a * b if a == 3 else 0\n"  # [0, 0, 1]


class ScriptedCode(SimulatedCodePolicy):
    """The simulator with its writing scripted: each test-writing sample is the next of `tests` (assert lines), each
    candidate the next of `programs`; judging stays the simulator's (Yes for the reference solution)."""

    def __init__(self, tests: list[list[str]], programs: list[str]) -> None:
        super().__init__(TASK, seed=0)
        self.tests, self.programs, self.given = tests, programs, {"tests": 0, "programs": 0}

    def _next(self, kind: str, items: list[Any]) -> Any:
        item = items[self.given[kind] % len(items)]
        self.given[kind] += 1
        return item

    def _tests(self, problem: Any) -> str:
        return "```python\n" + "\n".join(self._next("tests", self.tests)) + "\n```"

    def _solution(self, problem: Any) -> str:
        return f"Here is the function.\n\n```python\n{self._next('programs', self.programs)}```"

    def judged(self) -> int:
        return sum("Answer Yes or No." in r for r in self.requests)


def _scripted(tests: list[list[str]], programs: list[str], **params: Any) -> tuple[Any, ScriptedCode]:
    policy = ScriptedCode(tests, programs)
    answer, _ = _solve(policy, 0, budget="20k", n=str(len(programs)), test_samples=str(len(tests)), **params)
    return answer, policy


def test_codet_follows_its_reference_code_and_the_papers_formula_is_codet_paper() -> None:
    # Pass matrix c1 [1,1,0], c2 [1,1,0], c3 [1,1,1], c4 [0,0,0]. The paper's |set| · |tests|: c1 = c2 = 2 · 2 = 4,
    # c3 = 1 · 3 = 3, c4 = 0 → c1. CodeT's DualAgreement: c4 passes nothing and is dropped; {c1, c2}: 2 · √2 = 2.83,
    # {c3}: 3 · √1 = 3 → c3 (ours before, select=codet: c1).
    programs = [C1, C2, REFERENCE, C4]
    answer, _ = _scripted([[T1, T2, T3]], programs, select="codet")
    assert [s.score for s in answer.samples] == [pytest.approx(2 * math.sqrt(2))] * 2 + [3.0, None]
    assert answer.prediction == REFERENCE.strip() and answer.info["select"] == "codet"
    answer, _ = _scripted([[T1, T2, T3]], programs, select="codet_paper")
    assert [s.score for s in answer.samples] == [4.0, 4.0, 3.0, 0.0] and answer.prediction == C1.strip()


def test_codet_counts_a_test_as_often_as_written_among_the_first_five_of_each_sample() -> None:
    # Three test-writing samples: the first writes T1, T2, three tests nobody passes, then T3 (its 6th); the other
    # two write T3. c1, c2 pass T1 and T2; c3 passes only T3. CodeT (first 5 of each sample): T3 counts 2 →
    # {c1, c2}: (1 + 1) · √2 = 2.83 > {c3}: 2 · 1 → c1. With 6 a sample, T3 counts 3 → {c3}: 3 > 2.83 → c3.
    tests = [[T1, T2, *NONE_PASS, T3], [T3], [T3]]
    programs = [C1, C2, ONLY_T3]
    answer, _ = _scripted(tests, programs, select="codet")
    assert answer.info["tests"] == 6 and answer.prediction == C1.strip()
    assert [s.score for s in answer.samples] == [pytest.approx(2 * math.sqrt(2))] * 2 + [2.0]
    answer, _ = _scripted(tests, programs, select="codet", tests_per_sample="6")
    assert answer.prediction == ONLY_T3.strip() and answer.samples[2].score == 3.0
    # The counts themselves (a parse, nothing run): the first five lines of each sample only.
    texts = ["\n".join(t) for t in tests]
    kept = parse_tests(texts, entry_point="multiply", limit=8, per_sample=5)
    assert kept == [T1, T2, *NONE_PASS, T3]
    assert written_counts(texts, kept, entry_point="multiply", per_sample=5) == [1, 1, 1, 1, 1, 2]


# Votes [3, 2, 2, 0]: a wrong generated test (T3 expects 10) that the wrong C1_PLUS passes, the reference fails.
T3_WRONG = "assert multiply(3, 3) == 10"
C1_PLUS = "def multiply(a, b):\n    return a * b + (1 if a == 3 else 0)\n"  # [1, 1, 1]: wrong on the hidden tests


def test_codemonkeys_hands_the_top_three_to_the_judge_ours_asks_it_only_on_a_tie() -> None:
    # Votes: C1_PLUS 3, REFERENCE 2, C1 2, C4 0. CodeMonkeys: the top 3 distinct programs by votes, then by length
    # (C1, 53 characters, before the reference, 58) go to model selection: the simulated judge says Yes to the
    # reference only → the reference. Ours (tests_passed): C1_PLUS leads alone → chosen, the judge never asked.
    programs = [C1_PLUS, REFERENCE, C1, C4]
    assert len(C1.strip()) < len(REFERENCE.strip())
    answer, policy = _scripted([[T1, T2, T3_WRONG]], programs, verifier="llm_judge")  # the default select
    assert answer.info["select"] == "codemonkeys" and [s.score for s in answer.samples] == [3.0, 2.0, 2.0, 0.0]
    assert policy.judged() == 3 and answer.info["leaders"] == 3 and answer.info["tie_break"] == "llm_judge"
    assert answer.prediction == REFERENCE.strip() and TASK.grade(answer.prediction, TASK.problems()[0])
    answer, policy = _scripted([[T1, T2, T3_WRONG]], programs, verifier="llm_judge", select="tests_passed")
    assert policy.judged() == 0 and answer.prediction == C1_PLUS.strip()
    # Without a judge CodeMonkeys' ranking answers: the most votes.
    answer, policy = _scripted([[T1, T2, T3_WRONG]], programs)
    assert policy.judged() == 0 and answer.prediction == C1_PLUS.strip()


def test_tests_passed_asks_the_judge_on_a_tie_and_the_shortlist_is_distinct_programs() -> None:
    # Votes [2, 2, 0] with C1 (wrong) first: without a judge the first leader answers; with the simulated judge the
    # tie goes to the reference.
    answer, policy = _scripted([[T1, T2, T3_WRONG]], [C1, REFERENCE, C4], select="tests_passed")
    assert policy.judged() == 0 and answer.prediction == C1.strip()
    answer, policy = _scripted([[T1, T2, T3_WRONG]], [C1, REFERENCE, C4], select="tests_passed", verifier="llm_judge")
    assert policy.judged() == 2 and answer.prediction == REFERENCE.strip() and answer.info["tie_break"] == "llm_judge"
    # CodeMonkeys deduplicates programs before its top 3: a repeated program is judged once.
    assert codemonkeys_shortlist([3.0, 3.0, 2.0, 1.0, 0.0], ["ab", "ab", "xyz", "q", "z"], size=3) == [0, 2, 3]
    assert codemonkeys_shortlist([2.0, 2.0, None], ["long one", "short", None], size=3) == [1, 0]
    assert codemonkeys_shortlist([1.0, 0.0], ["longer", "s"], size=3) == [0, 1]  # votes before length
    assert codemonkeys_shortlist([None, 1.0, 2.0], ["a", "b", None], size=3) == [1]  # unscored, or no code: out
    with pytest.raises(ValueError):  # a program per score
        codemonkeys_shortlist([1.0, 2.0], ["a"], size=3)


def test_a_code_tasks_problems_pass_the_check_and_one_without_an_entry_point_is_named() -> None:
    assert needs_code(TASK.problems()) is None  # every problem of a code task has its entry point
    odd = replace(TASK.problems()[0], id="odd", meta={**TASK.problems()[0].meta, "entry_point": 5})
    with pytest.raises(ValueError, match="problem 'odd' has none"):
        needs_code([odd])


def test_the_scores_of_each_rule_on_pass_vectors() -> None:
    rows: list[tuple[int, ...] | None] = [(1, 0), (0, 0), None, (1, 0)]
    # codet: a candidate passing one test (weight 1) stays, √2 for its set of two; one passing nothing is dropped.
    assert score_candidates(rows, [1, 3], select="codet") == [pytest.approx(math.sqrt(2)), None, None,
                                                              pytest.approx(math.sqrt(2))]
    assert score_candidates(rows, [2, 3], select="codet")[0] == pytest.approx(2 * math.sqrt(2))  # counted twice
    assert score_candidates(rows, None, select="codet_paper") == [2.0, 0.0, None, 2.0]
    assert score_candidates(rows, None, select="tests_passed") == [1.0, 0.0, None, 1.0]
    with pytest.raises(ValueError):  # a weight per test, no fewer
        score_candidates([(1, 0)], [1], select="codet")


def test_sample_tests_keeps_each_samples_first_lines_and_bounds_their_length() -> None:
    assert parse_tests(["assert f(1) == 1\nassert f(2) == 2\nassert f(3) == 3"], entry_point="f", limit=8,
                       per_sample=2) == ["assert f(1) == 1", "assert f(2) == 2"]
    # A line that is not one assert does not end the sample: the next line still counts.
    assert sample_tests("assert f(2) == 3; import os\nassert f(1) == 1", entry_point="f", limit=None) == [
        "assert f(1) == 1"]
    longest = "assert f(1) == " + "1" * (2000 - len("assert f(1) == "))
    assert len(longest) == 2000 and sample_tests(longest + "\n" + longest + "1", entry_point="f", limit=None) == [
        longest]  # 2,000 characters at most: a longer line is never parsed


def test_params_from_python_are_validated_and_the_references_are_the_defaults() -> None:
    with pytest.raises(ValueError, match="select must be one of codemonkeys, tests_passed, codet, codet_paper, got"):
        GeneratedTestsParams(select="x")  # type: ignore[arg-type]
    p = GeneratedTestsParams()
    assert (p.select, p.shortlist, p.tests_per_sample, p.verifier) == ("codemonkeys", 3, None, None)
    assert GeneratedTestsParams(temperature=0, test_samples=1, n=1).test_samples == 1  # one greedy sample is fine


def _asserts(*names: str) -> str:
    """A test-writing sample whose tests are named: t3 is `assert solve(3) == 3`."""
    return "```python\n" + "".join(f"assert solve({name[1:]}) == {name[1:]}\n" for name in names) + "```"


def _passes(tests: list[str], *names: str) -> tuple[int, ...]:
    return tuple(int(any(f"solve({name[1:]})" in test for name in names)) for test in tests)


def test_codet_counts_every_test_among_the_first_five_of_each_sample_with_no_total_cap() -> None:
    """Issue 61's example, after CodeT's agreement.py:55-60 and execution.py:90-93. Sample 1 writes t1..t6, sample 2
    t1, t7..t10; of each, the first 5 count (t6 does not), t1 twice. P1 ×3 pass {t1, t4}, P3 {t1, t2, t3, t10},
    P4 {t1, t2, t3}, P6 only t6, P7 nothing: CodeT picks P1 (3·√3 = 5.196 over P3's 5). With 8 tests at most (the
    cap before), t10 was cut, P3 and P4 merged (4·√2 = 5.657) and P3 won."""
    from ttscale.strategies.generated_tests import counted_tests, rank

    texts = [_asserts("t1", "t2", "t3", "t4", "t5", "t6"), _asserts("t1", "t7", "t8", "t9", "t10")]
    p = GeneratedTestsParams(select="codet")
    tests, weights = counted_tests(texts, entry_point="solve", p=p)
    assert len(tests) == 9 and weights == [2, 1, 1, 1, 1, 1, 1, 1, 1]
    outcomes = [_passes(tests, "t1", "t4")] * 3 + [_passes(tests, "t1", "t2", "t3", "t10"),
                                                  _passes(tests, "t1", "t2", "t3"), _passes(tests, "t6"),
                                                  _passes(tests)]
    programs = ["p1", "p1b", "p1c", "p3", "p4", "p6", "p7"]
    scores, leaders = rank(outcomes, weights, programs, p=p)
    assert leaders == [0, 1, 2] and math.isclose(scores[0] or 0, 3 * math.sqrt(3))
    assert scores[3] == 5 and scores[4] == 4 and scores[5] is None and scores[6] is None
    # The total cap stays an option, stated: at 8, P3 wins as before.
    capped = GeneratedTestsParams(select="codet", max_tests=8)
    tests, weights = counted_tests(texts, entry_point="solve", p=capped)
    assert len(tests) == 8 and not any("solve(10)" in t for t in tests)
    outcomes = [_passes(tests, "t1", "t4")] * 3 + [_passes(tests, "t1", "t2", "t3", "t10"),
                                                  _passes(tests, "t1", "t2", "t3"), _passes(tests, "t6"),
                                                  _passes(tests)]
    scores, leaders = rank(outcomes, weights, programs, p=capped)
    assert leaders == [3, 4] and math.isclose(scores[3] or 0, 4 * math.sqrt(2))


def test_codemonkeys_votes_count_every_generated_test() -> None:
    """Issue 61's example, after CodeMonkeys' majority_voting.py:75-84: t1 written by three samples, a fourth writes
    t2, t3, t4; RA passes {t1}, RB {t2, t3}, RC {t2, t4}, RD {t3, t4}. Votes 3, 2, 2, 2 shortlist [RA, RB, RC];
    over distinct tests (before) 1, 2, 2, 2 shortlisted [RB, RC, RD] and RA never reached the judge."""
    from ttscale.strategies.generated_tests import counted_tests, rank

    texts = [_asserts("t1")] * 3 + [_asserts("t2", "t3", "t4")]
    p = GeneratedTestsParams(select="codemonkeys", test_samples=4)
    tests, weights = counted_tests(texts, entry_point="solve", p=p)
    assert weights == [3, 1, 1, 1]
    outcomes = [_passes(tests, "t1"), _passes(tests, "t2", "t3"), _passes(tests, "t2", "t4"),
                _passes(tests, "t3", "t4")]
    programs = ["ra", "rb", "rc", "rd"]
    scores, leaders = rank(outcomes, weights, programs, p=p)
    assert scores == [3, 2, 2, 2] and leaders == [0, 1, 2]
    once = GeneratedTestsParams(select="codemonkeys", test_samples=4, test_weights="once")
    tests, weights = counted_tests(texts, entry_point="solve", p=once)
    scores, leaders = rank(outcomes, weights, programs, p=once)
    assert scores == [1, 2, 2, 2] and leaders == [1, 2, 3]
