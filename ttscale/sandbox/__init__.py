"""Run model-written code safely: `Sandbox(limits=Limits()).run(program=..., test=..., entry_point=...)`.

Model-written code is hostile input. Every execution is a fresh process tree; `import ttscale` does not import
this package. The text below is what README quotes.

Isolation, as the machine allows it (probed once per process; `Sandbox.isolation` and `config()` record it):

1. `namespaces` (Linux with unprivileged user namespaces): new user, pid, net, mount and IPC namespaces. The
   candidate's process has pid 2 under a small init (pid 1, hidden from it) and sees no other process; when
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
no address-space limit counts), `socket` and `socketpair` for every address family but AF_UNIX, AF_INET, AF_INET6
and AF_NETLINK (which the net namespace covers; AF_VSOCK reaches the whole VM: EAFNOSUPPORT), and every system
call of another ABI (killed); rlimits (CPU per process, rounded up to whole seconds; file size; open files;
processes and threads together: RLIMIT_NPROC, counted in the execution's own user namespace; and the memory of the whole
execution, `memory_mib`, as each process's address space: `memory_mib // processes` of RLIMIT_AS, so that all
the processes it may have together stay within it: no cgroup v2 memory controller is used); stdout and stderr
read as they come with the first `output_kib` kept, and a wall-clock limit after which every process of the
execution dies. An execution stopped by a limit says which in its reason (`MemoryError ...: memory limit: 128
MiB per process, 1024 MiB for the execution`, `... file-size limit of 8 MiB`, `wall-clock limit of 10.0 s ...`).

The verdict. As in HumanEval's harness, the program and then the test source run in one fresh module namespace,
in one process; `check(candidate)` is called if the test source (not the program) defines `check`, else the
test's top-level asserts are the tests. The supervisor (outside the candidate's namespaces) creates a 32-byte
secret only after forking the candidate's process, and writes it into a pipe that the harness reads only once
the tests have returned; the pass is a message derived from it, on a second pipe, and counts only if that pipe
carried exactly that message and the process then exited 0. Output is never the verdict.

Defeated (recorded as failed, crashed or timeout, never as passed):

- ending the process early: `sys.exit(0)`, `raise SystemExit`, `os._exit(0)`, exec'ing another program, or
  killing itself, before or during the tests: no pass was sent ("exited 0 without the harness's pass");
- printing "passed" or a fake result on stdout or stderr;
- writing to every fd, echoing what it reads from one fd to the others, closing or dup2-ing fds: the pass is not
  the secret itself, and a spoiled channel only fails;
- killing its parent (`os.kill(os.getppid(), ...)`, `os.killpg`, `kill(-1, SIGKILL)`): they reach at most the
  candidate's own processes (its init ignores or refuses them; the supervisor and ttscale are outside its pid
  namespace);
- a `check` of its own, defined before the tests or swapped in by a thread: the harness calls only a function
  whose code object is one of the test source's own top-level functions;
- patching builtins, `sys.modules` entries, import hooks (`sys.meta_path`, `sys.path_hooks`, `sys.path`) or
  `sys.stdout`/`excepthook`/`unraisablehook` at import time: restored to the harness's start-up state before
  the tests, which import fresh modules;
- return values that lie about equality: an object whose `__eq__` is always true, an `int` or `str` subclass, a
  container holding one, a class whose metaclass says it equals `int`: what the candidate function returns to
  the tests must be plain builtin values by exact type, compared by identity (int, float, complex, bool, str,
  bytes, None; list, tuple, dict, set, frozenset of those; at most 100 deep), else the call raises TypeError;
  it is deep-copied, so a thread cannot change it afterwards; the check uses builtins bound when the harness
  loaded, so the candidate function cannot replace `type` or `reversed` under it before it returns;
- names of its own that claim to be another: a `str` subclass key in the program's globals (or builtins, or
  `sys.modules`) with the hash of `abs` or `check` whose `__eq__` says yes: every key that is not an exact
  `str` is dropped before the tests, and the harness finds `check` and the entry point comparing exact `str`
  keys only; no check of the harness's (and no description of an exception the program raised) calls code of
  the candidate's;
- tracers and profilers that jump over asserts (`sys.settrace`, `sys.setprofile`, `threading.settrace`, the
  C-level `PyEval_SetTrace`): reset before the tests and refused while they run, by an audit hook installed
  before the program runs; `sys.addaudithook` is refused throughout;
- signal handlers, alarms and interval timers, `gc.callbacks` and pending finalizers left by the program:
  reset, cancelled, cleared and run before the tests (by the harness's own `range` and `callable`: a replaced
  builtin called then could add a callback after the clearing);
- `atexit` handlers: the harness leaves with `os._exit`, so none runs after the verdict;
- a thread or child process that later prints "passed" or writes a fake result: it has no secret;
- writing outside its temp dir, reading host files (they are not there), network connections, fork bombs,
  memory bombs (also spread over forked processes: together they hold at most `memory_mib`), CPU spins (also
  inside one C call such as `10**10**8`), huge output, daemons, ignoring SIGTERM or SIGXCPU, reading other
  processes' memory through /proc: isolation and limits above;
- the kernel's shared objects: reading or adding keys in ttscale's or the user's keyrings, reading the host's
  SysV shared memory or message queues, leaving IPC objects behind or passing data through them to another
  execution, binding vsock ports of the VM (or any socket of a family no namespace covers): the keyring,
  the IPC namespace and the seccomp filter above.

Not defeated:

- code that targets ttscale's harness: it runs in the same process as the tests, so reading the secret's pipe
  (fd 3) before the harness does and writing the pass message itself, calling the harness's own functions
  found through frames or `gc`, or rewriting memory with `ctypes` or `/proc/self/mem`, forges a pass (at the
  `rlimits` level the supervisor is reachable too). The sandbox protects the machine and the run, not the
  verdict, against an adversary that targets the harness;
- code that reads the tests: they are in its process (the test source, and `check`'s code and frame while it
  calls the candidate), so a candidate can look up the expected values instead of computing them;
- code that changes what the tests read while they run: the candidate function, called by the test, can reach
  the test's frame (`sys._getframe(1)`) and patch its globals, builtins or a module it uses (say `math.fabs`),
  and threads (also one the program started at import), finalizers and signal handlers it sets up during a
  call can do the same while the test runs;
- a module-level function named like a builtin (`def abs(x): return 0`): the tests run in the program's
  namespace (HumanEval's semantics), so it is the `abs` they call; restoring the builtins does not touch a
  module global, and telling a helper the tests need from a shadowing one is not possible in general.
  Only tests in a separate process, with the candidate behind marshal-only proxies, would rule this out, at
  the cost of HumanEval's one-namespace semantics;
- helpers of the program that the test calls itself (HumanEval/32's `poly`), and with `entry_point=None` every
  name the test's asserts call: their return values are not checked;
- by design, honest code whose function returns non-plain values (a numpy scalar, a Fraction, a generator)
  fails, threads count against `processes`, and every process may use only its share of `memory_mib`.
- the memory the kernel holds for an execution outside its address space is bounded but not by `memory_mib`:
  pipe and socket buffers (the kernel's per-user pipe quota), its tmpfs (`file_mib`) and IPC objects (bounds
  above). A cgroup v2 memory controller would count them; this machine's kernel offers none to the sandbox.
"""

from ttscale.sandbox.limits import Execution, Limits, SandboxUnavailable
from ttscale.sandbox.sandbox import Sandbox

__all__ = ["Execution", "Limits", "Sandbox", "SandboxUnavailable"]
