"""Progress: generated tokens against the run's budget, requests in flight, problems done."""

from __future__ import annotations

import io

from ttscale.progress import Progress


def test_counters_follow_requests_and_problems() -> None:
    shown = io.StringIO()
    progress = Progress(problems=3, done=1, token_budget=3000, file=shown)
    progress.request_started()
    progress.request_started()
    assert progress.describe() == "problems 1/3, 2 requests in flight"
    progress.request_finished(120)
    progress.request_finished(80)
    progress.problem_done()
    assert (progress.generated, progress.in_flight, progress.done) == (200, 0, 2)
    progress.close()
    text = shown.getvalue()
    assert "tokens" in text and "200/3.00k" in text and "problems 2/3, 0 requests in flight" in text


def test_a_disabled_progress_still_counts_and_prints_nothing() -> None:
    shown = io.StringIO()
    progress = Progress(problems=2, token_budget=None, enabled=False, file=shown)
    progress.request_started()
    progress.request_finished(7)
    progress.problem_done()
    progress.close()
    assert progress.generated == 7 and progress.done == 1 and shown.getvalue() == ""
