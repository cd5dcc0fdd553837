"""`prm`: process reward models served by vLLM's pooling runner (Qwen2.5-Math-PRM, Math-Shepherd style).

The PRM reads the solution with a step tag after every step and classifies each tag position;
the step's score is the probability of the positive class. A finished solution (best-of-N,
weighted votes) is cut into steps at `delimiter` and its step scores aggregated (`aggregate`:
last, min, prod or mean), as search-and-learn scores completions. It runs in its own vLLM engine
(`runner="pooling"`), started on first use in the loop that uses it.

Format (Qwen2.5-Math-PRM): system prompt, the question as the user turn, and the steps as the
assistant turn, each followed by the step tag (`<extra_0>` for Qwen). Step scores of a path are
cached per problem, so a growing path is re-scored in one request but never twice the same.

Note (vllm 0.32): token-classification requests skip reading the prefix cache, so every PRM
request recomputes its whole prompt; the ledger records what the engine reports.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ttscale.engine.base import EngineConfig
from ttscale.kit.context import Context
from ttscale.kit.params import check_range
from ttscale.search.score import AGGREGATES, Aggregate, aggregate
from ttscale.search.steps import DEFAULT_DELIMITER, split_steps, unescape

QWEN_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."


@dataclass(kw_only=True)
class PRM:
    """Step scores from a process reward model on its own pooling engine."""

    name: ClassVar[str] = "prm"

    model: str
    """A local folder or hub id of a PRM whose architecture vLLM serves for token classification."""
    step_tag: str = "<extra_0>"
    """The token placed after every step; must be ONE token of the PRM's tokenizer."""
    system: str = QWEN_SYSTEM
    """System prompt of the PRM's chat format."""
    positive_class: int = 1
    """Index of the "step is correct" class in the PRM's output."""
    max_model_len: int = 4096
    """Longest scored prompt, in tokens."""
    kv_cache_gib: float = 1.0
    """CPU only: KV-cache space of the PRM's engine."""
    gpu_memory_utilization: float = 0.3
    """GPU only: the PRM engine's share of the GPU it shares with the policy (the two shares must add up to at
    most ~0.9: e.g. the policy at --gpu-memory-utilization 0.55 and the PRM at 0.3)."""
    engine_args: str = ""
    """More vLLM engine arguments of the PRM's engine, `;`-separated KEY=VALUE (e.g. `quantization=fp8;
    max_num_seqs=64`); typed and checked as `--engine-arg` is."""
    default: float = 0.5
    """Score of a step the PRM could not score (budget spent, or the prompt lost a step tag)."""
    aggregate: Aggregate = "last"
    """How a finished solution's step scores rank it (best-of-N, weighted votes): `last` (search-and-learn's
    default, the PRM's verdict on the whole prefix), `min` (the weakest step), `prod`, or `mean`."""
    delimiter: str = DEFAULT_DELIMITER
    """Where a finished solution is cut into the steps the PRM scores (the search strategies' step delimiter)."""
    _engine: Any = field(default=None, repr=False)
    _step_tag_id: int = field(default=-1, repr=False)
    _starting: asyncio.Lock | None = field(default=None, repr=False)
    _cache: weakref.WeakKeyDictionary[Context, dict[tuple[str, ...], list[float]]] = field(
        default_factory=weakref.WeakKeyDictionary, repr=False
    )

    def __post_init__(self) -> None:
        check_range("default", self.default, 0, 1)
        check_range("gpu_memory_utilization", self.gpu_memory_utilization, 0, 1, low_open=True)
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {self.aggregate!r}")
        self.delimiter = unescape(self.delimiter)
        if not self.delimiter:
            raise ValueError("delimiter must be a non-empty string")
        if self.positive_class not in (0, 1):
            raise ValueError(f"positive_class must be 0 or 1, got {self.positive_class}")

    async def start(self) -> None:
        """Start the PRM's engine (idempotent; concurrent callers wait for one start)."""
        self._starting = self._starting or asyncio.Lock()
        async with self._starting:
            if self._engine is not None:
                return
            from transformers import AutoTokenizer

            from ttscale.engine.models import resolve_model
            from ttscale.engine.vllm import VLLMEngine

            # The tag is checked on the PRM's tokenizer alone (as its engine will tokenize: no special tokens), so a
            # bad one is refused in a second instead of after an engine start.
            tokenizer = await asyncio.to_thread(AutoTokenizer.from_pretrained, resolve_model(self.model))
            ids = list(tokenizer.encode(self.step_tag, add_special_tokens=False))
            if len(ids) != 1:
                raise ValueError(f"step_tag {self.step_tag!r} must be one token of the PRM's tokenizer, got {ids}")
            self._engine = await VLLMEngine.start(self.engine_config())
            self._step_tag_id = ids[0]

    def engine_config(self) -> EngineConfig:
        """The PRM engine's settings, its `engine_args` typed and checked by name against the installed vLLM's
        (a one-line EngineArgError naming the closest names), as `--engine-arg` is; imports vLLM when there are any."""
        from ttscale.engine.args import parse_engine_args

        extra = parse_engine_args([item for item in self.engine_args.split(";") if item.strip()])
        return EngineConfig(model=self.model, runner="pooling", max_model_len=self.max_model_len,
                            kv_cache_gib=self.kv_cache_gib, gpu_memory_utilization=self.gpu_memory_utilization,
                            engine_args=extra)

    async def close(self) -> None:
        if self._engine is not None:
            await self._engine.close()
            self._engine = None

    async def score_steps(self, ctx: Context, candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        await self.start()
        cache = self._cache.setdefault(ctx, {})
        todo = sorted({tuple(steps) for steps in candidates if steps and tuple(steps) not in cache})
        rows = await asyncio.gather(*(self._score_path(ctx, path) for path in todo))
        cache.update(zip(todo, rows, strict=True))
        return [cache[tuple(steps)] if steps else [] for steps in candidates]

    async def score_outcomes(self, ctx: Context, solutions: Sequence[str]) -> list[float]:
        # A finished solution is scored as the searches score a path: step by step, then aggregated.
        paths = [split_steps(s, delimiter=self.delimiter) or [s] for s in solutions]
        scored = await self.score_steps(ctx, paths)
        return [aggregate(row, self.aggregate) if row else self.default for row in scored]

    async def _score_path(self, ctx: Context, steps: tuple[str, ...]) -> list[float]:
        prompt = self._prompt(ctx.problem.question, steps)
        rows = await ctx.score(prompt, lambda ids: self._engine.token_scores(ids, step_tag_id=self._step_tag_id))
        if rows is None or len(rows) != len(steps):  # budget spent, or truncated past a tag
            return [self.default] * len(steps)
        return [_softmax(row)[self.positive_class] for row in rows]

    def _prompt(self, question: str, steps: Sequence[str]) -> list[int]:
        # A step that contains the tag itself would shift every later score: drop it from the text.
        body = "".join(step.replace(self.step_tag, " ").strip() + self.step_tag for step in steps)
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": question},
            {"role": "assistant", "content": body},
        ]
        prompt: list[int] = self._engine.chat_prompt(messages, add_generation_prompt=False)
        return prompt


def _softmax(row: Sequence[float]) -> list[float]:
    """Probabilities from logits (vLLM may already return probabilities: then the row sums to 1)."""
    if len(row) == 2 and all(0.0 <= x <= 1.0 for x in row) and abs(sum(row) - 1.0) < 1e-4:
        return list(row)
    top = max(row)
    exps = [math.exp(x - top) for x in row]
    total = sum(exps)
    return [e / total for e in exps]
