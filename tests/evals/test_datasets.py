from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from ttscale.evals import load_task
from ttscale.evals.datasets import DATA_DIR_ENV, aime24, aime25, gsm8k, math500
from ttscale.evals.jsonl import jsonl_task
from ttscale.evals.loading import gsm8k_reference, repair_escapes


def write_jsonl(path: Path, rows: list[Any], *, raw: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(raw if raw is not None else "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_data_dir_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


def test_data_dir_layout_fields_ids_and_levels(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "math500" / "test.jsonl",
        [
            {
                "problem": "What is $1+1$?",
                "answer": "2",
                "level": 1,
                "subject": "Algebra",
                "unique_id": "t/1",
            },
            {"problem": "Half?", "answer": "\\frac12", "level": 5, "subject": "Algebra", "unique_id": "t/2"},
        ],
    )
    task = math500(data_dir=tmp_path)
    problems = task.problems()
    assert [p.id for p in problems] == ["t/1", "t/2"]
    assert [p.level for p in problems] == [1, 5]
    assert problems[1].reference == "\\frac12" and problems[0].meta == {"subject": "Algebra"}
    assert task.config()["path"].endswith("math500/test.jsonl") and len(task.config()["sha256"]) == 64
    content = task.messages(problems[0])[0]["content"]
    assert content.startswith("What is $1+1$?") and "\\boxed{}" in content


def test_argument_file_env_and_load_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = write_jsonl(tmp_path / "x" / "mine.jsonl", [{"question": "q", "answer": "a\n#### 1,234"}])
    assert gsm8k(str(file)).problems()[0].reference == "1234"
    write_jsonl(tmp_path / "d" / "gsm8k" / "test.jsonl", [{"question": "q", "answer": "#### 7"}])
    assert load_task(f"gsm8k:{tmp_path / 'd'}").problems()[0].reference == "7"
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "d"))
    assert gsm8k().problems()[0].id == "gsm8k-0000"


def test_field_overrides(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "aime24" / "test.jsonl", [{"Q": "Find it.", "A": "025", "id": 3}])
    task = aime24(data_dir=tmp_path, question_field="Q", answer_field="A")
    problem = task.problems()[0]
    assert (problem.id, problem.question, problem.reference) == ("aime24-3", "Find it.", "025")
    assert task.grade("25", problem) and task.grade(task.extract("so \\boxed{25}."), problem)
    assert not task.grade("26", problem) and not task.grade(None, problem)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "no problems"),
        ("\n\n", "no problems"),
        (
            '{"question": "q", "answer": "#### 1"}\n{"question": "q",\n',
            r"test\.jsonl:2: expected one JSON object",
        ),
        ("[1, 2]\n", r"test\.jsonl:1: expected a JSON object, got list"),
        ('{"question": "q"}\n', r"test\.jsonl:1: missing field 'answer' \(fields: question\)"),
        (
            '{"question": "q", "answer": null}\n',
            "field 'answer' must be a string or an integer, got NoneType",
        ),
        ('{"question": " ", "answer": "#### 1"}\n', "field 'question' is empty"),
        ('{"question": "q", "answer": "no final line"}\n', "has no final '#### N' line"),
        ('{"question": "q", "answer": "#### 1"}\n' * 2, ""),  # gsm8k ids are row numbers: fine
    ],
)
def test_bad_files_name_the_file_and_line(tmp_path: Path, raw: str, message: str) -> None:
    write_jsonl(tmp_path / "gsm8k" / "test.jsonl", [], raw=raw)
    task = gsm8k(data_dir=tmp_path)
    if not message:
        assert len(task.problems()) == 2
        return
    with pytest.raises(ValueError, match=message) as info:
        task.problems()
    assert "\n" not in str(info.value) and "gsm8k" in str(info.value)


