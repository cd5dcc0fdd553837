"""A SIMULATED code-writing policy behind the AsyncEngine protocol, for fast tests of code strategies.

Not a model and not vLLM: it answers from a code task's own problems with seeded randomness, so selection logic
(generated tests, behaviour votes, budgets, executions) can be tested in a second. Tests that claim anything about
vLLM or about a model's code use the real engine, never this.

- Asked to solve a problem (the task's prompt), each sample is one ```python block: the problem's reference
  solution with probability `p_correct`, else a wrong one (the reference with its body replaced by a constant
  `return` — a bug every hidden test of the synthetic task catches).
- Asked for tests (a message holding "test cases for the function `NAME`"), each sample is a block of the
  problem's hidden asserts rewritten as `assert NAME(...) == v`, each with its expected value replaced by a
  wrong one with probability `p_wrong_test`. (The simulator knows the hidden tests, as a model knows the
  intended behaviour; the strategy under test never sees them.)
- Asked to judge (a message holding "Answer Yes or No.", as `llm_judge` asks), one token: "Yes" when the
  solution shown holds the problem's reference solution, else "No", the verdict flipped with probability
  `p_wrong_judge`; its top log-probs give the verdict 0.9 (the judge's P(Yes) is 0.9 or 0.1).
"""

from __future__ import annotations

import asyncio
import math
import random
import re
from typing import Any

from ttscale.schema import Completion, Generation, SamplingParams
from ttscale.testing.latency import EOS, CharTokenizer

_TESTS_FOR = re.compile(r"test cases for the function `(\w+)`")
_JUDGE = "Answer Yes or No."
_ASSERT = re.compile(r"^\s*assert candidate\((.*)\) == (.+)$")


class SimulatedCodePolicy(CharTokenizer):
    """AsyncEngine protocol over a scripted, seeded fake code writer for `task`'s problems (see the module
    docstring)."""

    def __init__(self, task: Any, *, seed: int = 0, p_correct: float = 0.4, p_wrong_test: float = 0.2,
                 p_wrong_judge: float = 0.0) -> None:
        self.task = task
        self.rng = random.Random(seed)
        self.p_correct, self.p_wrong_test, self.p_wrong_judge = p_correct, p_wrong_test, p_wrong_judge
        self.requests: list[str] = []
        """The text of every prompt, as the policy received it."""
        self.generated_tokens = 0

    def describe(self) -> dict[str, Any]:
        return {"backend": "simulator"}

    async def close(self) -> None:
        return None

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Generation:
        ids = self.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        await asyncio.sleep(0)
        text = self.detokenize(ids)
        self.requests.append(text)
        problem = next(p for p in self.task.problems() if p.question.strip() in text)
        if _JUDGE in text:
            return self._judge(problem, text, ids)
        asked = _TESTS_FOR.search(text)
        write = self._tests if asked else self._solution
        completions = []
        for _ in range(params.n):
            reply = write(problem)[: params.max_tokens]
            whole = len(reply) < params.max_tokens
            token_ids = (*self.tokenize(reply), EOS) if whole else tuple(self.tokenize(reply))
            completions.append(Completion(text=reply, token_ids=token_ids, finish_reason="stop" if whole else "length"))
        self.generated_tokens += sum(c.num_tokens for c in completions)
        return Generation(completions=tuple(completions), prompt_tokens=len(ids))

    def _judge(self, problem: Any, text: str, ids: list[int]) -> Generation:
        shown = text.partition("Solution:")[2]
        right = problem.reference.strip() in shown
        if self.rng.random() < self.p_wrong_judge:
            right = not right
        verdict, other = ("Yes", "No") if right else ("No", "Yes")
        token = tuple(self.tokenize(verdict))[:1]
        self.generated_tokens += len(token)
        top = ({verdict: math.log(0.9), other: math.log(0.1)},)
        completion = Completion(text=verdict, token_ids=token, logprobs=(math.log(0.9),), top_logprobs=top,
                                finish_reason="length")
        return Generation(completions=(completion,), prompt_tokens=len(ids))

    def _solution(self, problem: Any) -> str:
        code = problem.reference
        if self.rng.random() >= self.p_correct:
            head = code.split("\n", 1)[0]
            code = f"{head}\n    return {self.rng.choice(['None', '0', '-1', repr('')])}\n"
        return f"Here is the function.\n\n```python\n{code}```"

    def _tests(self, problem: Any) -> str:
        name = problem.meta["entry_point"]
        lines = []
        for line in problem.meta["test"].splitlines():
            match = _ASSERT.match(line)
            if match is None:
                continue
            expected = match.group(2)
            if self.rng.random() < self.p_wrong_test:
                expected = f"{expected} if False else {self.rng.randint(1000, 9999)}"
            lines.append(f"assert {name}({match.group(1)}) == {expected}")
        return "```python\n" + "\n".join(lines) + "\n```"
