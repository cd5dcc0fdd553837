"""The in-process test harness: runs the program, then the tests, and reports a pass the candidate cannot fake.

Not imported by ttscale: its code runs inside the sandbox (see `_supervisor.py`), in the candidate's own
process, so it uses the standard library only and imports nothing slow. What it defends against, and what
not, is written down in `ttscale/sandbox/__init__.py`.

The verdict channel: fd 3 holds a per-execution secret, written by the supervisor only after this process
was forked (so no copy of it was ever in this process's memory), and read here only once the tests have
returned; the pass is `PASS_TAG` + the secret transformed, written on fd 4. Any other message there is a
failure report; the supervisor accepts a pass only if fd 4 carried exactly that message and the process then
exited 0.
"""

from __future__ import annotations

import builtins
import gc
import os
import sys

TYPE_CHECKING = False  # typing itself takes 20 ms to import: too slow for every execution
if TYPE_CHECKING:
    from typing import Any, NoReturn

SECRET_FD = 3
RESULT_FD = 4
MESSAGE = b"\x1e"
"""Starts every message on the result fd; the kind follows (P pass, F failed, C crashed, S set-up error)."""
PASS_TAG = MESSAGE + b"P"
_FLIP = bytes(range(256)).translate(bytes((value ^ 0xA5) for value in range(256)))
# Tuples searched by identity (`_one_of`), never with `in`: a frozenset or tuple lookup calls `__hash__` and
# `__eq__`, and the candidate's metaclass could answer "equal" for its own class (a forged pass, issue 42).
_PLAIN = (int, float, complex, bool, str, bytes, type(None))
_CONTAINERS = (list, tuple, set, frozenset, dict)
# Bound when the harness loads: the candidate function, called by the tests, may replace builtins.type before
# it returns (the guard below, and the description of an error it raised, must ask no builtin of the candidate's).
_type, _dict, _reversed, _issubclass, _str = type, dict, reversed, issubclass, str
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement (the candidate's), not a builtin
_CODE: Any = type(compile("", "", "exec"))  # types.CodeType, without importing types
_FUNCTION: Any = type(lambda: None)  # types.FunctionType
_MAX_DEPTH = 100
_REASON_CHARS = 500


def _one_of(kind: Any, kinds: tuple[type, ...]) -> bool:
    """Whether `kind` is one of `kinds`, by identity: no code of the candidate's runs."""
    for each in kinds:  # noqa: SIM110 - not any(): a builtin the candidate function may replace while it runs
        if kind is each:
            return True
    return False


def pass_message(secret: bytes) -> bytes:
    """What the harness writes on the result fd for a pass (not the secret itself: echoing fds forges nothing)."""
    return PASS_TAG + secret.translate(_FLIP)


def plain_copy(value: Any) -> Any:
    """A copy of `value` if it is a plain builtin value, by exact type (no subclasses), nested at most 100 deep.

    Checking exact types by identity never runs code of the candidate's (no `__eq__`, `__hash__` or `__iter__` of
    its own, nor its metaclass's).
    """
    kind = _type(value)
    if _one_of(kind, _PLAIN):
        return value
    if not _one_of(kind, _CONTAINERS):
        raise TypeError(f"the candidate returned an object of type {_type_name(kind)}: only plain builtin values")
    # Iterative, so a deep or self-containing value meets the depth bound, not the recursion limit.
    root: list[Any] = []
    stack: list[tuple[Any, list[Any], int]] = [(value, root, 0)]
    while stack:
        item, out, depth = stack.pop()
        kind = _type(item)
        if _one_of(kind, _PLAIN):
            out.append(item)
            continue
        if not _one_of(kind, _CONTAINERS):
            raise TypeError(f"the candidate returned a value holding an object of type {_type_name(kind)}: "
                            "only plain builtin values")
        if depth >= _MAX_DEPTH:
            raise TypeError(f"the candidate returned a value nested deeper than {_MAX_DEPTH}")
        node = _Node(kind)
        out.append(node)
        for child in (item.items() if kind is dict else item):
            stack.append((child, node.children, depth + 1))
    return _rebuild(root[0])


class _Node:
    """A container being copied: its exact type and its copied items (in reverse: the stack pops them so)."""

    __slots__ = ("children", "kind")

    def __init__(self, kind: type) -> None:
        self.kind = kind
        self.children: list[Any] = []


def _rebuild(node: Any) -> Any:
    if _type(node) is not _Node:
        return node
    items = [_rebuild(child) for child in _reversed(node.children)]
    return _dict(items) if node.kind is _dict else node.kind(items)


def _type_name(kind: type) -> str:
    # The C-level getter: a metaclass cannot run code for it.
    name = _type.__dict__["__name__"].__get__(kind)
    return name if _type(name) is str else "value"


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
        plain_copy(value)
    except TypeError:
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


def _exact_str_keys(table: dict[Any, Any]) -> None:
    """Drop the keys of `table` that are not exact str, without hashing or comparing them.

    A str subclass of the candidate's, with the hash of "abs", would have its `__eq__` called by every lookup
    of "abs" in that dict (the tests' own name lookups, the harness's), and could answer for it."""
    items = list(table.items())
    for key, _value in items:
        if type(key) is not str:
            break
    else:
        return
    table.clear()  # then only exact str keys go back: their lookups compare str with str
    for key, value in items:
        if type(key) is str:
            table[key] = value


def _lookup(table: dict[Any, Any], name: str) -> tuple[bool, Any]:
    """`(found, value)` for the exact str key `name`, comparing it only with exact str keys."""
    for key, value in list(table.items()):  # a copy: a thread of the candidate's may change the dict meanwhile
        if type(key) is str and key == name:
            return True, value
    return False, None


def run(job: dict[str, Any]) -> NoReturn:
    """Run `job["program"]`, then `job["test"]` (and its `check`), in this process; never returns."""
    # Everything used once the candidate has run is bound now: patching modules or builtins cannot reach it.
    write, read, exit_ = os.write, os.read, os._exit
    settrace, setprofile, sys_dict = sys.settrace, sys.setprofile, sys.__dict__
    startup_streams = {name: sys_dict[name] for name in ("stdin", "stdout", "stderr")}
    flushes = (sys.stdout.flush, sys.stderr.flush)
    gc_collect, gc_callbacks = gc.collect, gc.callbacks
    modules, builtins_dict = sys.modules, builtins.__dict__
    startup_modules, startup_builtins = dict(modules), dict(builtins_dict)
    startup_sys = {name: type(sys_dict[name])(sys_dict[name])  # copies: the candidate may change them in place
                   for name in ("meta_path", "path", "path_hooks", "path_importer_cache")}
    for hook in ("excepthook", "unraisablehook", "displayhook"):
        startup_streams[hook] = sys_dict[f"__{hook}__"]
    signals = modules["_signal"]
    every, is_callable = range, callable  # used before the builtins are restored for the last time
    program, test, entry = job["program"], job["test"], job["entry_point"]
    limits = job["limits"]
    sources = {"<program>": program, "<test>": test}
    testing = [False]

    def guard(event: str, _args: tuple[Any, ...]) -> None:
        # Installed before the candidate runs and never removable: no audit hook of the candidate's, and no
        # tracer or profiler while the tests run (one could jump over the test's asserts).
        if event == "sys.addaudithook" or (testing[0] and event in ("sys.settrace", "sys.setprofile")):
            raise RuntimeError(f"{event} is not allowed in the sandbox")

    def flush() -> None:
        for flush_one in flushes:
            try:  # noqa: SIM105 - no contextlib after the candidate ran: it may have patched it
                flush_one()
            except BaseException:
                pass

    def report(kind: bytes, reason: str) -> NoReturn:
        try:  # noqa: SIM105 - no contextlib after the candidate ran: it may have patched it
            write(RESULT_FD, MESSAGE + kind + reason.encode("utf-8", "replace"))
        except BaseException:
            pass
        flush()
        exit_(1)

    def restore_builtins() -> None:
        # Whole, by the dict's own methods: no name lookup (and no key of the program's) is involved. Only once
        # no handler of the program's is left to run while the dict is empty.
        builtins_dict.clear()
        builtins_dict.update(startup_builtins)

    def deliver() -> NoReturn:
        # Called only right after check(...) or the test source returned: the tests passed.
        flush()
        secret = read(SECRET_FD, 64)
        write(RESULT_FD, pass_message(secret))
        exit_(0)  # no atexit handler or thread of the candidate's runs after the verdict

    try:
        test_code = compile(test, "<test>", "exec", dont_inherit=True)
    except BaseException as error:
        report(b"F", f"the test source does not compile: {_describe(error, sources)}")
    try:
        program_code = compile(program, "<program>", "exec", dont_inherit=True)
    except BaseException as error:
        report(b"C", _describe(error, sources))
    # Top-level functions of the test source: the only `check` the harness will call.
    test_functions = [const for const in test_code.co_consts if type(const) is _CODE]
    defines_check = any(code.co_name == "check" for code in test_functions)
    sys.addaudithook(guard)
    namespace: dict[str, Any] = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        exec(program_code, namespace)
    except SystemExit:
        raise  # the process ends without the pass: "exited N without the harness's pass"
    except BaseException as error:
        # The report is made with the harness's builtins, not ones the program replaced. One C call: a signal
        # handler of the program's may still run between two bytecodes here, and must not find them half-made.
        builtins_dict.update(startup_builtins)
        report(b"C", _describe(error, sources, limits))

    # Undo what the program's module code changed that the tests would otherwise run under. Until the builtins
    # are restored (last: a finalizer or handler may patch them), the harness calls no builtin by name.
    gc_callbacks.clear()
    gc_collect()  # the candidate's pending finalizers run now, not inside the tests
    gc_callbacks.clear()  # (and any callback they added)
    settrace(None)
    setprofile(None)
    testing[0] = True
    # Timers off before handlers back to default: a timer the program armed must not fire into SIG_DFL (which
    # kills the process: "crashed" or "failed" by a race, never the same verdict twice).
    signals.alarm(0)
    for timer in (signals.ITIMER_REAL, signals.ITIMER_VIRTUAL, signals.ITIMER_PROF):
        signals.setitimer(timer, 0)
    for signum in every(1, signals.NSIG):
        try:
            handler = signals.getsignal(signum)
            if is_callable(handler) and handler is not signals.default_int_handler:
                signals.signal(signum, signals.SIG_DFL)
        except (OSError, ValueError):
            continue
    restore_builtins()
    modules.clear()  # the tests import fresh modules, not ones the candidate patched
    modules.update(startup_modules)
    _exact_str_keys(sys_dict)
    sys_dict.update({name: type(value)(value) for name, value in startup_sys.items()}, **startup_streams)
    # Only exact str keys stay in the namespace the tests run in: no lookup of theirs calls the program's code.
    _exact_str_keys(namespace)
    namespace["__builtins__"] = builtins

    if entry is None or not defines_check:
        # The test source's top-level asserts are the tests (calling the candidate by its name, guarded).
        if entry is not None:
            found, function = _lookup(namespace, entry)
            if not found:
                report(b"F", f"NameError: name {entry!r} is not defined by the program")
            namespace[entry] = _guarded(function)
        try:
            exec(test_code, namespace)
        except BaseException as error:
            report(b"F", _describe(error, sources, limits))
        deliver()
    try:
        exec(test_code, namespace)
    except BaseException as error:
        report(b"F", f"the test source raised {_describe(error, sources, limits)}")
    check: Any = _lookup(namespace, "check")[1]
    if type(check) is not _FUNCTION or not any(check.__code__ is code for code in test_functions):
        report(b"F", "check is not the test source's own function (the program replaced it)")
    found, function = _lookup(namespace, entry)
    if not found:
        report(b"F", f"NameError: name {entry!r} is not defined by the program")
    candidate = _guarded(function)
    try:
        check(candidate)
    except BaseException as error:
        report(b"F", _describe(error, sources, limits))
    deliver()


def _guarded(function: Any) -> Any:
    """The candidate function as the tests see it: only plain builtin values come back from it."""

    def candidate(*args: Any, **kwargs: Any) -> Any:
        return plain_copy(function(*args, **kwargs))

    return candidate
