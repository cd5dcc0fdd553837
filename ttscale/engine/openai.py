"""An engine behind an OpenAI-compatible server: `vllm serve`, SGLang, or any `/v1/completions` API.

Prompts go as token ids to `/v1/completions` (chat templates are applied here, with the model's
own tokenizer, so tree strategies keep exact token prefixes). Requests are async and bounded by
a semaphore; 408/429/5xx answers, timeouts and dropped connections are retried with jittered
exponential backoff (a server's Retry-After is honoured); other 4xx answers fail at once with the
server's message. The API key is read from an environment variable and goes only into the
Authorization header: never into `describe()`, run files, logs or error messages.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import re
import urllib.parse
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ttscale.engine.base import EngineFatalError, HFTokenizerMixin, Prompt
from ttscale.messages import one_line
from ttscale.schema import Completion, FinishReason, Generation, SamplingParams

_RETRY_STATUS = frozenset({408, 409, 429})  # plus every 5xx
_FATAL_STATUS = frozenset({401, 402, 403, 404})  # every later request would get the same answer
_MAX_BODY = 64 * 1024 * 1024  # a completion body larger than this is not a completion
_FINISH: dict[Any, FinishReason] = {"stop": "stop", "length": "length", "abort": "abort"}


class RequestError(RuntimeError):
    """One request the server refused or answered with nonsense; recorded against its problem."""


@dataclass(frozen=True, kw_only=True)
class OpenAIConfig:
    """How to reach an OpenAI-compatible server. Validated at construction."""

    base_url: str
    """The API root, e.g. `http://127.0.0.1:8000/v1` (a URL without a path gets `/v1`)."""
    model: str
    """The model name the server serves (`--served-model-name` of `vllm serve`)."""
    tokenizer: str | None = None
    """Where the model's tokenizer and chat template come from: `embedded`, a local folder or a hub id.
    None = `model` (works when the served name is a hub id or a path)."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key (the key itself is never stored)."""
    max_concurrency: int = 64
    """Requests in flight to the server at once."""
    request_timeout: float = 600.0
    """Seconds one request may take before it is retried."""
    max_retries: int = 6
    """Retries of a request after a timeout, a dropped connection, 408/409/429 or 5xx."""
    backoff_base: float = 0.5
    """First retry delay in seconds; doubled each retry, with jitter."""
    backoff_cap: float = 30.0
    """Longest delay between two tries, in seconds (also caps a server's Retry-After)."""
    max_model_len: int | None = None
    """Longest prompt + generation; None = what the server reports (vLLM does), else unbounded."""
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Options of the chat template ttscale renders with the tokenizer, e.g. {"enable_thinking": False}."""

    def __post_init__(self) -> None:
        url = urllib.parse.urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL with a host, got {self.base_url!r}")
        try:
            url.port  # noqa: B018 - raises on a port that is not a number in 0-65535
        except ValueError:
            raise ValueError(f"base_url has an invalid port: {self.base_url!r}") from None
        if not self.model.strip():
            raise ValueError("model must name the served model, got an empty string")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env):
            raise ValueError(f"api_key_env must be an environment variable name, got {self.api_key_env!r}")
        if not isinstance(self.max_concurrency, int) or self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be ≥ 1, got {self.max_concurrency!r}")
        if not (math.isfinite(self.request_timeout) and self.request_timeout > 0):
            raise ValueError(f"request_timeout must be > 0 seconds, got {self.request_timeout!r}")
        if not isinstance(self.max_retries, int) or not 0 <= self.max_retries <= 100:
            raise ValueError(f"max_retries must be in [0, 100], got {self.max_retries!r}")
        if not (math.isfinite(self.backoff_base) and 0 <= self.backoff_base <= self.backoff_cap <= 3600):
            raise ValueError(
                "backoff must satisfy 0 ≤ backoff_base ≤ backoff_cap ≤ 3600, "
                f"got {self.backoff_base} and {self.backoff_cap}"
            )
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError(f"max_model_len must be ≥ 1, got {self.max_model_len}")

    @property
    def api_root(self) -> str:
        url = self.base_url.rstrip("/")
        return url if urllib.parse.urlsplit(url).path else url + "/v1"

    def public_url(self) -> str:
        """The URL without any user:password part, fit for run files and messages."""
        url = urllib.parse.urlsplit(self.api_root)
        host = url.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if url.port is not None:
            netloc += f":{url.port}"
        return urllib.parse.urlunsplit((url.scheme, netloc, url.path, "", ""))

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "base_url": self.public_url()}


class OpenAIEngine(HFTokenizerMixin):
    """`Engine` over HTTP. Build it with `await OpenAIEngine.start(config)` inside the loop that uses it."""

    def __init__(self, config: OpenAIConfig, *, client: Any, tokenizer: Any, tokenizer_path: str) -> None:
        self.config = config
        self._client = client
        self._tokenizer = tokenizer
        self._tokenizer_path = tokenizer_path
        self.chat_template_kwargs = dict(config.chat_template_kwargs)
        self._server: dict[str, Any] = {}
        self._extra: dict[str, Any] = {}
        self._slots = asyncio.Semaphore(config.max_concurrency)
        self._secret = os.environ.get(config.api_key_env) or None
        self.retries = 0
        """Tries repeated so far (timeouts, dropped connections, 408/409/429/5xx)."""

    @classmethod
    async def start(cls, config: OpenAIConfig) -> OpenAIEngine:
        import httpx

        from ttscale.models import resolve_model

        tokenizer_path = resolve_model(config.tokenizer or config.model)
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
        except Exception as exc:
            raise EngineFatalError(
                f"cannot load the tokenizer of {config.tokenizer or config.model!r} ({one_line(exc)}); "
                "give --tokenizer a local model folder, a hub id, or 'embedded'"
            ) from None
        secret = os.environ.get(config.api_key_env)
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        # Requests go to the URL without user:password. Those become basic auth only without an API key:
        # left in the URL, httpx would send them and silently replace the key's Bearer header.
        url = urllib.parse.urlsplit(config.api_root)
        auth = None
        if url.username is not None and not secret:
            auth = httpx.BasicAuth(urllib.parse.unquote(url.username), urllib.parse.unquote(url.password or ""))
        timeout = httpx.Timeout(config.request_timeout, connect=min(10.0, config.request_timeout))
        limits = httpx.Limits(max_connections=config.max_concurrency, max_keepalive_connections=config.max_concurrency)
        client = httpx.AsyncClient(headers=headers, auth=auth, timeout=timeout, limits=limits)
        engine = cls(config, client=client, tokenizer=tokenizer, tokenizer_path=tokenizer_path)
        try:
            await engine._connect()
        except BaseException:
            await client.aclose()
            raise
        return engine

    # -- Engine protocol ------------------------------------------------------------------------
    async def generate(self, prompt: Prompt, params: SamplingParams, *, seed: int | None = None) -> Generation:
        body: dict[str, Any] = {
            "model": self.config.model,
            "prompt": prompt if isinstance(prompt, str) else list(prompt),
            "n": params.n,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
            **self._extra,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.logprobs is not None:
            body["logprobs"] = params.logprobs
        if seed is not None:
            body["seed"] = seed
        data = await self._post("/completions", body)
        try:
            return self._generation(data, prompt, params)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RequestError(f"{self.config.public_url()} sent a malformed completion: {one_line(exc)}") from None

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "openai",
            "model": self.config.model,
            "base_url": self.config.public_url(),
            "tokenizer_path": self._tokenizer_path,
            "server": {k: self._server.get(k) for k in ("owned_by", "root", "max_model_len") if k in self._server},
            "api_key": f"from ${self.config.api_key_env}" if self._secret else "none",
            "config": self.config.to_dict(),
        }

    async def close(self) -> None:
        await self._client.aclose()

    # -- HTTP -----------------------------------------------------------------------------------
    async def _connect(self) -> None:
        """Find our model on the server (retried: a server may still be starting) and read its limits."""
        listing = await self._request("GET", "/models", None)
        entries = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(entries, list):
            raise EngineFatalError(f"{self.config.public_url()}/models did not list models; is it an OpenAI API?")
        entry = next((e for e in entries if isinstance(e, dict) and e.get("id") == self.config.model), None)
        if entry is None:
            served = ", ".join(str(e.get("id")) for e in entries[:10] if isinstance(e, dict)) or "none"
            raise EngineFatalError(
                f"{self.config.public_url()} does not serve model {self.config.model!r}; it serves: {served}"
            )
        self._server = entry
        reported = entry.get("max_model_len")
        if self.config.max_model_len is None and isinstance(reported, int) and reported > 0:
            self.config = replace(self.config, max_model_len=reported)
        # vLLM returns each sample's token ids when asked; other servers could reject the unknown field.
        self._extra = {"return_token_ids": True} if entry.get("owned_by") == "vllm" else {}

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        return await self._request("POST", path, body)

    async def _request(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        import httpx

        url = where = self.config.public_url() + path
        last = ""
        for attempt in range(self.config.max_retries + 1):
            retry_after: float | None = None
            async with self._slots:
                try:
                    # The whole exchange is bounded, not only each read: a server dripping bytes must not hang us.
                    status, reason, headers, raw = await asyncio.wait_for(
                        self._exchange(method, url, body), self.config.request_timeout
                    )
                except (asyncio.TimeoutError, httpx.TimeoutException):
                    last = f"no answer within {self.config.request_timeout:g} s"
                except (httpx.TransportError, OSError) as exc:
                    last = f"connection failed ({one_line(exc) or type(exc).__name__})"
                else:
                    if raw is None:
                        raise RequestError(f"{where} sent more than {_MAX_BODY:,} bytes, more than any completion")
                    if status < 400:
                        return _decode(raw, where)
                    message = self._scrub(_error_message(raw))
                    if status in _RETRY_STATUS or status >= 500:
                        last = f"{status} {reason}: {message}"
                        retry_after = _retry_after(headers.get("retry-after"))
                    elif status in _FATAL_STATUS:
                        raise EngineFatalError(f"{where} answered {status} {reason}: {message}")
                    else:
                        raise RequestError(f"{where} answered {status} {reason}: {message}")
            if attempt == self.config.max_retries:
                break
            self.retries += 1
            await asyncio.sleep(self._delay(attempt, retry_after))  # outside the semaphore: sleeping holds no slot
        tries = self.config.max_retries + 1
        raise EngineFatalError(f"{where} failed {tries} time{'s' * (tries > 1)} in a row; last: {last}")

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.config.backoff_cap, self.config.backoff_base * 2**attempt)
        delay *= random.uniform(0.5, 1.0)  # jitter: many problems retrying at once must not stampede
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.config.backoff_cap))
        return delay

    async def _exchange(self, method: str, url: str, body: dict[str, Any] | None) -> tuple[int, str, Any, bytes | None]:
        """Status, reason, headers and body (None when the body passes `_MAX_BODY`), read as a stream."""
        async with self._client.stream(method, url, json=body) as response:
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > _MAX_BODY:
                    return response.status_code, response.reason_phrase, response.headers, None
                chunks.append(chunk)
            return response.status_code, response.reason_phrase, response.headers, b"".join(chunks)

    def _scrub(self, text: str) -> str:
        """Servers echo parts of a rejected key in their messages: never pass the key on."""
        if self._secret:
            text = text.replace(self._secret, "***")
            if len(self._secret) >= 8:
                text = text.replace(self._secret[-4:], "***")
        return text

    # -- parsing --------------------------------------------------------------------------------
    def _generation(self, data: Any, prompt: Prompt, params: SamplingParams) -> Generation:
        choices = data["choices"]
        if not isinstance(choices, list) or len(choices) != params.n:
            got = len(choices) if isinstance(choices, list) else type(choices).__name__
            raise ValueError(f"expected {params.n} choices, got {got}")
        completions = tuple(self._completion(c, params) for c in sorted(choices, key=lambda c: int(c.get("index", 0))))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt_tokens = usage.get("prompt_tokens")
        if not isinstance(prompt_tokens, int) or prompt_tokens < 0:
            prompt_tokens = len(self.tokenize(prompt)) if isinstance(prompt, str) else len(prompt)
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        cached = cached if isinstance(cached, int) and 0 <= cached <= prompt_tokens else 0
        return Generation(completions=completions, prompt_tokens=prompt_tokens, cached_prompt_tokens=cached)

    def _completion(self, choice: dict[str, Any], params: SamplingParams) -> Completion:
        text = choice["text"]
        if not isinstance(text, str):
            raise ValueError(f"a choice's text is {type(text).__name__}, not a string")
        ids = choice.get("token_ids")
        if isinstance(ids, list) and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids):
            token_ids = tuple(ids)
        else:
            # A server that returns no ids: count the text's tokens ourselves (exact for the same tokenizer).
            token_ids = tuple(self.tokenize(text)[: params.max_tokens])
        sampled: tuple[float, ...] | None = None
        top: tuple[dict[str, float], ...] | None = None
        logprobs = choice.get("logprobs")
        if params.logprobs is not None and isinstance(logprobs, dict):
            values = logprobs.get("token_logprobs")
            if isinstance(values, list):
                sampled = tuple(float(v) if v is not None else -math.inf for v in values)
            alternatives = logprobs.get("top_logprobs")
            if params.logprobs > 0 and isinstance(alternatives, list):
                top = tuple({str(k): float(v) for k, v in (pos or {}).items()} for pos in alternatives)
        return Completion(
            text=text,
            token_ids=token_ids,
            logprobs=sampled,
            top_logprobs=top,
            finish_reason=_FINISH.get(choice.get("finish_reason"), "stop"),
        )


def _decode(raw: bytes, where: str) -> Any:
    # Invalid UTF-8 in a model's text is the server's fault, not the run's: keep what can be read.
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        raise RequestError(f"{where} did not answer JSON ({one_line(exc)[:200]})") from None


def _error_message(raw: bytes) -> str:
    """The `error.message` of an OpenAI-style error body, else the start of the body."""
    try:
        data = json.loads(raw[:65536].decode("utf-8", errors="replace"))
        error = data.get("error", data) if isinstance(data, dict) else data
        message = error.get("message", error) if isinstance(error, dict) else error
        return one_line(message)[:300]
    except (ValueError, RecursionError):
        return one_line(raw[:300].decode("utf-8", errors="replace")) or "(no message)"


def _retry_after(value: str | None) -> float | None:
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the exponential backoff is a fine substitute
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


__all__ = ["OpenAIConfig", "OpenAIEngine", "RequestError"]
