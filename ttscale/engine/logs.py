"""Engine chatter into a log file, the terminal kept for the progress bar and the summary.

vLLM, torch and transformers write start-up logs, warnings and their own progress bars to the
process's stdout and stderr, and so do the engine processes vLLM starts (they inherit them). The
redirect is therefore done on the file descriptors, not on `sys.stdout`: everything any of those
processes writes lands in the log, while ttscale keeps duplicates of the terminal's descriptors.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass
class Terminal:
    """Where ttscale's own output goes while the process's stdout and stderr are captured."""

    out: IO[str]
    err: IO[str]


@contextlib.contextmanager
def capture_output(log_path: Path | None) -> Iterator[Terminal]:
    """Send file descriptors 1 and 2 (this process and its children) to `log_path`, appending.

    Yields the terminal as file objects for the progress bar and messages. With `log_path` None
    nothing is redirected (`--verbose`) and the terminal is plain `sys.stdout` / `sys.stderr`.
    """
    if log_path is None:
        yield Terminal(out=sys.stdout, err=sys.stderr)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    # First: nothing to undo if it fails. 0o666: the umask gives a run's files one mode, as results.jsonl has.
    log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    saved_out, saved_err = os.dup(1), os.dup(2)
    # Line-buffered, not closing the saved descriptors: they are restored below.
    terminal = Terminal(
        out=open(saved_out, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False),  # noqa: SIM115
        err=open(saved_err, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False),  # noqa: SIM115
    )
    # Python-level writes too where sys.stdout is not descriptor 1 (a notebook's or pytest's stream). In a
    # plain process it is, and stays: loggers made meanwhile (vLLM's) then keep a stream that outlives this.
    python_out, python_err = sys.stdout, sys.stderr
    replace = not (_writes_to(python_out, 1) and _writes_to(python_err, 2))
    log_stream = open(log_fd, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    # A logger made meanwhile keeps the stream it was given: hand out forwarders that go back to the
    # original streams afterwards, so such a logger never writes to a closed file.
    forward_out, forward_err = _Forward(log_stream), _Forward(log_stream)
    try:
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        if replace:
            sys.stdout, sys.stderr = forward_out, forward_err
        yield terminal
    finally:
        sys.stdout, sys.stderr = python_out, python_err
        forward_out.target, forward_err.target = python_out, python_err
        for stream in (python_out, python_err, log_stream, terminal.out, terminal.err):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        log_stream.close()
        terminal.out.close()
        terminal.err.close()
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        for fd in (saved_out, saved_err, log_fd):
            os.close(fd)


@contextlib.contextmanager
def held_output() -> Iterator[None]:
    """Hold what this process prints meanwhile: dropped when the block succeeds, shown on stderr when it fails.

    For an import that prints on its way (vLLM's "Triton is installed, but ..."), where ttscale's answer is
    one line: the chatter says nothing then, and is all there is to go on when the import itself fails.
    """
    with tempfile.TemporaryDirectory(prefix="ttscale-") as folder:
        held = Path(folder) / "output.log"
        try:
            with capture_output(held):
                yield
        except BaseException:
            with contextlib.suppress(OSError):
                sys.stderr.write(held.read_text(encoding="utf-8", errors="replace"))
            raise


class _Forward:
    """A text stream that writes wherever `target` points now."""

    def __init__(self, target: IO[str]) -> None:
        self.target = target

    def write(self, text: str) -> int:
        return self.target.write(text)

    def flush(self) -> None:
        self.target.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self.target, name)


def _writes_to(stream: IO[str], fd: int) -> bool:
    try:
        return stream.fileno() == fd
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return False


__all__ = ["Terminal", "capture_output", "held_output"]
