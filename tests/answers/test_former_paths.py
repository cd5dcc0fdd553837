"""The modules moved into ttscale.answers (issue 47) still import under their former paths, as the same modules."""

from __future__ import annotations

import importlib

import pytest

MOVED = {
    "ttscale.verifiers.grading": "ttscale.answers.grading",
    "ttscale.verifiers.canonical": "ttscale.answers.canonical",
    "ttscale.verifiers.pool": "ttscale.answers.pool",
    "ttscale.evals.extract": "ttscale.answers.extract",
}


@pytest.mark.parametrize(("former", "home"), sorted(MOVED.items()))
def test_a_former_path_is_the_moved_module_itself(former: str, home: str) -> None:
    assert importlib.import_module(former) is importlib.import_module(home)


def test_the_names_callers_import_from_the_former_paths() -> None:
    from ttscale.answers import canonical, extract, grading
    from ttscale.evals.extract import Extraction, extract_answer
    from ttscale.verifiers import canonical as former_canonical
    from ttscale.verifiers import grading as former_grading
    from ttscale.verifiers.canonical import exact_number
    from ttscale.verifiers.grading import Grader, math_equal

    assert former_grading is grading and former_canonical is canonical
    assert (math_equal, Grader) == (grading.math_equal, grading.Grader)
    assert exact_number is canonical.exact_number and exact_number("025") == canonical.exact_number("25")
    assert (Extraction, extract_answer) == (extract.Extraction, extract.extract_answer)
    assert extract_answer("so it is \\boxed{12}.") == "12"


def test_a_patch_through_a_former_path_reaches_the_grader(monkeypatch: pytest.MonkeyPatch) -> None:
    from ttscale.answers.grading import math_verify_available
    from ttscale.verifiers import grading as former

    monkeypatch.setattr(former, "_MATH_VERIFY", False)  # as tests written against the former path patch it
    assert math_verify_available() is False
