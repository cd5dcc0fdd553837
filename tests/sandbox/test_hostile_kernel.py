"""The hostile corpus, part two (issue 42): what no namespace of the first four covered. The kernel keyring, SysV
and POSIX IPC, address families such as AF_VSOCK, and the memory of the whole execution. Each attack is refused
its prize, leaves nothing on the host (keyrings, `/proc/sysvipc`, POSIX queues, vsock ports), and the honest
candidate right after it still passes.

The host's side is set up here with the same system calls (ctypes): a secret key in the test process's own
session keyring (which ttscale, and before issue 42 the candidate, inherits), a world-readable SysV shared
memory segment and a message queue holding the secret.
"""

from __future__ import annotations

import ctypes
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.sandbox.conftest import SQUARE, SQUARE_TEST, TEST_LIMITS, WRONG
from ttscale.sandbox import Sandbox
from ttscale.sandbox._hardening import SYSCALLS
from ttscale.sandbox.sandbox import execute

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.shmat.restype = ctypes.c_void_p
_MACHINE = os.uname().machine
# Its tests compare the host's SysV IPC objects before and after a candidate: `make test`'s pytest-xdist workers take
# a file at a time (`--dist loadfile`), so no second worker's module fixture makes objects of its own in between.
pytestmark = pytest.mark.skipif(_MACHINE not in SYSCALLS, reason=f"no system call numbers for {_MACHINE}")
NR = SYSCALLS.get(_MACHINE, (0, {}))[1]
KEY_SPEC_SESSION, KEY_SPEC_USER = -3, -4
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_UNLINK, KEYCTL_READ = 1, 9, 11
IPC_CREAT, IPC_RMID, IPC_PRIVATE = 0o1000, 0, 0
# The candidate's view of the same calls, through ctypes, with the numbers filled in.
CANDIDATE_LIBC = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"


def _syscall(number: int, *args: object) -> int:
    result = _LIBC.syscall(number, *args)
    if result < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return int(result)


def _keyring(ring: int) -> list[int]:
    """The serials a keyring links to."""
    buffer = ctypes.create_string_buffer(4096)
    size = _syscall(NR["keyctl"], KEYCTL_READ, ring, buffer, 4096)
    return [int.from_bytes(buffer.raw[at : at + 4], "little") for at in range(0, min(size, 4096), 4)]


def _sysvipc() -> dict[str, set[str]]:
    """The host's SysV IPC objects (id column of /proc/sysvipc/*)."""
    return {kind: {line.split()[1] for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]}
            for kind in ("shm", "msg", "sem")}


@dataclass(frozen=True)
class Secrets:
    text: str
    key: int
    shm: int
    msg: int


@pytest.fixture(scope="module")
def own_session_keyring() -> None:
    # This test process joins a session keyring of its own (ttscale's, which the supervisor and, before issue 42,
    # the candidate inherit): the secret key below is added there, never to a keyring another process shares.
    _syscall(NR["keyctl"], KEYCTL_JOIN_SESSION_KEYRING, f"ttscale-test-{os.getpid()}".encode())


@pytest.fixture
def secrets(own_session_keyring: None) -> Iterator[Secrets]:
    text = f"host-secret-{uuid.uuid4().hex}"
    payload = text.encode()
    key = _syscall(NR["add_key"], b"user", b"ttscale-secret", payload, len(payload), KEY_SPEC_SESSION)
    # World-readable, as the issue found them readable as root; 0600 ones are the user's.
    shm = _LIBC.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o644)
    address = _LIBC.shmat(shm, None, 0)
    ctypes.memmove(address, payload, len(payload))
    _LIBC.shmdt(ctypes.c_void_p(address))
    msg = _LIBC.msgget(IPC_PRIVATE, IPC_CREAT | 0o644)
    message = ctypes.create_string_buffer(8 + len(payload))
    message.raw = (1).to_bytes(8, "little") + payload
    assert shm >= 0 and msg >= 0 and _LIBC.msgsnd(msg, message, len(payload), 0) == 0
    try:
        yield Secrets(text=text, key=key, shm=shm, msg=msg)
    finally:
        _syscall(NR["keyctl"], KEYCTL_UNLINK, key, KEY_SPEC_SESSION)
        _LIBC.shmctl(shm, IPC_RMID, None)
        _LIBC.msgctl(msg, IPC_RMID, None)


