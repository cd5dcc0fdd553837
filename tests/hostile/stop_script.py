"""`ttscale run` on a SIMULATED engine, for tests that stop the CLI with signals (no engine starts).

    python tests/hostile/stop_script.py MODE -- ttscale run flags...

MODE `slow_code`: a code-writing simulator whose programs sleep 60 s in the tested function (each execution
runs to the task's `timeout`), except problem code-L1-0000's, which are the reference solutions (it finishes
at once). MODE `hung_close`: the same, and closing the engine hangs for 120 s (a shutdown that never ends).
MODE `hung_start`: the engine's start waits on a child process that ignores SIGINT and SIGTERM (as vLLM's
EngineCore does while it is being built) for up to 60 s, then fails as vLLM does when that process died.
MODE `forged`: every answer is a wrong function (it returns its first argument) behind one of `FORGERIES`, in
turn: programs that forged a pass while the tests ran in the candidate's own process (issue 59).
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from typing import Any

import ttscale.engine
from ttscale.cli import main
from ttscale.evals import load_task
from ttscale.testing.code_policy import SimulatedCodePolicy

_IGNORING = "import signal, time\nfor s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_IGN)\n" \
            "time.sleep(60)\n"


class SlowCode(SimulatedCodePolicy):
    numbers = itertools.count()

    def _solution(self, problem: Any) -> str:
        if problem.id == "code-L1-0000":
            return f"```python\n{problem.reference}```"
        head = problem.reference.split("\n", 1)[0]
        return f"```python\n{head}\n    import time\n    time.sleep(60)\n    return {next(self.numbers)}\n```"


FORGERIES = (
    "import os\nsecret = os.read(3, 64)\nflip = bytes(range(256)).translate(bytes(b ^ 0xA5 for b in range(256)))\n"
    "os.write(4, b'\\x1eP' + secret.translate(flip))\nos._exit(0)\n",
    "import gc\nfor o in gc.get_objects():\n    if getattr(o, '__name__', '') in ('deliver', '_report'):\n"
    "        try:\n            o()\n        except Exception:\n            pass\n",
    "import gc, threading\ncheck = None\nfor i in range(300000):\n    globals()[f'g{i}'] = i\n"
    "def nothing(candidate):\n    pass\ndef swap():\n    while True:\n        for o in gc.get_objects():\n"
    "            if getattr(o, '__name__', '') == 'check':\n                o.__code__ = nothing.__code__\n"
    "threading.Thread(target=swap, daemon=True).start()\n",
    "import os.path, math, builtins\nos.path.join = lambda *a: None\nmath.fabs = lambda x: 0.0\n"
    "builtins.abs = lambda x: 0\n",
    "def abs(x):\n    return 0\ndef len(x):\n    return 0\n",
)


class Forged(SimulatedCodePolicy):
    numbers = itertools.count()

    def _solution(self, problem: Any) -> str:
        head = problem.reference.split("\n", 1)[0]  # def name(first, ...):
        first = head.split("(", 1)[1].split(")")[0].split(",")[0].split(":")[0].strip()
        attack = FORGERIES[next(self.numbers) % len(FORGERIES)]
        return f"```python\n{attack}\n{head}\n    return {first}\n```"


class HungClose(SlowCode):
    async def close(self) -> None:
        await asyncio.to_thread(time.sleep, 120)


def hung_start() -> None:
    """Block as vLLM's start does (the event loop too), on a child that a signal to the parent does not end."""
    core = subprocess.Popen([sys.executable, "-c", _IGNORING])
    try:
        core.wait(timeout=60)
    except subprocess.TimeoutExpired:
        core.kill()
        core.wait()
        raise RuntimeError("the simulated start ran to its end: nothing stopped it") from None
    raise RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


if __name__ == "__main__":
    mode, argv = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]

    async def start_engine(config: Any) -> Any:
        if mode == "hung_start":
            hung_start()
        policy = {"hung_close": HungClose, "forged": Forged}.get(mode, SlowCode)
        return policy(load_task(_flag(argv, "--task")), seed=0)

    ttscale.engine.start_engine = start_engine  # type: ignore[assignment]
    sys.exit(main(argv))
