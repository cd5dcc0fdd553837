"""ttscale.answers.grading: behaviour that the mutation run (tools/mutation) found unchecked.

No worker process is started here: `GraderPool` is replaced by a scripted stand-in that records what the grader
asks of it (the pairs, each pair's timeout, the call's deadline), and the grader's clock by one the test moves,
so the deadline arithmetic and the verdict cache are checked exactly rather than against the wall clock.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import pytest

from ttscale.answers import grading
from ttscale.answers.grading import Grader, GraderConfig, GraderUnavailableError, cross_check
from ttscale.answers.pool import PoolConfig

STARTUP = 50.0
"""Seconds the stand-in pool's start() takes on the fake clock."""


@dataclass
class Run:
    pairs: list[tuple[str, str]]
    timeout: float
    deadline: float | None


class Clock:
    """time.monotonic for the grader: reads `now`, then moves it on by `tick`."""

    def __init__(self) -> None:
        self.now = 100.0
        self.tick = 0.0

    def monotonic(self) -> float:
        value = self.now
        self.now += self.tick
        return value


@dataclass
class World:
    clock: Clock = field(default_factory=Clock)
    pools: list[FakePool] = field(default_factory=list)
    script: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    default: str = "equal"

    def make_pool(self, config: PoolConfig) -> FakePool:
        pool = FakePool(self, config)
        self.pools.append(pool)
        return pool

    @property
    def runs(self) -> list[Run]:
        return [run for pool in self.pools for run in pool.runs]

    def graded(self) -> list[tuple[str, str]]:
        """Every pair handed to a worker so far, in order."""
        return [pair for run in self.runs for pair in run.pairs]


class FakePool:
    """Stands in for GraderPool: answers each pair from the world's script (the last entry repeats)."""

    def __init__(self, world: World, config: PoolConfig) -> None:
        self.world, self.config = world, config
        self.starts = 0
        self.closed = False
        self.forked = False
        self.restarts = 0
        self.runs: list[Run] = []

    def start(self) -> None:
        self.starts += 1
        self.world.clock.now += STARTUP

    @property
    def usable(self) -> bool:
        return not self.closed and not self.forked

    def run(self, pairs: Sequence[tuple[str, str]], *, timeout: float, deadline: float | None = None) -> list[str]:
        self.runs.append(Run(list(pairs), timeout, deadline))
        out = []
        for pair in pairs:
            queue = self.world.script.get(pair, [self.world.default])
            out.append(queue.pop(0) if len(queue) > 1 else queue[0])
        return out

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    w = World()
    monkeypatch.setattr(grading, "GraderPool", w.make_pool)
    monkeypatch.setattr(grading, "time", SimpleNamespace(monotonic=w.clock.monotonic))
    monkeypatch.setattr(grading, "_default", None)  # the test's own default grader; the real one comes back after
    return w


# Pairs the in-process stages cannot decide (no plain numbers, no prose): they go to a worker.
A, B, C = ("x+1", "1+x"), ("x+2", "2+x"), ("x+3", "3+x")


