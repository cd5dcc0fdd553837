"""Code tasks without running code: loaders and their one-line errors, extraction, program assembly, the
synthetic task's determinism and levels, and that hidden tests never reach the model's messages."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import time
import types
from pathlib import Path
from typing import Any

import pytest

from ttscale.evals import TASKS, load_task
from ttscale.evals.base import param_defaults
from ttscale.evals.code import build_program, defines_check, extract_code
from ttscale.evals.code_data import code_jsonl, humaneval
from ttscale.evals.code_synthetic import FAMILIES, SyntheticCodeTask
from ttscale.evals.datasets import DATA_DIR_ENV

HUMANEVAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "humaneval" / "HumanEval.jsonl.gz"
needs_humaneval = pytest.mark.skipif(not HUMANEVAL.is_file(), reason=f"shared data not found at {HUMANEVAL}")

PROMPT = 'def add(a: int, b: int) -> int:\n    """Sum.\n    >>> add(1, 2)\n    3\n    """\n'
ROW = {"id": "add-1", "prompt": PROMPT, "entry_point": "add", "tests": ["assert add(2, 2) == 4"],
       "solution": "    return a + b\n"}


@pytest.fixture(autouse=True)
def _no_data_dir_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


def write(path: Path, rows: list[Any] | None = None, *, raw: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = raw if raw is not None else "".join(json.dumps(r) + "\n" for r in rows or [])
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


# -- extraction ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code", "rule"),
    [
        ("Here:\n```python\ndef f(x):\n    return x\n```\nDone.", "def f(x):\n    return x", "fenced_python"),
        ("```python\nA = 1\n```\nor better\n```python\nB = 2\n```", "B = 2", "fenced_python"),
        ("```py\n    return a + b\n```", "    return a + b", "fenced_python"),  # a body keeps its indentation
        ("```python\nA = 1\n```\nIt prints:\n```\n1\n```", "A = 1", "fenced_python"),  # output is no answer
        ("```\nx = 1\n```", "x = 1", "fenced"),
        ("```python\ndef f():\n    return 1", "def f():\n    return 1", "fenced_python"),  # cut at the limit
        ("```python\r\ndef f():\r\n    return 1\r\n```", "def f():\n    return 1", "fenced_python"),
        ("```python\n\n```\n```python\nC = 3\n```", "C = 3", "fenced_python"),  # an empty block is skipped
        ("Sure.\ndef f(x):\n    return x\n\nThis returns x.", "def f(x):\n    return x", "raw_code"),
        ("    return a + b\n", "    return a + b", "raw_code"),  # a continuation of the prompt
        ("return a + b", "return a + b", "raw_code"),
        ("import math\nx = math.pi\nprint(x)\nThat is all.", "import math\nx = math.pi\nprint(x)", "raw_code"),
    ],
)
def test_extraction_rules(text: str, code: str, rule: str) -> None:
    found = extract_code(text)
    assert (found.answer, found.rule) == (code, rule)
    assert TASKS.get("code")().extraction(text) == found


@pytest.mark.parametrize("text", ["", "The answer is 42.", "I cannot solve this.", "```bash\npip install x\n```"])
def test_no_code_is_none(text: str) -> None:
    assert tuple(extract_code(text)) == (None, None)
    assert SyntheticCodeTask().extract(text) is None


@pytest.mark.parametrize(
    "hostile",
    ["`" * 10_000_000, "```python\n" * 1_000_000, "```" + "x" * 10_000_000, "def f():\n" * 1_100_000,
     "    x = (" * 1_300_000, "a = 1\n" + "b" * 10_000_000 + "\n", ("```python\nx = 1\n" + " " * 100) * 90_000],
)
def test_hostile_text_is_bounded(hostile: str) -> None:
    assert len(hostile) >= 9_000_000
    started = time.perf_counter()
    found = extract_code(hostile)
    assert time.perf_counter() - started < 1.0
    assert found.answer is None or len(found.answer) <= 100_000


# -- program assembly --------------------------------------------------------------------------------------

HELPERS = 'from typing import List\n\n\ndef helper(x: int) -> int:\n    return x * 2\n\n\n' + PROMPT


@pytest.mark.parametrize(
    ("code", "present", "absent"),
    [
        ("def add(a, b):\n    return helper(a) // 2 + b", ["from typing import List", "def helper"], ['"""Sum.']),
        ("    def add(a, b):\n        return a + b", ["\ndef add(a, b):\n    return a + b"], ['"""Sum.']),
        ("    return a + b", ['"""\n    return a + b\n'], []),
        ("return a + b", ['"""\n    return a + b\n'], []),
        ("s = a + b\nreturn s", ["    s = a + b\n    return s\n"], []),
    ],
)
def test_program_takes_a_whole_function_or_a_body(code: str, present: list[str], absent: list[str]) -> None:
    program = build_program(prompt=HELPERS, code=code, entry_point="add")
    compile(program, "<candidate>", "exec")  # valid Python (compiled, never run here)
    assert all(p in program for p in present) and not any(a in program for a in absent)


