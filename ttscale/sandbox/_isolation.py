"""Namespaces, mounts, privileges and limits for one sandboxed execution (Linux only).

This file is not imported by ttscale: its compiled code is sent to the sandbox's supervisor process
(`python -I -S`, see `_supervisor.py`) and executed there, in one namespace with `_runner.py` and
`_supervisor.py`. So it uses the standard library only, and nothing slow to import: it is loaded for every
execution.

Order of events for the "namespaces" level:

1. the supervisor, before anything else: `enter_namespaces` gives it new user, pid, net and IPC namespaces
   (its next child is pid 1 of the new pid namespace). As root, a helper forked before the `unshare` writes
   the uid/gid maps, mapping the candidate's uid 1000 to `nobody` (65534): a root-owned kernel uid would
   ignore RLIMIT_NPROC. Otherwise the supervisor maps its own uid to 1000 inside. `_hardening.bound_ipc` then
   bounds the new IPC namespace.
2. pid 1 forks the candidate's process (pid 2) at once and stays its init (`_supervisor._be_init`).
3. the candidate's process, `confine`: a mount namespace of its own, a minimal read-only root (the Python
   installation, /usr and the /lib* and /bin links, four /dev nodes, its own /proc) and an empty writable
   tmpfs at /tmp; the old root is detached; nested user namespaces are disallowed; it becomes uid 1000, drops
   every capability, sets no_new_privs.
4. `_hardening.harden`: a session keyring of its own, then the seccomp filter.
5. `set_limits`: rlimits, last, so that the set-up itself is not limited.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing takes 20 ms to import: too slow for every execution
if TYPE_CHECKING:
    from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
# pivot_root has no glibc wrapper; its number differs by architecture.
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}

CANDIDATE_ID = 1000
"""The candidate's uid and gid inside its user namespace."""
NOBODY = 65534
"""The host uid and gid the candidate runs as when the supervisor is root."""

# /dev nodes the candidate gets (bound from the host), and the usual links to its own fds.
_DEV_NODES = ("null", "zero", "random", "urandom")
_DEV_LINKS = (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
              ("stderr", "/proc/self/fd/2"))


class IsolationError(Exception):
    """A set-up step failed; the message names the step and the error."""


class Libc:
    """The C library's functions by name (`libc.mount(...)`), each returning an int and keeping errno.

    Built on `_ctypes`, the C half of ctypes: the ctypes package itself costs 2 ms more to import, in every
    execution. Arguments are ints, bytes, None, or `words(n)` arrays (passed as pointers).
    """

    def __init__(self) -> None:
        import _ctypes as ctypes_module

        _ctypes: Any = ctypes_module  # private API: typeshed's signatures do not fit this use

        class Int(_ctypes._SimpleCData):
            _type_ = "i"

        class Word(_ctypes._SimpleCData):
            _type_ = "I"

        class Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
            _restype_ = Int

        self._ctypes, self._word, self._function = _ctypes, Word, Function
        self._handle = _ctypes.dlopen(None, 0)

    def __getattr__(self, name: str) -> Any:
        function = self._function((name, self))
        setattr(self, name, function)
        return function

    def errno(self) -> int:
        return int(self._ctypes.get_errno())

    def words(self, *values: int) -> Any:
        """An array of unsigned 32-bit ints, for a struct made only of them."""
        array = type("Words", (self._ctypes.Array,), {"_type_": self._word, "_length_": len(values)})
        return array(*values)

    def address(self, array: Any) -> int:
        """Where a `words` array lives (for a struct that points at another)."""
        return int(self._ctypes.addressof(array))


def load_libc() -> Libc:
    return Libc()


def _check(libc: Libc, result: int, what: str) -> None:
    if result != 0:
        raise IsolationError(f"{what}: {os.strerror(libc.errno())}")


