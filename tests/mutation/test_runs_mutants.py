"""ttscale.runstore.runs: behaviour the mutation run (tools/mutation) found unchecked, on tests/data's real runs."""

from __future__ import annotations

import json
import locale
import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from ttscale.evals import load_task
from ttscale.runstore.runformat import migrate_config
from ttscale.runstore.runs import (
    ForeignRecordsWarning,
    RunData,
    RunLoadError,
    find_runs,
    grade_samples,
    read_run,
    read_runs,
    task_grader,
)

REAL = Path(__file__).resolve().parents[1] / "data" / "real_runs"
RUN = REAL / "sc-n4"


def copy(run: Path, to: Path) -> Path:
    to.parent.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copytree(run, to))


def lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def write_lines(run: Path, records: list[dict]) -> None:
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


# -- finding and labelling -----------------------------------------------------------------------------


def test_find_runs_errors(tmp_path: Path) -> None:
    with pytest.raises(RunLoadError) as info:
        find_runs([])
    assert str(info.value) == "no run directories given"
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunLoadError) as info:
        find_runs(tmp_path / "empty")
    assert str(info.value) == f"{str(tmp_path / 'empty')!r} holds no run (no results.jsonl in it or below it)"
    with pytest.raises(RunLoadError) as info:
        find_runs([str(tmp_path / "nowhere")])
    assert str(info.value) == f"{str(tmp_path / 'nowhere')!r} is not a run directory (no results.jsonl)"


def test_find_runs_in_order_once_each() -> None:
    assert find_runs([RUN, REAL / "sc-n8", RUN]) == [RUN.resolve(), (REAL / "sc-n8").resolve()]
    assert find_runs(str(RUN)) == [RUN.resolve()]


def test_labels_of_runs_that_share_a_name(tmp_path: Path) -> None:
    a, b = copy(RUN, tmp_path / "a" / "run"), copy(RUN, tmp_path / "b" / "run")
    c = copy(RUN, tmp_path / "x" / "other")
    assert [r.label for r in read_runs([a, b, c])] == ["a/run", "b/run", "other"]
    # the same parent and folder names under different grandparents: told apart with a prime
    d, e = copy(RUN, tmp_path / "g1" / "p" / "run"), copy(RUN, tmp_path / "g2" / "p" / "run")
    assert [r.label for r in read_runs([d, e])] == ["p/run", "p/run'"]


# -- reading -------------------------------------------------------------------------------------


def test_read_run_errors(tmp_path: Path) -> None:
    with pytest.raises(RunLoadError) as info:
        read_run(tmp_path)
    assert str(info.value) == f"{str(tmp_path)!r} is not a run directory (no results.jsonl)"
    (tmp_path / "results.jsonl").write_text("")
    with pytest.raises(RunLoadError) as info:
        read_run(tmp_path)
    assert str(info.value) == f"{str(tmp_path)!r} holds no finished problem yet (results.jsonl is empty)"


def test_an_unfinished_run_reads_when_asked(tmp_path: Path) -> None:
    run = read_run(tmp_path, finished=False, label="mine")
    assert (run.label, run.records, run.config, run.summary, run.torn_tail, run.foreign) == (
        "mine", [], {}, {}, False, 0)
    assert read_run(tmp_path, finished=False).label == tmp_path.name


def test_a_real_run_reads_its_files() -> None:
    run = read_run(RUN)
    assert run.path == RUN and run.label == "sc-n4"
    # Written before deterministic mode: read in today's shape (ttscale.runstore.runformat), the file's values kept.
    assert run.config == migrate_config(json.loads((RUN / "config.json").read_text()), where=RUN / "config.json")
    assert run.summary == json.loads((RUN / "summary.json").read_text())
    assert run.foreign == 0 and run.errored == []


def test_bad_json_files(tmp_path: Path) -> None:
    run = copy(RUN, tmp_path / "run")
    (run / "summary.json").write_text("[1, 2]")
    assert read_run(run).summary == {}  # not an object: absent
    (run / "config.json").write_text("{not json")
    with pytest.raises(RunLoadError, match=r"^cannot read .*config\.json: "):
        read_run(run)


def test_records_of_other_problems_are_left_out(tmp_path: Path) -> None:
    run = copy(RUN, tmp_path / "run")
    records = lines(run)
    extra = [dict(records[0], id="arith-L9-9998"), dict(records[1], id="arith-L9-9999")]
    write_lines(run, [*records, extra[0]])
    with pytest.warns(ForeignRecordsWarning) as caught:
        data = read_run(run, tasks=load_task)
    assert data.foreign == 1 and len(data.records) == len(records)
    # said where read_run's caller reads the run (not checked under mutmut, whose trampolines add two frames
    # per call of a function of the module)
    if "MUTANT_UNDER_TEST" not in os.environ:
        assert caught[0].filename == __file__
    assert str(caught[0].message) == (f"{run / 'results.jsonl'}: 1 record of problems not in the run's task left "
                                      "out (as summary.json leaves them out)")
    write_lines(run, [*records, *extra])
    with pytest.warns(ForeignRecordsWarning, match=r": 2 records of problems not in the run's task left out"):
        assert read_run(run, tasks=load_task).foreign == 2


