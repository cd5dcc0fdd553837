"""Generated tests: N candidate programs, M model-written tests, the candidate whose behaviour the tests favour.

Ehrlich, Brown, Juravsky, Clark, Ré, Mirhoseini, "CodeMonkeys: Scaling Test-Time Compute for Software
Engineering", arXiv:2501.14723 (2025), §3-§4 (generate candidates and tests apart, run every candidate on every
generated test, vote by test outcomes, a model selects among the top); the behaviour clusters are CodeT's
dual execution agreement (Chen, Zhang, Nguyen, Zan, Lin, Lou, Chen, "CodeT: Code Generation with Generated
Tests", arXiv:2207.10397, 2022, §2).

Symbols: candidates c_1..c_N ~ π(· | x) (`n`, `max_tokens`); tests t_1..t_M parsed from T test-writing samples
(`test_samples`, `test_tokens`; each sample's `assert` lines about the entry point, deduplicated, at most
`max_tests`); o_ij = 1 when c_i passes t_j (run in the task's sandbox, metered as executions); the behaviour of
c_i is the vector o_i·; a cluster K is a set of candidates with one behaviour, its tests passed p(K).
- `select=tests_passed` (CodeMonkeys' vote): s(c_i) = Σ_j o_ij.
- `select=codet` (CodeT's dual agreement): s(c_i) = |K(c_i)| · p(K(c_i)).
The answer is argmax_i s(c_i); a tie at the top goes to the outcome verifier (`verifier`, e.g. llm_judge)
when one is named (CodeMonkeys' model selection), else to the first candidate. Only the prompt's visible
text is shown to the test writer: the task's hidden tests are never read.
"""

from __future__ import annotations

import ast
import asyncio
from dataclasses import dataclass, replace
from typing import Any, Literal

from ttscale.context import Context
from ttscale.params import check_positive, strategy
from ttscale.sampling import PoolParams, sample_pool, score_outcomes
from ttscale.schema import Answer, Problem, SamplingParams
from ttscale.search.score import check_verifier_spec

TEST_PROMPT = (
    "{question}\n\nWrite {count} different test cases for the function `{entry_point}` described above, as "
    "Python assert statements, one per line, such as `assert {entry_point}(...) == ...`. Reply with one "
    "```python code block that holds only the assert lines."
)


@dataclass(frozen=True, kw_only=True)
class GeneratedTestsParams(PoolParams):
    """Candidate programs selected by how they fare on model-written tests."""

    n: int | None = 8
    """N: candidate programs; None = as many as the budget left after the tests pays for at `max_tokens` each."""
    max_tokens: int = 384
    """Tokens per candidate at most."""
    test_samples: int = 2
    """T: test-writing samples (generated first, from the budget)."""
    test_tokens: int = 192
    """Tokens per test-writing sample at most."""
    max_tests: int = 8
    """M at most: distinct assert lines kept, in the order written."""
    select: Literal["tests_passed", "codet"] = "tests_passed"
    """tests_passed: the most generated tests passed (CodeMonkeys); codet: cluster size × tests passed (CodeT)."""
    verifier: str | None = None
    """Breaks a tie at the top: an outcome scorer in VERIFIERS (llm_judge, ...); None = the first candidate."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("test_samples", "test_tokens", "max_tests"):
            check_positive(name, getattr(self, name))
        if self.temperature == 0 and self.test_samples > 1:
            raise ValueError(f"test_samples must be 1 at temperature 0 (greedy tests are one), got {self.test_samples}")
        if self.verifier is not None:
            check_verifier_spec(self.verifier)


def needs_code(problems: list[Problem]) -> None:
    """Refuse a task whose problems are not code before anything starts (declared with the strategy, checked by
    `prepare`): run, every problem would only record this strategy's refusal, and the run would exit 0."""
    for problem in problems:
        entry_point = problem.meta.get("entry_point")
        if not isinstance(entry_point, str) or not entry_point:
            raise ValueError(f"generated_tests needs a code task with an entry point (code, humaneval, "
                             f"code_jsonl:PATH); problem {problem.id!r} has none")


