"""The tests' side of the harness: a process the candidate's code never enters, which alone can write the pass.

Not imported by ttscale: its code runs inside the sandbox (see `_supervisor.py`), standard library only, nothing
slow to import. `run` is the execution's worker once it is confined, hardened and limited: it forks the candidate's
process (`_runner.serve`) and stays the tests' process, non-dumpable (so the candidate, the same uid, can neither
ptrace it nor read its memory or descriptors through /proc, and hidepid hides it). Here, in a fresh interpreter
that ran nothing of the program's:

1. the context (trusted source the caller passes: a problem's prompt, its imports and helpers) runs;
2. the candidate says its program ran (or why it crashed);
3. the names the test source uses that neither the builtins nor the context define, and the entry point, are
   asked of the candidate: its functions become proxies (`_Proxy`: each call sends plain-data arguments and
   returns the plain-data result, or raises what the function raised as the builtin class it derives from), its
   plain values are copied, its imported modules are imported here afresh;
4. the test source runs, then `check(candidate)` if it defines `check`; if both return, the pass is written.

A builtin's name is never taken from the program (`def abs(x): return 0` is not the `abs` the tests call), and a
name the context defines is the context's (HumanEval/32's `poly` is the prompt's, not one the answer redefined).
"""

from __future__ import annotations

import builtins
import os
import sys

TYPE_CHECKING = False  # typing takes 20 ms to import; names below come from the shared namespace at run time
if TYPE_CHECKING:
    from typing import Any, NoReturn
if "serve" not in globals():  # imported as a module (by tests), not run in the supervisor's namespace
    from ttscale.sandbox._runner import (
        ANSWERS_FD,
        CALLS_FD,
        MESSAGE,
        RESULT_FD,
        SECRET_FD,
        _describe,
        pass_message,
        serve,
    )
    from ttscale.sandbox._wire import WireError, decode, encode, read_frame, write_frame

_PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 3, 4
_CODE: Any = type(compile("", "", "exec"))  # types.CodeType, without importing types
_FUNCTION: Any = type(lambda: None)  # types.FunctionType


class ProgramError(Exception):
    """What a call of the candidate's function raised, where no builtin Exception class of that name exists
    (SystemExit, KeyboardInterrupt, ...): the tests see an Exception, never an exit of their own process."""


class _Ended(Exception):
    """The candidate's process ended, or said something that is not a message: no more calls can be made."""


def run(job: dict[str, Any], libc: Any) -> NoReturn:
    """Fork the candidate's process, then judge it from this one; never returns."""
    calls_read, calls_write = os.pipe()
    answers_read, answers_write = os.pipe()
    dumpable = libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) if libc is not None else None
    if libc is not None and libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        _report(b"S", "sandbox set-up: prctl(PR_SET_DUMPABLE) failed")
    candidate = os.fork()
    if candidate == 0:  # pragma: no cover - the candidate's process
        os.close(calls_write)
        os.close(answers_read)
        os.dup2(calls_read, CALLS_FD, inheritable=False)  # over the secret's and the result's descriptors
        os.dup2(answers_write, ANSWERS_FD, inheritable=False)
        os.close(calls_read)
        os.close(answers_write)
        if dumpable:
            libc.prctl(_PR_SET_DUMPABLE, dumpable, 0, 0, 0)  # as it was: this process guards nothing
        serve(job)
    os.close(calls_read)
    os.close(answers_write)
    _Judge(job, candidate, calls_write, answers_read).judge()


