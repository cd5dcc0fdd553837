"""The vocabulary of ttscale: what a problem, a sample, an answer and a run record are.

Everything here is plain data (frozen dataclasses, JSON-friendly), so it can cross
process boundaries, be written as JSON lines, and be read back without unpickling.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

FinishReason = Literal["stop", "length", "budget", "abort"]


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One question of a task, with its reference answer."""

    id: str
    """Stable identifier, unique within the task (used to resume runs)."""
    question: str
    """The question as shown to the model (before the task's prompt template)."""
    reference: str
    """The reference answer, as the task's grader expects it."""
    level: int | None = None
    """Difficulty level when the task has one (arithmetic 1-5, MATH 1-5)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Anything else the task keeps (subject, source row, ...)."""


@dataclass(frozen=True, kw_only=True)
class SamplingParams:
    """What one engine request asks for. Validated here, so engines can trust it."""

    n: int = 1
    """Number of independent samples of the same prompt."""
    temperature: float = 0.8
    """Softmax temperature; 0 is greedy."""
    top_p: float = 1.0
    """Nucleus sampling mass, in (0, 1]."""
    max_tokens: int = 256
    """Generated tokens per sample at most (the ledger may lower it to fit the budget)."""
    stop: tuple[str, ...] = ()
    """Strings that end a sample; the stop string itself is not included in the text."""
    logprobs: int | None = None
    """Return the log-probability of each sampled token and this many top alternatives (0 = only the sampled one)."""
    # Not in the repr: a request's seed hashes its repr (SeededEngine), and every stored run's seeds stay as they were.
    regex: str | None = field(default=None, repr=False)
    """Constrain every sample to match this regular expression whole (vLLM's structured outputs: a reply in a
    given JSON shape, with no room for the runs of blank lines a small model fills a free JSON schema with).
    None = free text."""

    def __post_init__(self) -> None:
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except (TypeError, re.error) as exc:
                raise ValueError(f"regex must be a regular expression, got {self.regex!r:.80} ({exc})") from None
        if not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"n must be ≥ 1, got {self.n!r}")
        if not (isinstance(self.temperature, int | float) and math.isfinite(self.temperature)) or (
            self.temperature < 0
        ):
            raise ValueError(f"temperature must be a finite number ≥ 0, got {self.temperature!r}")
        if self.temperature == 0 and self.n > 1:
            raise ValueError(
                f"n must be 1 when temperature is 0 (greedy samples are identical), got {self.n}"
            )
        if not (0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise ValueError(f"max_tokens must be ≥ 1, got {self.max_tokens!r}")
        if self.logprobs is not None and (not isinstance(self.logprobs, int) or not 0 <= self.logprobs <= 20):
            raise ValueError(f"logprobs must be None or an integer in [0, 20], got {self.logprobs!r}")
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        if any(not isinstance(s, str) or not s for s in self.stop):
            raise ValueError(f"stop must be non-empty strings, got {self.stop!r}")


@dataclass(frozen=True, kw_only=True)
class Completion:
    """One sample returned by the engine."""

    text: str
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...] | None = None
    """Log-probability of each sampled token, when requested."""
    top_logprobs: tuple[dict[str, float], ...] | None = None
    """Per position, the top alternatives (decoded token → log-probability), when requested with logprobs > 0."""
    finish_reason: FinishReason = "stop"
    confidences: tuple[float, ...] | None = None
    """Per position, DeepConf's token confidence (`ttscale.engine.confidence.token_confidence` of every candidate the
    engine returned there, computed from its raw log-probs: two candidates that decode alike both count), when
    requested with logprobs > 0."""

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def mean_logprob(self) -> float | None:
        """Mean token log-probability: the confidence score of best-of-N without a verifier."""
        if not self.logprobs:
            return None
        return sum(self.logprobs) / len(self.logprobs)


@dataclass(frozen=True, kw_only=True)
class Generation:
    """The engine's answer to one request: the prompt's accounting plus n completions."""

    completions: tuple[Completion, ...]
    prompt_tokens: int
    """Tokens in the prompt."""
    cached_prompt_tokens: int = 0
    """Prompt tokens whose KV came from the engine's prefix cache (not recomputed)."""


@dataclass(frozen=True, kw_only=True)
class Sample:
    """A finished candidate solution as a strategy keeps it (what results.jsonl stores)."""

    text: str
    answer: str | None
    """The answer the task extracted from the text (None when there is none)."""
    num_tokens: int
    score: float | None = None
    """The selection score the strategy used (mean log-prob, verifier score, ...)."""
    finish_reason: FinishReason = "stop"
    extraction: str | None = None
    """The rule that found `answer` (`boxed`, `hashes`, `answer_phrase`, `math_span`, `final_number`), or None."""
    correct: bool | None = None
    """Whether `answer` is right by the task's grader: set in the record the run writes (None before grading)."""
    confidences: tuple[float, ...] | None = None
    """Per token, DeepConf's token confidence (3 decimals, as the reference rounds), kept by strategies that vote
    by confidence so a stored pool can be re-scored offline; None (and absent from results.jsonl) otherwise."""
    stopped: bool = False
    """Stopped early by the strategy (DeepConf's confidence threshold): its tokens are paid, its answer unused.
    Written only when True."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict (what results.jsonl stores); `dataclasses.asdict` deep-copies every
        field, which made it the harness's largest cost per problem at GPU rates."""
        fields = dict(vars(self))
        if fields["confidences"] is None:
            del fields["confidences"]
        else:
            fields["confidences"] = list(fields["confidences"])
        if not fields["stopped"]:
            del fields["stopped"]
        return fields


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What a strategy returns for one problem."""

    prediction: str | None
    """The chosen final answer, or None when the strategy produced none (e.g. no budget)."""
    samples: tuple[Sample, ...] = ()
    """Every finished candidate, so results can be re-evaluated at smaller budgets."""
    info: dict[str, Any] = field(default_factory=dict)
    """Strategy-specific statistics (votes, tree sizes, ...); JSON-serialisable."""


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One line of results.jsonl: a problem, what the strategy answered, and what it cost."""

    id: str
    strategy: str
    prediction: str | None
    reference: str
    correct: bool
    ledger: dict[str, Any]
    samples: list[dict[str, Any]]
    level: int | None = None
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    """Set when the strategy raised: the run goes on and the problem counts as wrong."""
    unfinished: bool = False
    """A passing fault of the server (`error` says which) stopped the problem: the line is kept, but the problem
    is not finished (readers leave it out, `--resume` runs it again). Written only when True."""

    def to_json(self) -> dict[str, Any]:
        """The line as a dict. Its fields are already JSON values, so no `dataclasses.asdict`: that walks and
        deep-copies every sample and was the largest cost per problem of a best-of-N run at GPU rates."""
        line = dict(vars(self))
        if not self.unfinished:  # finished lines stay as they always were
            del line["unfinished"]
        return line
