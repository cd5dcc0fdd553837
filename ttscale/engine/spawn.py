"""Scripts that call ttscale at their top level, and the processes vLLM starts with multiprocessing's spawn.

vLLM starts its engine-core process with spawn (its CPU platform forces spawn whatever
`VLLM_WORKER_MULTIPROC_METHOD` says). Spawn runs the parent's main script again in the new process (as
`__mp_main__`) before the process's own work, so `python script.py` whose top level calls `ttscale.run(...)` ran
that call a second time inside vLLM's engine process: the second call met the first one's run-directory lock,
the engine process died, and the user read "Engine core initialization failed" with the cause only in a log.
vLLM's own answer is the `if __name__ == "__main__":` guard (its docs, "Python multiprocessing").

The engine process needs nothing of the caller's script: its target and arguments are vLLM's own, importable
by module name. So while ttscale starts vLLM, `sys.modules["__main__"]` is a stand-in with no file and no module
spec, and spawn has no script to re-run (as for an interactive session or a notebook, whose main has none). A
script then works with or without the guard. Where some other spawn (the user's own pool) still re-runs a
script that calls ttscale, `spawned_bootstrap()` tells, and the call refuses in one line naming the guard.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sys
import types
from collections.abc import Iterator

GUARD = 'if __name__ == "__main__":'


@contextlib.contextmanager
def main_left_alone() -> Iterator[None]:
    """Processes spawned inside this block do not re-run the caller's main script (see the module doc)."""
    main = sys.modules.get("__main__")
    if main is None or (getattr(main, "__file__", None) is None and getattr(main, "__spec__", None) is None):
        yield  # nothing a spawned process would re-run: an interactive session, a notebook
        return
    # A module of the same name, so code that looks up `__main__` meanwhile finds one; without `__file__` and
    # `__spec__`, multiprocessing.spawn.get_preparation_data records no script for the child to run.
    stand_in = types.ModuleType("__main__")
    sys.modules["__main__"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("__main__") is stand_in:  # never put back over a main someone else installed meanwhile
            sys.modules["__main__"] = main


def spawned_bootstrap() -> bool:
    """Whether this process is a spawned one still re-running its parent's main script (multiprocessing's own
    test: `_inheriting` is set from the start of the bootstrap until the process's work begins)."""
    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def refuse_in_spawned_bootstrap(call: str) -> None:
    """A one-line RuntimeError when `call` ("ttscale.run") is made by a script re-run in a spawned process."""
    if spawned_bootstrap():
        raise RuntimeError(f"{call} was called while a process started with multiprocessing's spawn re-runs the "
                           f"script that started it (its top level runs again there): put the script's calls "
                           f"under `{GUARD}`")


__all__ = ["GUARD", "main_left_alone", "refuse_in_spawned_bootstrap", "spawned_bootstrap"]
