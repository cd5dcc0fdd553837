"""The engine as one problem sees it: every request seeded for that problem, and counted for the progress bar."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ttscale.engine.base import AsyncEngine, Prompt, TokenWatch, watched_generate
from ttscale.running.progress import Progress
from ttscale.schema import Generation, SamplingParams


class SeededEngine:
    """The engine as one problem sees it: each request carries a seed of its own.

    The seed hashes the run seed, the problem id, the request (prompt and sampling parameters) and
    how many identical requests this problem made before. It does not depend on which engine serves
    the problem, what else that engine batches, or in which order concurrent requests arrive, so a
    problem's samples are the same with 1 worker or 8 and when a dead worker's problem is redone.
    """

    def __init__(self, engine: AsyncEngine, *, run_seed: int, problem_id: str,
                 progress: Progress | None = None) -> None:
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
