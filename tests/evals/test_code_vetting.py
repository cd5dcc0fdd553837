"""Issue 59: tests that can never fail, found by behaviour. The AST rule accepts each of these shapes (an assert is
there); running them against functions that must fail (returns None, returns a fresh object, raises) refuses each,
naming the file and the problem, while honest tests and HumanEval's 164 load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ttscale.evals.code import never_fails
from ttscale.evals.code_data import code_jsonl
from ttscale.evals.code_vetting import MUST_FAIL

sandbox = pytest.importorskip("ttscale.sandbox")
PROMPT = 'def add(a, b):\n    """The sum of a and b."""\n'
CHECK = "def check(candidate):\n"
# Each passes at least one function of MUST_FAIL; each is accepted by the AST rule.
NEVER_FAIL = {
    "assert_true": ["assert True"],
    "or_true": ["assert add(1, 2) == 3 or True"],
    "tuple_assert": ["assert (add(1, 2) == 3, 'the sum')"],
    "callable": ["assert callable(add)"],
    "except_assertion": CHECK + "    try:\n        assert candidate(1, 2) == 3\n    except AssertionError:\n"
                        "        pass\n",
    "except_everything": CHECK + "    try:\n        assert candidate(1, 2) == 3\n    except Exception:\n        pass\n",
    "if_false": CHECK + "    if False:\n        assert candidate(1, 2) == 3\n",
    "after_return": CHECK + "    return\n    assert candidate(1, 2) == 3\n",
    "is_none_or_right": CHECK + "    result = candidate(1, 2)\n    assert result is None or result == 3\n",
    "only_that_it_runs": CHECK + "    candidate(1, 2)\n    assert 1 + 1 == 2\n",
}
HONEST = {"asserts": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"],
          "check": CHECK + "    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n"}


def _file(tmp_path: Path, tests: dict[str, object]) -> Path:
    path = tmp_path / "problems.jsonl"
    rows = [{"id": name, "prompt": PROMPT, "entry_point": "add", "tests": test, "solution": "    return a + b\n"}
            for name, test in tests.items()]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTSCALE_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("shape", sorted(NEVER_FAIL))
def test_a_test_that_passes_a_function_that_must_fail_is_refused_by_file_and_problem(tmp_path: Path,
                                                                                      shape: str) -> None:
    test = NEVER_FAIL[shape]
    source = test if isinstance(test, str) else "\n".join(test) + "\n"
    assert never_fails(source) is None  # the AST rule lets it through: only behaviour tells
    path = _file(tmp_path, {"honest": HONEST["check"], shape: test})
    with pytest.raises(ValueError, match=rf"^{path}: problem '{shape}': its tests pass a function that "
                                         r"(returns None|returns a fresh object|raises an exception), so they can "
                                         r"never fail an answer"):
        code_jsonl(str(path)).problems()


def test_honest_tests_load_and_their_verdict_is_kept(tmp_path: Path) -> None:
    path = _file(tmp_path, HONEST)
    task = code_jsonl(str(path))
    assert [p.id for p in task.problems()] == ["asserts", "check"]
    markers = list((tmp_path / "cache" / "vetted-tests").iterdir())
    assert len(markers) == 1 and json.loads(markers[0].read_text()) == {"problems": 2, "version": 1}
    # The answers the vetting runs do fail these tests, and the reference passes them.
    for problem in task.problems():
        assert task.grade("    return a + b\n", problem)
        for _, body in MUST_FAIL:
            assert not task.grade(f"    {body}\n", problem)
