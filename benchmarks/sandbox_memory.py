"""How much of the host's memory one execution can take: MemAvailable's largest drop under each hostile program.

Each program runs alone in the sandbox (`Sandbox` with `memory_mib` 1024, 8 processes, 64 open files: the defaults)
while a thread samples /proc/meminfo every 20 ms; the drop is the baseline before the execution less the lowest
sample during it. The goal (issue 59): every drop at most memory_mib + 64 MiB. MemAvailable moves with everything
else the machine does, so run it on a quiet machine; each program runs `--repeats` times and the largest drop
counts.

    python benchmarks/sandbox_memory.py [--repeats 2] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from pathlib import Path

from provenance import provenance, provenance_line

from ttscale.sandbox import Limits, Sandbox

LIMITS = Limits(wall_seconds=6.0, cpu_seconds=6.0)
_SPREAD = "import os\nfor _ in range(7):\n    if os.fork() == 0:\n        break\n"  # 8 processes
_HOLD = "import time\ntime.sleep(4)\n"
PROGRAMS = {
    "memory_bomb": "hog = []\nwhile True:\n    hog.append(bytearray(10**7))\n",
    "memory_bomb_in_8_processes": _SPREAD + "hog = []\ntry:\n    while True:\n        hog.append(bytearray(10**6))\n"
                                  "except MemoryError:\n    pass\n" + _HOLD,
    "threads_allocating": "import threading\nhog = []\ndef grab():\n    try:\n        while True:\n"
                          "            hog.append(bytearray(10**6))\n    except MemoryError:\n        pass\n"
                          "for _ in range(6):\n    threading.Thread(target=grab).start()\n" + _HOLD,
    "socket_buffers_grown": _SPREAD + "import socket\nheld = []\nfor _ in range(30):\n    try:\n"
                            "        a, b = socket.socketpair()\n"
                            "    except OSError:\n        break\n"
                            "    for s in (a, b):\n        for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):\n"
                            "            try:\n                s.setsockopt(socket.SOL_SOCKET, option, 1 << 30)\n"
                            "            except OSError:\n                pass\n        s.setblocking(False)\n"
                            "        try:\n            while True:\n                s.send(b'x' * 65536)\n"
                            "        except OSError:\n            pass\n    held.append((a, b))\n" + _HOLD,
    "pipe_buffers_grown": _SPREAD + "import fcntl\nheld = []\nfor _ in range(30):\n    try:\n        r, w = os.pipe()\n"
                          "    except OSError:\n        break\n"
                          "    try:\n        fcntl.fcntl(w, 1031, 1 << 20)\n    except OSError:\n        pass\n"
                          "    os.set_blocking(w, False)\n    try:\n        while True:\n"
                          "            os.write(w, b'x' * 65536)\n    except OSError:\n        pass\n"
                          "    held.append((r, w))\n" + _HOLD,
    "memfd_and_secret": _SPREAD + "import ctypes, mmap\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                        "for number in (319, 447):\n    fd = libc.syscall(number, b'x', 0) if number == 319 else "
                        "libc.syscall(number, 0)\n    if fd >= 0:\n        os.ftruncate(fd, 512 << 20)\n" + _HOLD,
    "sysv_ipc": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.shmat.restype = ctypes.c_void_p\n"
                "for _ in range(64):\n    shm = libc.shmget(0, 8 << 20, 0o1000 | 0o600)\n"
                "    if shm < 0:\n        break\n"
                "    address = libc.shmat(shm, None, 0)\n    if address not in (None, ctypes.c_void_p(-1).value):\n"
                "        ctypes.memset(address, 1, 8 << 20)\n"
                "for _ in range(2000):\n    if libc.semget(0, 32000, 0o1000 | 0o600) < 0:\n        break\n" + _HOLD,
    "tmpfs_fill": "try:\n    with open('/tmp/fill', 'wb') as handle:\n        while True:\n"
                  "            handle.write(b'x' * (1 << 20))\nexcept OSError:\n    pass\n" + _HOLD,
}


def available_mib() -> float:
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def largest_drop(sandbox: Sandbox, program: str) -> tuple[float, str]:
    time.sleep(0.5)  # let the previous execution's memory come back
    baseline, lowest, stop = available_mib(), [available_mib()], threading.Event()

    def watch() -> None:
        while not stop.is_set():
            lowest[0] = min(lowest[0], available_mib())
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        execution = sandbox.run(program=program, test="")
    finally:
        stop.set()
        watcher.join()
    return baseline - lowest[0], execution.status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2, help="runs of each program (the largest drop counts)")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    sandbox = Sandbox(limits=LIMITS)
    goal = LIMITS.memory_mib + 64
    rows = []
    print(f"{'program':28} {'largest MemAvailable drop':>26}  status")
    for name, program in PROGRAMS.items():
        drops = [largest_drop(sandbox, program) for _ in range(args.repeats)]
        worst = max(drop for drop, _ in drops)
        rows.append({"program": name, "drop_mib": round(worst, 1), "statuses": [status for _, status in drops]})
        print(f"{name:28} {worst:>22.0f} MiB  {', '.join(sorted({status for _, status in drops}))}")
    worst = max(row["drop_mib"] for row in rows)
    print(f"goal: every drop <= memory_mib + 64 = {goal} MiB: {'met' if worst <= goal else 'NOT met'} "
          f"(largest {worst:.0f} MiB)")
    origin = provenance()  # no engine: mode n/a
    print(provenance_line(origin))
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "goal_mib": goal, "provenance": origin}, indent=1) + "\n")


if __name__ == "__main__":
    main()
