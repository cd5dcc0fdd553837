from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest

from ttscale.answers import grading as grading_module
from ttscale.answers.canonical import fast_verdict, too_large
from ttscale.verifiers import (
    Grader,
    GraderConfig,
    GraderUnavailableError,
    cross_check,
    math_equal,
    math_equal_async,
    math_equal_many,
    normalized_equal,
)
from ttscale.verifiers import pool as pool_module

# (prediction, reference, verdict), each checked by hand.
PAIRS = [
    # numbers: exact, thousands separators, signs, decimals, fractions, mixed numbers
    ("025", "25", True),
    ("10,000", "10{,}000", True),
    ("10000", "10{,}000", True),
    ("-0", "0", True),
    ("0.5", "\\frac12", True),
    ("\\dfrac{1}{2}", "0.5", True),
    ("12\\frac{3}{5}", "\\frac{63}{5}", True),  # MATH's mixed numbers
    ("1.5", "\\frac{3}{2}", True),
    ("3/2", "1\\frac{1}{2}", True),
    ("24", "25", False),
    ("0.333", "\\frac13", False),  # not within math-verify's rounding
    ("0.3333333", "\\frac13", True),
    ("2", "2.00001", False),
    ("\\$18", "18", True),
    ("18 dollars", "18", True),
    ("18 apples", "18 pears", False),
    ("48^\\circ", "48", True),
    ("25\\%", "25", True),
    ("0.25", "25\\%", True),
    # symbolic
    ("\\frac{\\sqrt2}{2}", "\\frac{1}{\\sqrt{2}}", True),
    ("2\\sqrt{3}", "\\sqrt{12}", True),
    ("x^2+2x+1", "(x+1)^2", True),
    ("q-p", "p-q", False),
    ("\\sqrt[3]{2}", "2^{1/3}", True),
    ("-2+7i", "7i-2", True),
    ("\\pi", "3.14159", False),
    # structures
    ("(3,\\pi/2)", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
    ("3, 5, 7", "7,5,3", True),
    ("[1,2]", "(1,2)", False),
    ("(-\\infty, 3]", "x \\le 3", True),
    ("x=5", "5", True),
    ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", True),
    # text and choices
    ("\\text{Evelyn}", "Evelyn", True),
    ("(C)", "C", True),
    ("B", "C", False),
    ("52_8", "52_8", True),
    # free text around the answer
    ("After solving, we get $1/2$", "$1/2$", True),
    ("", "5", False),
]


def test_known_pairs(grader: Grader) -> None:
    wrong = [(p, r, v) for p, r, v in PAIRS if math_equal(p, r) != v]
    assert not wrong


def test_batch_agrees_with_single_calls(grader: Grader) -> None:
    assert math_equal_many([(p, r) for p, r, _ in PAIRS]) == [v for _, _, v in PAIRS]


def test_none_prediction_and_reference_types(grader: Grader) -> None:
    assert grader.equal(None, "5") is False
    assert grader.equal("25", 25)  # AIME answers may be stored as integers
    with pytest.raises(TypeError, match="reference must be a str"):
        grader.equal("1", cast(Any, 1.0))
    with pytest.raises(ValueError, match="timeout must be"):
        math_equal("1", "1", timeout=0)


def test_fast_path_never_contradicts_math_verify() -> None:
    """Every pair the in-process path decides gets the same verdict from math-verify alone,
    except the one thing it adds on purpose: plain unit words ("18 dollars" = "18")."""
    decided = [(p, r) for p, r, _ in PAIRS if fast_verdict(p, r) is not None]
    assert len(decided) >= 15
    with Grader(GraderConfig(fast_path=False, cache_size=0)) as slow:
        differ = [pair for pair, v in zip(decided, slow.equal_many(decided), strict=True) if v != fast_verdict(*pair)]
    assert differ == [("18 dollars", "18")]


# -- hostile input ------------------------------------------------------------------------------

SLACK = 0.25  # scheduling jitter on a loaded 2-core machine


@pytest.mark.parametrize(
    "prediction",
    [
        "10^{10^{10^{10}}}",
        "9^{9^{9}}",
        "10!!!",
        "x" * 1_000_000,
        "\\frac{1}{" * 500 + "2" + "}" * 500,
        "\\sqrt{" * 300 + "2" + "}" * 300,
    ],
    ids=["tower", "tower9", "factorials", "1MB", "500-frac", "300-sqrt"],
)
def test_hostile_inputs_are_refused_at_once(private_grader: Grader, prediction: str) -> None:
    before = private_grader.stats()
    start = time.perf_counter()
    assert private_grader.equal(prediction, "5", timeout=1.0) is False
    assert private_grader.equal("5", prediction, timeout=1.0) is False
    assert time.perf_counter() - start < 0.2
    after = private_grader.stats()
    assert (after.refused - before.refused, after.worker - before.worker) == (2, 0)


@pytest.mark.parametrize("hostile", ["(10^{10})!", "\\sqrt{2}^{10^{10}}", "(10^{10^{2}})^{(10^{10})}"])
def test_worker_overrun_returns_false_within_the_timeout(private_grader: Grader, hostile: str) -> None:
    timeouts, restarts = private_grader.stats().timeouts, private_grader.restarts()
    start = time.perf_counter()
    assert private_grader.equal(hostile, "5", timeout=1.0) is False
    elapsed = time.perf_counter() - start
    assert 0.5 < elapsed < 1.0 + SLACK, elapsed
    assert private_grader.stats().timeouts == timeouts + 1 and private_grader.restarts() == restarts + 1
    # The pool replaced the killed worker and still grades correctly.
    assert private_grader.equal("\\frac{\\sqrt2}{2}", "\\frac{1}{\\sqrt{2}}", timeout=10.0)


def test_equal_hostile_strings_are_still_equal(grader: Grader) -> None:
    assert math_equal("10^{10^{10^{10}}}", "10^{10^{10^{10}}}")


def test_model_text_is_never_run_as_code(grader: Grader, tmp_path: Path) -> None:
    # Digits in the path on purpose (pytest names its first folder `pytest-0`): a number inside code
    # must never make the code equal to it, whatever the machine's temporary folders are called.
    marker = tmp_path / "pytest-0" / "run-0" / "pwned"
    payloads = [
        f"__import__('os').system('touch {marker}')",
        f"exec(\"open('{marker}', 'w')\")",
        f"$__import__('os').system('touch {marker}')$",
        f"\\boxed{{__import__('os').system('touch {marker}')}}",
    ]
    for payload in payloads:
        assert math_equal(payload, "0") is False
    assert not marker.exists()


@pytest.mark.parametrize(
    ("prediction", "reference"),
    [
        ("I think it is 12 apples not 5", "5"),
        ("I think it is 12 apples not 5", "12"),
        ("banana 0", "0"),  # a symbolic parser reads b·a·n·a·n·a·0 = 0
        ("it is 3 or 4", "4"),
        ("12 or 5", "5"),
        ("maybe 7, maybe 8", "8"),
        ("see /tmp/pytest-of-root/pytest-0/test_x0/result.json", "0"),
        ("/home/user/data/v2/file3.txt", "3"),
        ("print(2 + 3)", "5"),
        ("import os; os.system('rm -rf /tmp/run5')", "5"),
        ("$x = 2$ or $x = 5$, not sure", "5"),
    ],
)
def test_prose_and_code_are_not_equal_to_a_number_they_contain(grader: Grader, prediction: str, reference: str) -> None:
    assert math_equal(prediction, reference) is False


@pytest.mark.parametrize(
    ("prediction", "reference"),
    [
        ("The answer is 5", "5"),
        ("The answer is $\\frac12$.", "0.5"),
        ("so \\boxed{25}.", "25"),
        ("18 dollars", "18"),
        ("5\\text{ cm}", "5"),
        ("x^2+2xy+y^2", "(x+y)^2"),
        ("\\sin x", "\\sin(x)"),
        ("Evelyn", "\\text{Evelyn}"),
        ("we get $1/2$.", "\\frac{1}{2}"),  # a sentence's only math span is its answer
        ("3 and 4", "3 and 4"),
        ("(-\\infty, 3]", "(-\\infty,3]"),
        ("\\begin{bmatrix}1\\\\2\\end{bmatrix}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}"),  # environment names
        ("30 degrees", "30^\\circ"),
    ],
)
def test_answers_and_sentences_stating_one_stay_equal(grader: Grader, prediction: str, reference: str) -> None:
    assert math_equal(prediction, reference) is True


def test_threads_share_the_pool_and_each_call_is_bounded(private_grader: Grader) -> None:
    results: dict[int, tuple[bool, float]] = {}

    def grade(i: int) -> None:
        start = time.perf_counter()
        if i % 2:
            verdict = private_grader.equal("(10^{10})!", str(i), timeout=1.0)
        else:
            verdict = private_grader.equal(f"\\frac{{{2 * i}}}{{2}}", f"{i}+0", timeout=10.0)
        results[i] = (verdict, time.perf_counter() - start)

    threads = [threading.Thread(target=grade, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, (verdict, elapsed) in results.items():
        assert verdict is (i % 2 == 0)
        assert elapsed < (1.0 if i % 2 else 10.0) + SLACK


def test_async_grading_does_not_block_the_event_loop(grader: Grader) -> None:
    async def main() -> tuple[list[bool], int]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        task = asyncio.create_task(ticker())
        verdicts = await asyncio.gather(
            math_equal_async("(10^{10})!", "5", timeout=1.0), math_equal_async("x^2-1", "(x-1)(x+1)")
        )
        task.cancel()
        return list(verdicts), ticks

    verdicts, ticks = asyncio.run(main())
    assert verdicts == [False, True]
    assert ticks >= 10  # the loop kept running while the hostile pair used its whole second


def test_cache_remembers_verdicts_and_overruns() -> None:
    with Grader(GraderConfig(cache_size=8)) as cached:
        assert cached.equal("x^2-1", "(x-1)(x+1)") and cached.equal("x^2-1", "(x-1)(x+1)")
        assert cached.equal("(10^{10})!", "5", timeout=0.5) is False
        start = time.perf_counter()
        assert cached.equal("(10^{10})!", "5", timeout=0.5) is False  # the same or a shorter timeout
        assert time.perf_counter() - start < 0.1
        stats = cached.stats()
        assert (stats.cached, stats.worker, stats.timeouts) == (2, 2, 1)


def test_missing_math_verify_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grading_module, "_MATH_VERIFY", False)
    with pytest.raises(GraderUnavailableError, match="pip install 'math-verify"):
        math_equal("1", "1")


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="workers must be an integer in"):
        GraderConfig(workers=0)
    with pytest.raises(ValueError, match="max_depth must be"):
        GraderConfig(max_depth=0)
    with pytest.raises(ValueError, match="memory_limit_mb"):
        GraderConfig(memory_limit_mb=10)


@pytest.mark.parametrize(
    "text",
    [
        "1" + " " * 9_998 + "x",
        "9" * 10_000,
        "2^" * 5_000 + "2",
        "2^{" * 3_000,
        "1!" * 5_000,
        "\\$" * 3_000,
        "a " * 5_000,
    ],
)
def test_in_process_stages_are_linear_on_long_input(text: str) -> None:
    start = time.perf_counter()
    fast_verdict(text, "5")
    too_large(text)
    normalized_equal(text, "5")
    assert time.perf_counter() - start < 0.05


def test_too_large_reads_literal_towers_only() -> None:
    assert too_large("10^{10^{10^{10}}}") and too_large("2^{1000000}") and too_large("100000!")
    assert too_large("2^2^2^2^2^2^2^2^2")  # an unbraced tower: bounded recursion, refused
    assert not too_large("2^{2023}") and not too_large("10!") and not too_large("x^{10^{10}}")


# -- cross-checking -----------------------------------------------------------------------------


def test_normalizer_on_its_own() -> None:
    assert normalized_equal("\\dfrac{1}{2}", "\\frac12") and normalized_equal("0.5", "1/2")
    assert normalized_equal("x = 5", "5") and normalized_equal("10{,}000", "10000")
    assert normalized_equal("\\text{Evelyn}", "Evelyn") and normalized_equal("90^\\circ", "90")
    assert not normalized_equal("x^2+2x+1", "(x+1)^2")  # no algebra: a known blind spot
    assert not normalized_equal("24", "25") and not normalized_equal("", "")


def test_cross_check_reports_disagreements(grader: Grader) -> None:
    pairs = [(p, r) for p, r, _ in PAIRS] + [(None, "3")]
    report = cross_check(pairs)
    assert report.total == len(PAIRS)
    assert report.disagreements == report.grader_only + report.normalizer_only
    assert report.rate == pytest.approx(report.disagreements / report.total)
    assert ("x^2+2x+1", "(x+1)^2", True) in report.examples  # algebra the normalizer cannot do
    given = cross_check([("1", "1"), ("1", "2")], verdicts=[False, False])
    assert (given.normalizer_only, given.grader_only, given.examples) == (1, 0, (("1", "1", False),))
    with pytest.raises(ValueError, match="verdicts has 1 entries for 2 pairs"):
        cross_check([("1", "1"), ("1", "2")], verdicts=[True])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_starts_its_own_pool_and_leaves_the_parents_alone(private_grader: Grader) -> None:
    assert private_grader.equal("x^2-1", "(x-1)(x+1)", timeout=10.0)  # the parent's pool is running
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: grade through its own new workers, then leave without cleanup
        try:
            verdict = private_grader.equal("x^3-1", "(x-1)(x^2+x+1)", timeout=30.0)
            os.write(write_end, b"1" if verdict else b"0")
            private_grader.close()  # must not kill the parent's workers
        finally:
            os._exit(0)
    os.close(write_end)
    # Forking a process that runs threads can deadlock the child: bounded, so it fails instead of hanging.
    deadline = time.monotonic() + 120
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child did not finish within 120 s")
        time.sleep(0.05)
    assert os.read(read_end, 1) == b"1"
    os.close(read_end)
    restarts = private_grader.restarts()
    assert private_grader.equal("\\sin^2 x + \\cos^2 x", "1", timeout=10.0)
    assert private_grader.restarts() == restarts


def test_a_worker_that_dies_is_replaced(private_grader: Grader) -> None:
    pool = private_grader._pool
    assert pool is not None
    for worker in list(pool._idle):  # e.g. the OOM killer, or a crash in a C extension
        assert worker.process is not None
        worker.process.kill()
        worker.process.wait()
    verdicts = private_grader.equal_many([("x^2-4", "(x-2)(x+2)"), ("x^2-4", "(x-2)^2")], timeout=30.0)
    assert verdicts == [True, False]


def test_a_worker_that_cannot_start_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_module, "_BOOT", "import sys; sys.exit(3)  # {path}{read_fd}{write_fd}{memory}")
    pool = pool_module.GraderPool(pool_module.PoolConfig(workers=1))
    with pytest.raises(pool_module.WorkerStartError, match="exit code 3"):
        pool.start()
    pool.close()


def test_a_batch_bound_is_validated_and_pairs_past_it_are_false() -> None:
    from ttscale.verifiers import math_equal_many

    with pytest.raises(ValueError, match="timeout must be a finite number of seconds > 0, got 0"):
        math_equal_many([("x", "x")], within=0)
    # A generous bound changes nothing; the symbolic pair is still decided by math-verify.
    assert math_equal_many([("(x+1)^2", "x^2+2x+1"), ("x+1", "x-1")], within=30.0) == [True, False]


def test_the_length_and_depth_limits_hold_at_their_boundaries() -> None:
    """`max_chars` and `max_depth` refuse one past the limit and grade what is exactly at it."""
    with Grader(GraderConfig(max_chars=16, max_depth=3, cache_size=0, workers=1)) as grader:
        assert grader.equal("7".rjust(16), "7")  # 16 characters: graded (fast path)
        assert grader.equal("7".rjust(17), "7") is False  # 17: refused unread
        assert grader.stats().refused == 1
        assert grader.equal("(((x+1)))", "x+1")  # depth 3: graded by math-verify
        assert grader.equal("((((x+1))))", "x+1") is False  # depth 4: refused before any parse
        assert grader.stats().refused == 2
