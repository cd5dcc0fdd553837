"""ttscale.engine.spawn: a script calling ttscale at its top level, and processes started with spawn (issue 49
item 1). No vLLM here: plain multiprocessing spawns, and the simulator where a run needs an engine."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import ttscale
from ttscale.engine.spawn import GUARD, main_left_alone, spawned_bootstrap
from ttscale.testing import SimulatedArithmeticPolicy


def _script(folder: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = folder / "script.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], cwd=folder, capture_output=True, text=True, timeout=120)


def test_a_process_spawned_inside_main_left_alone_does_not_run_the_script_again(tmp_path: Path) -> None:
    # What the engine's start does (ttscale.engine.vllm): spawn, as vLLM's CPU platform forces, inside the block.
    done = _script(tmp_path, """
        import multiprocessing, time
        from ttscale.engine.spawn import main_left_alone

        with open("top-level.txt", "a") as f:
            print(multiprocessing.current_process().name, file=f)
        if __name__ == "__main__":
            spawn = multiprocessing.get_context("spawn")
            with main_left_alone():
                child = spawn.Process(target=time.sleep, args=(0,))
                child.start()
            child.join()
            outside = spawn.Process(target=time.sleep, args=(0,))  # the control: outside the block, spawn re-runs it
            outside.start()
            outside.join()
            print("exit", child.exitcode, outside.exitcode)
    """)
    assert done.returncode == 0 and "exit 0 0" in done.stdout, done.stderr[-2000:]
    # Once by the script; once more by the control's child only (spawn's re-run of the top level).
    assert (tmp_path / "top-level.txt").read_text().splitlines() == ["MainProcess", "SpawnProcess-2"]


def test_main_left_alone_restores_the_main_module(monkeypatch: pytest.MonkeyPatch) -> None:
    # A script's main module, whatever runs this test (pytest's own script, or an xdist worker's built-in one).
    main = types.ModuleType("__main__")
    main.__file__ = "/somewhere/script.py"
    monkeypatch.setitem(sys.modules, "__main__", main)
    with main_left_alone():
        inside = sys.modules["__main__"]
    assert sys.modules["__main__"] is main and main.__file__ == "/somewhere/script.py"
    assert inside is not main and inside.__name__ == "__main__" and inside.__spec__ is None
    assert getattr(inside, "__file__", None) is None


def test_a_script_re_run_by_a_spawned_process_refuses_in_one_line_naming_the_guard(tmp_path: Path) -> None:
    # The user's own spawn (not vLLM's, which ttscale's engine start keeps from re-running it): the script's
    # top-level ttscale.run runs again in the child, and refuses before touching the run it would resume.
    done = _script(tmp_path, """
        import multiprocessing, time
        import ttscale
        from ttscale.testing import SimulatedArithmeticPolicy

        r = ttscale.run(strategy="self_consistency", budget="256", params={"n": 2}, limit=2, out="runs/sc",
                        engine=SimulatedArithmeticPolicy())
        child = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
        child.start()
        child.join()
        print("child exit", child.exitcode, r.summary["problems"])
    """)
    assert done.returncode == 0 and "child exit 1 2" in done.stdout, (done.stdout, done.stderr[-2000:])
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("RuntimeError: ttscale.run was called while a process started with multiprocessing's spawn "
                    "re-runs the script that started it (its top level runs again there): put the script's calls "
                    f"under `{GUARD}`"), done.stderr[-2000:]
    assert len((tmp_path / "runs" / "sc" / "results.jsonl").read_text().splitlines()) == 2


def test_every_call_that_starts_an_engine_refuses_in_a_spawned_bootstrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    assert spawned_bootstrap()
    engine = SimulatedArithmeticPolicy()
    calls = {
        "ttscale.run": lambda: ttscale.run(strategy="sc", budget="256", limit=1, engine=engine, out=tmp_path / "a"),
        "ttscale.sweep": lambda: ttscale.sweep(strategies=["sc"], budgets=["256"], limit=1, engine=engine,
                                               out=tmp_path / "b"),
        "ttscale.compare": lambda: ttscale.compare(strategies=["sc", "best_of_n"], repeats=1, limit=1,
                                                   engine=engine, out=tmp_path / "c"),
        "ttscale.allocate": lambda: ttscale.allocate(space="genrm", engine=engine, out=tmp_path / "d"),
        "ttscale.Engine": lambda: ttscale.Engine().start(),
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value).startswith(f"{name} was called while a process started with multiprocessing's spawn")
        assert str(info.value).endswith(f"under `{GUARD}`") and "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []  # refused before any folder was read, locked or made
