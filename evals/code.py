"""Code tasks: the model writes a Python function; hidden unit tests run it in a sandbox.

A problem's `question` is the prompt the model sees (imports, signature, docstring); its hidden tests
live in `meta["test"]` (with `meta["entry_point"]`, the function's name, and `meta["prompt"]`) and never
reach the model: `messages` shows the question only. `reference` is the canonical solution when one is known.

The tasks built on `CodeTask`: `humaneval` and `code_jsonl:PATH` (ttscale.evals.code_data) and the embedded
synthetic `code` task (ttscale.evals.code_synthetic).

Extraction (`extract_code`), rules in order, the first that finds code wins (its name is stored with every sample):

1. `fenced_python`: the last non-empty ```python (or ```py) block;
2. `fenced`: else the last non-empty ``` block without a language (blocks in other languages are output, shell
   commands, ...: not the answer);
3. `raw_code`: else the code-looking lines of the raw text: from the first line that starts a definition, an
   import or a statement (or an indented line: a body written as a continuation) to the first flush-left line
   of prose after it.

Only the last `MAX_SCAN` characters are read and every pattern is linear, so a 10 MB hostile output costs
milliseconds; nothing is evaluated outside the sandbox. An unclosed last block (an output cut at its token
limit) counts as a block.
"""

from __future__ import annotations

import ast
import re
import textwrap
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ttscale.answers.extract import Extraction
from ttscale.evals.base import Message
from ttscale.schema import Problem

if TYPE_CHECKING:
    from ttscale.sandbox import Execution, Sandbox

MAX_SCAN = 100_000
"""Characters from the end of a model's text that are searched for code."""

INSTRUCTION = (
    "Complete the following Python function. Answer with the complete function (its signature and body) "
    "in one ```python code block."
)

#: What a code benchmark suggests (`ttscale.kit.params.task_defaults`). One answer is one function: EvalPlus samples
#: HumanEval with up to 768 new tokens (evalplus/codegen.py), and a chat model adds a sentence or two around its
#: block, so a solution gets 1024 tokens; a step is capped like a whole solution (as MATH's are) and the search
#: depth and verification chains stay MATH's.
CODE_DEFAULTS: tuple[tuple[str, Any], ...] = (
    ("max_tokens", 1024), ("step_tokens", 1024), ("max_steps", 40), ("verify_tokens", 1024), ("answer_tokens", 1024),
)

PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
# An opening fence, its language tag and the block up to the next fence (or the end: a cut output). The lazy
# `.*?` stops at the first closing fence and the match consumes it, so one pass over the text is linear.
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.#-]*)[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)
# A flush-left assignment: `x = 1`, `a, b = b, a`, `total += n`, `d[k] = v`.
_ASSIGNMENT = r"[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?(?:[ \t]*,[ \t]*[A-Za-z_]\w*)*[ \t]*(?:[-+*/%&|^]|//|\*\*)?=(?!=)"
# A flush-left line that starts code (a definition, an import, a decorator, a return, an assert, an assignment).
_CODE_START = re.compile(
    r"(?:async[ \t]+def|def|class)[ \t]+\w|import[ \t]+\w|from[ \t]+[\w.]+[ \t]+import[ \t]|@\w|return\b|assert[ \t]"
    rf"|{_ASSIGNMENT}"
)
# A flush-left line that continues code: a start, a compound statement's header, a call, a comment, a closing bracket.
_CODE_MORE = re.compile(
    r"(?:if|elif|else|for|while|try|except|finally|with)\b[^\n]*:[ \t]*(?:#.*)?$"
    r"|[A-Za-z_][\w.]*\([^\n]*\)[ \t]*$|#|\)|\]|\}"
)


def extract_code(text: str) -> Extraction:
    """The candidate program in a model's text and the rule that found it (see the module docstring)."""
    if not text:
        return Extraction(None, None)
    tail = text[-MAX_SCAN:].replace("\r\n", "\n")
    python = plain = None
    for match in _FENCE.finditer(tail):
        code = _tidy(match.group(2))
        if not code:
            continue
        tag = match.group(1).lower()
        if tag in PYTHON_TAGS:
            python = code
        elif not tag:
            plain = code
    if python is not None:
        return Extraction(python, "fenced_python")
    if plain is not None:
        return Extraction(plain, "fenced")
    raw = _raw_code(tail)
    return Extraction(raw, "raw_code") if raw else Extraction(None, None)


def _tidy(code: str) -> str:
    """`code` without its leading blank lines and trailing whitespace (leading indentation is kept: a body)."""
    return re.sub(r"\A(?:[ \t]*\n)+", "", code).rstrip()