# -- configuration --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_chars": 15}, "max_chars must be an integer ≥ 16, got 15"),
        ({"max_chars": 16.0}, "max_chars must be an integer ≥ 16, got 16.0"),
        ({"max_depth": 0}, "max_depth must be an integer ≥ 1, got 0"),
        ({"cache_size": -1}, "cache_size must be an integer ≥ 0, got -1"),
        ({"cache_size": 1.0}, "cache_size must be an integer ≥ 0, got 1.0"),
    ],
)
def test_config_refuses_values_below_their_minimum(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        GraderConfig(**kwargs)
    assert str(info.value) == message


def test_config_accepts_each_minimum() -> None:
    config = GraderConfig(max_chars=16, max_depth=1, cache_size=0)
    assert (config.max_chars, config.max_depth, config.cache_size) == (16, 1, 0)


def test_the_pool_gets_the_configured_workers_and_memory_cap(world: World) -> None:
    grader = Grader(GraderConfig(workers=3, memory_limit_mb=1024))
    assert grader.restarts() == 0  # no pool yet
    grader.start()
    grader.start()  # already running: nothing new
    assert len(world.pools) == 1 and world.pools[0].starts == 1
    assert world.pools[0].config == PoolConfig(workers=3, memory_limit_mb=1024)
    world.pools[0].restarts = 3
    assert grader.restarts() == 3


def test_a_pool_this_process_cannot_use_is_replaced(world: World) -> None:
    grader = Grader()
    assert grader.equal(*A)
    world.pools[0].forked = True  # e.g. inherited by a forked child
    assert grader.equal(*B)
    assert len(world.pools) == 2 and world.pools[1].runs[0].pairs == [B]


def test_close_stops_the_pool_and_a_later_call_starts_another(world: World) -> None:
    with Grader(GraderConfig(cache_size=0)) as grader:
        assert grader.equal(*A)
        grader.close()
        assert world.pools[0].closed
        assert grader.equal(*A)
    assert len(world.pools) == 2 and world.pools[1].closed


# -- the shared default grader --------------------------------------------------------------------


def test_configure_grader_replaces_the_default_and_closes_the_old_one(world: World) -> None:
    old = grading.default_grader()
    assert isinstance(old, Grader) and grading.default_grader() is old
    old.start()
    config = GraderConfig(workers=1, cache_size=0)
    new = grading.configure_grader(config)
    assert new is grading.default_grader() and new is not old and new.config is config
    assert world.pools[0].closed


def test_math_equal_many_and_async_pass_their_arguments_on(world: World) -> None:
    world.default = "different"
    world.script[("x^2-1", "(x-1)(x+1)")] = ["equal"]
    assert grading.math_equal_many([("x^2-1", "(x-1)(x+1)"), A], timeout=2.5) == [True, False]
    assert world.runs[-1].timeout == 2.5
    world.script[("x^2-4", "(x-2)(x+2)")] = ["equal"]
    assert asyncio.run(grading.math_equal_async("x^2-4", "(x-2)(x+2)", timeout=1.5)) is True
    assert asyncio.run(grading.math_equal_async(*B, timeout=1.5)) is False
    assert [(run.pairs, run.timeout) for run in world.runs[-2:]] == [([("x^2-4", "(x-2)(x+2)")], 1.5), ([B], 1.5)]
    with pytest.raises(ValueError, match="timeout must be"):
        asyncio.run(grading.math_equal_async(*C, timeout=0))


def test_equal_async_passes_its_arguments_on(world: World) -> None:
    grader = Grader(GraderConfig(cache_size=0))
    world.default = "different"
    world.script[A] = ["equal"]
    assert asyncio.run(grader.equal_async(*A, timeout=1.5)) is True
    assert asyncio.run(grader.equal_async(*B, timeout=1.5)) is False
    assert [(run.pairs, run.timeout) for run in world.runs] == [([A], 1.5), ([B], 1.5)]


def test_math_verify_is_looked_up_and_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading, "_MATH_VERIFY", None)
    assert grading.math_verify_available() is True  # installed with the test dependencies
    assert grading._MATH_VERIFY is True


def test_missing_math_verify_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading, "_MATH_VERIFY", False)
    with pytest.raises(GraderUnavailableError) as info:
        Grader().equal("1", "1")
    assert str(info.value) == (
        "grading math answers needs math-verify: pip install 'math-verify>=0.7' "
        "(it comes with ttscale[cpu] and ttscale[gpu])"
    )


# -- arguments --------------------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [0, -1.0, math.inf, math.nan, "1"])
def test_a_timeout_must_be_a_finite_positive_number(timeout: object) -> None:
    with pytest.raises(ValueError, match="timeout must be a finite number of seconds > 0"):
        Grader().equal("1", "1", timeout=cast(Any, timeout))


def test_a_timeout_under_a_second_is_fine() -> None:
    assert Grader().equal("1", "1", timeout=0.5)


def test_wrong_types_are_named_in_the_error() -> None:
    with pytest.raises(TypeError, match="prediction must be a str or None, got int"):
        Grader().equal(cast(Any, 5), "5")
    with pytest.raises(TypeError, match=r"reference must be a str \(or int\), got float"):
        Grader().equal("1", cast(Any, 1.0))


# -- in-process stages ------------------------------------------------------------------------------


def test_every_pair_is_counted_once(world: World) -> None:
    grader = Grader()
    grader.equal_many([A, ("1", "1"), (None, "2")])
    assert grader.stats().calls == 3


