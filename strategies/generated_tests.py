"""Generated tests: N candidate programs, M model-written tests, the candidate whose behaviour the tests favour.

Ehrlich, Brown, Juravsky, Clark, Ré, Mirhoseini, "CodeMonkeys: Scaling Test-Time Compute for Software
Engineering", arXiv:2501.14723 (2025), §3-§4 (generate candidates and tests apart, run every candidate on every
generated test, vote by test outcomes, a model selects among the top); the behaviour clusters are CodeT's
dual execution agreement (Chen, Zhang, Nguyen, Zan, Lin, Lou, Chen, "CodeT: Code Generation with Generated
Tests", arXiv:2207.10397, 2022, §2).

Symbols: candidates c_1..c_N ~ π(· | x) (`n`, `max_tokens`); tests t_1..t_M parsed from T test-writing samples
(`test_samples`, `test_tokens`; each sample's `assert` lines about the entry point, its first `tests_per_sample`,
deduplicated over the samples, at most `max_tests`; w_j how many times t_j was written among those); o_ij = 1 when
c_i passes t_j (run in the task's sandbox, metered as executions); the behaviour of c_i is the vector o_i·; a
cluster K is a set of candidates with one behaviour.
- `select=codemonkeys` (default; ScalingIntelligence/codemonkeys codemonkeys/utils/majority_voting.py
  `get_patches_for_selection`, stages/selection_state_machine.py `max_candidates = 3`): votes s(c_i) = Σ_j o_ij;
  the distinct programs ranked by (most votes, shorter program), the top `shortlist` go to model selection (the
  outcome verifier, `verifier`), which picks one; without a verifier the first of the ranking answers.
- `select=tests_passed` (ours before): the same votes, the verifier asked only when the top is tied.
- `select=codet` (microsoft/CodeT src/agreement.py `DualAgreement`): a candidate that passes no test is dropped;
  a consensus set K scores √|K| · Σ_j w_j o_Kj (tests counted as often as written, the first 5 of each sample:
  `tests_per_sample` unset means 5 here).
- `select=codet_paper` (the paper's §2 formula): s(c_i) = |K(c_i)| · Σ_j o_ij, every candidate kept.
The answer is argmax_i s(c_i) (a set's first candidate); a tie at the top goes to the verifier when one is named,
else to the first candidate. Differences from the references, and why: CodeT ranks sets and reports pass@k over a
set, where one answer is taken here (the set's first); with no candidate passing any test CodeT ranks nothing, and
here the first runnable candidate answers (a run records an answer per problem). CodeMonkeys' model selection is an
agent that may write and run more tests; here it is one verifier score per shortlisted program. Only the prompt's
visible text is shown to the test writer: the task's hidden tests are never read.
"""

from __future__ import annotations

import ast
import asyncio
import math
from dataclasses import dataclass, replace
from typing import Any, Literal

from ttscale.blocks.sampling import PoolParams, sample_pool, score_outcomes
from ttscale.blocks.verified import ChecksVerifier
from ttscale.kit.context import Context
from ttscale.kit.params import check_positive, strategy
from ttscale.schema import Answer, Problem, SamplingParams

TEST_PROMPT = (
    "{question}\n\nWrite {count} different test cases for the function `{entry_point}` described above, as "
    "Python assert statements, one per line, such as `assert {entry_point}(...) == ...`. Reply with one "
    "```python code block that holds only the assert lines."
)


SELECTS = ("codemonkeys", "tests_passed", "codet", "codet_paper")
CODET_TESTS_PER_SAMPLE = 5
"""CodeT's `limit`: the tests of each sample that count (its scripts' default)."""


