"""A scripted OpenAI-compatible HTTP server on 127.0.0.1, for tests (standard library only).

Two uses:
- a proxy in front of a real `vllm serve`, which answers the first requests with a scripted
  failure (503, 429, a hang past the client's timeout) and forwards the rest;
- a hostile "model" for the runner: its completions carry whatever the test scripts (giant
  numbers, NUL bytes, invalid UTF-8, deep nesting, more tokens than asked).

It listens on loopback only, on a port the OS picks, and stops when the test stops it.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, str], bytes]
"""Status, headers, body."""


class StubServer:
    """`with StubServer(handler) as server:` serves on `server.url` until the block ends.

    `handler(method, path, body) -> Reply | None`: None forwards to `upstream` (a proxy).
    Every request is logged in `server.requests` as (method, path, headers, parsed body).
    """

    def __init__(self, handler: Callable[[str, str, Any], Reply | None], *, upstream: str | None = None) -> None:
        self.handler = handler
        self.upstream = upstream
        self.requests: list[tuple[str, str, dict[str, str], Any]] = []
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet test output
                pass

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                with stub._lock:
                    stub.requests.append((method, self.path, dict(self.headers), body))
                reply = stub.handler(method, self.path, body)
                if reply is None:
                    reply = stub._forward(method, self.path, raw, dict(self.headers))
                status, headers, data = reply
                try:
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def posts(self) -> list[Any]:
        with self._lock:
            return [body for method, _, _, body in self.requests if method == "POST"]

    def _forward(self, method: str, path: str, raw: bytes, headers: dict[str, str]) -> Reply:
        assert self.upstream is not None, "no scripted reply and no upstream to forward to"
        keep = {k: v for k, v in headers.items() if k.lower() in ("content-type", "authorization")}
        request = urllib.request.Request(self.upstream + path, data=raw or None, method=method, headers=keep)
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                return response.status, {"content-type": "application/json"}, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, {"content-type": "application/json"}, exc.read()


def json_reply(data: Any, status: int = 200, **headers: str) -> Reply:
    return status, {"content-type": "application/json", **headers}, json.dumps(data).encode()


def hang(seconds: float) -> None:
    time.sleep(seconds)


def model_list(name: str = "smol", **extra: Any) -> Reply:
    return json_reply({"object": "list", "data": [{"id": name, "object": "model", "owned_by": "stub", **extra}]})


def completion(texts: list[str], *, token_ids: list[list[int]] | None = None, prompt_tokens: int = 10) -> Reply:
    """A /v1/completions answer with these choice texts (and token ids, when given)."""
    choices = []
    for i, text in enumerate(texts):
        choice: dict[str, Any] = {"index": i, "text": text, "finish_reason": "stop", "logprobs": None}
        if token_ids is not None:
            choice["token_ids"] = token_ids[i]
        choices.append(choice)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 0, "total_tokens": prompt_tokens}
    return json_reply({"object": "text_completion", "model": "smol", "choices": choices, "usage": usage})
