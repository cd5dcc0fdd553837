"""Run model-written code safely: `Sandbox(limits=Limits()).run(program=..., test=..., entry_point=...)`.

Model-written code is hostile input. Every execution is a fresh process tree; `import ttscale` does not import
this package. The text below is what docs/concepts/sandbox.md quotes.

Isolation, as the machine allows it (probed once per process; `Sandbox.isolation` and `config()` record it):

1. `namespaces` (Linux with unprivileged user namespaces): new user, pid, net, mount and IPC namespaces. The
   tests' process has pid 2 and the candidate's pid 3, under a small init (pid 1); the candidate sees no process
   but its own (both others are hidden from it); when
   the init ends, the kernel kills every process left in the namespace, so fork bombs and daemons go with it.
   Its network is a down loopback. Its SysV shared memory, message queues, semaphores and POSIX message queues
   are its own (small bounds where the kernel lets the namespace's root set them, as when ttscale runs as root;
   else `shmget` and `msgget` are refused), and the kernel destroys them with the namespace. Its filesystem
   is a minimal read-only root (the Python installation, /usr with the /bin and /lib links, /dev/null, zero,
   random, urandom, its own /proc) and an empty tmpfs of `file_mib` (noexec) as cwd, HOME and TMPDIR; the
   host's root is detached, not hidden. It runs as uid 1000 (the host's `nobody` when ttscale runs as root),
   without capabilities, with no_new_privs, and cannot create user namespaces.
2. `rlimits` (no usable namespaces; only with `allow_network=True`, CLI `--allow-unisolated-code`): the same
   limits, keyring and filter, its own session and process group, orphans re-parented to the supervisor
   (subreaper) and killed, a host temp dir as cwd/HOME/TMPDIR, removed afterwards; SysV shared memory and
   message queues cannot be created. The network, every file the user may read or write, the host's existing
   IPC objects and the user's other processes are reachable (as root: every process, and RLIMIT_NPROC does not
   bind, so neither the process count nor the total memory is capped). Only for code you would run yourself.

Both levels: `python -I -S` (no user site, no PYTHON* variables), a minimal environment, stdin /dev/null; a new
anonymous session keyring (no link to ttscale's, so none to the user's keyring); a seccomp filter (classic BPF
installed with prctl, `_hardening.py`) refusing `add_key`, `keyctl` and `request_key` (keys are not namespaced),
io_uring (its requests open sockets without `socket`), `memfd_create` and `memfd_secret` (their files hold memory
no address-space limit counts), growing a socket's or a pipe's buffer (`setsockopt` SO_SNDBUF/SO_RCVBUF,
`fcntl(F_SETPIPE_SZ)`: EPERM), `socket` and `socketpair` for every address family but AF_UNIX, AF_INET, AF_INET6
and AF_NETLINK (which the net namespace covers; AF_VSOCK reaches the whole VM: EAFNOSUPPORT), and every system
call of another ABI (killed); rlimits (CPU per process, rounded up to whole seconds; file size; open files;
processes and threads together: RLIMIT_NPROC, counted in the execution's own user namespace; and the memory of the whole
execution, `memory_mib`, as each process's address space: `memory_mib // processes` of RLIMIT_AS, so that all
the processes it may have together stay within it: no cgroup v2 memory controller is used); stdout and stderr
read as they come with the first `output_kib` kept, and a wall-clock limit after which every process of the
execution dies. An execution stopped by a limit says which in its reason (`MemoryError ...: memory limit: 128
MiB per process, 1024 MiB for the execution`, `... file-size limit of 8 MiB`, `wall-clock limit of 10.0 s ...`).

The verdict is built where model code never runs. The execution's first process (confined, filtered and limited as
above) forks the candidate's process and stays the tests' process: non-dumpable, so the candidate (the same uid)
cannot ptrace it, read its memory or its descriptors, or see it in /proc. The candidate's process runs the program,
then answers calls of its functions; the tests' process runs the test source in a fresh interpreter that never ran
the program's code, calling the program's functions through proxies that send the arguments and read the result
in a strict plain-data encoding (`_wire.py`: None, bool, int, float with nan and infinities, complex, str, bytes,
and list, tuple, set, frozenset and dict of those, by exact type; decoded by plain Python that checks every length
and nests at most 100 deep; never pickle or marshal). A value that cannot be encoded fails the test with that
reason; what the function raised is raised in the tests as the builtin class it derives from (its own classes as
`ProgramError`, an Exception: SystemExit in a call cannot end the tests). Arguments are copies: a test that reads
back what the function did to its argument in place sees it unchanged (HumanEval's 164 tests never do). The names
the test source uses come, in order: from the builtins of the tests' process (a program's `def abs` is not the
`abs` the tests call), from the `context` (trusted source, such as a prompt's imports and helpers: HumanEval/32's
`poly` is the prompt's, not one the answer redefined), then from the program: its functions as proxies, its plain
values as copies, its imported modules imported afresh. `check(candidate)` is called if the test source defines
`check`, else its top-level asserts are the tests. The supervisor (outside the namespaces) creates a 32-byte secret
only after forking, and writes it into a pipe only the tests' process holds; the pass is a message derived from
it, on a second pipe only the tests' process holds, and counts only if that process then exited 0. Output is never
the verdict.

Defeated (recorded as failed, crashed or timeout, never as passed; the corpus in `tests/sandbox/test_hostile_code.py`
and `tests/hostile/test_forged_code.py`):

- everything aimed at the harness: reading the secret or writing a pass on any descriptor (the candidate's 3 and 4
  carry the tests' requests and its answers), calling the harness's functions found through frames or `gc`,
  patching the encoder, rebinding `check` or swapping its code from a thread, rewriting memory with `ctypes` or
  `/proc/self/mem`: none of it is in the candidate's process, where only its own answers are;
- ending the process early (`sys.exit(0)`, `os._exit(0)`, exec'ing another program, killing itself, before or
  during the tests): "exited 0 before the tests ended";
- printing "passed" or a fake result on stdout or stderr;
- killing or stopping its parent (the tests' process): crashed or timeout; `os.killpg`, `kill(-1, SIGKILL)` reach
  at most the execution's own processes (the supervisor and ttscale are outside its pid namespace);
- patching builtins, modules (`os.path.join`, `math.fabs`), import hooks, `sys.stdout`, tracers, signal handlers,
  `gc.callbacks`, `atexit` or threads that act later: they change the candidate's process only;
- return values that lie about equality (an `__eq__` that is always true, an `int` or `str` subclass, a class whose
  metaclass says it equals `int`, a callable): they cannot be encoded (TypeError, the type named);
- reading the expected values out of the tests: the test source is never in the candidate's process;
- a module-level function named like a builtin, and a helper the test calls itself redefined by the answer when
  the caller passes the prompt as `context` (CodeTask does);
- writing outside its temp dir, reading host files (they are not there), network connections, fork bombs,
  memory bombs (also spread over forked processes: together they hold at most `memory_mib`), CPU spins (also
  inside one C call such as `10**10**8`), huge output, daemons, ignoring SIGTERM or SIGXCPU, reading other
  processes' memory through /proc: isolation and limits above;
- the kernel's shared objects: reading or adding keys in ttscale's or the user's keyrings, reading the host's
  SysV shared memory or message queues, leaving IPC objects behind or passing data through them to another
  execution, binding vsock ports of the VM (or any socket of a family no namespace covers): the keyring,
  the IPC namespace and the seccomp filter above.

Not defeated, and why:

- with `entry_point=None` and no `context`, every name the test's asserts call is the program's: a program can
  define them wrongly (it is what such a test tests);
- at the `rlimits` level the tests' process is reachable as any process of the user is (no pid namespace): the
  candidate can signal it (a crash, never a pass); the supervisor and ttscale are reachable too;
- by design, honest code whose function returns non-plain values (a numpy scalar, a Fraction, a generator)
  fails, threads count against `processes`, and every process may use only its share of `memory_mib`; the tests'
  process has a share of its own besides the candidate's `processes`.
- the memory the kernel holds for an execution outside its address space is bounded but not by `memory_mib`:
  socket and pipe buffers (their sizes cannot be grown: at most about `processes` x `open_files` x 256 KiB, 128 MiB
  at the defaults; measured: 8 processes filling 240 socketpairs took 32 to 106 MiB of the host's MemAvailable),
  its tmpfs (`file_mib`) and IPC objects (bounds above). A cgroup v2 memory controller would count them; this
  machine's kernel offers none to the sandbox.
"""

from ttscale.sandbox.limits import Execution, Limits, SandboxUnavailable
from ttscale.sandbox.sandbox import Sandbox

__all__ = ["Execution", "Limits", "Sandbox", "SandboxUnavailable"]