@strategy(GeneratedTestsParams, check_problems=needs_code)
async def generated_tests(problem: Problem, ctx: Context, p: GeneratedTestsParams) -> Answer:
    entry_point = problem.meta.get("entry_point")
    build = getattr(ctx.task, "program", None)
    if not entry_point or build is None:
        raise ValueError(f"generated_tests needs a code task with an entry point; task {ctx.task.name!r} has none")

    # 1. Tests, from the visible prompt only.
    asked = TEST_PROMPT.format(question=problem.question, count=p.max_tests, entry_point=entry_point)
    written = await ctx.generate(
        ctx.engine.chat_prompt([{"role": "user", "content": asked}]),
        SamplingParams(n=p.test_samples, temperature=p.temperature, top_p=p.top_p, max_tokens=p.test_tokens),
        phase="tests", role="verifier",  # the tests verify the candidates: not samples of the answer (issue 49)
    )
    tests = parse_tests([c.text for c in written.completions], entry_point=entry_point, limit=p.max_tests)

    # 2. Candidates, with what the tests left.
    completions = await sample_pool(ctx, p)
    samples = [ctx.sample(c) for c in completions]

    # 3. Every candidate with code on every test, in the sandbox (which runs as many at once as there are cores).
    async def outcome(code: str, test: str) -> int:
        # The entry point goes along: the sandbox accepts only plain values from it (no lying `__eq__`).
        execution = await ctx.execute(program=build(code, problem), test=test, entry_point=entry_point)
        return int(execution.passed)

    runnable = [i for i, s in enumerate(samples) if s.answer is not None]
    rows = await asyncio.gather(
        *(asyncio.gather(*(outcome(samples[i].answer or "", t) for t in tests)) for i in runnable)
    )
    behaviour: dict[int, tuple[int, ...]] = {i: tuple(row) for i, row in zip(runnable, rows, strict=True)}

    # 4. The vote over behaviour.
    scores: list[float | None] = [None] * len(samples)
    for i, row in behaviour.items():
        cluster = sum(other == row for other in behaviour.values())
        scores[i] = float(sum(row) * (cluster if p.select == "codet" else 1))
    top = max((s for s in scores if s is not None), default=None)
    leaders = [i for i, s in enumerate(scores) if s is not None and s == top]
    judged: list[float] | None = None
    if len(leaders) > 1 and p.verifier is not None:
        judged = list(await score_outcomes(ctx, [samples[i].text for i in leaders], verifier=p.verifier))
        leaders = [leaders[max(range(len(leaders)), key=judged.__getitem__)]]
    chosen = leaders[0] if leaders else None
    final = [replace(s, score=score) for s, score in zip(samples, scores, strict=True)]
    info: dict[str, Any] = {
        "n": len(samples),
        "tests": len(tests),
        "generated_tests": tests,
        "select": p.select,
        "leaders": len(leaders) if judged is None else len(judged),
        "behaviours": len(set(behaviour.values())),
        "tie_break": p.verifier if judged is not None else None,
    }
    return Answer(prediction=samples[chosen].answer if chosen is not None else None, samples=tuple(final), info=info)


def parse_tests(texts: list[str], *, entry_point: str, limit: int) -> list[str]:
    """The distinct `assert` lines about `entry_point` in the texts, in order, at most `limit`.

    Each line is parsed (never run here) and kept only when it is one assert statement that calls the entry
    point: a line the model wrote is untrusted code, run only in the sandbox.
    """
    found: list[str] = []
    for text in texts:
        for raw in text.splitlines():
            line = raw.strip()
            if not line.startswith("assert ") or entry_point not in line or len(line) > 2000 or line in found:
                continue
            try:
                tree = ast.parse(line)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
                continue
            calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            if entry_point in calls:
                found.append(line)
            if len(found) >= limit:
                return found
    return found
