"""Progress: a bar of problems finished that ends at 100%; tokens spent and requests in flight beside it."""

from __future__ import annotations

import io

from ttscale.progress import Progress


def test_counters_follow_requests_and_problems() -> None:
    shown = io.StringIO()
    progress = Progress(problems=3, done=1, token_budget=3000, file=shown)
    progress.request_started()
    progress.request_started()
    assert progress.describe() == "0 of 3k tokens, 2 requests in flight"
    progress.request_finished(120)
    progress.request_finished(80)
    progress.problem_done()
    assert (progress.generated, progress.in_flight, progress.done) == (200, 0, 2)
    progress.close()
    last = shown.getvalue().split("\r")[-1]
    assert last.startswith("problems:  67%") and "2/3" in last and "200 of 3k tokens, 0 requests in flight" in last


def test_the_bar_ends_at_100_percent_when_the_run_does_whatever_of_the_budget_it_spent() -> None:
    # 20 problems of a 2k budget each that spent a quarter of it: the bar is full, with no time "left".
    shown = io.StringIO()
    progress = Progress(problems=20, token_budget=40_000, file=shown)
    for _ in range(20):
        progress.request_started()
        progress.request_finished(500)
        progress.problem_done()
    progress.close()
    last = shown.getvalue().split("\r")[-1]
    assert "100%" in last and "20/20" in last and "<00:00" in last, last
    assert "10k of 40k tokens, 0 requests in flight" in last, last


def test_a_resumed_run_starts_at_its_finished_problems() -> None:
    shown = io.StringIO()
    progress = Progress(problems=8, done=5, token_budget=None, file=shown)
    progress.add_tokens(1234)  # a problem solved elsewhere (a Ray worker): its tokens when it is done
    progress.problem_done()
    assert progress.describe() == "1.23k tokens, 0 requests in flight"  # a budget not in tokens: no "of"
    progress.close()
    last = shown.getvalue().split("\r")[-1]
    assert "6/8" in last and "75%" in last, last


def test_a_disabled_progress_still_counts_and_prints_nothing() -> None:
    shown = io.StringIO()
    progress = Progress(problems=2, token_budget=None, enabled=False, file=shown)
    progress.request_started()
    progress.request_finished(7)
    progress.problem_done()
    progress.close()
    assert progress.generated == 7 and progress.done == 1 and shown.getvalue() == ""