@dataclass(frozen=True, kw_only=True)
class GeneratedTestsParams(ChecksVerifier, PoolParams):
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
    tests_per_sample: int | None = None
    """Only the first this many assert lines of each test-writing sample count; None = CodeT's 5 under codet, no
    limit under the other rules."""
    select: Literal["codemonkeys", "tests_passed", "codet", "codet_paper"] = "codemonkeys"
    """codemonkeys: the top `shortlist` by votes to the verifier; tests_passed: most tests passed, the verifier on a
    tie; codet: CodeT's code, √|set| × tests passed; codet_paper: the paper's |set| × |tests passed|."""
    shortlist: int = 3
    """codemonkeys: the distinct programs, by votes then length, handed to the verifier (its max_candidates)."""
    verifier: str | None = None
    """Model selection: an outcome scorer in VERIFIERS (llm_judge, ...); None = the first of the ranking."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("test_samples", "test_tokens", "max_tests", "shortlist"):
            check_positive(name, getattr(self, name))
        check_positive("tests_per_sample", self.tests_per_sample, allow_none=True)
        if self.select not in SELECTS:
            raise ValueError(f"select must be one of {', '.join(SELECTS)}, got {self.select!r}")
        if self.temperature == 0 and self.test_samples > 1:
            raise ValueError(f"test_samples must be 1 at temperature 0 (greedy tests are one), got {self.test_samples}")


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
    per_sample = p.tests_per_sample
    if per_sample is None and p.select == "codet":
        per_sample = CODET_TESTS_PER_SAMPLE
    texts = [c.text for c in written.completions]
    tests = parse_tests(texts, entry_point=entry_point, limit=p.max_tests, per_sample=per_sample)
    weights = written_counts(texts, tests, entry_point=entry_point, per_sample=per_sample)

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

    # 4. The vote over behaviour, then the verifier (model selection) where the rule asks it.
    outcomes: list[tuple[int, ...] | None] = [behaviour.get(i) for i in range(len(samples))]
    scores = score_candidates(outcomes, weights if p.select == "codet" else None, select=p.select)
    programs = [s.answer for s in samples]
    if p.select == "codemonkeys":
        leaders = codemonkeys_shortlist(scores, programs, size=p.shortlist)
    else:
        top = max((s for s in scores if s is not None), default=None)
        leaders = [i for i, s in enumerate(scores) if s is not None and s == top]
    if p.select == "codet" and not leaders and runnable:
        leaders = [runnable[0]]  # nothing passes a test: CodeT ranks nothing, a run still answers
    judged: list[float] | None = None
    if len(leaders) > 1 and p.verifier is not None:
        judged = list(await score_outcomes(ctx, [samples[i].text for i in leaders], verifier=p.verifier))
        leaders = [leaders[max(range(len(leaders)), key=judged.__getitem__)]]  # ties: the earlier in the ranking
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


def score_candidates(
    outcomes: list[tuple[int, ...] | None], weights: list[int] | None = None, *, select: str
) -> list[float | None]:
    """Each candidate's score under `select` from its pass vector (None: no code, not scored).

    `weights[j]`: how many times test j was written (codet counts a test that often; None = once each). Under codet
    a candidate that passes nothing is dropped (None), and its set's score is √|set| · the weighted tests passed;
    under codet_paper |set| · the tests passed; otherwise the tests passed (the votes).
    """
    rows = [row for row in outcomes if row is not None]
    scores: list[float | None] = []
    for row in outcomes:
        if row is None:
            scores.append(None)
            continue
        counts = [1] * len(row) if weights is None else weights
        passed = float(sum(o * w for o, w in zip(row, counts, strict=True)))
        size = sum(other == row for other in rows)
        if select == "codet":
            scores.append(passed * math.sqrt(size) if passed > 0 else None)
        elif select == "codet_paper":
            scores.append(passed * size)
        else:
            scores.append(passed)
    return scores


def codemonkeys_shortlist(scores: list[float | None], programs: list[str | None], *, size: int) -> list[int]:
    """CodeMonkeys' candidates for model selection: the distinct programs ranked by votes (most first), then by
    length (shorter first), then as sampled; the first `size` of them, each by its first candidate's index."""
    voted = [(-score, len(program), i, program) for i, (score, program) in enumerate(zip(scores, programs, strict=True))
             if score is not None and program is not None]
    seen: set[str] = set()
    out: list[int] = []
    for _, _, i, program in sorted(voted):
        if program not in seen:
            seen.add(program)
            out.append(i)
    return out[:size]


def parse_tests(texts: list[str], *, entry_point: str, limit: int, per_sample: int | None = None) -> list[str]:
    """The distinct `assert` lines about `entry_point` in the texts, in order, at most `limit`; of each text only its
    first `per_sample` such lines (None: all).

    Each line is parsed (never run here) and kept only when it is one assert statement that calls the entry
    point: a line the model wrote is untrusted code, run only in the sandbox.
    """
    found: list[str] = []
    for text in texts:
        for line in sample_tests(text, entry_point=entry_point, limit=per_sample):
            if line not in found:
                found.append(line)
            if len(found) >= limit:
                return found
    return found


def written_counts(texts: list[str], tests: list[str], *, entry_point: str, per_sample: int | None) -> list[int]:
    """How many times each of `tests` was written among the first `per_sample` tests of each text (CodeT counts a
    test as often as it was generated, a repeat within one sample too)."""
    written = [line for text in texts for line in sample_tests(text, entry_point=entry_point, limit=per_sample)]
    return [written.count(test) for test in tests]


def sample_tests(text: str, *, entry_point: str, limit: int | None) -> list[str]:
    """The `assert` lines about `entry_point` in one sample, in order, repeats kept, at most `limit` (None: all)."""
    found: list[str] = []
    for raw in text.splitlines():
        if limit is not None and len(found) >= limit:
            break
        line = raw.strip()
        if not line.startswith("assert ") or entry_point not in line or len(line) > 2000:
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
    return found
