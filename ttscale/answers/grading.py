"""Answer equivalence: `math_equal(prediction, reference)`, bounded in time on any input.

Three stages, cheapest first (a prediction passed as a sentence that states its answer, "The
answer is 5", is first reduced to that answer; one that states none is not guessed at):

1. in process, microseconds: light canonical forms and exact rational literals decide most pairs
   (`025` = `25`, `\\dfrac{1}{2}` = `0.5`, `24` ≠ `25`) — see `canonical.py`;
2. in process, microseconds: inputs that are too long, too deeply nested, or write astronomic
   literals (`10^{10^{10^{10}}}`) are refused: False; so is prose or code (words the reference does
   not use: "it is 12 apples, not 5" is not the answer 5, and a symbolic parser would read
   `banana 0` as a product equal to 0);
3. everything else goes to math-verify in a pool of worker processes, each call with a deadline;
   a worker that overruns is killed and replaced, and the call answers False.

No stage ever evaluates model text as code. `cross_check` re-grades with an independent string
normalizer (`normalize.py`) so run summaries can report how often the two disagree.
"""

from __future__ import annotations

import asyncio
import collections
import importlib.util
import math
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ttscale.answers.canonical import fast_verdict, nesting_depth, prose_words, too_large, unsupported_words
from ttscale.answers.extract import extract, math_spans
from ttscale.answers.normalize import normalized_equal
from ttscale.answers.pool import GraderPool, Outcome, PoolConfig

DEFAULT_TIMEOUT = 5.0


class GraderUnavailableError(ImportError):
    """math-verify is not installed (it comes with `ttscale[cpu]` and `ttscale[gpu]`)."""


@dataclass(frozen=True, kw_only=True)
class GraderConfig:
    """How answers are graded. The defaults suit short extracted answers."""

    workers: int = 2
    """math-verify worker processes."""
    max_chars: int = 10_000
    """Longer predictions or references are refused (False) without parsing."""
    max_depth: int = 40
    """Deeper nesting of `{}`, `()`, `[]` is refused (False): 500 nested `\\frac` never reach sympy."""
    memory_limit_mb: int | None = 2048
    """Address-space cap per worker process (None: unlimited)."""
    fast_path: bool = True
    """Decide plain numbers and identical canonical forms in process (off: every pair goes to math-verify)."""
    cache_size: int = 16_384
    """Verdicts remembered per (prediction, reference) pair; 0 disables the cache."""

    def __post_init__(self) -> None:
        PoolConfig(workers=self.workers, memory_limit_mb=self.memory_limit_mb)  # validates those two
        if not isinstance(self.max_chars, int) or self.max_chars < 16:
            raise ValueError(f"max_chars must be an integer ≥ 16, got {self.max_chars!r}")
        if not isinstance(self.max_depth, int) or self.max_depth < 1:
            raise ValueError(f"max_depth must be an integer ≥ 1, got {self.max_depth!r}")
        if not isinstance(self.cache_size, int) or self.cache_size < 0:
            raise ValueError(f"cache_size must be an integer ≥ 0, got {self.cache_size!r}")


