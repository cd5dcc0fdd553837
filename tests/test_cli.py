"""The CLI: bad input is one line on stderr with exit code 2; the real run end to end."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ttscale.cli import main
from ttscale.errors import Stopped


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "--strategy", "self_consistncy"], "did you mean 'self_consistency'?"),
        (["run", "--strategy", "sc", "--budget", "8q"], "cannot read budget '8q'"),
        (["run", "--strategy", "sc", "--budget", "-1"], "cannot read budget '-1'"),
        (["run", "--strategy", "sc", "--budget", "0"], "budget must be > 0"),
        (["run", "--strategy", "sc", "--budget", "1e999"], "budget must be a finite number"),
        (["run", "--strategy", "sc", "--task", "arithmetc"], "did you mean 'arithmetic'?"),
        (["run", "--strategy", "sc", "--task", "arithmetic:9"], "levels must be within 1-5"),
        (["run", "--strategy", "sc", "--model", "/no/such/model"], "model '/no/such/model' not found"),
        (["run", "--strategy", "sc", "--param", "n"], "--param must look like key=value"),
        (["run", "--strategy", "sc", "--param", "n=-3"], "n must be ≥ 1, got -3"),
        (["run", "--strategy", "sc", "--param", "width=2"], "unknown parameter 'width'"),
        (["run", "--strategy", "sc", "--limit", "0"], "--limit: must be ≥ 1"),
        (["run", "--strategy", "sc", "--max-model-len", "10"], "max_model_len must be in"),
        (["run"], "--strategy is required"),
        (["run", "--resume", "/no/such/run"], "is not a ttscale run"),
        (["fly"], "invalid choice: 'fly'"),
        (["list", "--params", "bem"], "did you mean 'beam'?"),
        (["list", "--params", "judge:beam"], "takes NAME, strategy:NAME or verifier:NAME"),
        (["list", "--task", "math500"], "--task and --budget apply with --params NAME"),
        (["list", "--budget", "1k"], "--task and --budget apply with --params NAME"),
        (["list", "--params", "beam", "--budget", "1k"], "--budget applies with --params NAME --task TASK"),
        (["list", "--params", "beam", "--task", "jsonl:/no/such.jsonl"], "/no/such.jsonl"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ttscale: error: ")
    assert expected in err


def test_existing_run_dir_is_not_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "results.jsonl").write_text('{"id": "x"}\n')
    assert main(["run", "--strategy", "sc", "--out", str(tmp_path)]) == 2
    # Records without a config.json: not a run `--resume` could continue, and not a folder to start one in.
    assert "is not empty and not a ttscale run" in capsys.readouterr().err
    assert (tmp_path / "results.jsonl").read_text() == '{"id": "x"}\n'


def test_list_names_strategies_and_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "self_consistency" in out and "best_of_n" in out and "arithmetic" in out
    assert "verifiers:\n" in out and "llm_judge" in out


def test_list_shows_each_names_aliases(capsys: pytest.CaptureFixture[str]) -> None:
    # README runs `--strategy sc`: `ttscale list` must say what sc is.
    assert main(["list"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("  self_consistency "))
    assert line.endswith(")") and "sc" in line.rpartition("(also: ")[2].rstrip(")").split(", ")


def test_list_params_shows_types_defaults_docstrings_and_task_suggestions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "math.jsonl"
    data.write_text('{"question": "1+1?", "answer": "2"}\n', encoding="utf-8")
    assert main(["list", "--params", "beam", "--task", f"jsonl:{data}", "--budget", "1k"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("  max_tokens ")))
    assert lines[at] == f"  max_tokens (int) = 256; jsonl:{data} at 1k: 1000"  # capped at the budget
    assert lines[at + 1].strip().startswith("Generated tokens per solution path at most")
    assert any(line.startswith(f"  max_steps (int) = 8; jsonl:{data} at 1k: 40") for line in lines)
    width = lines.index("  width (int) = 4")  # beam's own field, beside those it inherits
    assert lines[width + 1].strip() == "M: children per kept prefix; N/M prefixes are kept at each step."
    assert not [line for line in lines if line.startswith("  _")]
    assert main(["list", "--params", "verifier:genrm"]) == 0
    assert "  verifications (int) = 4" in capsys.readouterr().out
    assert main(["list", "--params", "verifier:prm"]) == 0
    out = capsys.readouterr().out
    assert "  step_tag (str) = '<extra_0>'" in out and "  _" not in out and "(undocumented)" not in out


def _ttscale(*args: str) -> list[str]:
    return [sys.executable, "-m", "ttscale.cli", *args]


def _start_until_some_finished(
    args: list[str], out: Path, *, problems: int, after: int = 0
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start `ttscale run` as a session leader; return once more than `after` but not all of its problems are saved."""
    # PYTHONFAULTHANDLER: a CLI that does not end after its stop prints its threads' stacks on SIGABRT (see `_stop`).
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    proc = subprocess.Popen(_ttscale(*args), start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    results = out / "results.jsonl"
    # An engine start and a first problem: about a minute on an AVX2-only CPU (float32), several beside the other
    # worker's engine; 600 s, and a wait that runs out says so (it once went on to stop a run that had saved
    # nothing new, and failed later as "1 < 1").
    deadline, saved = time.monotonic() + 600, False
    while time.monotonic() < deadline and proc.poll() is None:
        if results.is_file() and after < results.read_text().count("\n") < problems:
            saved = True
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended too early: {proc.stderr.read()[-2000:]!r}"  # type: ignore[union-attr]
    if not saved:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"no problem past {after} saved within 600 s of the run's start")
    return proc, results