def _fill(program: str, secrets: Secrets, marker: str) -> str:
    tokens = {"@KEYCTL@": NR["keyctl"], "@ADD_KEY@": NR["add_key"], "@KEY@": secrets.key, "@SHM@": secrets.shm,
              "@MSG@": secrets.msg, "@MARKER@": marker}
    for token, value in tokens.items():
        program = program.replace(token, str(value))
    return program


READ_KEYS = CANDIDATE_LIBC + (
    "found = []\n"
    "def read(key):\n"
    "    buffer = ctypes.create_string_buffer(4096)\n"
    "    size = libc.syscall(@KEYCTL@, 11, key, buffer, 4096)\n"
    "    return buffer.raw[:size] if size > 0 else ctypes.get_errno()\n"
    "for ring in (-1, -2, -3, -4, -5, @KEY@):\n"
    "    found.append((ring, read(ring)))\n"
    "    if isinstance(found[-1][1], bytes) and ring != @KEY@:\n"
    "        for at in range(0, len(found[-1][1]), 4):\n"
    "            found.append(read(int.from_bytes(found[-1][1][at:at + 4], 'little')))\n"
    "searched = libc.syscall(@KEYCTL@, 10, -3, b'user', b'ttscale-secret', 0)\n"
    "found.append((searched, read(searched) if searched > 0 else ctypes.get_errno()))\n"
    "found.append(open('/proc/keys').read())\n"
    "print(found)\nraise AssertionError(repr(found))\n"
)
ADD_KEYS = CANDIDATE_LIBC + (
    "for ring in (-3, -4, -5):\n"
    "    libc.syscall(@ADD_KEY@, b'user', b'@MARKER@', b'planted', 7, ring)\n" + WRONG
)
READ_IPC = CANDIDATE_LIBC + (
    "libc.shmat.restype = ctypes.c_void_p\nfound = [open(f'/proc/sysvipc/{kind}').read() for kind in ('shm', 'msg')]\n"
    "for shm in [@SHM@] + list(range(64)):\n"
    "    address = libc.shmat(shm, None, 0o10000)\n"
    "    if address not in (None, 2**64 - 1):\n"
    "        found.append(ctypes.string_at(address, 64))\n"
    "for msg in [@MSG@] + list(range(64)):\n"
    "    buffer = ctypes.create_string_buffer(256)\n"
    "    if libc.msgrcv(msg, buffer, 248, 0, 0o4000) > 0:\n"
    "        found.append(buffer.raw)\n"
    "print(found)\nraise AssertionError(repr(found))\n"
)
# SysV shared memory (touched), a message queue, a semaphore set and a POSIX queue, all left open.
LEAVE_IPC = CANDIDATE_LIBC + (
    "libc.shmat.restype = ctypes.c_void_p\n"
    "for _ in range(4):\n"
    "    shm = libc.shmget(0, 2 * 2**20, 0o1000 | 0o666)\n"
    "    if shm >= 0:\n"
    "        address = libc.shmat(shm, None, 0)\n"
    "        ctypes.memset(address, 1, 2 * 2**20)\n"
    "        libc.shmdt(ctypes.c_void_p(address))\n"
    "libc.msgget(0x7474, 0o1000 | 0o666)\nlibc.semget(0x7474, 4, 0o1000 | 0o666)\n"
    "libc.mq_open(b'/@MARKER@', os.O_CREAT | os.O_RDWR, 0o666, None)\n" + WRONG
)


@pytest.mark.parametrize(("program", "expected"), [(READ_KEYS, "crashed"), (ADD_KEYS, "failed"),
                                                    (READ_IPC, "crashed"), (LEAVE_IPC, "failed")],
                         ids=["reads_keys", "adds_keys", "reads_host_ipc", "leaves_ipc"])
