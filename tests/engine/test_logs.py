"""The engine's chatter goes to the run's log file; ttscale's own output keeps the terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ttscale.engine.logs import capture_output


def test_capture_sends_this_process_and_its_children_to_the_log(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "engine.log"
    with capture_output(log) as terminal:
        child = "import sys; print('child out'); print('child err', file=sys.stderr)"
        subprocess.run([sys.executable, "-c", child], check=True)
        os.write(1, b"raw fd one\n")
        print("python print")
        print("python warning", file=sys.stderr)
        print("progress for the user", file=terminal.err)
        print("summary for the user", file=terminal.out)
    print("after the capture")
    out, err = capfd.readouterr()
    text = log.read_text()
    for line in ("child out", "child err", "raw fd one", "python print", "python warning"):
        assert line in text and line not in out + err
    assert "progress for the user" in err and "summary for the user" in out and "after the capture" in out
    assert "user" not in text


def test_capture_appends_and_none_captures_nothing(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "engine.log"
    log.write_text("earlier run\n")
    with capture_output(log):
        print("resumed run")
    with capture_output(None) as terminal:
        print("verbose", file=terminal.out)
    assert log.read_text() == "earlier run\nresumed run\n"
    assert "verbose" in capfd.readouterr().out


def test_the_terminal_comes_back_after_an_error(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RuntimeError), capture_output(tmp_path / "engine.log"):
        raise RuntimeError("engine failed")
    print("still here")
    assert "still here" in capfd.readouterr().out


def test_a_logger_made_during_the_capture_still_writes_after_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import logging

    with capture_output(tmp_path / "engine.log"):
        handler = logging.StreamHandler(sys.stderr)  # what vLLM does when it is imported during a run
    handler.emit(logging.makeLogRecord({"msg": "after the run"}))  # no "Logging error": the stream is not closed
    assert "after the run" in capfd.readouterr().err
