from __future__ import annotations

import re

from ttscale.budget import Budget
from ttscale.runstore.summary import format_table, summarize
from ttscale.stats.proportions import wilson_interval
from ttscale.verifiers import cross_check


def record(i: int, *, correct: bool, tokens: int, level: int, prediction: str | None = "1") -> dict:
    ledger = {
        "generated_tokens": tokens,
        "spent": tokens,
        "prompt_tokens": 50,
        "cached_prompt_tokens": 32,
        "samples": 4,
        "flops": 10.0,
        "eflops": 30.0,
    }
    return {
        "id": str(i),
        "prediction": prediction,
        "reference": "1" if correct else "2",
        "correct": correct,
        "ledger": ledger,
        "level": level,
    }


def test_summary_counts_accuracy_tokens_levels_and_cross_check() -> None:
    records = [
        record(0, correct=True, tokens=100, level=1),
        record(1, correct=False, tokens=300, level=2),
        record(2, correct=True, tokens=200, level=1),
        record(3, correct=False, tokens=0, level=2, prediction=None),
    ]
    s = summarize(records, budget=Budget.parse("250"), wall_seconds=2.0, cross_check=cross_check)
    assert s["accuracy"] == 0.5 and s["correct"] == 2
    lo, hi = s["accuracy_ci95"]
    assert 0 < lo < 0.5 < hi < 1
    assert s["mean_generated_tokens"] == 150 and s["max_generated_tokens"] == 300
    assert s["over_budget"] == 1  # the 300-token record is past a 250 budget: summaries must show it
    # Each level with its Wilson interval (2 of 2: [0.342, 1]; 0 of 2: [0, 0.658]).
    assert {k: (v["problems"], v["accuracy"]) for k, v in s["per_level"].items()} == {"1": (2, 1.0), "2": (2, 0.0)}
    assert s["per_level"]["1"]["accuracy_ci95"] == list(wilson_interval(2, 2))
    assert [round(x, 3) for x in s["per_level"]["2"]["accuracy_ci95"]] == [0.0, 0.658]
    assert s["cached_prompt_share"] == 32 / 50
    assert s["mean_eflops"] == 30.0
    assert s["grader_cross_check"]["compared"] == 3 and s["grader_cross_check"]["disagreements"] == 0
    table = format_table(s)
    assert "0.500" in table and "eFLOPs" in table
    assert "  level 2  " in table and "0.000  (95% CI 0.000-0.658, n=2)" in table
    older = {**s, "per_level": {"1": {"problems": 2, "accuracy": 1.0}}}  # a summary written before level intervals
    assert "1.000  (n=2)" in format_table(older)


def test_cross_check_reports_a_grader_disagreement() -> None:
    wrong_verdict = record(0, correct=False, tokens=10, level=1)
    wrong_verdict["reference"] = "1"  # same answer, yet marked wrong: the normalizer disagrees
    s = summarize([wrong_verdict], budget=Budget.parse("1k"), wall_seconds=1.0, cross_check=cross_check)
    assert s["grader_cross_check"]["disagreements"] == 1 and s["grader_cross_check"]["rate"] == 1.0


def test_programs_graded_by_their_tests_are_not_cross_checked_as_text() -> None:
    program = record(0, correct=True, tokens=10, level=1)
    program["prediction"], program["reference"] = "def f():\n    return 1\n", "def f():\n    return 2 - 1\n"
    program["samples"] = [{"answer": program["prediction"], "correct": True,
                           "execution": {"status": "passed", "reason": "", "seconds": 0.05}}]
    text = record(1, correct=False, tokens=10, level=1)
    text["reference"] = "1"  # same answer, marked wrong: the one the normalizer can judge
    s = summarize([program, text], budget=Budget.parse("1k"), wall_seconds=1.0, cross_check=cross_check)
    assert s["grader_cross_check"]["compared"] == 1 and s["grader_cross_check"]["executed"] == 1
    assert s["grader_cross_check"]["disagreements"] == 1
    assert "1 disagreements in 1 (1 graded by running their tests, not compared)" in format_table(s)