def test_a_record_with_a_bad_field_is_refused(tmp_path: Path) -> None:
    run = copy(RUN, tmp_path / "run")
    records = lines(run)
    records[2]["samples"] = "not a list"
    write_lines(run, records)
    with pytest.raises(RunLoadError) as info:
        read_run(run)
    message = str(info.value)
    assert message.startswith(f"{run / 'results.jsonl'}: the record of problem {records[2]['id']!r}: ")
    assert message.endswith(" (fix or delete that line)")


def test_errored_records_are_kept_and_listed(tmp_path: Path) -> None:
    run = copy(RUN, tmp_path / "run")
    records = lines(run)
    records[0]["error"] = "RuntimeError: boom"
    write_lines(run, records)
    data = read_run(run)
    assert [r["id"] for r in data.errored] == [records[0]["id"]]
    assert len(data.records) == len(records)


# -- model, identity and grading ------------------------------------------------------------------


def data(config: dict, grade: Callable[[object, str], bool] | None = None) -> RunData:
    return RunData(path=Path("x"), label="x", config=config, summary={}, records=[], _grade=grade)


def test_model_and_identity() -> None:
    assert data({"identity": {"engine": {"model": "/models/Qwen3-0.6B"}}}).model == "Qwen3-0.6B"
    assert data({"identity": {"engine": {"model": "~/m/Llama"}}}).model == "Llama"
    assert data({"identity": {"engine": {"model": "./m/Phi"}}}).model == "Phi"
    assert data({"identity": {"engine": {"model": "org/Model"}}}).model == "org/Model"
    assert data({"environment": {"engine": {"model_path": "/cache/Embedded"}}}).model == "Embedded"
    assert data({}).model == "?"
    assert data({"identity": "broken"}).identity == {} and data({"identity": "broken"}).model == "?"


def test_sample_correct_uses_the_stored_verdict_else_the_grader() -> None:
    asked: list[tuple[object, str]] = []

    def grade(answer: object, reference: str) -> bool:
        asked.append((answer, reference))
        return answer == "7"

    run = data({}, grade)
    assert run.sample_correct({"answer": "1", "correct": True}, {"reference": "7"}) is True
    assert run.sample_correct({"answer": "7", "correct": False}, {"reference": "7"}) is False
    assert asked == []
    assert run.sample_correct({"answer": "7", "correct": None}, {"reference": 7}) is True
    assert asked == [("7", "7")]


def test_a_run_without_a_stored_verdict_is_graded_by_exact_match_without_its_task() -> None:
    run = data({})
    assert run.sample_correct({"answer": " 12 "}, {"reference": "12"}) is True
    assert run.sample_correct({"answer": "12.0"}, {"reference": "12"}) is False
    assert run.sample_correct({"answer": None}, {"reference": "None"}) is False


def test_task_grader_uses_the_runs_task() -> None:
    identity = json.loads((RUN / "config.json").read_text())["identity"]
    grade = task_grader(identity, tasks=load_task)
    # the arithmetic task reads integers: "06" and "+6" are 6, which exact match would refuse
    assert grade("6", "6") is True and grade("06", "6") is True and grade("+6", "6") is True
    assert grade("7", "6") is False and grade(None, "6") is False
    exact = task_grader({"task": {"spec": "no-such-task-anywhere"}}, tasks=load_task)
    assert exact("6", "6") is True and exact("06", "6") is False


def test_grade_samples() -> None:
    class Task:
        def grade(self, answer: str, problem: object) -> bool:
            if answer == "boom":
                raise ValueError("hostile")
            return answer == "1"

    assert grade_samples(Task(), None, ["1", "2", "boom", "1", None]) == {None: False, "1": True, "2": False,
                                                                           "boom": False}


def said_by_caller(warning: warnings.WarningMessage) -> bool:
    """Whether a warning of `read_run` names its caller's line: here, or under mutmut (which sets
    MUTANT_UNDER_TEST) the trampoline frame it puts between a test and each function of the module."""
    under_mutmut = "MUTANT_UNDER_TEST" in os.environ
    return Path(warning.filename).name == ("trampoline.py" if under_mutmut else Path(__file__).name)


