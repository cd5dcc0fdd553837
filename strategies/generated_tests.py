"""Generated tests: N candidate programs, M model-written tests, the candidate whose behaviour the tests favour.

Ehrlich, Brown, Juravsky, Clark, Ré, Mirhoseini, "CodeMonkeys: Scaling Test-Time Compute for Software
Engineering", arXiv:2501.14723 (2025), §3-§4 (generate candidates and tests apart, run every candidate on every
generated test, vote by test outcomes, a model selects among the top); the behaviour clusters are CodeT's
dual execution agreement (Chen, Zhang, Nguyen, Zan, Lin, Lou, Chen, "CodeT: Code Generation with Generated
Tests", arXiv:2207.10397, 2022, §2).

Symbols: candidates c_1..c_N ~ π(· | x) (`n`, `max_tokens`); tests t_1..t_M parsed from T test-writing samples
(`test_samples`, `test_tokens`; each sample's `assert` lines about the entry point, its first `tests_per_sample`,
deduplicated over the samples, at most `max_tests` (none under codet); w_j how many times t_j was written among
those, or 1 each: `test_weights`); o_ij = 1 when
c_i passes t_j (run in the task's sandbox, metered as executions); the behaviour of c_i is the vector o_i·; a
cluster K is a set of candidates with one behaviour.
- `select=codemonkeys` (default; ScalingIntelligence/codemonkeys codemonkeys/utils/majority_voting.py
  `get_patches_for_selection`, stages/selection_state_machine.py `max_candidates = 3`): votes s(c_i) = Σ_j w_j o_ij,
  every generated test counted (one written by three samples votes three times, as majority_voting.py:75-84
  counts); the distinct programs ranked by (most votes, shorter program), the top `shortlist` go to model selection
  (the outcome verifier, `verifier`), which picks one. Without a verifier no model is asked: the first of the
  shortlist answers.
- `select=tests_passed` (ours before): votes Σ_j o_ij over the distinct tests, the verifier asked only on a tie.
- `select=codet` (microsoft/CodeT src/agreement.py `DualAgreement`, src/execution.py:90-93): a candidate that
  passes no test is dropped; a consensus set K scores √|K| · Σ_j w_j o_Kj (tests counted as often as written,
  every test among the first 5 of each sample, with no total cap: `tests_per_sample` unset means 5 here,
  `max_tests` unset means no cap).
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
MAX_TESTS = 8
"""The distinct tests kept under the rules other than codet when `max_tests` is unset, and the count asked for."""


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
    max_tests: int | None = None
    """M at most: distinct assert lines kept, in the order written; None = no cap under codet (CodeT keeps every
    test among the first 5 of each sample), 8 under the other rules. Also the number of tests the prompt asks for
    (8 when there is no cap)."""
    tests_per_sample: int | None = None
    """Only the first this many assert lines of each test-writing sample count; None = CodeT's 5 under codet, no
    limit under the other rules."""
    select: Literal["codemonkeys", "tests_passed", "codet", "codet_paper"] = "codemonkeys"
    """codemonkeys: the top `shortlist` by votes to the verifier; tests_passed: most tests passed, the verifier on a
    tie; codet: CodeT's code, √|set| × tests passed; codet_paper: the paper's |set| × |tests passed|."""
    test_weights: Literal["written", "once"] | None = None
    """How a test counts in the votes: written = as many times as the samples wrote it (CodeMonkeys' and CodeT's
    count), once = each distinct test once; None = the rule's own (written under codemonkeys and codet, once under
    tests_passed and codet_paper)."""
    shortlist: int = 3
    """codemonkeys: the distinct programs, by votes then length, handed to the verifier (its max_candidates)."""
    verifier: str | None = None
    """Model selection: an outcome scorer in VERIFIERS (llm_judge, ...); None = the first of the ranking."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("test_samples", "test_tokens", "shortlist"):
            check_positive(name, getattr(self, name))
        for name in ("max_tests", "tests_per_sample"):
            check_positive(name, getattr(self, name), allow_none=True)
        if self.test_weights not in (None, "written", "once"):
            raise ValueError(f"test_weights must be written or once (or unset), got {self.test_weights!r}")
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
    asked = TEST_PROMPT.format(question=problem.question, count=p.max_tests or MAX_TESTS, entry_point=entry_point)
    written = await ctx.generate(
        ctx.engine.chat_prompt([{"role": "user", "content": asked}]),
        SamplingParams(n=p.test_samples, temperature=p.temperature, top_p=p.top_p, max_tokens=p.test_tokens),
        phase="tests", role="verifier",  # the tests verify the candidates: not samples of the answer (issue 49)
    )
    tests, weights = counted_tests([c.text for c in written.completions], entry_point=entry_point, p=p)

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
    scores, leaders = rank(outcomes, weights, [s.answer for s in samples], p=p)
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
        "test_weights": weights,
        "select": p.select,
        "leaders": len(leaders) if judged is None else len(judged),
        "behaviours": len(set(behaviour.values())),
        "tie_break": p.verifier if judged is not None else None,
    }
    return Answer(prediction=samples[chosen].answer if chosen is not None else None, samples=tuple(final), info=info)


def counted_tests(texts: list[str], *, entry_point: str, p: GeneratedTestsParams) -> tuple[list[str], list[int]]:
    """The tests `p.select` counts, in order, and each one's weight in the votes (its rule's `test_weights`)."""
    per_sample = p.tests_per_sample
    if per_sample is None and p.select == "codet":
        per_sample = CODET_TESTS_PER_SAMPLE
    cap = p.max_tests if p.max_tests is not None or p.select == "codet" else MAX_TESTS
    tests = parse_tests(texts, entry_point=entry_point, limit=cap, per_sample=per_sample)
    weighting = p.test_weights or ("written" if p.select in ("codemonkeys", "codet") else "once")
    if weighting == "once":
        return tests, [1] * len(tests)
    return tests, written_counts(texts, tests, entry_point=entry_point, per_sample=per_sample)


def rank(outcomes: list[tuple[int, ...] | None], weights: list[int], programs: list[str | None], *,
         p: GeneratedTestsParams) -> tuple[list[float | None], list[int]]:
    """Every candidate's score, and the leaders the verifier chooses among (the answer is the first of them)."""
    scores = score_candidates(outcomes, weights, select=p.select)
    if p.select == "codemonkeys":
        return scores, codemonkeys_shortlist(scores, programs, size=p.shortlist)
    top = max((s for s in scores if s is not None), default=None)
    leaders = [i for i, s in enumerate(scores) if s is not None and s == top]
    runnable = [i for i, row in enumerate(outcomes) if row is not None]
    if p.select == "codet" and not leaders and runnable:
        leaders = [runnable[0]]  # nothing passes a test: CodeT ranks nothing, a run still answers
    return scores, leaders


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


def parse_tests(texts: list[str], *, entry_point: str, limit: int | None, per_sample: int | None = None) -> list[str]:
    """The distinct `assert` lines about `entry_point` in the texts, in order, at most `limit` (None: all); of each
    text only its first `per_sample` such lines (None: all).

    Each line is parsed (never run here) and kept only when it is one assert statement that calls the entry
    point: a line the model wrote is untrusted code, run only in the sandbox.
    """
    found: list[str] = []
    for text in texts:
        for line in sample_tests(text, entry_point=entry_point, limit=per_sample):
            if line not in found:
                found.append(line)
            if limit is not None and len(found) >= limit:
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
