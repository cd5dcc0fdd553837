"""Run files broken by hand or by accident (issue 32: items 1, 3, 4, 7 and 13).

- `--out` at a folder of someone's files is refused; a failed start removes only what it created;
- a last record whole but for its newline is a record, and every reader says when it left a torn line out;
- a FIFO (or a link to one) under a run file's name is refused in one line, never waited on;
- a config cut off by a full disk leaves nothing a later `--out` or `--resume` trips over;
- every run file gets the one mode the user's umask gives.

Runs here use the simulator (no model, no vLLM) or a loopback stub server; a case that could hang runs in a
subprocess with a time limit.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

import ttscale
from tests.adaptive.sim import SeededSimulator, model_dir
from tests.hostile.stub_server import Reply, StubServer, completion, model_list
from ttscale.cli import main
from ttscale.runstore.runs import read_run
from ttscale.runstore.storage import CONFIG, RESULTS, SUMMARY, RunDir, RunDirError

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "real_runs"
SETTINGS: dict[str, Any] = {"strategy": "best_of_n", "budget": "400", "task": "arithmetic:1-3", "limit": 3,
                            "params": {"n": 2, "max_tokens": 40}}


def _run(tmp_path: Path, out: Path, engine: Any = None) -> ttscale.Run:
    """A run of 3 problems on the simulator."""
    return ttscale.run(**SETTINGS, model=str(model_dir(tmp_path)), engine=engine or SeededSimulator(seed=1), out=out)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _python(code: str, seconds: float = 60) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter at the repository root; a hang fails the test instead of hanging it."""
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=seconds, cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer within {seconds} s (an open that blocks?)")