@dataclass
class GradingStats:
    """Where a grader's verdicts came from (for run summaries and benchmarks)."""

    calls: int = 0
    """Pairs graded."""
    cached: int = 0
    """Answered from the verdict cache."""
    fast: int = 0
    """Decided in process by the exact/numeric path."""
    refused: int = 0
    """Refused as hostile or oversized (False)."""
    prose: int = 0
    """Refused as a sentence or code rather than an answer: words the reference does not use (False)."""
    worker: int = 0
    """Handed to the math-verify worker pool (whatever came of it: the next three count failures)."""
    timeouts: int = 0
    """math-verify overran the timeout (False; worker replaced)."""
    late: int = 0
    """The call's deadline passed while waiting for a busy worker (False)."""
    errors: int = 0
    """math-verify raised or its worker died (False)."""

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class Grader:
    """A math answer grader with its own worker pool. `math_equal` uses a shared default one."""

    def __init__(self, config: GraderConfig | None = None) -> None:
        self.config = config or GraderConfig()
        self._pool: GraderPool | None = None
        self._pool_lock = threading.Lock()
        self._cache: collections.OrderedDict[tuple[str, str], bool | float] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._stats = GradingStats()

    def equal(self, prediction: str | None, reference: str | int, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
        """Whether `prediction` is mathematically equal to `reference`; returns within `timeout` seconds.

        Starting the worker pool (once, on the first pair that needs it) is not counted.
        """
        return self._grade([(prediction, reference)], timeout=timeout, single=True)[0]

    def equal_many(
        self,
        pairs: Iterable[tuple[str | None, str | int]],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        within: float | None = None,
    ) -> list[bool]:
        """Grade many pairs on all workers at once; each pair gets at most `timeout` seconds of a worker.

        `within` bounds the whole call (seconds, worker start-up excepted): pairs no worker reached by
        then are False (counted as `late`). None = no bound beyond each pair's own.
        """
        if within is not None:
            _check_timeout(within)
        return self._grade(list(pairs), timeout=timeout, single=False, within=within)

    async def equal_async(
        self, prediction: str | None, reference: str | int, *, timeout: float = DEFAULT_TIMEOUT
    ) -> bool:
        """`equal` for asyncio code: runs in a thread, so the event loop keeps serving."""
        return await asyncio.to_thread(self.equal, prediction, reference, timeout=timeout)

    def stats(self) -> GradingStats:
        """A copy of the counters so far (worker restarts are `restarts()`)."""
        with self._lock:
            return GradingStats(**self._stats.as_dict())

    def restarts(self) -> int:
        """Worker processes killed and replaced so far."""
        return self._pool.restarts if self._pool is not None else 0

    def start(self) -> None:
        """Start the worker pool now rather than on the first pair that needs it."""
        self._ensure_pool()

    def close(self) -> None:
        """Stop the worker processes (a later call starts new ones)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------------

    def _grade(
        self, pairs: list[tuple[str | None, str | int]], *, timeout: float, single: bool, within: float | None = None
    ) -> list[bool]:
        start = time.monotonic()
        _check_timeout(timeout)
        _require_math_verify()
        verdicts: list[bool | None] = [None] * len(pairs)
        todo: list[int] = []
        pairs = [(_answer_of(prediction), reference) for prediction, reference in pairs]
        for i, (prediction, reference) in enumerate(pairs):
            verdicts[i] = self._in_process(prediction, reference, timeout)
            if verdicts[i] is None:
                todo.append(i)
        if todo:
            if self._pool is None or not self._pool.usable:  # starting workers is not part of any deadline
                self._ensure_pool()
                start = time.monotonic()
            pool = self._ensure_pool()
            # A single call must return within `timeout`: keep a little of it for killing an
            # overrunning worker and recording the verdict.
            deadline = start + timeout - min(0.05, 0.05 * timeout) if single else None
            if within is not None:
                deadline = start + within
            jobs = [(str(pairs[i][0]), _as_text(pairs[i][1])) for i in todo]
            for i, job, outcome in zip(todo, jobs, pool.run(jobs, timeout=timeout, deadline=deadline), strict=True):
                verdicts[i] = outcome == "equal"
                self._record(job, outcome, timeout)
        return [bool(v) for v in verdicts]

    def _in_process(self, prediction: str | None, reference: object, timeout: float) -> bool | None:
        """The verdict of stages 1-2 (and the cache), or None when math-verify must decide."""
        reference = _as_text(reference)
        with self._lock:
            self._stats.calls += 1
        if prediction is None:
            return False
        if not isinstance(prediction, str):
            raise TypeError(f"prediction must be a str or None, got {type(prediction).__name__}")
        limit = self.config.max_chars
        if len(prediction) > limit or len(reference) > limit:
            return self._count("refused", False)
        cached = self._cache_get((prediction, reference), timeout)
        if cached is not None:
            return cached
        if self.config.fast_path:
            verdict = fast_verdict(prediction, reference)
            if verdict is not None:
                return self._count("fast", verdict)
        if unsupported_words(prediction, reference):
            return self._count("prose", False)
        if (
            nesting_depth(prediction) > self.config.max_depth
            or nesting_depth(reference) > self.config.max_depth
            or too_large(prediction)
            or too_large(reference)
        ):
            return self._count("refused", False)
        return None

    def _count(self, stage: str, verdict: bool) -> bool:
        with self._lock:
            setattr(self._stats, stage, getattr(self._stats, stage) + 1)
        return verdict

    def _record(self, job: tuple[str, str], outcome: Outcome, timeout: float) -> None:
        extra = {"timeout": "timeouts", "late": "late", "error": "errors"}.get(outcome)
        with self._lock:
            self._stats.worker += 1
            if extra is not None:
                setattr(self._stats, extra, getattr(self._stats, extra) + 1)
            # Verdicts are remembered; so is a full overrun (as the timeout it used up), so a
            # self-consistency pool that repeats a pathological answer 64 times pays once.
            if self.config.cache_size and outcome in ("equal", "different", "timeout"):
                self._cache[job] = outcome == "equal" if outcome != "timeout" else timeout
                self._cache.move_to_end(job)
                while len(self._cache) > self.config.cache_size:
                    self._cache.popitem(last=False)

    def _cache_get(self, key: tuple[str, str], timeout: float) -> bool | None:
        if not self.config.cache_size:
            return None
        with self._lock:
            value = self._cache.get(key)
            if value is None:
                return None
            if not isinstance(value, bool) and timeout > value:
                return None  # it overran a shorter timeout: this call may give it more time
            self._cache.move_to_end(key)
            self._stats.cached += 1
        return value if isinstance(value, bool) else False

    def _ensure_pool(self) -> GraderPool:
        with self._pool_lock:
            if self._pool is None or not self._pool.usable:  # first use, or inherited by a fork
                pool = GraderPool(PoolConfig(workers=self.config.workers, memory_limit_mb=self.config.memory_limit_mb))
                pool.start()
                self._pool = pool
            return self._pool


def _answer_of(prediction: str | None) -> str | None:
    """A prediction that is a sentence stating its answer ("The answer is $5$", "so \\boxed{5}.") -> that answer.

    Predictions are meant to be extracted answers already; this only rescues callers that pass a
    sentence, with the rules that name an answer (a box, `#### N`, "answer is") or a sentence's only
    math span ("we get $1/2$"), never the last number or the last of several spans ("$x=2$ or $x=5$"):
    a sentence that states no single answer stays as it is, and is refused.
    """
    if not isinstance(prediction, str) or len(prediction) > 2_000 or not prose_words(prediction):
        return prediction
    found = extract(prediction)
    if found.answer is None:
        return prediction
    if found.rule in ("boxed", "hashes", "answer_phrase"):
        return found.answer
    return found.answer if found.rule == "math_span" and len(math_spans(prediction)) == 1 else prediction


def _as_text(reference: object) -> str:
    """References may be stored as integers (AIME answers); anything else must be a string."""
    if isinstance(reference, bool) or not isinstance(reference, str | int):
        raise TypeError(f"reference must be a str (or int), got {type(reference).__name__}")
    return str(reference)


def _check_timeout(timeout: float) -> None:
    if not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")


_MATH_VERIFY: bool | None = None


def math_verify_available() -> bool:
    """Whether math-verify is installed (looked up once)."""
    global _MATH_VERIFY
    if _MATH_VERIFY is None:
        _MATH_VERIFY = importlib.util.find_spec("math_verify") is not None
    return _MATH_VERIFY


def _require_math_verify() -> None:
    if not math_verify_available():
        raise GraderUnavailableError(
            "grading math answers needs math-verify: pip install 'math-verify>=0.7' "
            "(it comes with ttscale[cpu] and ttscale[gpu])"
        )


# -- the shared default grader ---------------------------------------------------------------

_default: Grader | None = None
_default_lock = threading.Lock()


def default_grader() -> Grader:
    """The process-wide grader behind `math_equal` (created on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Grader()
        return _default


def configure_grader(config: GraderConfig) -> Grader:
    """Replace the default grader (e.g. more workers on a big machine); the old one is closed."""
    global _default
    with _default_lock:
        old, _default = _default, Grader(config)
    if old is not None:
        old.close()
    return _default


def math_equal(prediction: str, reference: str, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Whether `prediction` and `reference` are the same mathematical answer.

    Bounded: returns within `timeout` seconds whatever the input (False when it cannot decide
    in time), from any thread. Never evaluates the text as code. Starting the worker processes
    on first use is not counted in `timeout`.
    """
    return default_grader().equal(prediction, reference, timeout=timeout)


def math_equal_many(
    pairs: Iterable[tuple[str | None, str | int]], *, timeout: float = DEFAULT_TIMEOUT, within: float | None = None
) -> list[bool]:
    """`math_equal` over many pairs, using every worker; each pair is bounded by `timeout`, the call by `within`."""
    return default_grader().equal_many(pairs, timeout=timeout, within=within)


async def math_equal_async(prediction: str, reference: str, *, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """`math_equal` for asyncio code (the event loop is not blocked)."""
    return await default_grader().equal_async(prediction, reference, timeout=timeout)


# -- cross-checking --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CrossCheckReport:
    """How often the main grader and the independent normalizer disagree."""

    total: int
    """Pairs compared (pairs without a prediction are skipped: both say False)."""
    disagreements: int
    rate: float
    """disagreements / total (0.0 when total is 0)."""
    grader_only: int
    """Pairs the main grader accepts and the normalizer rejects (usually the normalizer's blind spots)."""
    normalizer_only: int
    """Pairs the normalizer accepts and the main grader rejects (worth a look: possible grader misses)."""
    examples: tuple[tuple[str, str, bool], ...] = field(default=())
    """Up to `max_examples` disagreements as (prediction, reference, main grader's verdict)."""


def cross_check(
    pairs: Sequence[tuple[str | None, str | int]],
    *,
    verdicts: Sequence[bool] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_examples: int = 20,
) -> CrossCheckReport:
    """Re-grade `pairs` with the independent normalizer and count disagreements with `math_equal`.

    Pass the run's `verdicts` (same order as `pairs`) to avoid grading twice.
    """
    if verdicts is None:
        verdicts = math_equal_many(pairs, timeout=timeout)
    if len(verdicts) != len(pairs):
        raise ValueError(f"verdicts has {len(verdicts)} entries for {len(pairs)} pairs")
    total = grader_only = normalizer_only = 0
    examples: list[tuple[str, str, bool]] = []
    for (prediction, reference), verdict in zip(pairs, verdicts, strict=True):
        if prediction is None:
            continue
        total += 1
        other = normalized_equal(prediction, str(reference))
        if other == bool(verdict):
            continue
        grader_only += bool(verdict)
        normalizer_only += other
        if len(examples) < max_examples:
            examples.append((prediction, str(reference), bool(verdict)))
    wrong = grader_only + normalizer_only
    return CrossCheckReport(
        total=total,
        disagreements=wrong,
        rate=wrong / total if total else 0.0,
        grader_only=grader_only,
        normalizer_only=normalizer_only,
        examples=tuple(examples),
    )