def _raw_code(text: str) -> str | None:
    """The code-looking lines of an unfenced text, or None (see rule 3)."""
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() and (line[0] in " \t" or _CODE_START.match(line))),
                 None)
    if start is None:
        return None
    end = start
    for i in range(start, len(lines)):
        line = lines[i]
        if not line.strip() or line[0] in " \t":
            end = i if line.strip() else end
            continue
        if not (_CODE_START.match(line) or _CODE_MORE.match(line)):
            break
        end = i
    return _tidy("\n".join(lines[start : end + 1])) or None


def defines_function(code: str, name: str) -> bool:
    """Whether `code` defines `name` at its top level (a `def name(` flush left)."""
    return re.search(rf"^(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(", code, re.MULTILINE) is not None


def defines_check(test: str) -> bool:
    """Whether a test source defines `check(candidate)` (HumanEval's form) rather than top-level asserts."""
    return defines_function(test, "check")


def never_fails(test: str) -> str | None:
    """Why a test source (valid Python) can never fail, or None when it can. Parsed, never run.

    It can fail when an `assert`, a `raise`, or a call of an `assert…` helper (unittest's, numpy.testing's) or
    of `exit` (the harness counts an exit as a failure) is reached from what the harness runs: the top-level
    statements, and `check(candidate)` when the source defines it, directly or through the functions it
    defines and calls (found by name). Otherwise every answer passes: a `check_solution` nothing calls, bare
    expressions like `add(2, 2) == 4`, lines that only print.
    """
    tree = ast.parse(test)
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    functions: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, defs):
            functions.setdefault(node.name, []).append(node)
    # A class body runs when the class is defined; its methods run only when called.
    bodies = [*tree.body, *(s for c in tree.body if isinstance(c, ast.ClassDef) for s in c.body)]
    stack: list[ast.AST] = [s for s in bodies if not isinstance(s, (*defs, ast.ClassDef))]
    stack += [s for s in tree.body if isinstance(s, defs) and s.name == "check"]
    reached: set[int] = {id(s) for s in stack}
    while stack:
        for node in ast.walk(stack.pop()):
            if isinstance(node, ast.Assert | ast.Raise):
                return None
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name.lower().startswith("assert") or name in ("exit", "_exit", "quit"):
                return None
            for called in functions.get(name, ()):
                if id(called) not in reached:
                    reached.add(id(called))
                    stack.append(called)
    named = sorted({s.name for s in tree.body if isinstance(s, defs)})
    if named:
        return (f"it defines {', '.join(named)} but no assert, raise or assert…() call runs: the harness calls "
                "check(candidate) only, and the top-level statements")
    return "no assert, raise or assert…() call runs (an expression alone tests nothing: write `assert f(2) == 4`)"


def build_program(*, prompt: str, code: str, entry_point: str) -> str:
    """The module the tests import: the prompt completed by the answer's `code`.

    The rule: when `code` (dedented) defines `entry_point` flush left, it is a whole definition, and the program
    is the prompt *before* its stub of `entry_point` (its imports and helper functions, which the answer may leave
    out) followed by `code`; the stub itself is dropped, so a prompt whose stub has no body still makes valid code.
    Otherwise `code` is the stub's body, the continuation HumanEval's own harness appends (`prompt + completion`):
    a body written flush left (`return a + b`) is indented by four spaces first.
    """
    dedented = textwrap.dedent(code)
    if defines_function(dedented, entry_point):
        preamble = prompt_preamble(prompt, entry_point)
        return f"{preamble.rstrip()}\n\n\n{dedented.strip(chr(10))}\n".lstrip("\n")
    first = next((line for line in code.split("\n") if line.strip()), "")
    body = code if first[:1] in (" ", "\t") else textwrap.indent(code, "    ")
    head = prompt if prompt.endswith("\n") else prompt + "\n"
    return f"{head}{body}\n"


def prompt_preamble(prompt: str, entry_point: str) -> str:
    """The prompt before its (last) stub of `entry_point`: its imports and helper functions; all of it if no stub."""
    stubs = list(re.finditer(rf"^(?:async[ \t]+)?def[ \t]+{re.escape(entry_point)}[ \t]*\(", prompt, re.MULTILINE))
    return prompt[: stubs[-1].start()] if stubs else prompt


def tests_context(problem: Problem) -> str | None:
    """What of the problem the hidden tests may use besides the answer's function: the prompt's preamble (its
    imports and helpers, such as HumanEval/32's `poly`), run beside the tests and never taken from the answer,
    which could redefine a helper the tests check it with. None when the preamble is not valid Python on its own."""
    preamble = prompt_preamble(problem.meta.get("prompt", problem.question), entry_point_of(problem))
    if not preamble.strip():
        return None
    try:
        compile(preamble, "<context>", "exec", dont_inherit=True)  # compiled, never run, in this process
    except (SyntaxError, ValueError):
        return None
    return preamble


def entry_point_of(problem: Problem) -> str:
    """The function a problem asks for: `meta["entry_point"]`, else the last function its prompt defines."""
    name = problem.meta.get("entry_point")
    if isinstance(name, str) and name:
        return name
    defs = re.findall(r"^(?:async[ \t]+)?def[ \t]+(\w+)", problem.question, re.MULTILINE)
    if not defs:
        raise ValueError(f"problem {problem.id!r}: its prompt defines no function to complete")
    return str(defs[-1])


