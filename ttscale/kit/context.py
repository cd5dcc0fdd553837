"""The per-problem context a strategy receives: its engine door, metered by the problem's ledger.

A strategy never calls the engine directly: `ctx.generate` reserves the request's worst case
in the ledger (lowering max_tokens or n to what is left), sends it, and settles the true cost.
So every strategy is budget-safe by construction, however it is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from ttscale.budget import Budget, Ledger, Role
from ttscale.engine.base import context_length, watched_generate
from ttscale.evals.base import extraction_of
from ttscale.kit.stages import StageResult, StageStore
from ttscale.schema import Completion, Generation, Problem, Sample, SamplingParams

T = TypeVar("T")
Scorer = Callable[[Sequence[int]], Awaitable[tuple[T, int]]]

if TYPE_CHECKING:
    from ttscale.engine.base import AsyncEngine, Prompt, TokenWatch
    from ttscale.evals.base import Task
    from ttscale.sandbox import Execution, Sandbox


class Context:
    """Everything one problem's strategy may use: the prompt, the metered engine, the task's grader."""

    def __init__(
        self, *, problem: Problem, task: Task, engine: AsyncEngine, ledger: Ledger, stages: StageStore | None = None
    ) -> None:
        self.problem = problem
        self.task = task
        self.engine = engine
        self.ledger = ledger
        """The problem's ledger: `remaining`, `exhausted`, `affordable_samples(max_tokens)`."""
        self.stages = stages if stages is not None else StageStore()
        """The run's shared stages (`shared_stage`); a bare context keeps its own, in memory."""
        self._prompt: list[int] | None = None

    def prompt(self) -> list[int]:
        """Token ids of the problem asked through the task's template and the model's chat template."""
        if self._prompt is None:
            self._prompt = self.engine.chat_prompt(self.task.messages(self.problem))
        return self._prompt

    async def generate(
        self,
        prompt: Prompt,
        params: SamplingParams,
        *,
        role: Role = "policy",
        phase: str | None = None,
        watch: TokenWatch | None = None,
    ) -> Generation:
        """Metered generation: never more than the budget allows; no completions once it is spent.

        `phase` names what the tokens are for (`thinking`, `answer`): the ledger counts each phase's generated
        tokens apart (`<phase>_tokens` in the record), as the engine returned them.
        `watch` streams one sample (n = 1, logprobs > 0) and is called with each token's confidence as it arrives;
        when it returns True the engine aborts the request there (finish "abort"), and the ledger settles the
        tokens generated until then. Engines that cannot stream (a served model) refuse it with a TypeError.
        """
        streaming = watched_generate(self.engine) if watch is not None else None  # refused before any reservation
        ids: Sequence[int] = self.engine.tokenize(prompt) if isinstance(prompt, str) else prompt
        room = self.room(len(ids))
        if room < 1:  # the prompt alone fills the model's context: nothing can be generated
            self.ledger.tally("context_cut_requests")
            return Generation(completions=(), prompt_tokens=len(ids))
        capped = params.max_tokens > room
        if capped:
            params = replace(params, max_tokens=room)
        reservation = self.ledger.reserve(params, prompt_tokens=len(ids), role=role)
        if reservation is None:
            return Generation(completions=(), prompt_tokens=len(ids))
        assert reservation.params is not None
        generation: Generation | None = None
        try:
            if streaming is None:
                generation = await self.engine.generate(ids, reservation.params)
            else:
                generation = await streaming(ids, reservation.params, watch=watch)
        finally:
            self.ledger.settle(reservation, generation)
        if phase is not None:
            self.ledger.tally(f"{phase}_tokens", sum(c.num_tokens for c in generation.completions))
        if capped:  # samples that ran into the model's context limit, not into the max_tokens asked for
            cut = sum(c.finish_reason == "length" and c.num_tokens >= room for c in generation.completions)
            if cut:
                self.ledger.tally("context_cut_samples", cut)
        return generation

    async def score(self, prompt: Sequence[int], scorer: Scorer[T], *, role: Role = "verifier") -> T | None:
        """Metered scoring request (a reward model's forward pass); None when the budget cannot pay for it.

        `scorer(prompt)` returns its result and the prompt tokens its engine served from cache.
        """
        reservation = self.ledger.reserve_prompt(prompt_tokens=len(prompt), role=role)
        if reservation is None:
            return None
        generation: Generation | None = None
        try:
            result, cached = await scorer(prompt)
            generation = Generation(completions=(), prompt_tokens=len(prompt), cached_prompt_tokens=cached)
        finally:
            self.ledger.settle(reservation, generation)
        return result

    async def execute(
        self, *, program: str, test: str, entry_point: str | None = None, sandbox: Sandbox | None = None
    ) -> Execution:
        """Run model-written `program` against `test` in the task's sandbox (a code task's) or `sandbox`, metered.

        The ledger counts executions and their wall seconds as a unit of their own (`executions`,
        `execution_seconds` in the record): a strategy that runs code spends compute that tokens do not show.
        """
        sandbox = sandbox or getattr(self.task, "sandbox", None)
        if sandbox is None:
            raise TypeError(f"task {self.task.name!r} runs no code: executing needs a code task (humaneval, code, ...)")
        execution: Execution = await sandbox.run_async(program=program, test=test, entry_point=entry_point)
        self.ledger.tally("executions")
        self.ledger.extra["execution_seconds"] = round(
            self.ledger.extra.get("execution_seconds", 0.0) + execution.seconds, 4
        )
        return execution

    async def shared_stage(
        self, key: str, *, budget: Budget, run: Callable[[Context], Awaitable[dict[str, Any]]]
    ) -> StageResult:
        """Work the problems of a run share, done once per `key` (see ttscale.kit.stages): `run(stage_ctx)` computes it
        on a context of its own, metered by a ledger of `budget` (not this problem's) and seeded by the key, so
        the result is the same whichever problem asks first. Stored with the run; a resumed run reuses it."""

        async def compute() -> tuple[dict[str, Any], dict[str, Any]]:
            ledger = Ledger(budget, costing=self.ledger.costing)
            for_problem = getattr(self.engine, "for_problem", None)
            engine = for_problem(f"stage\x00{key}") if for_problem is not None else self.engine
            stage = Context(problem=self.problem, task=self.task, engine=engine, ledger=ledger, stages=self.stages)
            value = await run(stage)
            return value, ledger.to_dict()

        return await self.stages.once(key, compute)

    def room(self, prompt_tokens: int) -> int:
        """Tokens the engine can still generate after this prompt (its max_model_len bounds prompt + output)."""
        # A started engine reports the limit in force; an unstarted config's -1 or None is no number to count with.
        limit = context_length(getattr(getattr(self.engine, "config", None), "max_model_len", None))
        return limit - prompt_tokens if limit else 1 << 30

    def sample(
        self, completion: Completion, *, score: float | None = None, confidences: bool = False, stopped: bool = False
    ) -> Sample:
        """A finished candidate: the completion with its extracted answer and a selection score (`confidences`:
        with its token confidences kept, rounded; `stopped`: marked as stopped early, its answer unused)."""
        answer, rule = extraction_of(self.task, completion.text)
        kept = None
        if confidences and completion.confidences is not None:
            kept = tuple(round(c, 3) for c in completion.confidences)
        return Sample(
            text=completion.text,
            answer=answer,
            num_tokens=completion.num_tokens,
            score=score,
            finish_reason=completion.finish_reason,
            extraction=rule,
            confidences=kept,
            stopped=stopped,
        )
