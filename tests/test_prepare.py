"""`prepare`: task-suggested parameters for a new run, the stored ones for a resumed run or sweep cell."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ttscale.running.runner import RunSpec, prepare
from ttscale.runstore.run_config import check_resume
from ttscale.runstore.storage import CONFIG, RunDir, RunDirError
from ttscale.sweeps import GridEntry, SweepSpec, cell_dir, prepare_cell


def _math_spec(tmp_path: Path, **changes: object) -> RunSpec:
    path = tmp_path / "math.jsonl"
    path.write_text('{"question": "What is $1/2 + 1/2$?", "answer": "1"}\n', encoding="utf-8")
    return replace(RunSpec(strategy="beam", budget="8k", task=f"jsonl:{path}"), **changes)  # type: ignore[arg-type]


def test_a_new_run_gets_the_task_defaults_explicitly_and_the_user_wins(tmp_path: Path) -> None:
    prepared = prepare(_math_spec(tmp_path, params={"max_steps": "5"}))
    assert (prepared.params.max_tokens, prepared.params.max_steps) == (2048, 5)
    assert prepared.params.step_tokens == 2048  # a MATH step is capped as the whole solution (search-and-learn)
    assert prepared.spec.params == {"max_tokens": 2048, "step_tokens": 2048, "max_steps": "5"}  # config.json
    small = prepare(_math_spec(tmp_path, budget="500"))
    assert small.params.max_tokens == 500 and small.ledger().affordable_samples(500) == 1  # one path paid for
    assert prepare(RunSpec(strategy="beam", task="arithmetic")).params.max_tokens == 256  # no suggestion


def test_a_run_made_before_task_defaults_resumes_with_its_own_parameters(tmp_path: Path) -> None:
    old = prepare(_math_spec(tmp_path), task_defaults=False)  # as every run was made before the defaults
    run_dir = RunDir(tmp_path / "run")
    run_dir.path.mkdir()
    run_dir.write_json(CONFIG, {"spec": {"params": {}}, "identity": json.loads(json.dumps(old.identity()))})
    check_resume(run_dir, prepare(_math_spec(tmp_path), task_defaults=False))  # the CLI's resume: accepted
    with pytest.raises(RunDirError, match=r"max_steps.*max_tokens"):  # re-resolved under today's defaults: refused
        check_resume(run_dir, prepare(_math_spec(tmp_path)))


def test_a_sweep_cell_with_a_config_keeps_its_stored_parameters(tmp_path: Path) -> None:
    spec = SweepSpec(grid=(GridEntry(strategy="beam"),), budgets=("8k",), task=_math_spec(tmp_path).task)
    cell = spec.cells()[0]
    assert prepare_cell(spec, cell, tmp_path).params.max_tokens == 2048  # a new cell: the task's suggestion
    run_dir = cell_dir(tmp_path, cell)
    run_dir.path.mkdir(parents=True)
    run_dir.write_json(CONFIG, {"spec": {"params": {"max_tokens": 300}}})
    assert prepare_cell(spec, cell, tmp_path).params.max_tokens == 300


def test_a_run_stored_with_max_model_len_none_resumes_under_todays_default(tmp_path: Path) -> None:
    from ttscale.engine.base import EngineConfig

    today = prepare(RunSpec(strategy="best_of_n", task="arithmetic"))
    assert today.spec.engine.max_model_len == -1  # vLLM's fit to memory, the default since it replaced None
    run_dir = RunDir(tmp_path / "run")
    run_dir.path.mkdir()
    for stored, accepted in ((None, True), (-1, True), (4096, False)):
        old = prepare(RunSpec(strategy="best_of_n", task="arithmetic", engine=EngineConfig(max_model_len=stored)))
        run_dir.write_json(CONFIG, {"spec": {}, "identity": json.loads(json.dumps(old.identity()))})
        if accepted:  # None: the model's own length, which -1 also gives an engine that started with it
            check_resume(run_dir, today)
        else:  # a length of the user's own still has to match
            with pytest.raises(RunDirError, match=r"max_model_len.*4096.*-1"):
                check_resume(run_dir, today)