def _judged_record(i: int, *, samples: int, judged: int) -> dict:
    """A best-of-N record as the ledger writes it: `samples` answers (policy), `judged` verdicts (verifier)."""
    from ttscale.budget import Ledger
    from ttscale.schema import Completion, Generation, SamplingParams

    ledger = Ledger(Budget.parse("4k"))
    for role, count, tokens in (("policy", samples, 40), ("verifier", judged, 1)):
        if not count:
            continue
        reservation = ledger.reserve(SamplingParams(n=count, max_tokens=tokens), prompt_tokens=20, role=role)
        assert reservation is not None
        completions = tuple(Completion(text="x", token_ids=tuple(range(tokens))) for _ in range(count))
        ledger.settle(reservation, Generation(completions=completions, prompt_tokens=20))
    return {"id": str(i), "prediction": "1", "reference": "1", "correct": True, "ledger": ledger.to_dict(), "level": 1}


def test_samples_per_problem_counts_answers_and_the_verifier_is_reported_apart() -> None:
    # Issue 49: best-of-N with verifier=llm_judge printed 14.0 samples / problem for 7 answers and 7 verdicts.
    s = summarize([_judged_record(i, samples=7, judged=7) for i in range(3)], budget=Budget.parse("4k"),
                  wall_seconds=1.0, cross_check=cross_check)
    assert s["mean_samples"] == 7.0 and s["mean_verifier_samples"] == 7.0 and s["mean_verifier_calls"] == 1.0
    table = format_table(s)
    assert re.search(r"^samples / problem +7\.0$", table, re.M), table
    assert re.search(r"^verifier / problem +7\.0 generations in 1\.0 requests \(not in samples\)$", table, re.M)


def test_a_ledger_written_before_verifier_samples_keeps_its_one_count() -> None:
    old = _judged_record(0, samples=7, judged=7)
    del old["ledger"]["verifier"]["samples"]  # as written before the verifier's generations were counted apart
    s = summarize([old], budget=Budget.parse("4k"), wall_seconds=1.0, cross_check=cross_check)
    assert s["mean_samples"] == 14.0 and "mean_verifier_samples" not in s
    assert re.search(r"^verifier / problem +1\.0 requests$", format_table(s), re.M)


def test_no_verifier_row_without_verifier_requests() -> None:
    s = summarize([_judged_record(0, samples=4, judged=0)], budget=Budget.parse("4k"), wall_seconds=1.0,
                  cross_check=cross_check)
    assert s["mean_samples"] == 4.0 and "verifier / problem" not in format_table(s)


def test_the_table_shows_sleep_tokens_and_the_total_budget_summary_json_holds() -> None:
    # Issue 49: summary.json held both, the printed table neither.
    records = []
    for i, context in enumerate(("c1", "c1", "c2")):
        r = record(i, correct=True, tokens=40, level=1)
        r["ledger"]["sleep_tokens_amortised"] = 32.0 if context == "c1" else 50.0
        r["info"] = {"context_id": context, "sleep_tokens": 64 if context == "c1" else 50}
        records.append(r)
    s = summarize(records, budget=Budget.parse("256"), wall_seconds=1.0, cross_check=cross_check)
    s.update(total_budget="15k", total_spent=118.0)  # as runner.execute adds them under --total-budget
    table = format_table(s)
    assert re.search(r"^sleep tokens +114 over 2 contexts, 38\.0 amortised per query$", table, re.M), table
    assert re.search(r"^total budget +15k, spent 118$", table, re.M), table
    assert "sleep tokens" not in format_table(summarize([record(0, correct=True, tokens=4, level=1)],
                                                        budget=Budget.parse("256"), wall_seconds=1.0,
                                                        cross_check=cross_check))
