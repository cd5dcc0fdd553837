"""The engine as one problem's strategy sees it: a `Context`, metered by the problem's ledger, over a
`SeededEngine`, seeded for the problem.

A strategy never calls the engine directly: `ctx.generate` reserves the request's worst case
in the ledger (lowering max_tokens or n to what is left), sends it, and settles the true cost.
So every strategy is budget-safe by construction, however it is written. Its requests reach the
engine through the problem's `SeededEngine` (`ctx.engine`), which gives each one a seed of the
problem's own, so its samples do not depend on what else the engine serves.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ttscale.budget import Budget, Ledger, Role
from ttscale.engine.base import AsyncEngine, Prompt, TokenWatch, context_length, watched_generate
from ttscale.evals.base import extraction_of
from ttscale.kit.stages import StageResult, StageStore
from ttscale.schema import Completion, Generation, Problem, Sample, SamplingParams

T = TypeVar("T")
Scorer = Callable[[Sequence[int]], Awaitable[tuple[T, int]]]

#: No tokenizer packs more characters than this into one token on average (long runs of one character merge to 16
#: or so): a text longer than max_model_len × this cannot fit.
_MAX_CHARS_PER_TOKEN = 100

if TYPE_CHECKING:
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
            messages = self.task.messages(self.problem)
            self._refuse_unfit(sum(len(str(m.get("content") or "")) for m in messages), "the problem's messages have")
            self._prompt = self.engine.chat_prompt(messages)
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
        ids: Sequence[int]
        if isinstance(prompt, str):
            self._refuse_unfit(len(prompt), "the prompt has")
            ids = self.engine.tokenize(prompt)
        else:
            ids = prompt
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
        limit = self._context_length()
        return limit - prompt_tokens if limit else 1 << 30

    def _context_length(self) -> int | None:
        # A started engine reports the limit in force; an unstarted config's -1 or None is no number to count with.
        return context_length(getattr(getattr(self.engine, "config", None), "max_model_len", None))

    def _refuse_unfit(self, characters: int, what: str) -> None:
        """Refuse a text that cannot fit the engine's context before it is tokenized: 100 MB of text takes minutes
        (the problem's error, as any strategy error is)."""
        limit = self._context_length()
        if limit and characters > limit * _MAX_CHARS_PER_TOKEN:
            raise ValueError(f"{what} {characters:,} characters: too long for any prompt of max_model_len={limit} "
                             "tokens")

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


class RequestCounter(Protocol):
    """What counts requests as they come and go (the progress bar: `ttscale.running.progress.Progress`)."""

    def request_started(self) -> None: ...

    def request_finished(self, generated_tokens: int) -> None: ...


class SeededEngine:
    """The engine as one problem sees it: each request carries a seed of its own.

    The seed hashes the run seed, the problem id, the request (prompt and sampling parameters) and
    how many identical requests this problem made before. It does not depend on which engine serves
    the problem, what else that engine batches, or in which order concurrent requests arrive, so a
    problem's samples are the same with 1 worker or 8 and when a dead worker's problem is redone.
    """

    def __init__(self, engine: AsyncEngine, *, run_seed: int, problem_id: str,
                 progress: RequestCounter | None = None) -> None:
        self._engine = engine
        self._progress = progress
        self._run_seed = run_seed
        self._prefix = f"{run_seed}\x00{problem_id}\x00".encode()
        self._seen: Counter[bytes] = Counter()

    def for_problem(self, problem_id: str) -> SeededEngine:
        """The same engine seeded for another id (a stage that problems share is seeded by its own key)."""
        return SeededEngine(self._engine, run_seed=self._run_seed, problem_id=problem_id, progress=self._progress)

    async def generate(self, prompt: Prompt, params: SamplingParams, *, seed: int | None = None) -> Generation:
        return await self._counted(self._engine.generate, prompt, params, seed=seed)

    async def generate_watched(
        self, prompt: Prompt, params: SamplingParams, *, watch: TokenWatch, seed: int | None = None
    ) -> Generation:
        """`generate`, stopped where `watch` says (see `Context.generate`), seeded the same way."""
        return await self._counted(watched_generate(self._engine), prompt, params, seed=seed, watch=watch)

    async def _counted(self, call: Any, prompt: Prompt, params: SamplingParams, **options: Any) -> Generation:
        if options.get("seed") is None:
            options["seed"] = self.seed_for(prompt, params)
        if self._progress is None:
            generation: Generation = await call(prompt, params, **options)
            return generation
        self._progress.request_started()
        generated = 0
        try:
            generation = await call(prompt, params, **options)
            generated = sum(c.num_tokens for c in generation.completions)
            return generation
        finally:
            self._progress.request_finished(generated)

    def seed_for(self, prompt: Prompt, params: SamplingParams) -> int:
        """The next request's seed (counts it: the same request asked again gets a fresh seed)."""
        if isinstance(prompt, str):
            body = prompt.encode("utf-8", "surrogatepass")
        else:
            body = ",".join(map(str, prompt)).encode()
        key = hashlib.blake2b(body + repr(params).encode(), digest_size=16).digest()
        occurrence = self._seen[key]
        self._seen[key] += 1
        digest = hashlib.blake2b(self._prefix + key + str(occurrence).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") % 2**31  # 31 bits: every server's seed field takes it

    def chat_prompt(self, messages: list[dict[str, str]], *, add_generation_prompt: bool = True) -> list[int]:
        return self._engine.chat_prompt(messages, add_generation_prompt=add_generation_prompt)

    def tokenize(self, text: str) -> list[int]:
        return self._engine.tokenize(text)

    def detokenize(self, token_ids: Sequence[int]) -> str:
        return self._engine.detokenize(token_ids)

    def describe(self) -> dict[str, Any]:
        return self._engine.describe()

    async def close(self) -> None:
        """The problem does not own the engine: closing its view closes nothing."""

    def __getattr__(self, name: str) -> Any:  # backend extras (config, token_scores, ...)
        return getattr(self._engine, name)


__all__ = ["Context", "RequestCounter", "SeededEngine"]
