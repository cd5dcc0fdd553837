"""Grading on the shared offline data (skipped when ../shared/data is absent).

The Qwen2.5-Math equivalence file (100 MATH problems x 8 sampled answers, 800 triples of which
110 are distinct) carries verdicts from Qwen's own rule-based grader, not from people. All 110
distinct (pred, gt, label) triples were read by hand against their questions:

* 109 labels are right, and `math_equal` agrees with every one of them. The 35 False labels are
  all answers of a different value (e.g. idx 17 asks to round 6287215 to the nearest ten
  thousand: 6287000 is rightly wrong; idx 37 `1\\frac{8}{91}` vs `1\\frac{1}{10}`), plus idx 3,
  see below.
* idx 72: `10000` vs `10{,}000` is labelled False; the question computes 70,000 / 7 = 10,000, so
  the label is a false negative of that grader. `math_equal` says True; the test asserts True.
* idx 3: the gt was mangled to `4:30p..` from `\\text{4:30 p.m.}`; `4:30` is labelled False.
  The model's answer is the right time, but neither the mangled gt nor the clean `answer` field
  (`\\text{4:30 p.m.}`) is equal to `4:30` for `math_equal` (clock times with a.m./p.m. are not
  understood). The label and `math_equal` agree (False), for a reason the label did not have.

Pairing each prediction with the row's clean `answer` field instead of `gt` (113 distinct
triples; `\\dfrac`, `^\\circ`, `\\%`, `\\$`, `\\text{ square units}`, `900,\\!000,\\!000`) gives the
same picture: one disagreement, idx 72.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ttscale.answers.extract import extract_answer, last_boxed
from ttscale.verifiers import Grader, GraderConfig, cross_check, math_equal, math_equal_many

LABEL_MISTAKES = {(72, "10000")}  # (idx, pred) whose Qwen label is wrong, checked by hand


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_math500_references_equal_themselves_and_their_boxed_solution(shared_data: Path, grader: Grader) -> None:
    data = rows(shared_data / "math500" / "test.jsonl")
    assert len(data) == 500
    references = [row["answer"] for row in data]
    boxed = [last_boxed(row["solution"]) for row in data]
    assert all(b is not None for b in boxed)
    assert all(math_equal_many([(r, r) for r in references]))
    assert all(math_equal_many([(b, r) for b, r in zip(boxed, references, strict=True)]))
    assert all(math_equal(extract_answer(row["solution"]) or "", row["answer"]) for row in data)


def test_math500_references_parse_in_math_verify(shared_data: Path) -> None:
    """The same self-equivalence without the fast path: every reference goes through math-verify."""
    references = [row["answer"] for row in rows(shared_data / "math500" / "test.jsonl")]
    with Grader(GraderConfig(fast_path=False, cache_size=0)) as slow:
        slow.start()
        verdicts = slow.equal_many([(r, r) for r in references], timeout=10.0)
        stats = slow.stats()
    assert stats.worker == 500 and stats.timeouts == 0 and stats.errors == 0
    assert all(verdicts)


def test_qwen_equivalence_file(shared_data: Path, grader: Grader) -> None:
    data = rows(shared_data / "equivalence" / "qwen25math_math_cot_100.jsonl")
    triples: dict[tuple[str, str, bool], list[int]] = {}
    for row in data:
        for pred, label in zip(row["pred"], row["score"], strict=True):
            triples.setdefault((pred, row["gt"], label), []).append(row["idx"])
    assert len(triples) == 110 and sum(map(len, triples.values())) == 800
    keys = list(triples)
    verdicts = math_equal_many([(pred, gt) for pred, gt, _ in keys])
    disagree = {(triples[k][0], k[0]) for k, v in zip(keys, verdicts, strict=True) if v != k[2]}
    assert disagree == LABEL_MISTAKES
    assert math_equal("10000", "10{,}000") and not math_equal("4:30", "4:30p..")
    rows_agreeing = sum(len(triples[k]) for k, v in zip(keys, verdicts, strict=True) if v == k[2])
    assert rows_agreeing == 799  # of 800: idx 72 answered "10000" in one of its eight samples


def test_qwen_answers_against_the_clean_answer_field(shared_data: Path, grader: Grader) -> None:
    data = rows(shared_data / "equivalence" / "qwen25math_math_cot_100.jsonl")
    triples = {
        (p, row["answer"], s): row["idx"] for row in data for p, s in zip(row["pred"], row["score"], strict=True)
    }
    keys = list(triples)
    verdicts = math_equal_many([(p, a) for p, a, _ in keys])
    assert {(triples[k], k[0]) for k, v in zip(keys, verdicts, strict=True) if v != k[2]} == LABEL_MISTAKES
    report = cross_check([(p, a) for p, a, _ in keys], verdicts=verdicts)
    assert report.total == len(keys) and report.rate < 0.05


def test_math_verify_examples_extract_then_grade(shared_data: Path, grader: Grader) -> None:
    with (shared_data / "equivalence" / "math_verify_model_outputs.csv").open(encoding="utf-8") as handle:
        examples = list(csv.DictReader(handle))
    assert len(examples) == 6
    for example in examples:
        extracted = extract_answer(example["answer"])
        assert extracted is not None and math_equal(extracted, example["gold"].strip()), example
        assert math_equal(example["answer"], example["gold"]), example  # whole text: math-verify extracts