def _mount(libc: Libc, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    encode = (lambda text: None if text is None else text.encode())  # noqa: E731 - a four-argument shorthand
    _check(libc, libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)), f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def enter_namespaces(libc: Libc) -> int | None:
    """New user, pid (for the next child), net and IPC namespaces for this process, and their uid/gid maps.

    The IPC namespace gives the candidate SysV shared memory, message queues, semaphores and POSIX message
    queues of its own: the host's are out of reach, and the kernel destroys the candidate's with the namespace.

    Returns None when the maps are written, or (as root) the read end of a pipe that says b"k" once a helper
    has written them: `confine` waits for it, so this process and the helper are not waiting on each other.
    """
    flags = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC
    if os.geteuid() != 0:
        uid, gid = os.getuid(), os.getgid()
        _check(libc, libc.unshare(flags), "unshare(user, pid, net, ipc)")
        # An unprivileged process may map only its own ids, and only once setgroups is denied.
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{CANDIDATE_ID} {uid} 1")
        _write("/proc/self/gid_map", f"{CANDIDATE_ID} {gid} 1")
        return None
    # As root, a map that names another host uid must be written from the parent user namespace: by a helper
    # forked before the unshare, which waits for it.
    me = os.getpid()
    go_read, go_write = os.pipe()
    done_read, done_write = os.pipe()
    helper = os.fork()
    if helper == 0:  # pragma: no cover - a forked child
        try:
            os.close(done_read)
            if os.read(go_read, 1) == b"u":
                _write(f"/proc/{me}/uid_map", f"{CANDIDATE_ID} {NOBODY} 1")
                _write(f"/proc/{me}/gid_map", f"{CANDIDATE_ID} {NOBODY} 1")
                os.write(done_write, b"k")
        finally:
            os._exit(0)
    os.close(go_read)
    os.close(done_write)
    unshared = libc.unshare(flags)
    errno = libc.errno()
    os.write(go_write, b"u" if unshared == 0 else b"x")
    os.close(go_write)
    if unshared != 0:
        os.close(done_read)
        raise IsolationError(f"unshare(user, pid, net, ipc): {os.strerror(errno)}")
    return done_read  # the helper is never waited for: a zombie until this process ends costs nothing


def _wait_for_maps(maps_done: int) -> None:
    answer = os.read(maps_done, 1)
    os.close(maps_done)
    if answer != b"k":
        raise IsolationError("writing the uid/gid maps of the new user namespace failed")


def _mount_flags(path: str) -> int:
    """The flags a read-only remount of `path` must keep (the kernel refuses to clear locked ones)."""
    flags = os.statvfs(path).f_flag
    kept = MS_RDONLY | MS_NOSUID | (flags & (MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME))
    return kept | (MS_RELATIME if flags & os.ST_RELATIME else 0)


