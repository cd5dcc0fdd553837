"""A disk that fills mid-run (issue 43, item 1): appends are whole or absent, the message names the full disk, and a
resume once there is room finishes every problem exactly once.

The kernel's own fault stands in for a full disk: a subprocess under a small `RLIMIT_FSIZE` (SIGXFSZ ignored) gets
short writes and then EFBIG at the limit, as a full file system gives short writes and then ENOSPC; and the limit can
be raised again within the process, as space comes back. Runs use the simulator (no model, no vLLM).
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ttscale.runstore.runfiles import StorageError, append_line, storage_error, whole_lines
from ttscale.runstore.storage import RESULTS, RunDir

REPO = Path(__file__).resolve().parents[2]

_LIMITED = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing us
_, hard = resource.getrlimit(resource.RLIMIT_FSIZE)

def limit(size):
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))

def room():
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-c", _LIMITED + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_run_that_fills_its_disk_keeps_whole_lines_and_a_resume_finishes_every_problem_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = _python(f"""
        from pathlib import Path
        import ttscale
        from tests.adaptive.sim import SeededSimulator, model_dir
        from ttscale.runstore.storage import StorageError
        settings = dict(strategy="best_of_n", budget="400", task="arithmetic:1-3", limit=40, concurrency=8,
                        params={{"n": 2, "max_tokens": 40}}, model=str(model_dir(Path({str(tmp_path)!r}))))
        limit(20000)  # records of about 1 kB, at most 8 to a commit: some fit, then the disk is full mid-line
        try:
            ttscale.run(**settings, engine=SeededSimulator(seed=1), out={str(out)!r})
        except StorageError as exc:
            print("ERROR", exc)
        print("SAVED", len(open({str(out / RESULTS)!r}, "rb").read().splitlines()))
        room()  # space is back: the same run resumes
        run = ttscale.run(**settings, engine=SeededSimulator(seed=1), out={str(out)!r}, resume=True)
        print("PROBLEMS", run.summary["problems"])
    """)
    error = next(line for line in done.stdout.splitlines() if line.startswith("ERROR"))
    saved = int(next(line for line in done.stdout.splitlines() if line.startswith("SAVED")).split()[1])
    assert 0 < saved < 40, saved  # the disk filled part way through the run
    assert "results.jsonl: File too large" in error, error
    lines = (out / RESULTS).read_bytes().splitlines(keepends=True)
    records = [json.loads(line) for line in lines]  # every line whole: none a tail or a head of another
    assert all(line.endswith(b"\n") for line in lines)
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)) == 40, sorted(ids)  # every problem, each exactly once
    assert "PROBLEMS 40" in done.stdout


def test_an_append_cut_short_by_a_full_disk_leaves_nothing_behind_when_space_returns(tmp_path: Path) -> None:
    done = _python(f"""
        import os
        from ttscale.runstore.storage import RunDir, StorageError
        run = RunDir({str(tmp_path)!r})
        with run.open_for_writing():
            run.append({{"id": "a"}})
            limit(os.path.getsize({str(tmp_path / RESULTS)!r}) + 100)  # the next line stops part way
            try:
                run.append_many([{{"id": "b", "text": "x" * 1000}}, {{"id": "c"}}])
            except StorageError as exc:
                print("ERROR", exc)
            room()
            run.append({{"id": "d"}})
    """)
    assert "ERROR" in done.stdout, done.stdout
    assert (tmp_path / RESULTS).read_text() == '{"format": 4, "id": "a"}\n{"format": 4, "id": "d"}\n'
    assert [r["id"] for r in RunDir(tmp_path).records()] == ["a", "d"]


def test_a_line_appended_to_a_shared_file_on_a_full_disk_is_whole_or_absent(tmp_path: Path) -> None:
    """stages.jsonl and trials.jsonl go through `append_line`: the same rule as results.jsonl."""
    path = tmp_path / "stages.jsonl"
    done = _python(f"""
        import os
        from pathlib import Path
        from ttscale.runstore.runfiles import StorageError, append_line
        path = Path({str(path)!r})
        append_line(path, b'{{"key": "a"}}')
        limit(os.path.getsize(path) + 100)
        try:
            append_line(path, b'{{"key": "b", "value": "' + b"x" * 1000 + b'"}}')
        except StorageError as exc:
            print("ERROR", exc)
        room()
        append_line(path, b'{{"key": "c"}}')
    """)
    assert "ERROR" in done.stdout and "File too large" in done.stdout, done.stdout
    assert path.read_bytes() == b'{"key": "a"}\n{"key": "c"}\n'


def test_appends_from_many_threads_are_each_whole(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    path = tmp_path / "trials.jsonl"
    lines = [json.dumps({"index": i, "pad": "y" * (i * 37 % 5000)}).encode() for i in range(200)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda line: append_line(path, line), lines))
    assert sorted(whole_lines(path)) == sorted(lines)


@pytest.mark.parametrize(("code", "said"), [(errno.ENOSPC, "No space left on device: the file system at"),
                                            (errno.EDQUOT, "Disk quota exceeded: the file system at"),
                                            (errno.EFBIG, "File too large: ")])
def test_the_message_of_a_full_disk_names_the_file_system_that_is_full(tmp_path: Path, code: int, said: str) -> None:
    error = storage_error(OSError(code, os.strerror(code)), tmp_path / "run" / RESULTS, "append to")
    assert isinstance(error, StorageError) and error.errno == code
    text = str(error.strerror)
    assert text.startswith(f"cannot append to {tmp_path / 'run' / RESULTS}: {said}"), text
    if code != errno.EFBIG:
        mount = next(p for p in [tmp_path, *tmp_path.parents] if os.path.ismount(p))
        assert f"the file system at {mount} is full" in text, text
    else:
        assert "limit" in text, text
    assert "\n" not in text


def test_a_full_disk_mid_run_is_one_line_exit_2_naming_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.hostile.stub_server import StubServer
    from tests.hostile.test_run_files import _stub
    from ttscale.cli import main

    def full(self: RunDir, records: list[dict[str, Any]]) -> None:
        raise storage_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), self.path / RESULTS, "append to")

    monkeypatch.setattr(RunDir, "append_many", full)
    with StubServer(_stub) as server:
        code = main(["run", "--strategy", "sc", "--budget", "64", "--param", "max_tokens=32", "--param", "n=2",
                     "--limit", "2", "--out", str(tmp_path / "out"), "--backend", "openai", "--base-url", server.url,
                     "--model", "smol", "--tokenizer", "embedded", "--no-progress"])  # fmt: skip
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, (code, lines)
    assert "No space left on device: the file system at" in lines[0] and "is full" in lines[0], lines


def test_a_full_disk_mid_sweep_is_one_line_exit_2_saying_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 59: the sweep's full-disk line lacked run's "continue with --resume DIR"."""
    from tests.hostile.stub_server import StubServer
    from tests.hostile.test_run_files import _stub
    from ttscale.cli import main

    def full(self: RunDir, records: list[dict[str, Any]]) -> None:
        raise storage_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), self.path / RESULTS, "append to")

    monkeypatch.setattr(RunDir, "append_many", full)
    out = tmp_path / "sweep"
    with StubServer(_stub) as server:
        code = main(["sweep", "--strategy", "sc max_tokens=32 n=2", "--budgets", "64", "--limit", "2", "--out",
                     str(out), "--backend", "openai", "--base-url", server.url, "--model", "smol", "--tokenizer",
                     "embedded", "--no-progress"])  # fmt: skip
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ttscale:")]
    assert code == 2 and len(lines) == 1, (code, lines)
    assert "No space left on device: the file system at" in lines[0] and "is full" in lines[0], lines
    assert f"continue with ttscale sweep --resume {out}" in lines[0], lines


