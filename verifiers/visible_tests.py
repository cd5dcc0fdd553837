"""`visible_tests`: an outcome verifier for code that runs a solution on the examples its prompt shows.

A code prompt's docstring often shows examples (`>>> f(2)` then `4`): a deployed system may run those, since the
user wrote them, but never the hidden tests that grade it. This verifier does exactly that: the score of a
solution is the fraction of the `>>>` examples in its function's docstring that it passes, each run in the
sandbox on its own. It reads `problem.question` (the prompt the model saw) and nothing else of the problem but
the function's name; `meta["test"]` is never touched, and the sandbox run gets no hidden test to find.

An example passes when what it shows equals what it wants, as doctest compares them (the value's repr plus
anything printed, whitespace normalised), or when the value equals the wanted text read as a Python literal
(`1.0` for `1`). An example without an output is a setup statement, run before the later ones, unless it is a
comparison (`>>> f(1) == 2`), which wants True.

Scores: `unknown` when the prompt shows no example (nothing to tell the solutions apart); `no_code` for an
outcome with no code. Step scores judge the code each prefix states so far, `unknown` before it states any.
Scores are cached per problem by code, so a search that re-scores a growing path pays for new code only.
"""

from __future__ import annotations

import ast
import asyncio
import re
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from ttscale.evals.base import extraction_of
from ttscale.evals.code import CodeTask, build_program, entry_point_of
from ttscale.kit.params import check_range
from ttscale.schema import Problem

if TYPE_CHECKING:
    from ttscale.kit.context import Context
    from ttscale.sandbox import Sandbox


class Example(NamedTuple):
    """One `>>>` example of a docstring: its source and the output it shows ('' for a setup statement)."""

    source: str
    want: str


def examples(prompt: str, entry_point: str | None = None) -> list[Example]:
    """The `>>>` examples of `prompt`, from the definition of `entry_point` on when given (helpers' examples test
    the helpers, which the prompt already defines)."""
    if entry_point:
        stubs = list(re.finditer(rf"^(?:async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\(", prompt, re.MULTILINE))
        prompt = prompt[stubs[-1].start() :] if stubs else prompt
    lines = prompt.split("\n")
    found: list[Example] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith(('""">>>', "'''>>>")):  # the docstring opens on the example's line
            stripped = stripped[3:]
        if not (stripped == ">>>" or stripped.startswith(">>> ")):
            i += 1
            continue
        closes = stripped.endswith(('"""', "'''"))  # `>>> f(1)"""`: the docstring ends on the example
        source = [stripped[4:].removesuffix('"""').removesuffix("'''")]
        i += 1
        if closes:
            found.append(Example(source[0].strip(), ""))
            continue
        while i < len(lines) and (lines[i].strip() == "..." or lines[i].strip().startswith("... ")):
            source.append(lines[i].strip()[4:])
            i += 1
        want = []
        while i < len(lines):
            line = lines[i].strip()
            if not line or line.startswith(">>>") or line.startswith(('"""', "'''")):
                break
            want.append(line.removesuffix('"""').removesuffix("'''").rstrip())
            i += 1
            if lines[i - 1].rstrip().endswith(('"""', "'''")):  # the docstring closes on the output's line
                break
        found.append(Example("\n".join(source).strip(), "\n".join(want).strip()))
    # `>>> f(1) == 2` with no output line (HumanEval/108, 128, 145, 156, 162 write examples so) states a fact
    # rather than showing output: it is read as an example wanting True, not as a setup statement.
    return [Example(e.source, "True") if not e.want and _is_comparison(e.source) else e for e in found if e.source]


def _is_comparison(source: str) -> bool:
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError):
        return False
    return isinstance(tree.body, ast.Compare)


def _is_expression(text: str) -> bool:
    try:
        ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return False
    return True


def _indent(source: str) -> str:
    return "\n".join("    " + line for line in source.split("\n"))


def example_test(example: Example, setup: Sequence[Example] = ()) -> str:
    """A test source (top-level asserts) that passes when the candidate's module gives `example`'s output."""
    lines = ["import contextlib as _contextlib", "import io as _io"]
    lines += [e.source for e in setup]
    lines += [
        "_buffer = _io.StringIO()",
        "_got = None",
        "with _contextlib.redirect_stdout(_buffer):",
        # An expression's value is shown; a statement (`for ...: print(x)`) shows only what it prints.
        f"    _got = (\n{example.source}\n)" if _is_expression(example.source) else _indent(example.source),
        "_shown = _buffer.getvalue() + ('' if _got is None else repr(_got))",
        f"_want = {example.want!r}",
        "_same = ' '.join(_shown.split()) == ' '.join(_want.split())",
    ]
    if _is_expression(example.want):
        lines.append(f"_same = _same or (_got is not None and _got == (\n{example.want}\n))")
    lines.append("assert _same, f'{_shown!r} is not {_want!r}'")
    return "\n".join(lines) + "\n"


