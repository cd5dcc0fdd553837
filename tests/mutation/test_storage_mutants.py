"""ttscale.runstore.storage: behaviour that the mutation run (tools/mutation) found unchecked. Hand-computed values."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import threading
from pathlib import Path

import pytest

from ttscale.runstore import runfiles, storage
from ttscale.runstore.storage import RunDir, RunDirError, StorageError
from ttscale.runstore.writer import GroupCommit


def test_write_json_is_sorted_indented_and_ends_in_a_newline(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_json("summary.json", {"b": 1, "a": [1, 2], "when": Path("x")})
    assert (tmp_path / "summary.json").read_bytes() == (
        b'{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1,\n  "when": "x"\n}\n'
    )
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary file left
    run.write_json("summary.json", {"é": "ü"})  # JSON escapes: the file is ASCII
    assert (tmp_path / "summary.json").read_bytes() == b'{\n  "\\u00e9": "\\u00fc"\n}\n'


def test_write_json_escapes_lone_surrogates_and_reads_them_back(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    data = {"text": "bad \udc80 byte", "b": Path("p"), "a": 1}
    run.write_json("summary.json", data)
    raw = (tmp_path / "summary.json").read_bytes()
    assert raw == b'{\n  "a": 1,\n  "b": "p",\n  "text": "bad \\udc80 byte"\n}\n'
    assert json.loads(raw) == {"text": "bad \udc80 byte", "b": "p", "a": 1}


def test_check_new_accepts_absent_empty_and_cut_off_starts(tmp_path: Path) -> None:
    RunDir(tmp_path / "absent").check_new()
    RunDir(tmp_path).check_new()
    (tmp_path / ".lock").write_text("")
    (tmp_path / "results.jsonl").write_text("")
    (tmp_path / ".config.json.tmp123").write_text("{")
    RunDir(tmp_path).check_new()


def test_check_new_refuses_other_files(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError) as info:
        RunDir(tmp_path).check_new()
    assert str(info.value) == (f"{str(tmp_path)!r} is not empty and not a ttscale run (it holds 'notes.txt', "
                               "no config.json); a new run needs a new or empty directory")
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "results.jsonl").write_text('{"id": "1"}\n')  # a results file with lines is not a leftover
    with pytest.raises(RunDirError) as info:
        RunDir(tmp_path).check_new()
    assert f"{str(tmp_path)!r} is not empty and not a ttscale run (it holds 'a.txt' and 2 more, " in str(info.value)


def test_check_new_on_a_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(RunDirError) as info:
        RunDir(tmp_path / "file").check_new()
    assert str(info.value) == f"cannot use {str(tmp_path / 'file')!r} for a run: Not a directory"


# -- the JSON text of a summary with lone surrogates (`_utf8`) --------------------------------------------


def test_utf8_writes_text_as_utf8_else_with_json_escapes() -> None:
    from ttscale.runstore.storage import _utf8

    assert _utf8('{"a": "é"}\n', {"a": "é"}) == '{"a": "é"}\n'.encode()
    data = {"b": "x\udc80", "a": Path("p/q"), "c": "é"}
    text = json.dumps(data, ensure_ascii=False, default=str, indent=2, sort_keys=True)
    expected = b'{\n  "a": "p/q",\n  "b": "x\\udc80",\n  "c": "\\u00e9"\n}'
    assert _utf8(text + "\n", data, indent=2, sort_keys=True) == expected + b"\n"
    assert _utf8(text, data, indent=2, sort_keys=True) == expected  # no newline when the text has none
    assert _utf8(json.dumps(data, ensure_ascii=False, default=str), data) == (
        b'{"b": "x\\udc80", "a": "p/q", "c": "\\u00e9"}')


# -- what a start leaves, and what a new run refuses -------------------------------------------------------


class _Entry:
    """A directory entry whose stat fails (the file went away between the listing and the look)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def is_file(self) -> bool:
        return True

    def stat(self) -> os.stat_result:
        raise FileNotFoundError(2, "No such file or directory")


def test_a_results_file_that_cannot_be_looked_at_is_not_a_leftover() -> None:
    from ttscale.runstore.storage import _leftover

    assert _leftover(_Entry("results.jsonl")) is False  # type: ignore[arg-type]
    assert _leftover(_Entry(".lock")) is True  # type: ignore[arg-type]


