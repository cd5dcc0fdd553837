"""The candidate's side of the harness: runs the program, then answers the tests' calls of its functions.

Not imported by ttscale: its code runs inside the sandbox (see `_supervisor.py`), in the candidate's own process,
standard library only, nothing slow to import. The tests never run here: `_judge.py` runs them in another process
(the candidate's parent), which the candidate's code never enters, and asks this one for the program's names and
for calls of its functions, in plain data (`_wire.py`). Nothing this process does, to itself or on the wire, can
make the judge write a pass: the worst it can do is answer wrongly, or not at all.

The candidate's descriptors: 0 /dev/null, 1 and 2 the output, 3 the judge's requests (`CALLS_FD`), 4 its answers
(`ANSWERS_FD`). The messages, each a frame of `encode`d plain data:

- candidate to judge, once the program ran: `("loaded",)`, or `("crashed", reason)` if it raised;
- judge: `("names", (name, ...))`; candidate: `("names", {name: ("function",) | ("value", v) | ("module", m)})`
  for those of the names the program defines (a callable, a plain value or an imported module);
- judge: `("call", name, args, kwargs)`; candidate: `("returned", value)` or `("raised", builtin base class name,
  reason)`; a result that cannot cross is raised as TypeError.

The verdict (in `_judge.py`): fd 3 of the tests' process holds a per-execution secret, written by the supervisor
only after that process was forked, read only once the tests have returned; the pass is `PASS_TAG` + the secret
transformed, written on fd 4. Any other message there is a failure report.
"""

from __future__ import annotations

import builtins
import os
import sys

TYPE_CHECKING = False  # typing itself takes 20 ms to import: too slow for every execution
if TYPE_CHECKING:
    from typing import Any, NoReturn
if "encode" not in globals():  # imported as a module (by tests), not run in the supervisor's namespace
    from ttscale.sandbox._wire import WireError, _type_name, decode, encode, read_frame, write_frame

