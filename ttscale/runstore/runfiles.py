"""Opening a run's files: regular files only, never an open that blocks, the mode the user's umask gives.

A FIFO, a device or a socket under a run file's name (or a link to one) is refused with one line: an open of a
FIFO waits for a peer, and neither Ctrl-C nor SIGTERM ends that wait.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any


class RunDirError(ValueError):
    """A run directory that cannot be used as asked (held by another run, not a run, unreadable)."""


class StorageError(OSError):
    """Reading or writing a run file failed (disk full, permission denied, read-only file system)."""


def parse_json(text: str | bytes) -> Any:
    """`text` parsed as JSON; a ValueError in one line for JSON nested deeper than the parser follows (a RecursionError
    otherwise: a message no reader would understand)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("it is nested too deeply to read (arrays or objects thousands of levels within each "
                         "other)") from None


def storage_error(exc: OSError, path: Path, doing: str) -> StorageError:
    """`exc` as one line that names the file and the reason (for a full disk, which one is full)."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        reason += f": the file system at {_mount_point(path)} is full"
    elif exc.errno == errno.EFBIG:
        reason += ": the file size limit of this process (ulimit -f) was reached"
    return StorageError(exc.errno or 0, f"cannot {doing} {path}: {reason}")


def _mount_point(path: Path) -> Path:
    """The mount point of the file system that holds `path` (its nearest existing folder's)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` at the descriptor's position, straight to the file: a short write (a disk filling up) is
    continued, and an error leaves nothing held back in a buffer that a later write or close would put after the
    caller has cut the file back (a buffered file's leftover is how one record's tail ended up after another)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def check_regular(path: Path) -> None:
    """Refuse a run file that exists and is not a regular file (a link is judged by what it points to)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return  # absent (or a dangling link, which the open then refuses)
    except OSError as exc:
        raise storage_error(exc, path, "open") from None
    if not stat.S_ISREG(info.st_mode):
        raise RunDirError(irregular(path, info.st_mode))


def open_regular(path: Path, flags: int) -> tuple[int, bool]:
    """A descriptor of the regular file `path`, and whether this call created it (O_CREAT in `flags`).

    Checked before opening, and opened O_NONBLOCK then checked again (a FIFO swapped in between): an open of a
    FIFO waits for a peer, and neither Ctrl-C nor SIGTERM ends that wait.
    """
    check_regular(path)
    flags |= os.O_NONBLOCK | os.O_CLOEXEC
    created = False
    if flags & os.O_CREAT:
        try:
            fd, created = os.open(path, flags | os.O_EXCL, 0o666), True
        except FileExistsError:
            fd = os.open(path, flags & ~os.O_CREAT)
    else:
        fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise RunDirError(irregular(path, mode))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, created


def irregular(path: Path, mode: int) -> str:
    """Why `path` (of file mode `mode`) cannot be a run file, in one line."""
    if stat.S_ISDIR(mode):
        return f"cannot open {path}: Is a directory; a run's files are regular files"
    kinds = {stat.S_ISFIFO: "a FIFO", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device",
             stat.S_ISSOCK: "a socket"}
    kind = next((name for test, name in kinds.items() if test(mode)), "not a file")
    return f"cannot open {path}: it is {kind}, not a regular file; a run's files are regular files"


def temporary_file(folder: Path, prefix: str) -> tuple[int, str]:
    """A new file in `folder`, created with the mode the user's umask gives (as results.jsonl is; mkstemp
    would make it 0600)."""
    while True:
        name = str(folder / f"{prefix}{secrets.token_hex(4)}")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), name
        except FileExistsError:
            continue


def write_atomic(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all (a fsynced temporary file renamed onto it): a reader sees the old file or the
    new one, never half of one. Raises StorageError naming the file."""
    tmp: str | None = None
    try:
        fd, tmp = temporary_file(path.parent, f".{path.name}.")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise storage_error(exc, path, "write") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def whole_lines(path: Path) -> list[bytes]:
    """The newline-ended lines of `path` ([] when it is absent); a torn last line (a kill mid-write) is left out."""
    try:
        fd, _ = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise storage_error(exc, path, "read") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    return data[: data.rfind(b"\n") + 1].splitlines()


def append_line(path: Path, line: bytes) -> None:
    """Append one line (its newline added) and make it durable before returning: the line is whole or absent.

    A torn last line is cut first, or this one would glue onto it; a failed write (a full disk) is cut back to the
    last whole line. The file is locked while appending, so appends from threads or processes never interleave.
    Raises StorageError."""
    try:
        fd, _ = open_regular(path, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise storage_error(exc, path, "open") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by the close
            data = os.pread(fd, os.fstat(fd).st_size, 0)
        except OSError as exc:
            raise storage_error(exc, path, "read") from None
        size = data.rfind(b"\n") + 1
        try:
            if size != len(data):
                os.ftruncate(fd, size)
            os.lseek(fd, size, os.SEEK_SET)
            write_all(fd, line + b"\n")
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):  # part of the line may be there: back to the last whole one
                os.ftruncate(fd, size)
            raise storage_error(exc, path, "append to") from None
    finally:
        os.close(fd)