@pytest.mark.usefixtures("no_strays")
def test_keyrings_and_ipc_of_the_host(program: str, expected: str, namespaced: Sandbox, secrets: Secrets) -> None:
    marker = f"hostile-{uuid.uuid4().hex[:16]}"
    session, user, ipc = _keyring(KEY_SPEC_SESSION), _keyring(KEY_SPEC_USER), _sysvipc()
    execution = namespaced.run(program=_fill(program, secrets, marker), test=SQUARE_TEST, entry_point="solve")

    assert execution.status == expected, execution
    assert secrets.text not in execution.reason + execution.output
    assert (_keyring(KEY_SPEC_SESSION), _keyring(KEY_SPEC_USER)) == (session, user), "a keyring of the host changed"
    assert marker.encode() not in Path("/proc/keys").read_bytes()
    assert _sysvipc() == ipc, "SysV IPC objects were left on the host"
    queue = _LIBC.mq_open(f"/{marker}".encode(), os.O_RDONLY)
    assert queue < 0, "a POSIX message queue was left on the host"
    assert namespaced.run(program=SQUARE, test=SQUARE_TEST, entry_point="solve").passed


def test_two_executions_at_once_share_no_ipc(namespaced: Sandbox) -> None:
    """One writes a word into shared memory and a queue under fixed keys while the other looks for it there."""
    word = f"word-{uuid.uuid4().hex}"
    writer = CANDIDATE_LIBC + (
        "import time\nlibc.shmat.restype = ctypes.c_void_p\nshm = libc.shmget(0x5151, 4096, 0o1000 | 0o666)\n"
        f"ctypes.memmove(libc.shmat(shm, None, 0), b'{word}', {len(word)})\n"
        "message = ctypes.create_string_buffer(8 + 64)\n"
        f"message.raw = (1).to_bytes(8, 'little') + b'{word}'.ljust(64)\n"
        "libc.msgsnd(libc.msgget(0x5151, 0o1000 | 0o666), message, 64, 0)\ntime.sleep(1.0)\n"
    )
    reader = CANDIDATE_LIBC + (
        "import time\nlibc.shmat.restype = ctypes.c_void_p\nfound = []\ndeadline = time.monotonic() + 1.0\n"
        "while time.monotonic() < deadline and not found:\n"
        "    shm = libc.shmget(0x5151, 4096, 0)\n"
        "    if shm >= 0:\n"
        "        found.append(ctypes.string_at(libc.shmat(shm, None, 0o10000), 64))\n"
        "    queue = libc.msgget(0x5151, 0)\n"
        "    buffer = ctypes.create_string_buffer(8 + 64)\n"
        "    if queue >= 0 and libc.msgrcv(queue, buffer, 64, 0, 0o4000) > 0:\n"
        "        found.append(buffer.raw)\n"
        "    time.sleep(0.01)\n"
        "print(found)\n"
    )
    results = {}

    def run(name: str, program: str) -> None:
        results[name] = namespaced.run(program=program, test="")

    threads = [threading.Thread(target=run, args=item) for item in (("writer", writer), ("reader", reader))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results["writer"].passed, results["writer"]
    assert results["reader"].passed and results["reader"].output == "[]\n", results["reader"]


FAMILIES = CANDIDATE_LIBC + (
    "import socket\nopened, other = [], []\n"
    "for family in range(46):\n"
    "    if family in (0, 1, 2, 10, 16):\n"
    "        continue\n"
    "    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET, socket.SOCK_RAW):\n"
    "        for call in (socket.socket, socket.socketpair):\n"
    "            try:\n"
    "                call(family, kind)\n"
    "                opened.append((call.__name__, family, kind))\n"
    "            except OSError as error:\n"
    "                if error.errno != 97:\n"
    "                    other.append((call.__name__, family, kind, error.errno))\n"
    "print('opened', opened)\nprint('other', other)\n"
    "assert not opened and not other\n"
    "for name, call in (('io_uring_setup', lambda: libc.syscall(425, 8, ctypes.create_string_buffer(120))),\n"
    "                   ('memfd_create', lambda: os.memfd_create('x')),\n"
    "                   ('memfd_secret', lambda: libc.syscall(447, 0))):\n"
    "    try:\n"
    "        result = call()\n"
    "    except OSError as error:\n"
    "        result, errno = -1, error.errno\n"
    "    else:\n"
    "        errno = ctypes.get_errno()\n"
    "    assert result == -1 and errno == 38, (name, result, errno)\n"
)


@pytest.mark.parametrize("level", ["namespaces", "rlimits"])
def test_address_families_no_namespace_covers_are_refused(level: str, namespaced: Sandbox) -> None:
    """Every family but unix, inet, inet6 and netlink (which the net namespace covers) gives EAFNOSUPPORT, for
    socket and socketpair alike; io_uring (which can open sockets itself), memfd_create and memfd_secret (issue 59:
    8 processes held 3,584 MiB of unevictable memory with memory_mib 1024) give ENOSYS."""
    if _MACHINE != "x86_64":
        pytest.skip("the program names x86_64's io_uring_setup number")
    execution = execute(level, TEST_LIMITS, FAMILIES, "", None)
    assert execution.passed, execution


BUFFERS = (
    "import fcntl, os, socket\n"
    "a, b = socket.socketpair()\n"
    "default = a.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)\n"
    "for option in (socket.SO_SNDBUF, socket.SO_RCVBUF, 32, 33):\n"
    "    try:\n"
    "        a.setsockopt(socket.SOL_SOCKET, option, 1 << 30)\n"
    "    except PermissionError:\n"
    "        pass\n"
    "    else:\n"
    "        raise AssertionError(f'option {option} was set')\n"
    "assert a.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) == default\n"
    "a.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)  # other options are the program's to set\n"
    "read, write = os.pipe()\n"
    "size = fcntl.fcntl(write, 1032)\n"
    "try:\n"
    "    fcntl.fcntl(write, 1031, 1 << 20)\n"
    "except PermissionError:\n"
    "    pass\n"
    "else:\n"
    "    raise AssertionError('the pipe grew')\n"
    "assert fcntl.fcntl(write, 1032) == size == 65536\n"
    "fcntl.fcntl(write, fcntl.F_SETFL, os.O_NONBLOCK)\n"
)


@pytest.mark.parametrize("level", ["namespaces", "rlimits"])
def test_socket_and_pipe_buffers_keep_the_kernels_default_size(level: str, namespaced: Sandbox) -> None:
    """Issue 59: sockets whose buffers were grown to the host's wmem_max held 3.6 GB with memory_mib 1024 (8
    processes x 28 socketpairs, measured here: MemAvailable fell 3,618 MiB). Growing a socket's or a pipe's
    buffer is refused (EPERM), so kernel buffers hold at most about processes x open_files x 256 KiB."""
    execution = execute(level, TEST_LIMITS, BUFFERS, "", None)
    assert execution.passed, execution


@pytest.mark.usefixtures("no_strays")
def test_a_vsock_port_bound_inside_stays_free_outside(namespaced: Sandbox) -> None:
    try:
        probe = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
        probe.bind((socket.VMADDR_CID_ANY, socket.VMADDR_PORT_ANY))
    except OSError as error:
        pytest.skip(f"this host has no vsock to protect ({error})")
    port = probe.getsockname()[1]
    probe.close()
    program = (f"import socket, time\nserver = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\n"
               f"server.bind((socket.VMADDR_CID_ANY, {port}))\nserver.listen()\nprint('bound', flush=True)\n"
               "time.sleep(1.5)\n" + WRONG)
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(namespaced.run(program=program, test=SQUARE_TEST,
                                                                        entry_point="solve")))
    thread.start()
    in_use = []
    while thread.is_alive():  # the host binds the same port again and again while the candidate runs
        host = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
        try:
            host.bind((socket.VMADDR_CID_ANY, port))
        except OSError as error:
            in_use.append(error.errno)
        finally:
            host.close()
        thread.join(0.02)
    execution = done[0]
    assert not in_use, "the candidate held a vsock port of the host"
    assert execution.status == "crashed" and "[Errno 97] Address family not supported" in execution.reason, execution
    assert namespaced.run(program=SQUARE, test=SQUARE_TEST, entry_point="solve").passed


