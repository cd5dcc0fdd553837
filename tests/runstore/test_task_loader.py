"""The run store reads a run's task only through the loader its caller hands it (issue 47: the run store sits below
the tasks and imports none of them); every reader above it hands over `ttscale.evals.load_task`."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

import ttscale
from ttscale.evals import load_task
from ttscale.runstore.runs import ForeignRecordsWarning, read_run, read_runs

RUN = Path(__file__).resolve().parents[1] / "data" / "real_runs" / "sc-n4"  # arithmetic, self-consistency


def with_a_stray_record(tmp_path: Path) -> Path:
    """A copy of the real run with one more record, of a problem its task does not have."""
    run = Path(shutil.copytree(RUN, tmp_path / "run"))
    first = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    with (run / "results.jsonl").open("a") as handle:
        handle.write(json.dumps({**first, "id": "arith-L9-9999"}) + "\n")
    return run


class Recording:
    """`load_task`, keeping what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, spec: str, **options: Any) -> Any:
        self.asked.append((spec, options))
        return load_task(spec, **options)


def test_the_reader_loads_the_runs_task_through_the_loader_it_is_handed(tmp_path: Path) -> None:
    run = with_a_stray_record(tmp_path)
    task = json.loads((RUN / "config.json").read_text())["identity"]["task"]
    loader = Recording()
    with pytest.warns(ForeignRecordsWarning):
        data = read_run(run, tasks=loader)
    assert data.foreign == 1 and "arith-L9-9999" not in {r["id"] for r in data.records}
    # a stored sample without a verdict is graded by that task: the arithmetic task reads "06" as 6
    assert data.sample_correct({"answer": "06"}, {"reference": "6"}) is True
    assert loader.asked and {spec for spec, _ in loader.asked} == {task["spec"]}
    assert all(options == task["options"] for _, options in loader.asked)


def test_without_a_loader_every_record_is_kept_and_graded_by_exact_match(tmp_path: Path) -> None:
    run = with_a_stray_record(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is left out, so nothing is said
        data = read_run(run)
        (listed,) = read_runs([run])
    assert data.foreign == 0 and listed.foreign == 0 and "arith-L9-9999" in {r["id"] for r in data.records}
    assert len(data.records) == len(listed.records) == len((RUN / "results.jsonl").read_text().splitlines()) + 1
    assert data.sample_correct({"answer": "06"}, {"reference": "6"}) is False
    assert data.sample_correct({"answer": "6"}, {"reference": "6"}) is True


def test_the_public_readers_hand_over_the_task_loader(tmp_path: Path) -> None:
    run = with_a_stray_record(tmp_path)
    with pytest.warns(ForeignRecordsWarning):
        records = ttscale.read_records(run)
    with pytest.warns(ForeignRecordsWarning):
        frame = ttscale.load_runs(run)
    assert "arith-L9-9999" not in {r["id"] for r in records} and "arith-L9-9999" not in set(frame["id"])
    assert len(records) == len((RUN / "results.jsonl").read_text().splitlines())