def test_check_new_names_one_more_of_two_other_files(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "b.txt").write_text("")
    with pytest.raises(RunDirError) as info:
        RunDir(tmp_path).check_new()
    assert "(it holds 'a.txt' and 1 more, no config.json)" in str(info.value)


def test_has_results_is_whether_config_json_exists(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert run.has_results() is False
    (tmp_path / "results.jsonl").write_text('{"id": "1"}\n')
    assert run.has_results() is False
    (tmp_path / "config.json").symlink_to(tmp_path / "nowhere")  # a dangling link is there too
    assert run.has_results() is True


# -- config.json ---------------------------------------------------------------------------------------------


def test_read_config_messages(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    with pytest.raises(RunDirError) as info:
        run.read_config()
    assert str(info.value) == f"{str(tmp_path)!r} is not a ttscale run: no config.json"
    (tmp_path / "config.json").write_text("")
    with pytest.raises(RunDirError) as info:
        run.read_config()
    assert str(info.value) == f"cannot read {tmp_path / 'config.json'}: Expecting value: line 1 column 1 (char 0)"
    (tmp_path / "config.json").write_text("[1]")
    with pytest.raises(RunDirError) as info:
        run.read_config()
    assert str(info.value) == f"{tmp_path / 'config.json'} is not a JSON object"
    (tmp_path / "config.json").write_text('{"a": "é"}')
    assert run.read_config() == {"a": "é"}


def test_read_config_reads_config_json_whatever_is_on_stdin(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"a": 1}')
    try:
        saved: int | None = os.dup(0)
    except OSError:  # no stdin at all
        saved = None
    read, write = os.pipe()
    os.write(write, b'{"stdin": true}')
    os.close(write)
    os.dup2(read, 0)
    os.close(read)
    try:
        assert RunDir(tmp_path).read_config() == {"a": 1}
    finally:
        if saved is None:
            with contextlib.suppress(OSError):
                os.close(0)
        else:
            os.dup2(saved, 0)
            os.close(saved)


# -- write_json's failures ---------------------------------------------------------------------------------


def test_write_json_that_cannot_replace_says_so_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    (tmp_path / "summary.json").mkdir()
    with pytest.raises(StorageError) as info:
        RunDir(tmp_path).write_json("summary.json", {"a": 1})
    assert info.value.errno == errno.EISDIR
    assert info.value.strerror == f"cannot write {tmp_path / 'summary.json'}: Is a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_write_json_in_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as info:
        RunDir(tmp_path / "gone").write_json("config.json", {})
    assert info.value.strerror == f"cannot write {tmp_path / 'gone' / 'config.json'}: No such file or directory"


def test_write_json_writes_through_a_temporary_file_named_after_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    real = runfiles.temporary_file  # write_json writes through runfiles.write_atomic

    def spy(folder: Path, prefix: str) -> tuple[int, str]:
        fd, name = real(folder, prefix)
        made.append(name)
        return fd, name

    monkeypatch.setattr(runfiles, "temporary_file", spy)
    RunDir(tmp_path).write_json("config.json", {})
    assert len(made) == 1 and Path(made[0]).parent == tmp_path
    assert Path(made[0]).name.startswith(".config.json.")  # what check_new takes for a cut-off start


# -- appending ---------------------------------------------------------------------------------------------


def test_append_outside_open_for_writing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError) as info:
        RunDir(tmp_path).append({"id": "1"})
    assert str(info.value) == "RunDir.append outside open_for_writing()"


def test_append_writes_utf8_and_paths_as_text(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    with run.open_for_writing():
        run.append({"id": "1", "a": "é", "p": Path("x/y")})
    assert (tmp_path / "results.jsonl").read_bytes() == '{"format": 4, "id": "1", "a": "é", "p": "x/y"}\n'.encode()


class _FullDisk:
    """A results handle on a failing disk: writes fail, and so does the roll-back."""

    def write(self, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "Bad file descriptor")


def test_a_failed_append_whose_roll_back_fails_too_is_one_storage_error(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run._results = _FullDisk()  # type: ignore[assignment]
    with pytest.raises(StorageError) as info:
        run.append({"id": "1"})
    mount = next(p for p in [tmp_path, *tmp_path.parents] if os.path.ismount(p))
    assert info.value.strerror == (f"cannot append to {tmp_path / 'results.jsonl'}: No space left on device: "
                                   f"the file system at {mount} is full")


# -- reading results.jsonl ------------------------------------------------------------------------------------


def test_a_whole_last_record_without_its_newline_is_a_record(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "1", "v": 1}\n{"id": "2", "v": 2}\n{"id": "3", "v": 3}')
    run = RunDir(tmp_path)
    assert run.records() == [{"id": "1", "v": 1}, {"id": "2", "v": 2}, {"id": "3", "v": 3}]
    assert run.finished_ids() == {"1", "2", "3"}
    assert run.torn_tail() is False
    # a last record of a problem already finished: the first record counts
    path.write_bytes(b'{"id": "1", "v": 1}\n{"id": "2", "v": 2}\n{"id": "1", "v": 9}')
    assert RunDir(tmp_path).records() == [{"id": "1", "v": 1}, {"id": "2", "v": 2}]
    assert RunDir(tmp_path).torn_tail() is False


def test_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    run = RunDir(tmp_path)
    assert run.torn_tail() is False and run.records() == [] and run.unfinished_attempts() == []
    path.write_bytes(b'{"id": "1"}\n{"id": "2", "v": tr')
    assert run.torn_tail() is True and run.records() == [{"id": "1"}]
    path.write_bytes(b'{"id": "1"}\n')
    assert run.torn_tail() is False
    path.unlink()
    assert run.records() == [] and run.torn_tail() is False and run.unfinished_attempts() == []


def test_a_line_that_is_json_but_not_an_object_is_not_a_record(tmp_path: Path) -> None:
    from ttscale.runstore.storage import _parse_line

    assert _parse_line(b"[1, 2]\n") is None and _parse_line(b"7") is None
    assert _parse_line(b'{"id": "1"}\n') == {"id": "1"}
    (tmp_path / "results.jsonl").write_bytes(b'{"id": "1"}\n[1, 2]')
    run = RunDir(tmp_path)
    assert run.records() == [{"id": "1"}] and run.torn_tail() is True


def test_a_bad_line_found_by_a_later_read_is_named_by_its_number(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "1"}\n{"id": "2"}\n')
    run = RunDir(tmp_path)
    assert run.records() == [{"id": "1"}, {"id": "2"}]
    with path.open("ab") as handle:
        handle.write(b'{"id": "3"}\nnot json\n{"id": "4"}\n')
    with pytest.raises(RunDirError) as info:
        run.records()
    assert str(info.value) == (f"{path}:4 is not a whole JSON record, and more lines follow it; it was not "
                               "written by ttscale: fix or delete that line")


def test_a_replaced_results_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "1"}\n')
    run = RunDir(tmp_path)
    assert run.records() == [{"id": "1"}]
    new = tmp_path / "new.jsonl"
    new.write_bytes(b'{"id": "7", "pad": "xxxxxxxx"}\n{"id": "8"}\n')
    os.replace(new, path)  # another inode, longer
    assert run.records() == [{"id": "7", "pad": "xxxxxxxx"}, {"id": "8"}]
    path.write_bytes(b'{"id": "9"}\n')  # the same inode, shorter
    assert run.records() == [{"id": "9"}]


def test_unfinished_attempts_are_kept_apart(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "1", "unfinished": true, "spent": 5}\n{"id": "2", "unfinished": false}\n'
                     b'{"id": "1", "v": 1}\n{"id": "3", "unfinished": true}')
    run = RunDir(tmp_path)
    assert run.records() == [{"id": "2", "unfinished": False}, {"id": "1", "v": 1}]
    assert run.unfinished_attempts() == [{"id": "1", "unfinished": True, "spent": 5},
                                         {"id": "3", "unfinished": True}]
    assert run.torn_tail() is False


def test_results_that_are_not_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "results.jsonl").mkdir()
    with pytest.raises(RunDirError) as info:
        RunDir(tmp_path).records()
    assert str(info.value) == (f"cannot open {tmp_path / 'results.jsonl'}: Is a directory; a run's files are "
                               "regular files")


