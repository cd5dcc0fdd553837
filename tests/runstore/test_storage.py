from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ttscale.runstore.storage import RESULTS, RunDir, RunDirError


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
    # The old lines as they were; the new one stamped with today's format version (ttscale.runstore.runformat).
    assert (tmp_path / RESULTS).read_text() == '{"id": "a"}\n{"id": "b"}\n{"format": 4, "id": "c"}\n'
    assert run.records() == [{"id": "a"}, {"id": "b"}, {"id": "c"}]  # one shape, whatever version wrote a line


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


def test_write_config_stamps_the_format_version_and_read_config_leaves_it_off(tmp_path: Path) -> None:
    import json

    run = RunDir(tmp_path)
    run.write_config({"identity": {"x": 1}})
    assert json.loads((tmp_path / "config.json").read_text()) == {"format": 4, "identity": {"x": 1}}
    assert run.read_config() == {"identity": {"x": 1}}  # today's shape: the version is the file's


def test_a_record_of_a_newer_format_refuses_the_resume_and_is_kept(tmp_path: Path) -> None:
    text = '{"id": "a"}\n{"format": 5, "id": "b"}\n{"id": "c", "le'
    (tmp_path / RESULTS).write_text(text)
    with (pytest.raises(RunDirError, match=r"results\.jsonl:2: run format 5 is newer than this ttscale reads"),
          RunDir(tmp_path).open_for_writing()):
        pass
    assert (tmp_path / RESULTS).read_text() == text  # not even its torn tail is cut


def _counting_parser(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    from ttscale.runstore import storage

    parsed: list[bytes] = []
    real = storage._parse_line

    def counting(raw: bytes) -> Any:
        parsed.append(raw)
        return real(raw)

    monkeypatch.setattr(storage, "_parse_line", counting)
    return parsed


def test_a_resume_parses_each_finished_line_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ttscale.pipeline import run_problems
    from ttscale.running.runner import RunSpec, prepare
    from ttscale.runstore.writer import RunWriter

    run_dir = RunDir(tmp_path)
    prepared = prepare(RunSpec(strategy="self_consistency", task="arithmetic", limit=40))
    with run_dir.open_for_writing():
        for problem in prepared.problems[:39]:
            run_dir.append({"id": problem.id, "correct": True, "ledger": {"spent": 1.0}})
    parsed = _counting_parser(monkeypatch)

    async def solver(problem: Any) -> dict[str, Any]:
        return {"id": problem.id, "correct": False, "ledger": {"spent": 2.0}}

    resumed = RunDir(tmp_path)  # as `ttscale run --resume` opens it
    with RunWriter(resumed, prepared, stored={}) as writer:
        assert len(resumed.records()) == 39
        summary = asyncio.run(run_problems(writer, solver, concurrency=4, progress=False))
    assert summary["problems"] == 40 and summary["resumed"]
    # Repair, finished ids, the summary's records, and the line appended: 39 + 1 lines, each parsed once.
    assert len(parsed) == 40 and len(set(parsed)) == 40


def test_reads_follow_appends_torn_lines_and_a_replaced_file(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    with run_dir.open_for_writing():
        run_dir.append({"id": "a"})
        assert run_dir.finished_ids() == {"a"}
        run_dir.append({"id": "b"})
        run_dir.append({"id": "a", "late": True})  # a duplicate: the first record of an id counts
        assert [r["id"] for r in run_dir.records()] == ["a", "b"] and "late" not in run_dir.records()[0]
    with open(tmp_path / RESULTS, "ab") as handle:
        handle.write(b'{"id": "c", "tor')  # a torn write after the cached lines
    assert run_dir.finished_ids() == {"a", "b"}
    with open(tmp_path / RESULTS, "ab") as handle:
        handle.write(b'n": 1}\n')  # ... completed: now a whole line
    assert run_dir.finished_ids() == {"a", "b", "c"}
    (tmp_path / "new.jsonl").write_text('{"id": "z"}\n')
    (tmp_path / "new.jsonl").replace(tmp_path / RESULTS)  # another file (inode) under the name
    assert run_dir.finished_ids() == {"z"}
    records = run_dir.records()
    records[0]["id"] = "edited"  # what a caller does to its copy does not reach the next read
    assert run_dir.finished_ids() == {"z"}


def test_problems_finishing_together_share_an_fsync_and_each_returns_only_once_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from ttscale.runstore.writer import GroupCommit

    synced: list[int] = []  # the file's size at each fsync: what is durable
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        synced.append(os.fstat(fd).st_size)

    monkeypatch.setattr("ttscale.runstore.storage.os.fsync", fsync)
    run = RunDir(tmp_path)

    async def main() -> GroupCommit:
        commit = GroupCommit(run)

        async def finish(i: int) -> None:
            await asyncio.sleep(0.001 * (i % 3))  # three waves of problems finishing at once
            await commit.append({"id": f"p{i}", "pad": "x" * i})
            # Returned: this problem's line lies within what the last fsync covered.
            line_end = (tmp_path / RESULTS).read_text().index(f'"p{i}"')
            assert synced and synced[-1] > line_end

        await asyncio.gather(*(finish(i) for i in range(60)))
        await commit.close()
        return commit

    with run.open_for_writing():
        commit = asyncio.run(main())
    assert sorted(r["id"] for r in run.records()) == sorted(f"p{i}" for i in range(60))
    assert commit.commits == len(synced) and 1 <= commit.commits < 60, synced


def test_a_failed_group_commit_fails_every_problem_in_it_and_keeps_none_of_their_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    from ttscale.runstore.storage import StorageError
    from ttscale.runstore.writer import GroupCommit

    run = RunDir(tmp_path)
    real_fsync = os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    async def main() -> list[BaseException | None]:
        commit = GroupCommit(run)
        await commit.append({"id": "kept"})
        monkeypatch.setattr("ttscale.runstore.storage.os.fsync", full)
        outcomes = await asyncio.gather(*(commit.append({"id": f"lost{i}"}) for i in range(5)), return_exceptions=True)
        monkeypatch.setattr("ttscale.runstore.storage.os.fsync", real_fsync)
        await commit.append({"id": "after"})  # the disk has room again: the run goes on from a whole line
        return list(outcomes)

    with run.open_for_writing():
        outcomes = asyncio.run(main())
    assert all(isinstance(o, StorageError) and "No space left" in str(o) for o in outcomes), outcomes
    assert [r["id"] for r in run.records()] == ["kept", "after"]
    assert (tmp_path / RESULTS).read_text() == '{"format": 4, "id": "kept"}\n{"format": 4, "id": "after"}\n'


def test_a_problem_cancelled_while_its_line_is_written_still_has_it_saved(tmp_path: Path) -> None:
    from ttscale.runstore.writer import GroupCommit

    run = RunDir(tmp_path)

    async def main() -> None:
        commit = GroupCommit(run)
        task = asyncio.ensure_future(commit.append({"id": "a"}))
        await asyncio.sleep(0)  # the line is handed over and its write has begun
        task.cancel()
        await commit.close()
        assert task.cancelled()

    with run.open_for_writing():
        asyncio.run(main())
    assert [r["id"] for r in run.records()] == ["a"]
