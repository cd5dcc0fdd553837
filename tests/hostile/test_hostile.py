"""The hostile-input corpus (cases.jsonl): every case gets one error line with its exit code, or a
bounded-time result; never a traceback, never a hang, and nothing already written is lost.

Command-line cases run `python -m ttscale.cli` in a subprocess each, with a time limit. Cases that
need an engine talk to a loopback stub server (the openai backend), which answers in milliseconds.
Model-output cases run together: one run over a task with one problem per case, where the stub
answers each problem with its case's hostile reply (giant numbers, NUL bytes, invalid UTF-8, ...).
Big inputs (100 MB lines, deep nesting) are generated here, never stored.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.stub_server import Reply, StubServer, completion, json_reply, model_list

HERE = Path(__file__).resolve().parent
CASES = [json.loads(line) for line in (HERE / "cases.jsonl").read_text(encoding="utf-8").splitlines() if line]
COMMAND_CASES = [c for c in CASES if c["area"] != "output"]
OUTPUT_CASES = [c for c in CASES if c["area"] == "output"]
MAX_MODEL_LEN = 2048


def test_the_corpus_covers_every_area() -> None:
    areas = {c["area"] for c in CASES}
    assert areas == {"cli", "budget", "config", "task", "model", "param", "rundir", "output"}
    assert len(CASES) >= 30 and len({c["id"] for c in CASES}) == len(CASES)


# -- helpers --------------------------------------------------------------------------------------
def _text(value: Any) -> str:
    """A string, or `{"parts": [[text], [text, times], ...]}` built here (big inputs are not stored)."""
    if isinstance(value, str):
        return value
    return "".join(part[0] * (part[1] if len(part) > 1 else 1) for part in value["parts"])


def _generate(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "deep_json":
        path.write_text("[" * 200_000 + "]" * 200_000)
    elif kind == "deep_jsonl":
        path.write_text('{"question": ' + "[" * 200_000 + "]" * 200_000 + ', "answer": "1"}\n')
    elif kind == "big_config":
        path.write_text("# padding\n" * 210_000)
    elif kind in ("100mb_broken", "100mb_question"):
        with path.open("w") as handle:
            handle.write('{"question": "')
            chunk = "lorem ipsum " * 87_382  # ~1 MiB
            for _ in range(100):
                handle.write(chunk)
            if kind == "100mb_question":  # the giant problem, then an ordinary one that must still run
                handle.write('", "answer": "4"}\n{"question": "What is 2 + 2?", "answer": "4"}\n')
    else:
        raise AssertionError(f"unknown generator {kind}")


def _plain_stub(method: str, path: str, body: Any) -> Reply:
    if path.endswith("/models"):
        return model_list("smol", max_model_len=MAX_MODEL_LEN)
    n = int(body["n"])
    return completion(["The answer is 4."] * n, token_ids=[[1, 2, 3]] * n)


def _run_cli(argv: list[str], *, seconds: float, env: dict[str, str] | None = None) -> tuple[int, str, float]:
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ttscale.cli", *argv],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=seconds,
            env=env,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer within {seconds} s: {argv[:6]}")
    return done.returncode, str(done.stderr), time.monotonic() - started


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def server() -> Iterator[StubServer]:
    with StubServer(_plain_stub) as stub:
        yield stub


@pytest.fixture(scope="module")
def finished_run(server: StubServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run directory of 2 finished problems, copied into the cases that must not harm it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    argv = [
        "run", "--strategy", "sc", "--budget", "64", "--param", "max_tokens=32", "--param", "n=2", "--limit", "2",
        "--out", str(out), "--backend", "openai", "--base-url", server.url, "--model", "smol",
        "--tokenizer", "embedded", "--no-progress",
    ]  # fmt: skip
    code, stderr, _ = _run_cli(argv, seconds=120)
    assert code == 0, stderr
    return out


# -- command-line cases ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", COMMAND_CASES, ids=[c["id"] for c in COMMAND_CASES])
def test_command_case(case: dict[str, Any], tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue("server").url if case.get("server") else "http://127.0.0.1:9/v1"
    for name, text in case.get("files", {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text.replace("{tmp}", str(tmp_path)), encoding="utf-8")
    for name, hexed in case.get("files_hex", {}).items():
        (tmp_path / name).write_bytes(bytes.fromhex(hexed))
    for name, kind in case.get("generate", {}).items():
        _generate(tmp_path / name, kind)
    for name, target in case.get("symlinks", {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).symlink_to(target)
    run_dir = tmp_path / "run"
    if case.get("setup") == "finished_run":
        shutil.copytree(request.getfixturevalue("finished_run"), run_dir)
        if case.get("corrupt_middle"):
            rows = (run_dir / "results.jsonl").read_bytes().splitlines(keepends=True)
            (run_dir / "results.jsonl").write_bytes(rows[0] + b'{"id": "edited by hand\n' + b"".join(rows[1:]))
    before = _snapshot(run_dir) if run_dir.exists() else {}
    argv = [_text(a).replace("{tmp}", str(tmp_path)).replace("{url}", url) for a in case["argv"]]

    with contextlib.ExitStack() as stack:
        if case.get("lock"):
            handle = stack.enter_context(open(run_dir / ".lock", "a+"))
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if case.get("immutable"):
            locked = tmp_path / case["immutable"]
            locked.mkdir()
            if subprocess.run(["chattr", "+i", str(locked)], capture_output=True).returncode != 0:
                pytest.skip("chattr +i is not available here (needs root on ext4/xfs/btrfs)")
            stack.callback(subprocess.run, ["chattr", "-i", str(locked)], capture_output=True)
        code, stderr, seconds = _run_cli(argv, seconds=case.get("seconds", 60))

    assert "Traceback" not in stderr, stderr[-3000:]
    assert seconds < case.get("seconds", 60)
    if case["exit"] == 0:
        assert code == 0, stderr[-2000:]
        records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
        assert len(records) == case["records"] and len({r["id"] for r in records}) == case["records"]
        for ident, message in case.get("record_errors", {}).items():
            record = next(r for r in records if r["id"] == ident)
            assert message in (record["error"] or ""), record["error"]
        return
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ttscale: error: "), stderr[-3000:]
    assert case["stderr"] in lines[0], lines[0]
    assert not any(text in lines[0] for text in case.get("not_in_stderr", [])), lines[0]
    assert code == case["exit"], lines[0]
    assert len(lines[0]) < 1200  # one readable line, however big the input was
    if before:
        assert _snapshot(run_dir) == before, "a refused command changed the run directory"
    for name in case.get("absent", []):
        assert not (tmp_path / name).exists(), f"{name} was left behind"


# -- model outputs --------------------------------------------------------------------------------
def _hostile_reply(case: dict[str, Any], n: int) -> Reply:
    reply = case["reply"]
    if "status" in reply:
        return json_reply({"error": {"message": reply["message"]}}, status=reply["status"])
    if "body" in reply:
        return 200, {"content-type": "text/html"}, reply["body"].encode()
    if "deep_json" in reply:
        depth = reply["deep_json"]
        head = b'{"choices": [{"index": 0, "text": "4", "finish_reason": "stop", "token_ids": [1]}], "x": '
        return 200, {"content-type": "application/json"}, head + b"[" * depth + b"]" * depth + b"}"
    if "raw_text_hex" in reply:
        body = b'{"choices": [{"index": 0, "finish_reason": "stop", "token_ids": [1, 2], "text": "'
        return 200, {"content-type": "application/json"}, body + bytes.fromhex(reply["raw_text_hex"]) + b'"}]}'
    if "choices" in reply:
        return completion(["4"] * reply["choices"], token_ids=[[1]] * reply["choices"])
    if "text_value" in reply:
        choice = {"index": 0, "text": reply["text_value"], "finish_reason": "stop", "token_ids": [1]}
        return json_reply({"choices": [choice]})
    text = _text(reply.get("text", reply))
    return completion([text] * n, token_ids=[[1] * reply.get("tokens", 5)] * n)


@pytest.fixture(scope="module")
def output_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run over a task with a problem per output case; returns its records by case id and its time."""
    from transformers import AutoTokenizer

    from ttscale.engine.models import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("embedded"))
    by_id = {c["id"]: c for c in OUTPUT_CASES}
    marker = re.compile(r"case ([a-z0-9-]+):")

    def handler(method: str, path: str, body: Any) -> Reply:
        if path.endswith("/models"):
            return model_list("smol", max_model_len=MAX_MODEL_LEN)
        found = marker.search(str(tokenizer.decode(body["prompt"])))
        assert found, "a prompt without its case marker"
        return _hostile_reply(by_id[found.group(1)], int(body["n"]))

    folder = tmp_path_factory.mktemp("outputs")
    rows = [
        {"id": c["id"], "question": f"case {c['id']}: {c['question']}", "answer": c["answer"]} for c in OUTPUT_CASES
    ]
    (folder / "task.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with StubServer(handler) as stub:
        argv = [
            "run", "--strategy", "self_consistency", "--budget", "64", "--param", "n=1", "--param", "max_tokens=64",
            "--task", f"jsonl:{folder / 'task.jsonl'}", "--out", str(folder / "run"), "--concurrency", "4",
            "--backend", "openai", "--base-url", stub.url, "--model", "smol", "--tokenizer", "embedded",
            "--max-retries", "0", "--no-progress", "--json",
        ]  # fmt: skip
        code, stderr, seconds = _run_cli(argv, seconds=300)
    # Answers that are no answers (not JSON, no choices) leave their problems unfinished: exit 1, one line.
    unfinished = sum(bool(c.get("unfinished")) for c in OUTPUT_CASES)
    assert code == (1 if unfinished else 0) and "Traceback" not in stderr, stderr[-3000:]
    assert not unfinished or f"ttscale: error: {unfinished} problems did not finish" in stderr, stderr[-3000:]
    raw = (folder / "run" / "results.jsonl").read_bytes()
    records = [json.loads(line) for line in raw.decode("utf-8").splitlines()]  # the file stays valid UTF-8
    return {"records": {r["id"].removeprefix("jsonl-"): r for r in records}, "lines": len(records), "seconds": seconds}


def test_the_output_run_wrote_each_problem_once_in_bounded_time(output_run: dict[str, Any]) -> None:
    assert output_run["lines"] == len(OUTPUT_CASES) == len(output_run["records"])
    assert output_run["seconds"] < 300


@pytest.mark.parametrize("case", OUTPUT_CASES, ids=[c["id"] for c in OUTPUT_CASES])
def test_output_case(case: dict[str, Any], output_run: dict[str, Any]) -> None:
    record = output_run["records"][case["id"]]
    assert record.get("unfinished", False) is case.get("unfinished", False), record["error"]
    if case["error"] is None:
        assert record["error"] is None, record["error"]
        assert record["samples"], "the reply was kept for re-evaluation"
        if "text" in case["reply"]:
            assert record["samples"][0]["text"] == case["reply"]["text"]  # stored exactly, odd characters too
    else:
        assert case["error"] in (record["error"] or ""), record["error"]
    assert record["correct"] is case["correct"]