def _session_processes(session: int) -> list[str]:
    """The live processes of a session (the CLI was started as its leader), as "pid name" strings."""
    import psutil

    alive = []
    for process in psutil.process_iter(["pid", "name", "status"]):
        try:
            if os.getsid(process.pid) == session and process.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(f"{process.pid} {process.info['name']}")
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return alive


def _stop(proc: subprocess.Popen[bytes], signum: signal.Signals, out: Path, code: int) -> None:
    """Send `signum` to the CLI alone (as a scheduler's preemption does) and check the stop: its exit code, one
    message that names the signal and how to resume, no traceback, no process of the run left, within 30 s."""
    assert len(_session_processes(proc.pid)) > 1  # the CLI and vLLM's engine process(es)
    sent = time.monotonic()
    proc.send_signal(signum)
    try:
        _stdout, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired as late:
        # communicate() waits for the CLI's exit and for EOF on its pipes, which any process that inherited them
        # holds open: say which it was (the CLI itself, or a process of the run it left behind) before cleaning up.
        cli_alive = proc.poll() is None
        held = _session_processes(proc.pid)
        if cli_alive:  # where it is stuck: faulthandler writes every thread's stack on SIGABRT
            proc.send_signal(signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what holds the pipes too, so that they reach their end
        said = late.stderr or b""
        with contextlib.suppress(subprocess.TimeoutExpired):
            said = proc.communicate(timeout=10)[1] or said  # all it wrote, the part read before included
        state = "still ran" if cli_alive else "had exited"
        raise AssertionError(f"no end 60 s after {signum.name}: the CLI {state}; its session held {held}; its "
                             f"stderr: {said.decode(errors='replace')[-6000:]}") from None
    stopped_after = time.monotonic() - sent
    left: list[str] = []
    for _ in range(50):  # the engine's processes end with the CLI (allow them a moment to be reaped)
        left = _session_processes(proc.pid)
        if not left:
            break
        time.sleep(0.1)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)  # clean up before failing
    assert not left, f"processes left after {signum.name}: {left}"
    assert proc.returncode == code, stderr.decode()[-2000:]
    message = stderr.decode().strip().splitlines()[-1]
    assert message.startswith(f"ttscale: stopped by {signum.name}") and f"--resume {out}" in message, message
    assert "Traceback" not in stderr.decode()
    # 45 s: on a 2-core AVX2-only EPYC (float32 engine) beside the other pytest worker's notebook engine, SIGTERM's
    # stop of a resumed run took 30.5 s in a fresh-clone `make test` (2026-12-02); AVX-512 machines stopped in 30.
    assert stopped_after < 45, f"took {stopped_after:.1f} s to stop"


_STOPPED_PROGRAM = """
import atexit, sys
import ttscale.cli.run
from ttscale.errors import Stopped

def stopped(args):  # a run stopped by SIGTERM, as cmd_run reports one: its summary never printed
    print("written before the stop", end="")  # still buffered: it must come out all the same
    raise Stopped("stopped by SIGTERM; 1 finished problems are saved: continue with --resume out", code=143)

ttscale.cli.run.cmd_run = stopped
atexit.register(lambda: print("the interpreter's teardown ran", file=sys.stderr))
sys.argv = ["ttscale", "run", "--strategy", "sc"]
from ttscale.cli import main
sys.exit(main())
"""