@dataclass(kw_only=True)
class VisibleTests:
    """The fraction of the prompt's `>>>` examples a solution passes, run in the sandbox (see the module doc)."""

    name: ClassVar[str] = "visible_tests"

    unknown: float = 0.5
    """Score when the prompt shows no example, and of a step prefix that states no code yet."""
    no_code: float = 0.0
    """Score of a whole solution that states no code."""
    timeout: float = 10.0
    """Wall-clock seconds per example run, when the task has no sandbox of its own to lend."""
    parallel: int = 4
    """Example runs of one problem in flight at once (each is a process)."""
    _sandbox: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cache: weakref.WeakKeyDictionary[Any, dict[str, float]] = field(  # keyed by Context (get_type_hints: no import)
        default_factory=weakref.WeakKeyDictionary, repr=False
    )

    def __post_init__(self) -> None:
        check_range("unknown", self.unknown, 0, 1)
        check_range("no_code", self.no_code, 0, 1)
        check_range("timeout", self.timeout, 0, 600, low_open=True)
        if isinstance(self.parallel, bool) or not isinstance(self.parallel, int) or self.parallel < 1:
            raise ValueError(f"parallel must be ≥ 1, got {self.parallel!r}")

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        codes = [extraction_of(ctx.task, text).answer for text in solutions]
        scores = await self._scores(ctx, [c for c in codes if c])
        return [scores[c] if c else self.no_code for c in codes]

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        codes = [[extraction_of(ctx.task, "\n\n".join(steps[: i + 1])).answer for i in range(len(steps))]
                 for steps in candidates]
        scores = await self._scores(ctx, [c for path in codes for c in path if c])
        return [[scores[c] if c else self.unknown for c in path] for path in codes]

    async def score_code(self, problem: Problem, code: str, *, task: Any = None, ctx: Context | None = None) -> float:
        """The score of one extracted program for `problem` (no cache; `task` may lend its sandbox). With `ctx`,
        every run is metered by the problem's ledger (`executions`, `execution_seconds`)."""
        entry_point = entry_point_of(problem)
        shown = examples(problem.question, entry_point)
        wanted = [i for i, e in enumerate(shown) if e.want]
        if not wanted:
            return self.unknown
        sandbox = self._sandbox_for(task)
        program = build_program(prompt=problem.question, code=code, entry_point=entry_point)
        limit = asyncio.Semaphore(self.parallel)

        async def one(i: int) -> bool:
            setup = [e for e in shown[:i] if not e.want]
            async with limit:
                # The entry point makes the sandbox accept only plain values from it: no `__eq__` that lies.
                test = example_test(shown[i], setup)
                execution = await (
                    ctx.execute(program=program, test=test, entry_point=entry_point, sandbox=sandbox)
                    if ctx is not None
                    else sandbox.run_async(program=program, test=test, entry_point=entry_point)
                )
            return bool(execution.passed)

        passed = await asyncio.gather(*(one(i) for i in wanted))
        return sum(passed) / len(wanted)

    # -- internals --------------------------------------------------------------------------------
    async def _scores(self, ctx: Context, codes: list[str]) -> dict[str, float]:
        cache = self._cache.setdefault(ctx, {})
        todo = sorted(set(codes) - set(cache))
        found = await asyncio.gather(*(self.score_code(ctx.problem, code, task=ctx.task, ctx=ctx) for code in todo))
        cache.update(zip(todo, found, strict=True))
        return cache

    def _sandbox_for(self, task: Any) -> Sandbox:
        # A code task lends its own sandbox (the same isolation and limits as its grading); anything else
        # gets one of the verifier's own, made once.
        if isinstance(task, CodeTask):
            return task.sandbox
        if self._sandbox is None:
            with self._lock:
                if self._sandbox is None:
                    from ttscale.sandbox import Limits, Sandbox

                    self._sandbox = Sandbox(limits=Limits(wall_seconds=self.timeout, cpu_seconds=self.timeout))
        sandbox: Sandbox = self._sandbox
        return sandbox