def test_a_full_disk_while_a_shared_stage_is_stored_stops_the_run_and_records_no_problem_as_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stages.jsonl is a run file too: a failed write of it is a stop (resumable), never a problem recorded as
    finished with an error, which `--resume` would never run again."""
    import ttscale
    from ttscale.testing.policy import SimulatedArithmeticPolicy

    settings: dict[str, Any] = {"strategy": "sleep_time", "budget": "96", "limit": 6, "concurrency": 1,
                                "params": {"sleep_tokens": 40, "max_tokens": 32}, "task": "arithmetic_stateful:1-2",
                                "task_options": {"queries": 3, "per_level": 2}}
    out = tmp_path / "run"
    real = append_line

    stored: list[bytes] = []

    def full(path: Path, line: bytes) -> None:
        if path.name == "stages.jsonl" and stored:  # the first context's notes fit; the disk is full after
            raise storage_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), path, "append to")
        stored.append(line)
        real(path, line)

    monkeypatch.setattr("ttscale.kit.stages.append_line", full)
    with pytest.raises(StorageError, match=r"stages.jsonl: No space left on device: the file system at .* is full"):
        ttscale.run(**settings, engine=SimulatedArithmeticPolicy(seed=1), out=out)
    first = RunDir(out).records()
    assert first and not [r for r in first if r.get("error")], first  # some finished; none recorded as failed
    monkeypatch.setattr("ttscale.kit.stages.append_line", real)  # space is back
    ttscale.run(**settings, engine=SimulatedArithmeticPolicy(seed=1), out=out, resume=True)
    records = [json.loads(line) for line in (out / RESULTS).read_text().splitlines()]
    assert sorted(r["id"] for r in records) == sorted({r["id"] for r in records}) and len(records) == 6
    assert not any(r.get("error") for r in records), [r.get("error") for r in records]
