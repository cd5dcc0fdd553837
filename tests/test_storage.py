from __future__ import annotations

from pathlib import Path

import pytest

from ttscale.storage import RESULTS, RunDir, RunDirError


def test_append_and_read_back(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "r")
    with run.open_for_writing():
        run.append({"id": "a", "correct": True})
        run.append({"id": "b", "correct": False})
        run.append({"id": "a", "correct": False})  # a duplicate never wins over the first record
    assert [r["id"] for r in run.records()] == ["a", "b"]
    assert run.records()[0]["correct"] is True


def test_torn_last_line_is_dropped_and_cut_on_resume(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    (tmp_path / RESULTS).write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "led')
    assert run.finished_ids() == {"a", "b"}
    with run.open_for_writing():
        run.append({"id": "c"})
    assert (tmp_path / RESULTS).read_text() == '{"id": "a"}\n{"id": "b"}\n{"id": "c"}\n'


def test_second_writer_is_refused(tmp_path: Path) -> None:
    first = RunDir(tmp_path)
    with (
        first.open_for_writing(),
        pytest.raises(RunDirError, match="another ttscale run"),
        RunDir(tmp_path).open_for_writing(),
    ):
        pass


def test_write_json_is_atomic_and_readable(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_json("config.json", {"identity": {"x": 1}})
    assert run.read_config() == {"identity": {"x": 1}}
    assert [p.name for p in tmp_path.iterdir()] == ["config.json"]
    with pytest.raises(RunDirError, match="not a ttscale run"):
        RunDir(tmp_path / "nothing").read_config()