def test_results_under_a_file_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(StorageError) as info:
        RunDir(tmp_path / "file").records()
    assert info.value.errno == errno.ENOTDIR
    assert info.value.strerror == f"cannot read {tmp_path / 'file' / 'results.jsonl'}: Not a directory"


def _refuse(flags_refused: int) -> object:
    real = storage.open_regular

    def fake(path: Path, flags: int) -> tuple[int, bool]:
        if flags & (os.O_RDONLY | os.O_RDWR | os.O_WRONLY) == flags_refused and path.name == "results.jsonl":
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path, flags)

    return fake


def test_results_that_cannot_be_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "results.jsonl").write_bytes(b'{"id": "1"}\n')
    monkeypatch.setattr(storage, "open_regular", _refuse(os.O_RDONLY))
    with pytest.raises(StorageError) as info:
        RunDir(tmp_path).records()
    assert info.value.errno == errno.EACCES
    assert info.value.strerror == f"cannot read {tmp_path / 'results.jsonl'}: Permission denied"


def test_a_repair_that_fails_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "results.jsonl").write_bytes(b'{"id": "1"}\n{"id": "2", "v": tr')
    monkeypatch.setattr(storage, "open_regular", _refuse(os.O_RDWR))
    with pytest.raises(StorageError) as info, RunDir(tmp_path).open_for_writing():
        pass
    assert info.value.errno == errno.EACCES
    assert info.value.strerror == f"cannot repair {tmp_path / 'results.jsonl'}: Permission denied"