def test_refusals_hold_on_either_side(world: World) -> None:
    """Too long, too deep or astronomic: refused whichever side it is on, and never handed to a worker."""
    grader = Grader(GraderConfig(max_chars=16, max_depth=3, cache_size=0))
    assert grader.equal("7", "7".rjust(16))  # a 16-character reference is graded (fast path)
    assert grader.equal("7", "7".rjust(17)) is False
    assert grader.equal("x+1", "(((x+1)))")  # reference at the depth limit: graded by a worker
    assert grader.equal("x+1", "((((x+1))))") is False
    assert grader.equal("10^{10^{10^{10}}}", "x") is False
    assert grader.equal("x", "10^{10^{10^{10}}}") is False
    assert world.graded() == [("x+1", "(((x+1)))")]
    assert grader.stats().refused == 4


def test_a_prediction_that_is_no_sentence_is_graded_as_given(world: World) -> None:
    # Not rescued by answer extraction: the worker sees the box (and math-verify reads boxes itself).
    assert Grader().equal("\\boxed{x+1}", "x+1")
    assert world.graded() == [("\\boxed{x+1}", "x+1")]


def test_a_sentence_ending_in_hashes_is_reduced_to_its_answer() -> None:
    assert Grader().equal("so the total is\n#### 42", "42")


def test_sentences_are_read_up_to_2000_characters() -> None:
    tail = " The answer is 5"
    assert Grader().equal("x" * (2000 - len(tail)) + tail, "5")
    assert Grader().equal("x" * (2001 - len(tail)) + tail, "5") is False  # longer: refused as prose


# -- deadlines --------------------------------------------------------------------------------------


def test_a_single_call_keeps_a_little_of_its_timeout_for_the_kill(world: World) -> None:
    grader = Grader(GraderConfig(cache_size=0))
    grader.start()
    world.clock.tick = 1.0  # every reading of the clock is a second later than the one before
    world.clock.now = 100.0
    assert grader.equal(*A, timeout=2.0)
    world.clock.now = 200.0
    assert grader.equal(*A, timeout=0.5)
    # The deadline counts from the call's start: 5% of the timeout, at most 0.05 s, kept back.
    assert [(run.timeout, run.deadline) for run in world.runs] == [(2.0, 101.95), (0.5, 200.475)]


def test_starting_the_workers_is_not_counted_in_the_deadline(world: World) -> None:
    grader = Grader()
    world.clock.tick = 1.0
    assert grader.equal(*A, timeout=2.0)
    # read at 100 on entry, start-up takes 50 s (151 after it), the deadline counts from there
    assert world.runs[0].deadline == pytest.approx(151.0 + 1.95)


def test_a_batch_has_no_deadline_unless_bounded(world: World) -> None:
    grader = Grader(GraderConfig(cache_size=0))
    grader.start()
    world.clock.now = 100.0
    assert grader.equal_many([A, B], timeout=2.0) == [True, True]
    assert grader.equal_many([A, B], timeout=2.0, within=7.0) == [True, True]
    assert [(run.timeout, run.deadline) for run in world.runs] == [(2.0, None), (2.0, 107.0)]


# -- worker outcomes and the verdict cache ----------------------------------------------------------


def test_worker_outcomes_are_counted_and_only_verdicts_and_overruns_remembered(world: World) -> None:
    outcomes = ["equal", "different", "timeout", "late", "error"]
    pairs = [(f"x+{i}", f"{i}+x") for i in range(len(outcomes))]
    world.script.update({pair: [outcome] for pair, outcome in zip(pairs, outcomes, strict=True)})
    grader = Grader(GraderConfig(cache_size=8))
    assert grader.equal_many(pairs, timeout=1.0) == [True, False, False, False, False]
    stats = grader.stats()
    assert (stats.calls, stats.worker, stats.timeouts, stats.late, stats.errors, stats.cached) == (5, 5, 1, 1, 1, 0)
    # Again: the verdicts and the overrun come from the cache, the late and failed pairs go to a worker again.
    assert grader.equal_many(pairs, timeout=1.0) == [True, False, False, False, False]
    assert world.runs[-1].pairs == pairs[3:]
    stats = grader.stats()
    assert (stats.calls, stats.worker, stats.timeouts, stats.late, stats.errors, stats.cached) == (10, 7, 1, 2, 2, 3)