def confine(libc: Libc, *, binds: list[str], links: list[tuple[str, str]], work_mib: int,
            maps_done: int | None) -> None:
    """In the candidate's process: its own minimal read-only root with an empty tmpfs at /tmp, as uid 1000.

    `binds`: host directories shown read-only at the same path; `links`: (path, target) symbolic links made
    in the new root (e.g. /bin -> usr/bin).
    """
    _check(libc, libc.unshare(CLONE_NEWNS), "unshare(mount)")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    # Opened while this process still has its original (as root: owner) access to the paths, e.g. a Python
    # under /root; bound from /proc/self/fd once it is uid 1000, which can create files in the new root.
    sources = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in binds}
    devices = {name: os.open(f"/dev/{name}", os.O_PATH | os.O_CLOEXEC) for name in _DEV_NODES}
    if maps_done is not None:  # as root: once the helper has mapped uid 1000, drop root's supplementary groups
        _wait_for_maps(maps_done)
        os.setgroups([])
    os.setresgid(CANDIDATE_ID, CANDIDATE_ID, CANDIDATE_ID)
    os.setresuid(CANDIDATE_ID, CANDIDATE_ID, CANDIDATE_ID)
    root = "/tmp"  # any existing directory serves as the mount point of the new root (in this namespace only)
    _mount(libc, "tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=1024,mode=0755")
    for path, fd in sources.items():
        os.makedirs(root + path, exist_ok=True)
        _mount(libc, f"/proc/self/fd/{fd}", root + path, None, MS_BIND | MS_REC)
        os.close(fd)
    for path, target in links:
        os.symlink(target, root + path)
    os.mkdir(root + "/dev")
    for name, fd in devices.items():
        os.close(os.open(f"{root}/dev/{name}", os.O_CREAT | os.O_WRONLY, 0o666))
        _mount(libc, f"/proc/self/fd/{fd}", f"{root}/dev/{name}", None, MS_BIND)
        os.close(fd)
    for name, target in _DEV_LINKS:
        os.symlink(target, f"{root}/dev/{name}")
    os.mkdir(root + "/proc")
    # hidepid: no /proc entry for a process the candidate may not ptrace, such as its init (non-dumpable, and in
    # the host's mount namespace: its mountinfo would list the host's mounts).
    try:
        _mount(libc, "proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")
    except IsolationError:  # kernels before 5.8 know the number only
        _mount(libc, "proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    os.mkdir(root + "/tmp")
    os.chdir(root)
    machine = os.uname().machine
    if machine not in _SYS_PIVOT_ROOT:
        raise IsolationError(f"pivot_root: unknown system call number on {machine}")
    # pivot_root(".", ".") stacks the old root under the new one; detaching it leaves no path to the host's files.
    _check(libc, libc.syscall(_SYS_PIVOT_ROOT[machine], b".", b"."), "pivot_root")
    _check(libc, libc.umount2(b".", MNT_DETACH), "detach the old root")
    os.chdir("/")
    with open("/proc/self/mountinfo") as handle:
        points = [line.split()[4].replace("\\040", " ") for line in handle]
    for point in points:
        if point != "/proc" and not point.startswith("/proc/"):
            _mount(libc, None, point, None, MS_REMOUNT | MS_BIND | _mount_flags(point))
    # The one writable place: noexec, so nothing the candidate writes can be run or loaded as a library.
    options = f"size={work_mib}m,nr_inodes=4096,mode=0700,uid={CANDIDATE_ID},gid={CANDIDATE_ID}"
    _mount(libc, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)
    # Without nested user namespaces the candidate cannot get capabilities (and remount) anywhere.
    try:  # noqa: SIM105 - contextlib costs milliseconds to import, for every execution
        _write("/proc/sys/user/max_user_namespaces", "0")
    except OSError:
        pass
    _drop_capabilities(libc)
    os.chdir("/tmp")


def _drop_capabilities(libc: Libc) -> None:
    # A uid change in a user namespace whose root is unmapped keeps the capabilities: drop them all explicitly.
    # capset(header {version 3, pid 0}, data[2] {effective, permitted, inheritable} all 0).
    _check(libc, libc.capset(libc.words(0x20080522, 0), libc.words(0, 0, 0, 0, 0, 0)), "capset")
    _check(libc, libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(no_new_privs)")


def die_with_parent(libc: Libc, parent: int) -> None:
    """SIGKILL this process when its parent (the supervisor) dies."""
    _check(libc, libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0), "prctl(pdeathsig)")
    # The parent died before the prctl? (In a new pid namespace the parent, outside it, shows as pid 0.)
    if os.getppid() not in (parent, 0):
        os._exit(1)


def become_subreaper(libc: Libc) -> None:
    """Orphaned descendants are re-parented to this process (so it can find and kill them)."""
    _check(libc, libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "prctl(child_subreaper)")


def _user_tasks() -> int:
    """Processes and threads of this uid, which RLIMIT_NPROC counts outside a fresh user namespace."""
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


def per_process_mib(limits: dict[str, Any]) -> int:
    """Each process's address space (RLIMIT_AS): the execution's memory shared out among as many processes as it
    may have, so that together they stay within `memory_mib` (RLIMIT_AS alone bounds one process only)."""
    return int(limits["memory_mib"] // limits["processes"])


def set_limits(limits: dict[str, Any], *, counted_elsewhere: int | None) -> None:
    """The execution's rlimits, set on this process (inherited by every process it starts).

    `counted_elsewhere`: tasks of the same (user namespace, uid) that are not the candidate's (the supervisor,
    in a user namespace it shares with the candidate); None outside a user namespace, where the limit is the
    uid's current count plus the candidate's allowance (root ignores RLIMIT_NPROC there: no cap).
    """
    import resource

    cpu = max(1, int(-(-limits["cpu_seconds"] // 1)))  # the kernel counts whole seconds: round up
    memory = per_process_mib(limits) * 2**20
    files = limits["file_mib"] * 2**20
    tasks = limits["processes"] + (counted_elsewhere if counted_elsewhere is not None else _user_tasks())
    for which, soft, hard in (
        (resource.RLIMIT_CPU, cpu, cpu + 1),  # SIGXCPU at the soft limit, SIGKILL one second later
        (resource.RLIMIT_AS, memory, memory),
        (resource.RLIMIT_FSIZE, files, files),
        (resource.RLIMIT_NOFILE, limits["open_files"], limits["open_files"]),
        (resource.RLIMIT_NPROC, tasks, tasks),
        (resource.RLIMIT_CORE, 0, 0),
    ):
        resource.setrlimit(which, (soft, hard))