def test_the_memory_of_the_whole_execution_is_capped(namespaced: Sandbox) -> None:
    """Every process the execution may have maps as much as it can (mapped, not touched: the cap is on address
    space, and this costs the host nothing); together they stay within `memory_mib`."""
    program = (
        "import mmap, os\nfirst = os.getpid()\nreport_read, report_write = os.pipe()\n"
        f"for _ in range({TEST_LIMITS.processes - 1}):\n"
        "    if os.fork() == 0:\n        break\n"
        "held, mapped = [], 0\n"
        "while True:\n"
        "    try:\n        held.append(mmap.mmap(-1, 2**20))\n        mapped += 1\n"
        "    except (OSError, MemoryError):\n        break\n"
        "os.write(report_write, f'{mapped} '.encode())\n"
        "if os.getpid() != first:\n    os._exit(0)\n"
        "os.close(report_write)\nwhile True:\n    try:\n        os.wait()\n"
        "    except ChildProcessError:\n        break\n"
        "total = sum(int(word) for word in os.read(report_read, 4096).split())\nprint('mapped', total)\n"
    )
    execution = namespaced.run(program=program, test="")
    assert execution.passed, execution
    mapped = int(execution.output.split()[-1])
    assert TEST_LIMITS.memory_mib // 2 <= mapped <= TEST_LIMITS.memory_mib, execution.output
    assert namespaced.run(program=SQUARE, test=SQUARE_TEST, entry_point="solve").passed


