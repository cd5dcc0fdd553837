"""What no namespace covers: the kernel keyring, address families such as AF_VSOCK, and IPC's memory (Linux only).

Like `_isolation.py`, not imported by ttscale: its compiled code runs in the supervisor's namespace (after
`_isolation.py`, whose `Libc` and `IsolationError` it uses), standard library only.

The choices follow what the usual sandboxes do, where they fit. bubblewrap (`--unshare-ipc`) and nsjail (on
unless `--disable_clone_newipc`) give the sandbox its own IPC namespace, as `_isolation.enter_namespaces` now
does; neither has a seccomp policy of its own (bubblewrap loads the one its caller passes, nsjail a Kafel policy
it is given), so the filter's contents follow Flatpak (bubblewrap's main user) and Docker's default profile:

- a fresh, anonymous session keyring for the candidate, linked to nothing (runc does the same per container;
  bubblewrap and nsjail leave the keyring alone, and Flatpak refuses the keyring calls instead: both here);
- then a seccomp filter (a small classic-BPF program, installed with prctl: libseccomp's own Python bindings
  are not on PyPI, `pip install seccomp` finds nothing, and a wrapper would cost loading libseccomp in every
  execution) that refuses, as Flatpak's and Docker's default profiles do: `add_key`, `keyctl` and `request_key`
  (EPERM; keys are not namespaced); `socket` and `socketpair` for any address family but AF_UNIX, AF_INET,
  AF_INET6 and AF_NETLINK, which the net namespace covers (EAFNOSUPPORT: Flatpak's allow-list; Docker refuses only
  AF_VSOCK); io_uring (Docker), whose requests can open sockets without the `socket` call; `memfd_create` and
  `memfd_secret`, whose files hold memory outside the address-space limit (a secret one unevictable as well);
  `setsockopt` of SO_SNDBUF, SO_RCVBUF and their FORCE forms and `fcntl(F_SETPIPE_SZ)` (EPERM), so that socket and
  pipe buffers keep the kernel's default sizes (grown to the host's wmem_max, 8 processes held 3.6 GB of socket
  buffers; at the defaults an execution's descriptors hold at most about processes x open_files x 256 KiB); and
  every system call of another ABI (the 32-bit and x32 calls on x86_64 would pass a filter written for 64-bit
  numbers): the process is killed (SIGSYS). Numbers are known for x86_64, aarch64 and riscv64 (little-endian, no
  socketcall multiplexer); elsewhere the set-up fails and says so, rather than run the candidate unfiltered;
- the candidate's IPC namespace gets small bounds (shared memory no larger than its temporary directory, 16
  segments, 16 message queues, 16 POSIX queues, 16 semaphore sets of 32), so that IPC does not hold memory the
  address-space limit does not count. The kernel lets only the namespace's root (as ttscale runs it: root)
  write them; where it cannot, the filter refuses `shmget`, `msgget` and `semget` instead.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing takes 20 ms to import; names below come from the shared namespace at run time
if TYPE_CHECKING:
    from typing import Any

    from ttscale.sandbox._isolation import Libc
if "IsolationError" not in globals():  # imported as a module (by tests), not run in the supervisor's namespace
    from ttscale.sandbox._isolation import IsolationError

_GENERIC = {"socket": 198, "socketpair": 199, "setsockopt": 208, "fcntl": 25, "add_key": 217, "request_key": 218,
            "keyctl": 219,
            "memfd_create": 279, "memfd_secret": 447, "shmget": 194, "msgget": 186, "semget": 190,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427}
# Per architecture: seccomp's AUDIT_ARCH value and the system call numbers the filter names.
SYSCALLS: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {"socket": 41, "socketpair": 53, "setsockopt": 54, "fcntl": 72, "add_key": 248,
                            "request_key": 249, "keyctl": 250,
                            "memfd_create": 319, "memfd_secret": 447, "shmget": 29, "msgget": 68, "semget": 64,
                            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427}),
    "aarch64": (0xC00000B7, _GENERIC),
    "riscv64": (0xC00000F3, _GENERIC),
}
ALLOWED_FAMILIES = (1, 2, 10, 16)
"""AF_UNIX, AF_INET, AF_INET6, AF_NETLINK: the families the net namespace covers."""
SOL_SOCKET = 1
BUFFER_OPTIONS = (7, 8, 32, 33)
"""SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE: a socket's buffers stay at the kernel's default size."""
F_SETPIPE_SZ = 1031
"""fcntl's command that grows a pipe's buffer (up to 1 MiB unprivileged): pipes stay at 64 KiB."""
EPERM, ENOSYS, EAFNOSUPPORT = 1, 38, 97
_X32_BIT = 0x40000000
_KEYCTL_JOIN_SESSION_KEYRING = 1
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, _PR_SET_NO_NEW_PRIVS = 22, 2, 38
_RET_ALLOW, _RET_ERRNO, _RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
# Classic BPF opcodes: load a 32-bit word of seccomp_data; jump if equal / greater or equal; return.
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_NR, _ARCH, _ARG0, _ARG1, _ARG2 = 0, 4, 16, 24, 32  # offsets in struct seccomp_data (args' low words: little-endian)
# Where the kernel keeps the IPC namespace's bounds (of the calling process's namespace), and their values.
_IPC_BOUNDS = ("kernel/shmmni", "kernel/msgmni", "fs/mqueue/queues_max")
_IPC_OBJECTS = 16
_SEMS_PER_SET = 32


def bound_ipc(work_mib: int) -> bool:
    """Small bounds for this process's (new) IPC namespace; False where the kernel does not let us set them."""
    values: dict[str, object] = {"kernel/shmmax": work_mib * 2**20,
                                 "kernel/shmall": work_mib * 2**20 // os.sysconf("SC_PAGE_SIZE")}
    values.update(dict.fromkeys(_IPC_BOUNDS, _IPC_OBJECTS))
    # SysV semaphores: SEMMSL (per set), SEMMNS (in all), SEMOPM (per semop call), SEMMNI (sets): 16 sets of at
    # most 32 semaphores, 512 in all (the default SEMMNI of 32,000 sets let 1,200 semget calls hold 2.4 GB).
    values["kernel/sem"] = f"{_SEMS_PER_SET} {_SEMS_PER_SET * _IPC_OBJECTS} {_SEMS_PER_SET} {_IPC_OBJECTS}"
    try:
        for name, value in values.items():
            with open(f"/proc/sys/{name}", "w") as handle:
                handle.write(str(value))
    except OSError:
        return False
    return True


def _instruction(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int]:
    # struct sock_filter {u16 code; u8 jt; u8 jf; u32 k} as two 32-bit words (little-endian).
    return code | jt << 16 | jf << 24, k


def filter_program(machine: str, *, refuse_sysv: bool) -> list[tuple[int, int]]:
    """The seccomp program (a list of sock_filter instructions) for `machine`'s native ABI."""
    if machine not in SYSCALLS:
        raise IsolationError(f"seccomp: unknown system call numbers on {machine}")
    arch, numbers = SYSCALLS[machine]
    refused = [(numbers[name], EPERM) for name in ("add_key", "keyctl", "request_key")]
    refused += [(numbers[name], ENOSYS) for name in ("io_uring_setup", "io_uring_enter", "io_uring_register",
                                                     "memfd_create", "memfd_secret")]
    if refuse_sysv:
        refused += [(numbers[name], ENOSYS) for name in ("shmget", "msgget", "semget")]
    kill = _instruction(_RET_K, _RET_KILL_PROCESS)
    program = [_instruction(_LD_W_ABS, _ARCH), _instruction(_JEQ_K, arch, jt=1), kill,
               _instruction(_LD_W_ABS, _NR)]
    if machine == "x86_64":
        program += [_instruction(_JGE_K, _X32_BIT, jf=1), kill]
    # Each refused call: "nr == N? return its errno : next test".
    for number, errno in refused:
        program += [_instruction(_JEQ_K, number, jf=1), _instruction(_RET_K, _RET_ERRNO | errno)]
    # setsockopt growing a socket's buffers, fcntl growing a pipe's: EPERM (each block returns, or skips itself).
    allow, deny = _instruction(_RET_K, _RET_ALLOW), _instruction(_RET_K, _RET_ERRNO | EPERM)
    options = [_instruction(_JEQ_K, option, jt=len(BUFFER_OPTIONS) - index)
               for index, option in enumerate(BUFFER_OPTIONS)]
    sockets = [_instruction(_LD_W_ABS, _ARG1), _instruction(_JEQ_K, SOL_SOCKET, jf=len(options) + 1),
               _instruction(_LD_W_ABS, _ARG2), *options, allow, deny]
    program += [_instruction(_JEQ_K, numbers["setsockopt"], jf=len(sockets)), *sockets]
    pipes = [_instruction(_LD_W_ABS, _ARG1), _instruction(_JEQ_K, F_SETPIPE_SZ, jt=1), allow, deny]
    program += [_instruction(_JEQ_K, numbers["fcntl"], jf=len(pipes)), *pipes]
    # socket and socketpair: on to the family test; anything else is allowed.
    program += [_instruction(_JEQ_K, numbers["socket"], jt=2), _instruction(_JEQ_K, numbers["socketpair"], jt=1),
                _instruction(_RET_K, _RET_ALLOW), _instruction(_LD_W_ABS, _ARG0)]
    for index, family in enumerate(ALLOWED_FAMILIES):
        program.append(_instruction(_JEQ_K, family, jt=len(ALLOWED_FAMILIES) - index))
    program += [_instruction(_RET_K, _RET_ERRNO | EAFNOSUPPORT), _instruction(_RET_K, _RET_ALLOW)]
    return program


def harden(libc: Libc, *, refuse_sysv: bool) -> None:
    """In the candidate's process, before its limits: a session keyring of its own, then the seccomp filter."""
    machine = os.uname().machine
    if machine not in SYSCALLS:
        raise IsolationError(f"seccomp: unknown system call numbers on {machine}")
    # A new anonymous session keyring replaces the inherited one (ttscale's, which login sessions link to the
    # user's keyring): no key of the host's can be reached through it, and nothing added lands on the host.
    serial = libc.syscall(SYSCALLS[machine][1]["keyctl"], _KEYCTL_JOIN_SESSION_KEYRING, None)
    # Refused (EPERM: a filter around ttscale, such as Docker's default profile) or absent (ENOSYS: a kernel
    # without keys), the keyring is as far out of the candidate's reach, once the filter below is in place.
    if serial < 0 and libc.errno() not in (EPERM, ENOSYS):
        raise IsolationError(f"keyctl(join session keyring): {os.strerror(libc.errno())}")
    install_filter(libc, filter_program(machine, refuse_sysv=refuse_sysv))


def install_filter(libc: Libc, program: list[tuple[int, int]]) -> None:
    """Install a seccomp program on this process (and every process it starts), with no_new_privs."""
    words = libc.words(*(word for instruction in program for word in instruction))
    address: Any = libc.address(words)
    # struct sock_fprog {unsigned short len; (padding); struct sock_filter *filter} on a 64-bit machine.
    fprog = libc.words(len(program), 0, address & 0xFFFFFFFF, address >> 32)
    # no_new_privs is what lets a process without CAP_SYS_ADMIN install a filter (the namespaces level set it).
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise IsolationError(f"prctl(no_new_privs): {os.strerror(libc.errno())}")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
        raise IsolationError(f"prctl(seccomp filter): {os.strerror(libc.errno())}")