class CodeTask:
    """The shared half of every code task: prompt, extraction, program assembly, sandboxed grading.

    A subclass sets `name` and implements `_load()` (its problems) and `_source()` (what identifies them in
    `config()`). The sandbox is made on first use, once per task (thread-safe: the runner grades in threads).

    Options: `timeout`, each test run's wall-clock (and CPU) limit in seconds; `allow_network`, run where the
    machine cannot cut the candidate's network off (the CLI's `--allow-unisolated-code`; without it such a
    machine raises `SandboxUnavailable`, in one line, when the sandbox is first needed).
    """

    name = "code"
    defaults: tuple[tuple[str, Any], ...] = CODE_DEFAULTS

    def __init__(self, *, allow_network: bool = False, timeout: float = 10.0) -> None:
        if not isinstance(allow_network, bool):
            raise ValueError(f"allow_network must be true or false, got {allow_network!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
            raise ValueError(f"timeout must be in (0, 600] seconds, got {timeout!r}")
        self.allow_network = allow_network
        self.timeout = float(timeout)
        self._problems: list[Problem] | None = None
        self._sandbox: Sandbox | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # Pickled to Ray workers: each makes its own sandbox (a lock and a probed isolation do not travel).
        return {**self.__dict__, "_sandbox": None, "_lock": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- what a subclass provides ------------------------------------------------------------------
    def _load(self) -> list[Problem]:
        raise NotImplementedError

    def _source(self) -> dict[str, Any]:
        raise NotImplementedError

    # -- the Task protocol ----------------------------------------------------------------------------
    def problems(self) -> Sequence[Problem]:
        if self._problems is None:
            self._problems = self._load()
        return list(self._problems)

    def messages(self, problem: Problem) -> list[Message]:
        # The question only: the hidden tests in `meta` must never reach the model.
        return [{"role": "user", "content": f"{INSTRUCTION}\n\n```python\n{problem.question.rstrip()}\n```"}]

    def extract(self, text: str) -> str | None:
        return self.extraction(text).answer

    def extraction(self, text: str) -> Extraction:
        return extract_code(text)

    def grade(self, prediction: str | None, problem: Problem) -> bool:
        """Whether the hidden tests pass on `prediction` (see `execute`)."""
        return self.execute(prediction, problem).passed

    def execute(self, prediction: str | None, problem: Problem) -> Execution:
        """The hidden tests run on `prediction` in the sandbox: passed, failed, timeout, crashed or refused."""
        from ttscale.sandbox import Execution

        if prediction is None or not prediction.strip():
            return Execution(status="failed", reason="no code in the answer", seconds=0.0)
        entry_point = entry_point_of(problem)
        program = self.program(prediction, problem)
        # The entry point goes with every test, `check` or not: the tests call it in the candidate's process with
        # plain data either way (no lying `__eq__`), and the prompt's helpers are the prompt's own.
        return self.sandbox.run(program=program, test=problem.meta["test"], entry_point=entry_point,
                                context=tests_context(problem))

    def program(self, code: str, problem: Problem) -> str:
        """The module an answer's `code` makes for `problem` (see `build_program`); strategies run their own
        tests on it (`ctx.execute`), never the hidden ones."""
        return build_program(prompt=problem.meta.get("prompt", problem.question), code=code,
                             entry_point=entry_point_of(problem))

    def param_defaults(self) -> dict[str, Any]:
        """Strategy parameters suggested for code (see `ttscale.kit.params.task_defaults`)."""
        return dict(self.defaults)

    def config(self) -> dict[str, Any]:
        return {"name": self.name, **self._source(), "problems": len(self.problems()), "sandbox": self.sandbox.config()}

    # -- the sandbox --------------------------------------------------------------------------------------
    @property
    def sandbox(self) -> Sandbox:
        """The task's sandbox, made on first use (raises SandboxUnavailable where no isolation exists)."""
        if self._sandbox is None:
            with self._lock:
                if self._sandbox is None:
                    from ttscale.sandbox import Limits, Sandbox

                    # CPU as long as the wall clock: a slow but correct solution may compute the whole time.
                    limits = Limits(wall_seconds=self.timeout, cpu_seconds=self.timeout)
                    self._sandbox = Sandbox(limits=limits, allow_network=self.allow_network)
        return self._sandbox


def code_problem(
    *, ident: str, prompt: str, entry_point: str, test: str, reference: str = "", level: int | None = None
) -> Problem:
    """A code problem: the prompt as its question, the hidden test in `meta` (see the module docstring)."""
    return Problem(
        id=ident,
        question=prompt,
        reference=reference,
        level=level,
        meta={"prompt": prompt, "entry_point": entry_point, "test": test},
    )
