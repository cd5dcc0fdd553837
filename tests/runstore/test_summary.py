from __future__ import annotations

from ttscale.budget import Budget
from ttscale.runstore.summary import format_table, summarize
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
    assert s["per_level"] == {"1": {"problems": 2, "accuracy": 1.0}, "2": {"problems": 2, "accuracy": 0.0}}
    assert s["cached_prompt_share"] == 32 / 50
    assert s["mean_eflops"] == 30.0
    assert s["grader_cross_check"]["compared"] == 3 and s["grader_cross_check"]["disagreements"] == 0
    table = format_table(s)
    assert "0.500" in table and "level 2" in table and "eFLOPs" in table


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