def test_ipc_inside_holds_no_more_than_the_temp_dir(namespaced: Sandbox) -> None:
    """Shared memory outlives every mapping of it (no address-space limit counts it once detached): the
    candidate's IPC namespace holds at most `file_mib` of it, in at most 16 segments, and 16 message queues."""
    program = CANDIDATE_LIBC + (
        "libc.shmat.restype = ctypes.c_void_p\n"
        "big = libc.shmget(0, 64 * 2**20, 0o1000 | 0o600)\n"
        "made = 0\n"
        "for _ in range(64):\n"
        "    shm = libc.shmget(0, 2**20, 0o1000 | 0o600)\n"
        "    if shm < 0:\n        break\n"
        "    address = libc.shmat(shm, None, 0)\n"
        "    ctypes.memset(address, 1, 2**20)\n"
        "    libc.shmdt(ctypes.c_void_p(address))\n"
        "    made += 1\n"
        "queues = sum(libc.msgget(0, 0o1000 | 0o600) >= 0 for _ in range(64))\n"
        "sets = sum(libc.semget(0, 32, 0o1000 | 0o600) >= 0 for _ in range(64))\n"
        "wide = libc.semget(0, 33, 0o1000 | 0o600)\n"
        "print(big, made, queues, sets, wide)\n"
    )
    execution = namespaced.run(program=program, test="")
    assert execution.passed, execution
    big, made, queues, sets, wide = (int(word) for word in execution.output.split())
    # Only the namespace's root may set its bounds (ttscale as root); otherwise shmget, msgget and semget are
    # refused. Semaphores (issue 59: 1,200 sets held 2.4 GB of kernel memory): 16 sets of at most 32.
    bounded = os.geteuid() == 0
    assert (big, made, queues, sets, wide) == ((-1, TEST_LIMITS.file_mib, 16, 16, -1) if bounded
                                               else (-1, 0, 0, 0, -1)), execution.output
    assert namespaced.run(program=SQUARE, test=SQUARE_TEST, entry_point="solve").passed