def test_attempts_a_server_fault_left_unfinished_are_left_out_and_said(tmp_path: Path) -> None:
    from ttscale.runstore.runs import TornTailWarning, UnfinishedWarning

    run = copy(RUN, tmp_path / "run")
    records = lines(run)
    cut = [dict(records[0], id="arith-L1-0000", unfinished=True)]  # finished later: not unfinished
    cut += [dict(records[1], id=records[1]["id"], unfinished=True)]
    finished = [r for r in records if r["id"] != records[1]["id"]]
    write_lines(run, [*cut, *finished])
    with pytest.warns(UnfinishedWarning) as caught:
        data = read_run(run)
    assert [r["id"] for r in data.records] == [r["id"] for r in finished]
    assert str(caught[0].message) == (f"{run / 'results.jsonl'}: 1 problem a server fault left unfinished left out "
                                      f"(ttscale run --resume {run} runs them again)")
    assert said_by_caller(caught[0])  # said where the caller reads the run
    cut.append(dict(records[2], unfinished=True))
    write_lines(run, [*cut, *[r for r in finished if r["id"] != records[2]["id"]]])
    with pytest.warns(UnfinishedWarning, match=r": 2 problems a server fault left unfinished left out \(ttscale"):
        read_run(run)
    # a torn last line: said in full, where the caller reads the run
    write_lines(run, records)
    with (run / "results.jsonl").open("a") as handle:
        handle.write('{"id": "arith-L5-0009", "correct": tr')
    with pytest.warns(TornTailWarning) as caught:
        assert read_run(run).torn_tail
    assert str(caught[0].message) == (f"{run / 'results.jsonl'}: its torn last line was left out (a run cut off "
                                      "mid-write, or still writing)")
    assert said_by_caller(caught[0])


def test_a_results_file_that_cannot_be_read(tmp_path: Path) -> None:
    run = copy(RUN, tmp_path / "run")
    (run / "results.jsonl").unlink()
    (run / "results.jsonl").mkdir()
    with pytest.raises(RunLoadError) as info:
        read_run(run, finished=False)
    assert str(info.value) == f"cannot open {run / 'results.jsonl'}: Is a directory; a run's files are regular files"


def test_a_results_file_under_a_file_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(RunLoadError) as info:
        read_run(tmp_path / "file", finished=False)
    # Said once: the storage layer's message is not wrapped in a second "cannot read PATH:".
    assert str(info.value) == f"cannot read {tmp_path / 'file' / 'results.jsonl'}: Not a directory"


def test_json_files_are_read_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    run = copy(RUN, tmp_path / "run")
    (run / "summary.json").write_text('{"note": "é"}', encoding="utf-8")
    old = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")  # an ASCII locale: a default-encoded read would fail
    try:
        assert read_run(run).summary == {"note": "é"}
    finally:
        locale.setlocale(locale.LC_CTYPE, old)


def test_task_grader_loads_the_task_with_its_options() -> None:
    # options the task refuses: it cannot load, so answers are graded by exact match
    refused = task_grader({"task": {"spec": "arithmetic", "options": {"per_level": 0}}}, tasks=load_task)
    assert refused("6", "6") is True and refused("06", "6") is False
    # options it takes, or none: the task's grader, which reads "06" as 6
    for options in ({"per_level": 5}, {}, None):
        grade = task_grader({"task": {"spec": "arithmetic", "options": options}}, tasks=load_task)
        assert grade("06", "6") is True and grade("7", "6") is False


class _Executing:
    """A task graded by running answers (as a code task is): the verdict is the execution's `passed`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def execute(self, answer: str, problem: object) -> object:
        from ttscale.sandbox import Execution

        self.calls.append((answer, getattr(problem, "id", "")))
        if answer == "boom":
            raise RuntimeError("the sandbox broke")
        return Execution(status="passed" if answer == "good" else "failed", reason=answer, seconds=0.5)

    def grade(self, answer: str, problem: object) -> bool:
        raise AssertionError("a task that executes is graded by its execution, not by grade()")


def test_a_task_that_runs_answers_is_graded_by_each_execution_with_its_detail_kept() -> None:
    from ttscale.schema import Problem

    task, details = _Executing(), {}  # type: ignore[var-annotated]
    problem = Problem(id="p1", question="q", reference="r")
    verdicts = grade_samples(task, problem, ["good", "bad", None, "good", "boom"], details=details)
    assert verdicts == {None: False, "good": True, "bad": False, "boom": False}
    assert task.calls == [("good", "p1"), ("bad", "p1"), ("boom", "p1")]  # once per distinct answer, never None
    assert details == {
        "good": {"status": "passed", "reason": "good", "seconds": 0.5, "output": ""},
        "bad": {"status": "failed", "reason": "bad", "seconds": 0.5, "output": ""},
    }
    assert grade_samples(_Executing(), problem, ["good"]) == {None: False, "good": True}  # details are optional