# -- item 1: --out at a folder that is not a run ---------------------------------------------------------
def test_a_new_run_refuses_a_folder_of_someone_elses_files_and_leaves_them_as_they_were(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("a week of GPU time\n")
    (folder / SUMMARY).write_text('{"mine": true}\n')
    before = _files(folder)
    asked: list[object] = []
    sim = SeededSimulator(seed=1)
    original = sim.generate

    async def generate(*args: Any, **kwargs: Any) -> Any:
        asked.append(args)
        return await original(*args, **kwargs)

    sim.generate = generate  # type: ignore[method-assign]
    with pytest.raises(RunDirError, match=r"is not empty and not a ttscale run \(it holds 'notes.txt' and 1 more") as e:
        _run(tmp_path, folder, sim)
    assert "\n" not in str(e.value) and not asked  # one line, refused before the engine was asked anything
    assert _files(folder) == before and sorted(p.name for p in folder.iterdir()) == ["notes.txt", SUMMARY]
    empty = tmp_path / "empty"
    empty.mkdir()  # an empty folder is fine to use
    assert _run(tmp_path, empty).summary["problems"] == 3


def test_the_cli_refuses_such_a_folder_in_one_line_and_a_failed_start_deletes_none_of_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    for name, text in ((SUMMARY, '{"mine": true}\n'), ("engine.log", "my own log\n"), ("notes.txt", "x\n")):
        (folder / name).write_text(text)
    before = _files(folder)
    argv = ["run", "--strategy", "sc", "--budget", "64", "--limit", "1", "--out", str(folder), "--backend", "openai",
            "--base-url", "http://127.0.0.1:9/v1", "--model", "smol", "--tokenizer", "embedded", "--max-retries", "0",
            "--no-progress"]  # fmt: skip
    code = main(argv)  # no server on port 9: a start that fails, if it were let start
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, lines
    assert "is not empty and not a ttscale run" in lines[0] and "a new or empty directory" in lines[0]
    assert _files(folder) == before


def test_a_failed_start_removes_what_it_created_and_nothing_it_found(tmp_path: Path) -> None:
    (tmp_path / SUMMARY).write_text("the user's\n")
    (tmp_path / "engine.log").write_text("the user's\n")
    run_dir = RunDir(tmp_path)
    with run_dir.open_for_writing():
        run_dir.write_json(CONFIG, {"identity": {}})
        run_dir.discard(remove_dir=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["engine.log", SUMMARY]  # no .lock, config or results
    fresh = RunDir(tmp_path / "new")
    with fresh.open_for_writing():
        fresh.write_json(CONFIG, {"identity": {}})
        fresh.discard(remove_dir=True)
    assert not (tmp_path / "new").exists()  # the folder it made goes too


# -- item 3: a whole last record without its newline; torn lines said -------------------------------------
def test_a_last_record_without_its_newline_is_a_record_and_gets_its_newline_on_resume(tmp_path: Path) -> None:
    (tmp_path / RESULTS).write_text('{"id": "a"}\n{"id": "b", "answer": "7"}')
    run_dir = RunDir(tmp_path)
    assert run_dir.finished_ids() == {"a", "b"} and not run_dir.torn_tail()
    with run_dir.open_for_writing():
        assert run_dir.finished_ids() == {"a", "b"}
        run_dir.append({"id": "c"})
    assert (tmp_path / RESULTS).read_text() == '{"id": "a"}\n{"id": "b", "answer": "7"}\n{"format": 4, "id": "c"}\n'
    (tmp_path / RESULTS).write_text('{"id": "a"}\n{"id": "b", "answer": "7"')  # does not parse: torn
    assert RunDir(tmp_path).finished_ids() == {"a"} and RunDir(tmp_path).torn_tail()


def test_resume_keeps_a_last_record_without_its_newline_and_reports_count_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(tmp_path, out)
    whole = (out / RESULTS).read_bytes()
    (out / RESULTS).write_bytes(whole.rstrip(b"\n"))  # the newline never reached the disk
    assert len(read_run(out).records) == 3 and not read_run(out).torn_tail
    assert len(ttscale.load_runs(out)) == 3
    again = _run(tmp_path, out, SeededSimulator(seed=99))  # another seed: a problem run again would differ
    assert again.summary["problems"] == 3
    assert (out / RESULTS).read_bytes() == whole  # nothing cut, nothing run again: the newline added


def test_every_reader_says_when_it_left_a_torn_last_line_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    run = Path(shutil.copytree(REAL / "sc-n4", tmp_path / "sc-n4"))
    with (run / RESULTS).open("a") as handle:
        handle.write('{"id": "arith-L5-0009", "correct": tr')  # killed mid-write
    named = str(run / RESULTS)
    with pytest.warns(UserWarning, match="torn last line was left out") as caught:
        ttscale.load_runs(run)
    assert any(named in str(w.message) for w in caught)
    with pytest.warns(UserWarning, match="torn last line was left out"):
        ttscale.fit(law="saturation", runs=[run], x="spent", n_boot=20)
    with pytest.warns(UserWarning, match="torn last line was left out"):
        assert len(ttscale.read_records(run)) == len(read_run(REAL / "sc-n4").records)
    assert main(["report", str(run)]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "torn" in line]
    assert len(said) == 1 and said[0].startswith("ttscale: warning: ") and named in said[0], said
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_run(REAL / "sc-n4")  # a whole run: nothing said


# -- item 4: a FIFO under a run file's name ------------------------------------------------------------------
@pytest.mark.parametrize("how", ["results-fifo", "results-link-to-fifo", "config-fifo"])
def test_a_fifo_run_file_is_refused_in_one_line_never_waited_on(tmp_path: Path, how: str) -> None:
    out = tmp_path / "run"
    _run(tmp_path, out)
    name = CONFIG if how.startswith("config") else RESULTS
    (out / name).unlink()
    if how == "results-link-to-fifo":
        os.mkfifo(tmp_path / "pipe")
        (out / name).symlink_to(tmp_path / "pipe")
    else:
        os.mkfifo(out / name)
    done = _python(f"""
        import ttscale
        from tests.adaptive.sim import SeededSimulator
        try:
            ttscale.run(**{SETTINGS!r}, model={str(tmp_path / "model")!r}, engine=SeededSimulator(seed=1),
                        out={str(out)!r})
        except ValueError as exc:
            print(type(exc).__name__, exc)
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    said = done.stdout.strip()
    assert said.startswith("RunDirError cannot open") and "it is a FIFO, not a regular file" in said, said
    assert len(said.splitlines()) == 1 and str(out / name) in said


def test_the_cli_refuses_a_fifo_config_with_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    os.mkfifo(out / CONFIG)
    try:
        done = subprocess.run([sys.executable, "-m", "ttscale.cli", "run", "--resume", str(out)], capture_output=True,
                              text=True, timeout=60, cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail("`ttscale run --resume` waited on a FIFO")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and "it is a FIFO, not a regular file" in lines[0], lines


# -- item 7: a full disk while config.json is written ------------------------------------------------------------
def _full_disk_once(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.fsync
    calls = []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:  # the first fsync of a new run: its config.json
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_a_config_cut_off_by_a_full_disk_leaves_nothing_in_the_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    _full_disk_once(monkeypatch)
    with pytest.raises(OSError, match="No space left on device"):
        _run(tmp_path, out)
    assert not out.exists()  # what the start made, it removed
    assert _run(tmp_path, out).summary["problems"] == 3  # the same `out` works once there is room


def test_what_a_start_cut_off_before_its_config_leaves_is_not_a_run_and_not_in_the_way(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").write_text("")
    (out / RESULTS).write_text("")  # a kill -9 before config.json was written
    assert not RunDir(out).has_results()
    with pytest.raises(RunDirError, match=r"is not a ttscale run: no config\.json"):
        RunDir(out).read_config()
    assert _run(tmp_path, out).summary["problems"] == 3


# -- item 13: one mode for a run's files -------------------------------------------------------------------------
def test_every_run_file_gets_the_mode_the_umask_gives(tmp_path: Path) -> None:
    from ttscale.engine.logs import capture_output

    old = os.umask(0o002)
    try:
        out = tmp_path / "run"
        _run(tmp_path, out)
        with capture_output(out / "engine.log"):
            pass
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    assert set(modes) == {CONFIG, RESULTS, SUMMARY, ".lock", "engine.log"}
    assert modes == dict.fromkeys(modes, 0o664), {k: oct(v) for k, v in modes.items()}


# -- the full disk the corpus's /dev/full case checked (a link to a device is now refused) ------------------------
def _stub(method: str, path: str, body: Any) -> Reply:
    if path.endswith("/models"):
        return model_list("smol", max_model_len=2048)
    return completion(["The answer is 4."] * int(body["n"]), token_ids=[[1, 2, 3]] * int(body["n"]))


def test_a_full_disk_mid_run_is_one_line_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ttscale.runstore.storage import RunDir as Dir

    def full(self: Dir, records: list[dict[str, Any]]) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(Dir, "append_many", full)
    with StubServer(_stub) as server:
        code = main(["run", "--strategy", "sc", "--budget", "64", "--param", "max_tokens=32", "--param", "n=2",
                     "--limit", "2", "--out", str(tmp_path / "out"), "--backend", "openai", "--base-url", server.url,
                     "--model", "smol", "--tokenizer", "embedded", "--no-progress"])  # fmt: skip
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "No space left on device" in lines[-1], lines
    assert not (tmp_path / "out").exists()  # it finished nothing: what it made is gone, `--out` works again