def test_a_failed_pair_is_graded_again_next_time(world: World) -> None:
    world.script[A] = ["error", "equal"]
    grader = Grader()
    assert grader.equal(*A) is False
    assert grader.equal(*A) is True
    assert grader.equal(*A) is True
    assert len(world.runs) == 2 and grader.stats().cached == 1


def test_an_overrun_is_remembered_for_the_same_or_a_shorter_timeout_only(world: World) -> None:
    world.script[A] = ["timeout", "equal"]
    grader = Grader()
    assert grader.equal(*A, timeout=1.0) is False
    assert grader.equal(*A, timeout=1.0) is False  # the same timeout: from the cache
    assert grader.equal(*A, timeout=0.5) is False  # shorter: from the cache
    assert len(world.runs) == 1 and grader.stats().cached == 2
    assert grader.equal(*A, timeout=2.0) is True  # longer: the worker gets another go
    assert len(world.runs) == 2
    assert grader.equal(*A, timeout=0.5) is True  # and now the verdict is remembered
    assert len(world.runs) == 2 and grader.stats().cached == 3


def test_verdicts_are_remembered_per_pair(world: World) -> None:
    world.script[B] = ["different"]
    grader = Grader()
    assert [grader.equal(*A), grader.equal(*B), grader.equal(*A), grader.equal(*B)] == [True, False, True, False]
    assert world.graded() == [A, B]
    assert grader.stats().cached == 2


def test_no_cache_when_its_size_is_zero(world: World) -> None:
    grader = Grader(GraderConfig(cache_size=0))
    assert grader.equal(*A) and grader.equal(*A)
    assert world.graded() == [A, A] and grader.stats().cached == 0


def test_the_cache_forgets_the_least_recently_used_pair(world: World) -> None:
    grader = Grader(GraderConfig(cache_size=2))
    for pair in (A, B, A, C):  # the second A is a hit, so B is the least recently used when C comes
        grader.equal(*pair)
    assert world.graded() == [A, B, C]
    for pair in (A, C):
        grader.equal(*pair)
    assert world.graded() == [A, B, C]  # both still remembered
    grader.equal(*B)
    assert world.graded() == [A, B, C, B]
    assert grader.stats().cached == 3


# -- cross_check ------------------------------------------------------------------------------------


def test_cross_check_counts_each_kind_of_disagreement() -> None:
    pairs: list[tuple[str | None, str]] = [
        ("1", "1"),
        ("2", "2"),
        (None, "9"),  # skipped, wherever it is
        ("3", "4"),
        ("5", "6"),
        ("7", "8"),
        ("10", "10"),
    ]
    verdicts = [False, False, False, True, True, True, True]
    report = cross_check(pairs, verdicts=verdicts, max_examples=4)
    assert (report.total, report.grader_only, report.normalizer_only, report.disagreements) == (6, 3, 2, 5)
    assert report.rate == pytest.approx(5 / 6)
    assert report.examples == (("1", "1", False), ("2", "2", False), ("3", "4", True), ("5", "6", True))


def test_cross_check_keeps_twenty_examples_by_default() -> None:
    pairs: list[tuple[str | None, str]] = [(str(i), str(i)) for i in range(25)]
    report = cross_check(pairs, verdicts=[False] * 25)
    assert report.disagreements == 25 and len(report.examples) == 20


def test_cross_check_of_nothing_has_rate_zero() -> None:
    report = cross_check([(None, "3")], verdicts=[False])
    assert (report.total, report.disagreements, report.rate) == (0, 0, 0.0)


def test_cross_check_grades_with_the_given_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []

    def fake_many(pairs: Sequence[tuple[str | None, str]], *, timeout: float) -> list[bool]:
        calls.append(timeout)
        return [True] * len(pairs)

    monkeypatch.setattr(grading, "math_equal_many", fake_many)
    report = cross_check([("1", "1"), ("x^2+2x+1", "(x+1)^2")], timeout=2.5)
    assert calls == [2.5]
    assert (report.total, report.grader_only, report.normalizer_only) == (2, 1, 0)
