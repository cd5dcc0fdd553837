"""Run files under failure: a failed append leaves no partial line, odd text round-trips, edits are refused."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from ttscale.kit.context import SeededEngine
from ttscale.runstore.storage import RESULTS, RunDir, RunDirError, StorageError
from ttscale.schema import SamplingParams


class _FailingWrites:
    """A results file whose writes stop half-way with ENOSPC, like a disk that fills mid-line."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def write(self, data: bytes) -> int:
        self._handle.write(data[: len(data) // 2])
        self._handle.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


def test_a_failed_append_is_cut_back_so_later_appends_stay_whole(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    with run.open_for_writing():
        run.append({"id": "a"})
        real = run._results
        run._results = _FailingWrites(real)  # type: ignore[assignment]
        with pytest.raises(StorageError, match=r"cannot append to .*results.jsonl: No space left on device"):
            run.append({"id": "b", "text": "x" * 1000})
        run._results = real  # space is back
        run.append({"id": "c"})
    assert (tmp_path / RESULTS).read_text() == '{"format": 4, "id": "a"}\n{"format": 4, "id": "c"}\n'


def test_text_that_utf8_cannot_carry_round_trips_exactly(tmp_path: Path) -> None:
    odd = "\udcff\ud800 NUL\x00 \x1b[2J é 数"
    run = RunDir(tmp_path)
    with run.open_for_writing():
        run.append({"id": "odd", "text": odd})
        run.append({"id": "plain", "text": "é 数"})
    raw = (tmp_path / RESULTS).read_bytes()
    raw.decode("utf-8")  # the file stays valid UTF-8
    assert "é 数".encode() in raw  # ordinary records stay readable as written
    assert [r["text"] for r in run.records()] == [odd, "é 数"]


def test_a_bad_line_before_the_last_is_refused_not_cut(tmp_path: Path) -> None:
    text = '{"id": "a"}\n{"id": "b", oops\n{"id": "c"}\n'
    (tmp_path / RESULTS).write_text(text)
    refused = pytest.raises(RunDirError, match=r"results.jsonl:2 is not a whole JSON record")
    with refused, RunDir(tmp_path).open_for_writing():
        pass
    assert (tmp_path / RESULTS).read_text() == text  # nothing cut


def test_a_run_that_finished_nothing_can_be_discarded_one_that_did_cannot(tmp_path: Path) -> None:
    empty, done = RunDir(tmp_path / "empty"), RunDir(tmp_path / "done")
    for run in (empty, done):
        with run.open_for_writing():
            run.write_json("config.json", {"identity": {}})
    with done.open_for_writing():
        done.append({"id": "a"})
    empty.discard(remove_dir=True)
    assert not (tmp_path / "empty").exists()
    with pytest.raises(RunDirError, match="holds finished problems"):
        done.discard()
    assert json.loads((tmp_path / "done" / RESULTS).read_text()) == {"format": 4, "id": "a"}


class _Recorder:
    def __init__(self) -> None:
        self.seeds: list[int | None] = []

    async def generate(self, prompt: Any, params: SamplingParams, *, seed: int | None = None) -> Any:
        self.seeds.append(seed)


def _seeds(problem: str, requests: list[tuple[list[int], SamplingParams]], run_seed: int = 0) -> list[int | None]:
    import asyncio

    recorder = _Recorder()
    engine = SeededEngine(recorder, run_seed=run_seed, problem_id=problem)  # type: ignore[arg-type]

    async def go() -> None:
        for prompt, params in requests:
            await engine.generate(prompt, params)

    asyncio.run(go())
    return recorder.seeds


def test_request_seeds_depend_on_problem_and_request_not_on_order() -> None:
    a, b = ([1, 2, 3], SamplingParams(n=4)), ([1, 2, 4], SamplingParams(n=4))
    forward, backward = _seeds("p1", [a, b]), _seeds("p1", [b, a])
    assert forward == backward[::-1]  # the same request gets the same seed, whenever it is sent
    assert len(set(forward)) == 2 and all(s is not None and 0 <= s < 2**31 for s in forward)
    again = _seeds("p1", [a, a])
    assert again[0] == forward[0] and again[1] != again[0]  # a repeated request samples afresh
    assert _seeds("p2", [a]) != forward[:1] and _seeds("p1", [a], run_seed=1) != forward[:1]