def test_a_stopped_run_ends_the_program_at_once_with_its_output_out(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As the program, the stop's exit skips the interpreter's teardown (its atexit handlers, garbage collection).
    done = subprocess.run([sys.executable, "-c", _STOPPED_PROGRAM], capture_output=True, text=True, timeout=60)
    assert done.returncode == 143, done.stderr
    assert done.stdout == "written before the stop"
    assert done.stderr.strip().splitlines() == [
        "ttscale: stopped by SIGTERM; 1 finished problems are saved: continue with --resume out"]
    # Called in-process (a script, a test), `main` returns the code and leaves the caller's process alone.
    import ttscale.cli.run

    def stopped(args: Any) -> int:
        raise Stopped("stopped by SIGINT", code=130)

    monkeypatch.setattr(ttscale.cli.run, "cmd_run", stopped)
    assert main(["run", "--strategy", "sc"]) == 130
    assert capsys.readouterr().err.strip() == "ttscale: stopped by SIGINT"


@pytest.mark.slow
def test_ctrl_c_then_sigterm_then_sigkill_and_each_resume_goes_on_to_every_problem_once(
        tmp_path: Path, api_engine: Any) -> None:
    # One run stopped three times, each stage resuming the last: Ctrl-C, a scheduler's SIGTERM, then SIGKILL (the
    # OOM killer: no handler runs, and vLLM's processes must end all the same: ttscale.engine.watchdog); then
    # `ttscale.run` on the session's engine finishes what the CLI left. kill -9 at random points of a served run,
    # then resume, is tests/running/distributed/test_crash_resume.py.
    import psutil

    import ttscale

    out = tmp_path / "run"
    # Small problems (4 samples of ≤ 64 tokens) one at a time: long enough to stop mid-way, and the test's time is
    # the engine starts rather than generation.
    args = ["run", "--strategy", "self_consistency", "--budget", "256", "--param", "max_tokens=64"]
    args += ["--task", "arithmetic", "--limit", "10", "--concurrency", "1", "--out", str(out), "--no-progress"]
    resume = ["run", "--resume", str(out), "--no-progress"]
    proc, results = _start_until_some_finished(args, out, problems=10)
    _stop(proc, signal.SIGINT, out, 130)
    finished = results.read_text().count("\n")
    assert 1 <= finished < 10

    proc, _ = _start_until_some_finished(resume, out, problems=10, after=finished)
    _stop(proc, signal.SIGTERM, out, 143)
    before, finished = finished, results.read_text().count("\n")
    assert before < finished < 10

    proc, _ = _start_until_some_finished(resume, out, problems=10, after=finished)
    engine = [p for p in psutil.Process(proc.pid).children(recursive=True) if p.name().startswith("VLLM")]
    assert engine, psutil.Process(proc.pid).children(recursive=True)  # vLLM's EngineCore and its worker
    proc.kill()
    proc.wait(timeout=10)  # not communicate(): its pipes stay open while a process that inherited them lives
    _, alive = psutil.wait_procs(engine, timeout=15)
    for process in alive:
        process.kill()  # clean up before failing
    assert not alive, f"vLLM's processes outlived a CLI killed with SIGKILL: {alive}"
    proc.communicate(timeout=30)
    before, finished = finished, results.read_text().count("\n")
    assert before < finished < 10

    # The API resumes what the CLI wrote (the settings given are the run's; only unfinished problems run).
    done = ttscale.run(strategy="self_consistency", budget="256", task="arithmetic", limit=10,
                       params={"max_tokens": "64"}, concurrency=1, out=out, engine=api_engine)
    summary = done.summary
    records = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(records) == 10 and len({r["id"] for r in records}) == 10  # every problem exactly once
    assert all(r["ledger"]["generated_tokens"] <= 256 for r in records)
    assert summary["problems"] == 10 and summary["resumed"] is True and summary["over_budget"] == 0
    assert {p.name for p in out.iterdir()} >= {"config.json", "results.jsonl", "summary.json"}


@pytest.mark.slow
def test_an_engine_that_fails_to_start_keeps_its_log_and_names_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--strategy", "sc", "--budget", "64", "--param", "max_tokens=32", "--limit", "1"]
    args += ["--kv-cache-gib", "1000", "--out", str(out)]  # more KV-cache memory than the machine has
    done = subprocess.run(_ttscale(*args), capture_output=True, text=True, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and lines[0].startswith("ttscale: error: EngineStartError"), lines
    kept = Path(lines[0].split("(the engine's log: ")[1].split(")")[0])
    try:
        assert "Traceback" in kept.read_text()  # vLLM's own account of the failure
    finally:
        kept.unlink(missing_ok=True)
    assert not out.exists()