def test_a_whole_last_record_gets_its_newline_when_the_run_resumes(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"id": "1"}\n{"id": "2"}')
    run = RunDir(tmp_path)
    with run.open_for_writing():
        assert path.read_bytes() == b'{"id": "1"}\n{"id": "2"}\n'
        assert run.records() == [{"id": "1"}, {"id": "2"}]
        run.append({"id": "3"})
    assert path.read_bytes() == b'{"id": "1"}\n{"id": "2"}\n{"format": 4, "id": "3"}\n'


# -- discarding --------------------------------------------------------------------------------------------


def test_discard_removes_only_what_the_run_made(tmp_path: Path) -> None:
    # a directory the run did not make stays, even asked to remove it
    run = RunDir(tmp_path)
    with run.open_for_writing():
        pass
    run.discard(remove_dir=True)
    assert tmp_path.is_dir() and list(tmp_path.iterdir()) == []
    # a directory it made stays unless asked
    made = tmp_path / "made"
    run = RunDir(made)
    with run.open_for_writing():
        (made / "engine.log").write_text("log")
        run.claim("engine.log")
    (made / "results.jsonl").unlink()  # already gone: not an error
    run.discard()
    assert made.is_dir() and list(made.iterdir()) == []
    # asked, and made by it: removed, unless someone else's file is in it
    run = RunDir(tmp_path / "made2")
    with run.open_for_writing():
        (tmp_path / "made2" / "mine.txt").write_text("")
    run.discard(remove_dir=True)
    assert [p.name for p in (tmp_path / "made2").iterdir()] == ["mine.txt"]
    run = RunDir(tmp_path / "made3")
    with run.open_for_writing():
        pass
    run.discard(remove_dir=True)
    assert not (tmp_path / "made3").exists()


def test_discard_refuses_a_run_with_finished_problems(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    with run.open_for_writing():
        run.append({"id": "1"})
    with pytest.raises(RunDirError) as info:
        run.discard()
    assert str(info.value) == f"{str(tmp_path)!r} holds finished problems; it is not discarded"


# -- group commits -----------------------------------------------------------------------------------------


class _FailsFirst:
    """A run directory whose first group commit fails, once a second line is waiting behind it."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.groups: list[list[dict]] = []

    def append_many(self, records: list[dict]) -> None:
        self.groups.append(records)
        if len(self.groups) == 1:
            self.entered.set()
            self.release.wait(5)
            raise StorageError(errno.ENOSPC, "cannot append to x: No space left on device")


def test_a_failed_group_commit_does_not_strand_the_lines_behind_it() -> None:
    async def main() -> None:
        run = _FailsFirst()
        commit = GroupCommit(run)  # type: ignore[arg-type]
        first = asyncio.ensure_future(commit.append({"id": "1"}))
        while not run.entered.is_set():
            await asyncio.sleep(0.001)
        second = asyncio.ensure_future(commit.append({"id": "2"}))
        await asyncio.sleep(0)
        run.release.set()
        await asyncio.wait_for(second, 2)
        with pytest.raises(StorageError):
            await first
        await commit.close()
        assert run.groups == [[{"id": "1"}], [{"id": "2"}]] and commit.commits == 1

    asyncio.run(main())


def test_a_failed_write_whose_temporary_file_is_already_gone_is_one_storage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def replace(src: str, dst: object) -> None:
        os.unlink(src)  # someone else cleared it away
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(storage.os, "replace", replace)
    with pytest.raises(StorageError) as info:
        RunDir(tmp_path).write_json("summary.json", {})
    assert info.value.strerror == f"cannot write {tmp_path / 'summary.json'}: Invalid cross-device link"