SECRET_FD = 3
RESULT_FD = 4
CALLS_FD = 3
ANSWERS_FD = 4
MESSAGE = b"\x1e"
"""Starts every message on the result fd; the kind follows (P pass, F failed, C crashed, S set-up error, E the
candidate's process ended early: its wait status and CPU seconds)."""
PASS_TAG = MESSAGE + b"P"
_FLIP = bytes(range(256)).translate(bytes((value ^ 0xA5) for value in range(256)))
_type, _issubclass, _str = type, issubclass, str
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement (the candidate's), not a builtin
_REASON_CHARS = 500


def pass_message(secret: bytes) -> bytes:
    """What the harness writes on the result fd for a pass (not the secret itself: echoing fds forges nothing)."""
    return PASS_TAG + secret.translate(_FLIP)


def _field(owner: type, name: str, error: BaseException) -> Any:
    """An exception's field read through the builtin class's own descriptor: no property of the candidate's runs."""
    return owner.__dict__[name].__get__(error)


def _message(error: BaseException) -> str:
    """The exception's message, formatted by builtin code from plain values only (else a placeholder)."""
    kind = _type(error)
    if _issubclass(kind, SyntaxError):  # the C-level subtype test: no __subclasscheck__ of the candidate's runs
        message = _field(SyntaxError, "msg", error)
        return message if _type(message) is str else ""
    args = _field(BaseException, "args", error)
    if not _is_plain(args):
        return "<the message holds objects of the program's>"
    builtin = not _type.__dict__["__flags__"].__get__(kind) & _HEAP_TYPE
    if builtin and _issubclass(kind, OSError):  # OSError's text also shows its file names
        builtin = _is_plain((_field(OSError, "filename", error), _field(OSError, "filename2", error)))
    # A builtin class's own __str__ over plain values runs no code of the candidate's; a class of its own may
    # override __str__, so its message is made from the arguments only.
    return _str(error) if builtin else BaseException.__str__(error)


def _is_plain(value: Any) -> bool:
    """Whether `value` is plain builtin values only (whose repr and str run no code of the candidate's)."""
    try:
        encode(value)
    except WireError:
        return False
    return True


def _limit_hit(error: BaseException, limits: dict[str, Any]) -> str:
    """Which limit an error reports, if it is one of the sandbox's (else "")."""
    kind = type(error)
    if kind is MemoryError:
        total, processes = limits["memory_mib"], limits["processes"]
        return f"memory limit: {total // processes} MiB per process, {total} MiB for the execution"
    if issubclass(kind, RuntimeError) and _message(error) == "can't start new thread":
        return f"process limit: {limits['processes']} processes and threads"
    if issubclass(kind, OSError):
        errno = _field(OSError, "errno", error)
        if errno == 27:  # EFBIG
            return f"file-size limit of {limits['file_mib']} MiB"
        if errno == 28:  # ENOSPC
            return f"temporary directory of {limits['file_mib']} MiB full"
        if errno == 24:  # EMFILE
            return f"open-file limit of {limits['open_files']}"
        if errno == 11:  # EAGAIN: fork, clone or a thread past RLIMIT_NPROC
            return f"process limit: {limits['processes']} processes and threads"
        if errno == 12:  # ENOMEM: mmap and fork past RLIMIT_AS
            total, processes = limits["memory_mib"], limits["processes"]
            return f"memory limit: {total // processes} MiB per process, {total} MiB for the execution"
    return ""


def _describe(error: BaseException, sources: dict[str, str], limits: dict[str, Any] | None = None) -> str:
    """`Type: message (where)`, one line; `where` is the innermost line of the program or the test, then which
    limit the error reports, if any. Reads the exception through the builtin classes' own descriptors."""
    try:
        message = _message(error)
    except BaseException:
        message = "<the message could not be formatted>"
    name = _type_name(type(error))
    text = f"{name}: {message}" if message else name
    where = ""
    if issubclass(type(error), SyntaxError):
        filename, lineno = _field(SyntaxError, "filename", error), _field(SyntaxError, "lineno", error)
        if type(filename) is str and filename in sources and type(lineno) is int and lineno:
            where = f"{filename[1:-1]} line {lineno}"
    tb, innermost = _field(BaseException, "__traceback__", error), None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if type(filename) is str and filename in sources:
            innermost = (filename, tb.tb_lineno)
        tb = tb.tb_next
    if innermost is not None:
        filename, number = innermost
        lines = sources[filename].splitlines()
        line = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        where = f"{filename[1:-1]} line {number}" + (f": {line}" if line else "")
    if where:
        text = f"{text} ({where})"
    limit = _limit_hit(error, limits) if limits is not None else ""
    if limit:
        text = f"{text}: {limit}"
    text = " ".join(text.split())
    return text if len(text) <= _REASON_CHARS else text[: _REASON_CHARS - 3] + "..."


def serve(job: dict[str, Any]) -> NoReturn:
    """The candidate's process: run `job["program"]`, tell the judge, then answer its requests until it closes."""
    program, limits = job["program"], job["limits"]
    sources = {"<program>": program}
    flushes = (sys.stdout.flush, sys.stderr.flush)  # the streams of the start: the program may replace sys.stdout

    def send(message: tuple[Any, ...]) -> None:
        write(encode(message))

    def write(payload: bytes) -> None:
        # What the program printed goes out before its answer: the tests' process may end the execution on it.
        for flush in flushes:
            try:  # noqa: SIM105 - contextlib costs milliseconds to import, for every execution
                flush()
            except BaseException:
                pass
        try:
            write_frame(ANSWERS_FD, payload)
        except OSError:
            os._exit(1)  # the judge is gone (or the program closed its descriptor): nothing left to answer

    try:
        code = compile(program, "<program>", "exec", dont_inherit=True)
    except BaseException as error:
        send(("crashed", _describe(error, sources)))
        os._exit(1)
    namespace: dict[str, Any] = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        exec(code, namespace)
    except SystemExit:
        raise  # the process ends: the judge reads its exit status
    except BaseException as error:
        send(("crashed", _describe(error, sources, limits)))
        os._exit(1)
    send(("loaded",))
    while True:
        try:
            frame = read_frame(CALLS_FD)
            request = decode(frame) if frame is not None else None
        except (OSError, WireError):
            os._exit(1)
        if request is None:
            os._exit(0)  # the judge is done
        if request[0] == "names":
            send(("names", _manifest(namespace, request[1])))
            continue
        _, name, args, kwargs = request
        try:
            value = namespace[name](*args, **kwargs)
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: a failed call, not an exit
            send(("raised", _builtin_base(error), _describe(error, sources, limits)))
            continue
        try:
            payload = encode(("returned", value))
        except WireError as error:
            send(("raised", "TypeError", f"TypeError: the program's {name} returned {error}"))
            continue
        write(payload)


def _manifest(namespace: dict[str, Any], names: tuple[str, ...]) -> dict[str, tuple[Any, ...]]:
    """What the program defines of `names`: its functions (and other callables), plain values and modules."""
    found: dict[str, tuple[Any, ...]] = {}
    for name in names:
        if name not in namespace:
            continue
        value = namespace[name]
        if _type(value) is _type(os):
            module = getattr(value, "__name__", None)
            if _type(module) is _str:
                found[name] = ("module", module)
        elif callable(value):
            found[name] = ("function",)
        elif _is_plain(value):
            found[name] = ("value", value)
    return found


def _builtin_base(error: BaseException) -> str:
    """The name of the first builtin class in the error's type's MRO (what the tests' `except` may name)."""
    for kind in _type.__dict__["__mro__"].__get__(_type(error)):
        if not _type.__dict__["__flags__"].__get__(kind) & _HEAP_TYPE:
            return _type_name(kind)
    return "Exception"