@pytest.mark.parametrize("factory", [gsm8k, math500, aime24, aime25])
def test_a_task_source_that_is_a_file_is_read_as_that_file(
    factory: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 49 item 2, for every file-backed task: `NAME:FILE` reads that file (relative to the working folder), and
    # a missing one is named as given, not looked for as a folder `FILE/NAME/test.jsonl`.
    name = factory.__name__
    monkeypatch.chdir(tmp_path)
    row = {"question": "1+1?", "problem": "1+1?", "answer": "1+1 = 2\n#### 2", "Problem": "1+1?", "Answer": "2"}
    write_jsonl(tmp_path / "mine.jsonl", [row])  # the fields each of the four reads
    task = load_task(f"{name}:mine.jsonl")
    assert task.path == Path("mine.jsonl") and len(task.problems()) == 1
    with pytest.raises(ValueError) as info:
        load_task(f"{name}:missing.jsonl")
    message = str(info.value)
    assert message.startswith(f"{name}: no such file or folder: missing.jsonl (from argument;"), message
    assert f"missing.jsonl/{name}" not in message and "\n" not in message


def test_missing_file_and_duplicate_ids(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"aime25: no .*aime25/test\.jsonl \(from data_dir"):
        aime25(data_dir=tmp_path)
    write_jsonl(tmp_path / "aime25" / "test.jsonl", [{"problem": "p", "answer": 1, "id": "0"}] * 2)
    with pytest.raises(ValueError, match=r"test\.jsonl:2: duplicate id 'aime25-0'"):
        aime25(data_dir=tmp_path).problems()
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(b'{"question": "caf\xe9", "answer": "1"}\n')
    with pytest.raises(ValueError, match=r"latin1\.jsonl:1: not UTF-8"):
        jsonl_task(str(bad))


def test_jsonl_task_detects_fields(tmp_path: Path) -> None:
    file = write_jsonl(
        tmp_path / "p.jsonl",
        [{"problem": "p1", "final_answer": 12, "level": 2}, {"problem": "p2", "final_answer": "x\n#### 5"}],
    )
    task = load_task(f"jsonl:{file}")
    assert [(p.id, p.reference, p.level) for p in task.problems()] == [
        ("jsonl-0000", "12", 2),
        ("jsonl-0001", "5", None),
    ]
    explicit = jsonl_task(str(file), question_field="problem", answer_field="final_answer")
    assert explicit.problems()[0].question == "p1"
    with pytest.raises(ValueError, match="needs a file"):
        jsonl_task()
    odd = write_jsonl(tmp_path / "odd.jsonl", [{"text": "t", "label": "1"}])
    with pytest.raises(ValueError, match=r"no question field .* --question-field"):
        jsonl_task(str(odd))
    assert jsonl_task(str(odd), question_field="text", answer_field="label").problems()[0].reference == "1"


def test_hub_loading_uses_the_usual_names(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []

    def load_dataset(path: str, config: str | None = None, *, split: str) -> list[dict[str, Any]]:
        calls.append((path, config, split))
        if path == "openai/gsm8k":
            return [{"question": "q", "answer": "work\n#### 3"}]
        return [
            {
                "problem": "p",
                "answer": "70",
                "id": 1,
                "unique_id": "u",
                "level": 3,
                "url": "x",
                "subject": "s",
            }
        ]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    assert gsm8k().problems()[0].reference == "3"
    assert math500().problems()[0].level == 3
    assert aime24().problems()[0].id == "aime24-1"
    assert aime25().config()["hub"] == "math-ai/aime25"
    assert calls == [
        ("openai/gsm8k", "main", "test"),
        ("HuggingFaceH4/MATH-500", None, "test"),
        ("HuggingFaceH4/aime_2024", None, "train"),
        ("math-ai/aime25", None, "test"),
    ]


def test_hub_failure_is_one_line_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    def offline(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Couldn't reach\n'https://huggingface.co'")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=offline))
    with pytest.raises(
        ValueError, match=r"could not load HuggingFaceH4/MATH-500 .*ConnectionError.*--data-dir"
    ) as info:
        math500().problems()
    assert "\n" not in str(info.value)


def test_grading_per_task(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "gsm8k" / "test.jsonl", [{"question": "q", "answer": "#### 1,234"}])
    task = gsm8k(data_dir=tmp_path)
    problem = task.problems()[0]
    assert "#### N" in task.messages(problem)[0]["content"]
    assert task.grade(task.extract("so 1,234 eggs.\n#### 1,234"), problem)
    assert task.grade(task.extract("The answer is \\boxed{1234}."), problem)
    assert not task.grade(task.extract("#### 1,235"), problem)


def test_repair_escapes_only_restores_latex() -> None:
    assert repair_escapes("$\x0crac{1}{2}$ and \triangle ABC") == ("$\\frac{1}{2}$ and \\triangle ABC", 2)
    assert repair_escapes("have\tequal\tperimeters") == ("have\tequal\tperimeters", 0)
    assert gsm8k_reference("so\n#### -1,200") == "-1200" and gsm8k_reference("none") is None


# -- the shared copies ---------------------------------------------------------------------------


def test_shared_data_loads_all_four(shared_data: Path) -> None:
    sizes = {
        name: len(load_task(f"{name}:{shared_data}").problems()) for name in ("gsm8k", "math500", "aime24", "aime25")
    }
    assert sizes == {"gsm8k": 1319, "math500": 500, "aime24": 30, "aime25": 30}


def test_every_gsm8k_reference_parses(shared_data: Path) -> None:
    problems = gsm8k(data_dir=shared_data).problems()
    assert all(int(p.reference) == float(p.reference) for p in problems)  # all are integers
    assert {p.reference for p in problems} >= {"18", "-10", "2125"}  # "2,125" lost its comma


def test_aime_answers_are_integers(shared_data: Path) -> None:
    for factory in (aime24, aime25):
        task = factory(data_dir=shared_data)
        for problem in task.problems():
            value = int(problem.reference)
            assert 0 <= value <= 999
            assert task.grade(str(value), problem) and task.grade(f"{value:03d}", problem)
            assert not task.grade(str(value + 1), problem)
    padded = [p for p in aime24(data_dir=shared_data).problems() if p.reference == "025"]
    assert padded and aime24(data_dir=shared_data).grade("25", padded[0])


def test_aime25_lost_escapes_are_repaired(shared_data: Path) -> None:
    problems = {p.id: p for p in aime25(data_dir=shared_data).problems()}
    assert "\\frac{\\log_k" in problems["aime25-18"].question and problems["aime25-18"].meta["repaired_escapes"] == 5
    assert "\\triangle DEF" in problems["aime25-19"].question
    assert not any(ch in p.question for p in problems.values() for ch in "\x0c\x08")



def test_a_dataset_is_one_spec_and_one_generated_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 47: the factories are generated from SPECS, so a new dataset is its spec and one line, not a copy
    from dataclasses import replace

    from ttscale.evals import datasets

    assert [f.__name__ for f in (gsm8k, math500, aime24, aime25)] == ["gsm8k", "math500", "aime24", "aime25"]
    monkeypatch.setitem(datasets.SPECS, "toy", replace(datasets.SPECS["gsm8k"], name="toy"))
    toy = datasets._factory("toy", "A toy set.")
    assert (toy.__name__, toy.__doc__) == ("toy", "A toy set.")
    write_jsonl(tmp_path / "toy" / "test.jsonl", [{"q": "two?", "answer": "#### 2"}])
    task = toy(data_dir=tmp_path, question_field="q")
    assert task.problems()[0].question.startswith("two?") and task.problems()[0].reference == "2"