def test_a_stub_without_body_still_takes_a_whole_function() -> None:
    program = build_program(prompt="import os\n\ndef f(x):\n", code="def f(x):\n    return x", entry_point="f")
    compile(program, "<candidate>", "exec")
    assert program.startswith("import os")


# -- the synthetic task ----------------------------------------------------------------------------------------


def test_synthetic_is_seeded_interleaved_and_levelled() -> None:
    task = load_task("code:1-3", per_level=6)
    problems = task.problems()
    assert [p.level for p in problems[:6]] == [1, 2, 3, 1, 2, 3] and len(problems) == 18
    assert [p.id for p in problems[:3]] == ["code-L1-0000", "code-L2-0000", "code-L3-0000"]
    again = SyntheticCodeTask("1-3", per_level=6).problems()
    assert again == problems
    other = SyntheticCodeTask("1-3", per_level=6, seed=1).problems()
    assert [p.question for p in other] != [p.question for p in problems]
    assert SyntheticCodeTask("2,5", per_level=1).levels == (2, 5)
    assert load_task("synthetic_code:4").problems()[0].level == 4


def test_synthetic_problems_show_one_example_and_hide_several_asserts() -> None:
    problems = SyntheticCodeTask(per_level=40).problems()
    names = {level: set() for level in FAMILIES}  # type: dict[int, set[str]]
    for p in problems:
        names[p.level or 0].add(p.meta["entry_point"])
        assert p.question.count(">>>") == 1 and p.question == p.meta["prompt"]
        assert p.meta["test"].startswith("def check(candidate):") and p.meta["test"].count("assert") >= 3
        assert p.reference.startswith(f"def {p.meta['entry_point']}(")
        shown = p.question.split(">>> ")[1].split("\n")[0].replace(p.meta["entry_point"], "candidate", 1)
        hidden = [line.strip().removeprefix("assert ").split(" == ")[0] for line in p.meta["test"].splitlines()[1:]]
        assert any(h != shown for h in hidden)  # the hidden tests are not just the visible example
    for level, families in FAMILIES.items():
        assert len(names[level]) == len(families) >= 6  # every family of every level is drawn


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"levels": "0-2"}, "code levels must be within 1-5, like '1-3' or '1,4', got '0-2'"),
        ({"levels": "x"}, "code levels must be within 1-5"),
        ({"levels": (6,)}, "code levels must be within 1-5, got (6,)"),
        ({"per_level": 0}, "per_level must be an integer ≥ 1, got 0"),
        ({"timeout": 0}, "timeout must be in (0, 600] seconds, got 0"),
        ({"allow_network": "yes"}, "allow_network must be true or false, got 'yes'"),
    ],
)
def test_synthetic_options_are_validated(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SyntheticCodeTask(**options)


def test_param_defaults_suit_code(tmp_path: Path) -> None:
    assert param_defaults(SyntheticCodeTask())["max_tokens"] == 512
    assert param_defaults(code_jsonl(str(write(tmp_path / "mine.jsonl", [ROW]))))["answer_tokens"] == 1024


# -- humaneval and code_jsonl loading ------------------------------------------------------------------


@needs_humaneval
def test_humaneval_from_a_file_a_data_dir_and_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problems = humaneval(str(HUMANEVAL)).problems()
    assert len(problems) == 164 and problems[0].id == "HumanEval/0" and problems[163].id == "HumanEval/163"
    first = problems[0]
    assert first.meta["entry_point"] == "has_close_elements" and defines_check(first.meta["test"])
    assert first.reference.startswith("    for idx, elem") and first.question == first.meta["prompt"]
    shutil.copy(HUMANEVAL, tmp_path / "HumanEval.jsonl.gz")
    (tmp_path / "humaneval").mkdir()
    shutil.copy(HUMANEVAL, tmp_path / "humaneval" / "HumanEval.jsonl.gz")
    assert humaneval(data_dir=tmp_path).path == tmp_path / "humaneval" / "HumanEval.jsonl.gz"
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert load_task("human_eval").problems() == problems
    plain = tmp_path / "plain"
    write(plain / "humaneval" / "test.jsonl", raw=gzip.decompress(HUMANEVAL.read_bytes()).decode())
    assert load_task(f"humaneval:{plain}").problems() == problems


def test_humaneval_missing_local_copy_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^humaneval: no .*humaneval/HumanEval.jsonl.gz \(from data_dir; expected"):
        humaneval(data_dir=tmp_path)


@needs_humaneval
def test_humaneval_file_named_as_the_readme_names_it_is_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 49 item 2: README's `--task humaneval:HumanEval.jsonl.gz`, a file in the working folder, is that file;
    # where it is missing the error names it as given (not as a folder `HumanEval.jsonl.gz/humaneval/...`) and
    # says where to get it offline.
    from ttscale.cli import main

    monkeypatch.chdir(tmp_path)
    shutil.copy(HUMANEVAL, tmp_path / "HumanEval.jsonl.gz")
    task = load_task("humaneval:HumanEval.jsonl.gz")
    assert task.path == Path("HumanEval.jsonl.gz") and len(task.problems()) == 164
    (tmp_path / "HumanEval.jsonl.gz").unlink()
    with pytest.raises(ValueError) as info:
        load_task("humaneval:HumanEval.jsonl.gz")
    message = str(info.value)
    assert message.startswith("humaneval: no such file or folder: HumanEval.jsonl.gz (from argument;"), message
    assert "HumanEval.jsonl.gz/humaneval" not in message and "\n" not in message
    assert "data/HumanEval.jsonl.gz of https://github.com/openai/human-eval" in message
    # The CLI: one line, exit 2, before any engine starts or any folder is made.
    argv = ["run", "--strategy", "generated_tests", "--task", "humaneval:HumanEval.jsonl.gz", "--budget", "8k",
            "--param", "n=8", "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file or folder: HumanEval.jsonl.gz (from argument" in err, err
    assert not (tmp_path / "run").exists()


def test_humaneval_hub_path_and_its_offline_error(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    row = {"task_id": "HumanEval/0", "prompt": PROMPT, "canonical_solution": "    return a + b\n",
           "test": "def check(candidate):\n    assert candidate(1, 1) == 2\n", "entry_point": "add"}

    def load_dataset(path: str, *args: Any, split: str) -> list[dict[str, Any]]:
        calls.append((path, *args, split))
        return [row]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    task = humaneval()
    assert task.path is None and task.problems()[0].id == "HumanEval/0"
    assert calls == [("openai/openai_humaneval", "test")] and task._source()["hub"] == "openai/openai_humaneval"

    def offline(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("Couldn't reach\n'openai/openai_humaneval' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=offline))
    with pytest.raises(ValueError) as info:
        humaneval().problems()
    assert "\n" not in str(info.value)
    where = "openai/openai_humaneval (test split)"
    assert str(info.value).startswith(f"humaneval: could not load {where} (ConnectionError:")
    assert str(info.value).endswith("or give a local copy (humaneval:PATH, or --data-dir with <dir>/humaneval/"
                                    "HumanEval.jsonl.gz); offline, the file is data/HumanEval.jsonl.gz of "
                                    "https://github.com/openai/human-eval")


def test_code_jsonl_rows_become_problems(tmp_path: Path) -> None:
    rows = [ROW, {**ROW, "id": 7, "tests": "def check(candidate):\n    assert candidate(1, 1) == 2\n", "level": 2}]
    rows.append({key: value for key, value in ROW.items() if key != "solution"} | {"id": "no-solution"})
    for name in ("mine.jsonl", "mine.jsonl.gz"):
        task = load_task(f"code_jsonl:{write(tmp_path / name, rows)}")
        first, second, third = task.problems()
        assert [first.id, second.id, third.id] == ["add-1", "7", "no-solution"]
        assert first.meta["test"] == "assert add(2, 2) == 4\n" and not defines_check(first.meta["test"])
        assert defines_check(second.meta["test"]) and second.level == 2 and first.level is None
        assert first.reference == "    return a + b\n" and third.reference == ""
        assert task._source()["path"].endswith(name) and len(task._source()["sha256"]) == 64


BAD_ROWS: list[tuple[str, Any, str]] = [
    ("bad json", '{"id": 1,\n', ":1: expected one JSON object per line"),
    ("not an object", "[1, 2]\n", ":1: expected a JSON object, got list"),
    ("missing", [{k: v for k, v in ROW.items() if k != "prompt"}], ":1: missing field 'prompt' (fields: entry_point,"),
    ("missing tests", [{k: v for k, v in ROW.items() if k != "tests"}], ":1: missing field 'tests'"),
    ("type", [{**ROW, "prompt": 5}], ":1: field 'prompt' must be a string, got int"),
    ("id type", [{**ROW, "id": [1]}], ":1: field 'id' must be a non-empty string or an integer, got [1]"),
    ("duplicate", [ROW, ROW], ":2: duplicate id 'add-1'"),
    ("tests type", [{**ROW, "tests": 3}], ":1: field 'tests' must be a test source defining check(candidate) or a"),
    ("tests empty", [{**ROW, "tests": []}], "or a list of assert lines, got an empty list"),
    ("tests lines", [{**ROW, "tests": ["assert 1", 2]}], "got a list with a non-string or empty line"),
    ("tests syntax", [{**ROW, "tests": ["assert add(1 == 2"]}], ":1: field 'tests' is not valid Python (line 1:"),
    ("entry point", [{**ROW, "entry_point": "sub"}], ":1: the prompt defines no function 'sub' (the entry_point)"),
    ("entry name", [{**ROW, "entry_point": "a b"}], ":1: field 'entry_point' must be a function name, got 'a b'"),
    ("level", [{**ROW, "level": "hard"}], ":1: field 'level' must be an integer, got str"),
    ("solution", [{**ROW, "solution": None}], ":1: field 'solution' must be a string, got NoneType"),
    ("blank", "\n\n", ": no problems (the file is empty)"),
    ("second line", [ROW, {**ROW, "id": "b", "entry_point": 1}], ":2: field 'entry_point' must be a string, got int"),
    # Issue 43, item 6: tests that can never fail graded `return -1` correct.
    ("check_solution", [{**ROW, "tests": "def check_solution(candidate):\n    assert candidate(2, 2) == 4\n"}],
     ":1: field 'tests' can never fail, so every answer would pass: it defines check_solution but no assert"),
    ("no assert", [{**ROW, "tests": ["add(2, 2) == 4", "add(-1, 1) == 0"]}],
     ":1: field 'tests' can never fail, so every answer would pass: no assert, raise or assert…() call runs"),
    ("prints only", [ROW, {**ROW, "id": "p", "tests": ["print(add(2, 2))", "x = add(1, 1)"]}],
     ":2: field 'tests' can never fail"),
    ("uncalled test_", [{**ROW, "tests": "def test_add():\n    assert add(2, 2) == 4\n"}],
     ":1: field 'tests' can never fail, so every answer would pass: it defines test_add but"),
    ("check without assert", [{**ROW, "tests": "def check(candidate):\n    candidate(2, 2) == 4\n"}],
     ":1: field 'tests' can never fail, so every answer would pass: it defines check but"),
]


@pytest.mark.parametrize(("case", "content", "message"), BAD_ROWS, ids=[c[0] for c in BAD_ROWS])
@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_code_jsonl_faults_are_one_line_naming_the_file_and_line(
    tmp_path: Path, case: str, content: Any, message: str, suffix: str
) -> None:
    path = tmp_path / f"bad{suffix}"
    write(path, raw=content) if isinstance(content, str) else write(path, content)
    with pytest.raises(ValueError) as info:
        code_jsonl(str(path)).problems()
    text = str(info.value)
    assert "\n" not in text and text.startswith(str(path)) and message in text


def test_humaneval_rows_are_checked_too(tmp_path: Path) -> None:
    row = {"task_id": "HumanEval/0", "prompt": PROMPT, "canonical_solution": "", "test": "def check(c):\n",
           "entry_point": "add"}
    with pytest.raises(ValueError, match=r"bad.jsonl:1: field 'test' is not valid Python \(line 1: expected an indent"):
        humaneval(str(write(tmp_path / "bad.jsonl", [row]))).problems()
    with pytest.raises(ValueError, match=r"bad.jsonl:1: missing field 'entry_point'"):
        row = {k: v for k, v in row.items() if k != "entry_point"} | {"test": "assert True\n"}
        humaneval(str(write(tmp_path / "bad.jsonl", [row]))).problems()


@pytest.mark.parametrize("test", [
    "assert add(2, 2) == 4\n",
    "def check(candidate):\n    assert candidate(2, 2) == 4\n",
    "def _same(a, b):\n    assert a == b\n\ndef check(candidate):\n    _same(candidate(2, 2), 4)\n",
    "for a, b in [(1, 2)]:\n    if add(a, b) != 3:\n        raise ValueError(a, b)\n",
    "import numpy.testing as npt\nnpt.assert_allclose(add(1.0, 2.0), 3.0)\n",
    "import unittest\nclass T(unittest.TestCase):\n    def runTest(self):\n        self.assertEqual(add(2, 2), 4)\n"
    "T().runTest()\n",
    "import sys\nif add(2, 2) != 4:\n    sys.exit(1)\n",
    "def check(candidate):\n    helper(candidate)\n\ndef helper(f):\n    deeper(f)\n\ndef deeper(f):\n"
    "    assert f(1, 1) == 2\n",
])
def test_a_test_that_can_fail_is_accepted_whatever_its_form(test: str) -> None:
    from ttscale.evals.code import never_fails

    assert never_fails(test) is None


@needs_humaneval
def test_every_humaneval_test_can_fail_and_a_check_renamed_is_refused(tmp_path: Path) -> None:
    from ttscale.evals.code import never_fails

    rows = [json.loads(line) for line in gzip.decompress(HUMANEVAL.read_bytes()).decode().splitlines()]
    assert len(rows) == 164 and all(never_fails(row["test"]) is None for row in rows)
    renamed = [rows[0], {**rows[1], "test": rows[1]["test"].replace("def check(", "def check_solution(")}]
    with pytest.raises(ValueError) as info:
        humaneval(str(write(tmp_path / "renamed.jsonl", renamed))).problems()
    assert str(info.value).startswith(f"{tmp_path / 'renamed.jsonl'}:2: field 'test' can never fail, so every answer "
                                      "would pass: it defines check_solution but no assert")


def test_broken_gzip_and_missing_files_are_one_line(tmp_path: Path) -> None:
    whole = gzip.compress(("".join(json.dumps({**ROW, "id": i}) + "\n" for i in range(2000))).encode())
    (tmp_path / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "plain.jsonl.gz").write_text(json.dumps(ROW) + "\n")
    for name, message in (("cut.jsonl.gz", "not a readable gzip file after line"), ("plain.jsonl.gz", "gzip")):
        with pytest.raises(ValueError) as info:
            code_jsonl(str(tmp_path / name)).problems()
        assert "\n" not in str(info.value) and message in str(info.value)
    with pytest.raises(ValueError, match=r"^code_jsonl: no such file: .*nothing.jsonl$"):
        code_jsonl(str(tmp_path / "nothing.jsonl"))
    with pytest.raises(ValueError, match=r"^the code_jsonl task needs a file: --task code_jsonl:PATH$"):
        load_task("code_jsonl")


# -- hidden tests stay hidden -------------------------------------------------------------------------------


def _tasks() -> list[Any]:
    tasks: list[Any] = [SyntheticCodeTask(per_level=20)]
    if HUMANEVAL.is_file():
        tasks.append(humaneval(str(HUMANEVAL)))
    return tasks


def test_messages_show_the_prompt_and_never_the_hidden_tests() -> None:
    for task in _tasks():
        for problem in task.problems():
            messages = task.messages(problem)
            text = json.dumps(messages)
            content = messages[-1]["content"]
            assert problem.question.rstrip() in content and "```python" in content
            assert "def check(" not in text and problem.meta["test"].strip() not in content
            for line in problem.meta["test"].splitlines():
                if line.strip().startswith("assert"):
                    assert line.strip() not in content