def _flush() -> None:
    """What the tests printed goes out before the verdict (the process ends with `os._exit`)."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - contextlib costs milliseconds to import, for every execution
            stream.flush()
        except BaseException:
            pass


def _report(kind: bytes, reason: str) -> NoReturn:
    _flush()
    try:  # noqa: SIM105 - contextlib costs milliseconds to import, for every execution
        os.write(RESULT_FD, MESSAGE + kind + reason.encode("utf-8", "replace"))
    except OSError:
        pass
    os._exit(1)


class _Judge:
    def __init__(self, job: dict[str, Any], candidate: int, calls: int, answers: int) -> None:
        self.test, self.entry, self.limits = job["test"], job["entry_point"], job["limits"]
        self.context = job.get("context") or ""
        self.sources = {"<test>": self.test, "<context>": self.context}
        self.candidate, self.calls, self.answers = candidate, calls, answers
        self.raised: list[tuple[BaseException, str]] = []  # what proxies raised, with the candidate's reason

    # -- the end: a verdict, and the candidate's process killed -------------------------------------------
    def fail(self, kind: bytes, reason: str) -> NoReturn:
        self._stop_candidate()
        _report(kind, reason)

    def failed_by(self, error: BaseException, prefix: str = "") -> NoReturn:
        """A test failed with `error`: its reason is the candidate's when a call of its function raised it."""
        reason = next((text for raised, text in self.raised if raised is error), None)
        if reason is None:
            reason = _describe(error, self.sources, self.limits)
        self.fail(b"F", prefix + reason)

    def ended(self) -> NoReturn:
        """The candidate's process ended before the tests did: its wait status and CPU time, for the supervisor."""
        os.close(self.calls)
        os.close(self.answers)
        try:
            _, status, usage = os.wait4(self.candidate, 0)
        except ChildProcessError:
            _report(b"F", "the program's process could not be waited for")
        _report(b"E", f"{status} {usage.ru_utime + usage.ru_stime}")

    def deliver(self) -> NoReturn:
        self._stop_candidate()
        _flush()
        secret = os.read(SECRET_FD, 64)
        os.write(RESULT_FD, pass_message(secret))
        os._exit(0)

    def _stop_candidate(self) -> None:
        try:  # noqa: SIM105 - as above
            os.kill(self.candidate, 9)
        except OSError:
            pass

    # -- the conversation ---------------------------------------------------------------------------------
    def send(self, message: tuple[Any, ...]) -> None:
        self._write(encode(message))

    def _write(self, payload: bytes) -> None:
        try:
            write_frame(self.calls, payload)
        except OSError:
            self.ended()

    def receive(self, *kinds: str) -> tuple[Any, ...]:
        try:
            frame = read_frame(self.answers)
            message = decode(frame) if frame is not None else None
        except OSError:
            self.ended()
        except WireError as error:
            self.fail(b"F", f"the program's process answered something unreadable: {error}")
        if message is None:
            self.ended()
        if type(message) is not tuple or not message or message[0] not in kinds:
            self.fail(b"F", f"the program's process answered out of turn (expected {' or '.join(kinds)})")
        return message

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            request = encode(("call", name, args, kwargs))
        except WireError as error:
            raise TypeError(f"an argument of {name} cannot be passed to the program: {error}") from None
        _flush()  # what the tests printed so far comes before what the call prints
        self._write(request)
        answer = self.receive("returned", "raised")
        if answer[0] == "returned" and len(answer) == 2:
            return answer[1]
        if len(answer) != 3 or not all(type(part) is str for part in answer[1:]):
            self.fail(b"F", "the program's process answered a call with a malformed message")
        _, base, reason = answer
        kind = builtins.__dict__.get(base)
        if not (type(kind) is type and issubclass(kind, Exception)):
            kind = ProgramError
        raised: Exception
        try:
            raised = kind(reason)
        except Exception:  # a class whose constructor wants more (UnicodeDecodeError)
            raised = ProgramError(reason)
        self.raised.append((raised, reason))
        raise raised

    # -- the tests ------------------------------------------------------------------------------------------
    def judge(self) -> NoReturn:
        try:
            test_code = compile(self.test, "<test>", "exec", dont_inherit=True)
        except BaseException as error:
            self.fail(b"F", f"the test source does not compile: {_describe(error, self.sources)}")
        namespace: dict[str, Any] = {"__name__": "__candidate__", "__builtins__": builtins}
        if self.context:
            try:
                exec(compile(self.context, "<context>", "exec", dont_inherit=True), namespace)
            except BaseException as error:
                self.fail(b"S", f"the problem's context raised {_describe(error, self.sources, self.limits)}")
        namespace.pop(self.entry, None)  # a stub the context defines: only the program's may be called
        loaded = self.receive("loaded", "crashed")
        if loaded[0] == "crashed":
            self.fail(b"C", loaded[1] if len(loaded) == 2 and type(loaded[1]) is str else "the program crashed")
        wanted = [name for name in _names(test_code) if name not in namespace and name not in builtins.__dict__]
        if self.entry is not None and self.entry not in wanted:
            wanted.append(self.entry)
        self.send(("names", tuple(wanted)))
        found = self.receive("names")
        if len(found) != 2 or type(found[1]) is not dict:
            self.fail(b"F", "the program's process answered the names with a malformed message")
        for name, what in found[1].items():
            if name in wanted and type(what) is tuple and what:
                self._bind(namespace, name, what)
        test_functions = [const for const in test_code.co_consts if type(const) is _CODE]
        defines_check = any(code.co_name == "check" for code in test_functions)
        if self.entry is not None and self.entry not in namespace:
            self.fail(b"F", f"NameError: name {self.entry!r} is not defined by the program")
        if self.entry is None or not defines_check:
            try:  # the test source's top-level asserts are the tests
                exec(test_code, namespace)
            except BaseException as error:
                self.failed_by(error)
            self.deliver()
        candidate = namespace[self.entry]
        try:
            exec(test_code, namespace)
        except BaseException as error:
            self.failed_by(error, "the test source raised ")
        check: Any = namespace.get("check")
        if type(check) is not _FUNCTION or not any(check.__code__ is code for code in test_functions):
            self.fail(b"F", "check is not the test source's own function")
        try:
            check(candidate)
        except BaseException as error:
            self.failed_by(error)
        self.deliver()

    def _bind(self, namespace: dict[str, Any], name: str, what: tuple[Any, ...]) -> None:
        if what[0] == "function" and len(what) == 1:
            namespace[name] = _Proxy(self, name)
        elif what[0] == "value" and len(what) == 2:
            namespace[name] = what[1]
        elif what[0] == "module" and len(what) == 2 and type(what[1]) is str and _module_name(what[1]):
            try:  # the program imported it: the tests get this process's own, fresh copy
                __import__(what[1])
                namespace[name] = sys.modules[what[1]]
            except Exception:
                return


class _Proxy:
    """The candidate's function `name` as the tests call it: in the candidate's process, with plain data."""

    __slots__ = ("__name__", "_judge")

    def __init__(self, judge: _Judge, name: str) -> None:
        self._judge, self.__name__ = judge, name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._judge.call(self.__name__, args, kwargs)

    def __repr__(self) -> str:
        return f"<the program's {self.__name__}>"


def _names(code: Any) -> list[str]:
    """Every name the code (and the code nested in it) mentions, in order, without dunders."""
    names: list[str] = []
    stack = [code]
    while stack:
        current = stack.pop()
        for name in current.co_names:
            if name not in names and not (name.startswith("__") and name.endswith("__")):
                names.append(name)
        stack.extend(const for const in current.co_consts if type(const) is _CODE)
    return names


def _module_name(name: str) -> bool:
    return all(part.isidentifier() for part in name.split("."))
