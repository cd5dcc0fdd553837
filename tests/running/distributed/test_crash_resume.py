"""Crash safety: `kill -9` at random points of a 40-problem run, 5 times, each followed by `--resume`.

The run is sleep-time compute on 10 contexts of 4 queries: besides its results, each context's sleep-time stage
(stages.jsonl) must be stored once, and a stored stage never asked for again.

The run uses the openai backend against a loopback stub that answers each request after a short
delay, so a restart costs the CLI's start (seconds) rather than an engine's, and kills land at
random points of the run: while it starts, between results, in the middle of appending one.
The stub is not an engine under test: what is tested is the runner and the run directory.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.hostile.stub_server import Reply, StubServer, completion, model_list

PROBLEMS = 40


SLEEP_TOKENS = 9  # a sleep-time request is the one asking for 9 tokens (queries ask for 5)
ASKED: Counter[tuple[int, ...]] = Counter()  # sleep-time requests by prompt (one prompt per context)


def _stub(method: str, path: str, body: Any) -> Reply | None:
    if path.endswith("/models"):
        return model_list()
    if body["max_tokens"] == SLEEP_TOKENS:  # counted as it arrives, not after the delay: its sender may be gone
        ASKED[tuple(body["prompt"])] += 1
    time.sleep(random.uniform(0.05, 0.25))  # spreads the run over seconds, so kills land inside it
    if body["max_tokens"] == SLEEP_TOKENS:
        return completion(["Ann has 3 apples."], token_ids=[[5] * SLEEP_TOKENS], prompt_tokens=len(body["prompt"]))
    n = int(body["n"])
    seed = int(body.get("seed") or 0)
    texts = [f"The answer is {(seed + i) % 19}." for i in range(n)]
    return completion(texts, token_ids=[[1, 2, 3, 4, 5]] * n, prompt_tokens=len(body["prompt"]))


def _lines(path: Path) -> tuple[list[dict[str, Any]], bytes]:
    """The whole records of results.jsonl, and the bytes they span (a torn last line excluded)."""
    if not path.is_file():
        return [], b""
    raw = path.read_bytes()
    whole = raw[: raw.rfind(b"\n") + 1]
    return [json.loads(line) for line in whole.splitlines()], whole


def test_five_kill_9_then_resume_give_each_problem_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(7)
    out = tmp_path / "run"
    results = out / "results.jsonl"
    with StubServer(_stub) as server:
        base = [
            sys.executable, "-m", "ttscale.cli", "run", "--backend", "openai", "--base-url", server.url,
            "--model", "smol", "--tokenizer", "embedded", "--no-progress", "--json",
        ]  # fmt: skip
        fresh = [
            "--strategy", "sleep_time", "--budget", "10", "--param", "n=2", "--param", "test_time=vote",
            "--param", "max_tokens=5", "--param", f"sleep_tokens={SLEEP_TOKENS}", "--task", "arithmetic_stateful:1",
            "--task-option", "queries=4", "--task-option", "per_level=10", "--limit", str(PROBLEMS),
            "--concurrency", "2", "--out", str(out),
        ]  # fmt: skip
        ASKED.clear()
        kept = b""
        schedule = []
        for attempt in range(5):
            argv = base + (fresh if attempt == 0 else ["--resume", str(out)])
            proc = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            done_before = len(_lines(results)[0])
            # Run 2 dies while it starts (before it writes anything); the others after a few results.
            target = done_before + (0 if attempt == 2 else rng.randint(1, 6))
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline and len(_lines(results)[0]) < target:
                time.sleep(0.02)
            time.sleep(rng.uniform(0, 0.3))
            assert proc.poll() is None, f"run {attempt} ended before its kill: {proc.stderr.read()[-1500:]!r}"  # type: ignore[union-attr]
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stderr.close()  # type: ignore[union-attr]
            records, whole = _lines(results)
            schedule.append((target, len(records)))
            assert whole.startswith(kept), f"kill {attempt} lost results written before it ({schedule})"
            assert len({r["id"] for r in records}) == len(records), f"a problem was written twice ({schedule})"
            kept = whole
        assert len(kept.splitlines()) < PROBLEMS, f"the kills came too late to test anything: {schedule}"

        time.sleep(0.5)  # requests a killed run sent before it died are all received by now
        stored = len(_lines(out / "stages.jsonl")[0])
        asked_before = sum(ASKED.values())
        done = subprocess.run([*base, "--resume", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    records, whole = _lines(results)
    assert whole == results.read_bytes() and whole.startswith(kept)  # no torn line left, nothing lost
    ids = [r["id"] for r in records]
    assert len(ids) == PROBLEMS and len(set(ids)) == PROBLEMS, schedule
    summary = json.loads(done.stdout)
    assert summary["problems"] == PROBLEMS and summary["errors"] == 0 and summary["resumed"] is True
    assert all(r["ledger"]["generated_tokens"] == 10 for r in records)  # the queries' test-time tokens alone
    stages = _lines(out / "stages.jsonl")[0]
    assert len(stages) == len({s["key"] for s in stages}) == 10  # each context's stage stored once
    assert all(r["info"]["sleep_tokens"] == SLEEP_TOKENS for r in records)
    # The last resume asked for exactly the stages not stored yet; across the kills a context was asked again
    # only when a kill took its stage in flight (at most once per kill: 2 problems run at a time).
    assert sum(ASKED.values()) - asked_before == 10 - stored and len(ASKED) == 10
    assert sum(ASKED.values()) <= 10 + 2 * 5, ASKED
