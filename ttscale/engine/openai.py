"""An engine behind an OpenAI-compatible server: `vllm serve`, SGLang, or any `/v1/completions` API.

Prompts go as token ids to `/v1/completions` (chat templates are applied here, with the model's
own tokenizer, so tree strategies keep exact token prefixes). Requests are async and bounded by
a semaphore; 408/429/5xx answers, timeouts and dropped connections are retried with jittered
exponential backoff (a server's Retry-After is honoured); other 4xx answers fail at once with the
server's message. A 200 that is no answer (not JSON, no or too few choices, a choice without a
string `text` or with unreadable fields, a body past `_MAX_BODY`) is retried the same way: a proxy's
passing fault looks like that. The API key is read from an environment variable and goes only into the
Authorization header: never into `describe()`, run files, logs or error messages. A query string in the
base URL is sent with every request; run files show each of its values as `***` unless its name is known
to be harmless (`api-version`). Which answers are retried, fatal or transient (`is_transient`), and how a body
is read as choices, is `ttscale.engine.openai_faults`.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import urllib.parse
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from ttscale.engine.backend import Backend
from ttscale.engine.base import EngineFatalError, HFTokenizerMixin, Prompt
from ttscale.engine.confidence import token_confidence
from ttscale.engine.openai_config import MASK, OpenAIConfig, redact_url, server_from_flags
from ttscale.engine.openai_faults import (
    FATAL_STATUS,
    Garbled,
    MalformedAnswerError,
    RequestError,
    backoff,
    choices,
    declared_size,
    decode,
    error_message,
    is_transient,
    retried,
    retry_after_seconds,
)
from ttscale.messages import one_line
from ttscale.schema import Completion, FinishReason, Generation, SamplingParams

_MAX_BODY = 64 * 1024 * 1024  # a completion body larger than this is not a completion
_MAX_ERROR_BODY = 64 * 1024  # an error body is read for its message only
_FINISH: dict[Any, FinishReason] = {"stop": "stop", "length": "length", "abort": "abort"}
T = TypeVar("T")


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
        """Tries repeated so far (timeouts, dropped connections, 408/409/429/5xx, 200s that were no answer)."""

    @classmethod
    async def start(cls, config: OpenAIConfig) -> OpenAIEngine:
        import httpx

        from ttscale.engine.models import resolve_model

        masked = config.masked_parameters()
        if masked:  # a URL read back from a run's files: sending the mask would only earn a 401 later
            raise EngineFatalError(
                f"the base URL's {', '.join(masked)} was stored masked ({MASK}); give --base-url again with its value"
            )
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

    # -- AsyncEngine protocol ------------------------------------------------------------------------
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
        if params.regex is not None:  # vLLM's server (≥ 0.11) constrains a completion by this extra field
            body["structured_outputs"] = {"regex": params.regex}

        def parse(data: Any) -> Generation:
            chosen = choices(data, params.n)
            try:
                return self._generation(data, chosen, prompt, params)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                # A choice without its text (or with a number for it) is no answer either: a proxy that rewrote
                # the body or a server's passing fault looks like that, so it is retried like every other one;
                # recorded as the problem's error, it would count as finished and `--resume` would never redo it.
                raise Garbled(f"with a malformed choice ({one_line(exc)[:200]})") from None

        return await self._request("POST", "/completions", body, parse)

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
        try:
            listing: Any = await self._request("GET", "/models", None)
        except MalformedAnswerError as exc:  # no problem to leave unfinished yet: the run cannot start
            raise EngineFatalError(f"{exc}; is it an OpenAI API?") from None
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

    async def _request(
        self, method: str, path: str, body: dict[str, Any] | None, parse: Callable[[Any], T] = lambda data: data
    ) -> T:
        """The parsed answer to one request, tried up to 1 + max_retries times. `parse` raises `Garbled` for a
        200 that is no answer (retried); it sees the decoded JSON."""
        import httpx

        url, where = self.config.endpoint(path), self.config.endpoint(path, public=True)
        last = ""
        garbled = False
        for attempt in range(self.config.max_retries + 1):
            retry_after: float | None = None
            garbled = False
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
                    if status < 400:
                        try:
                            return parse(decode(raw, limit=_MAX_BODY))
                        except Garbled as exc:
                            last, garbled = f"{status} {reason} {exc}", True
                    else:
                        message = self._scrub(error_message(raw or b""))
                        if retried(status):
                            last = f"{status} {reason}: {message}"
                            retry_after = retry_after_seconds(headers.get("retry-after"))
                        elif status in FATAL_STATUS:
                            raise EngineFatalError(f"{where} answered {status} {reason}: {message}")
                        else:
                            raise RequestError(f"{where} answered {status} {reason}: {message}")
            if attempt == self.config.max_retries:
                break
            self.retries += 1
            await asyncio.sleep(backoff(attempt, retry_after, base=self.config.backoff_base,
                                          cap=self.config.backoff_cap))  # outside the semaphore: sleeping holds no slot
        tries = self.config.max_retries + 1
        if garbled:  # the server is up and answering: this problem waits for --resume, the run goes on
            raise MalformedAnswerError(f"{where} sent no usable answer {tries} time{'s' * (tries > 1)}; last: {last}")
        raise EngineFatalError(f"{where} failed {tries} time{'s' * (tries > 1)} in a row; last: {last}")

    async def _exchange(self, method: str, url: str, body: dict[str, Any] | None) -> tuple[int, str, Any, bytes | None]:
        """Status, reason, headers and body, read as a stream and bounded: a success body that passes `_MAX_BODY`
        is None (read no further, or not at all when its Content-Length says so); an error body is cut at
        `_MAX_ERROR_BODY` (only its message is wanted)."""
        async with self._client.stream(method, url, json=body) as response:
            status, reason, headers = response.status_code, response.reason_phrase, response.headers
            limit = _MAX_BODY if status < 400 else _MAX_ERROR_BODY
            if status < 400 and declared_size(headers) > limit:
                return status, reason, headers, None
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                if size + len(chunk) > limit:
                    if status < 400:
                        return status, reason, headers, None
                    chunks.append(chunk[: limit - size])
                    break
                size += len(chunk)
                chunks.append(chunk)
            return status, reason, headers, b"".join(chunks)

    def _scrub(self, text: str) -> str:
        """Servers echo parts of a rejected key in their messages: never pass the key on."""
        for value in self.config.query_secrets().values():  # a key in the URL's query string is one too
            if len(value) >= 4:
                text = text.replace(value, MASK)
        if self._secret:
            text = text.replace(self._secret, "***")
            if len(self._secret) >= 8:
                text = text.replace(self._secret[-4:], "***")
        return text

    # -- parsing --------------------------------------------------------------------------------
    def _generation(
        self, data: dict[str, Any], choices: list[dict[str, Any]], prompt: Prompt, params: SamplingParams
    ) -> Generation:
        completions = tuple(self._completion(c, params) for c in sorted(choices, key=lambda c: int(c.get("index", 0))))
        usage = data.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        prompt_tokens = usage.get("prompt_tokens")
        if not isinstance(prompt_tokens, int) or prompt_tokens < 0:
            prompt_tokens = len(self.tokenize(prompt)) if isinstance(prompt, str) else len(prompt)
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        cached = cached if isinstance(cached, int) and 0 <= cached <= prompt_tokens else 0
        return Generation(completions=completions, prompt_tokens=prompt_tokens, cached_prompt_tokens=cached)

    def _completion(self, choice: dict[str, Any], params: SamplingParams) -> Completion:
        if "text" not in choice:
            raise ValueError("a choice has no text")
        text = choice["text"]
        if not isinstance(text, str):
            raise TypeError(f"a choice's text is {type(text).__name__}, not a string")
        ids = choice.get("token_ids")
        if isinstance(ids, list) and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in ids):
            if len(ids) > params.max_tokens:  # more tokens than asked: no answer to this request (retried)
                raise ValueError(f"a choice has {len(ids)} token ids, past the {params.max_tokens} asked")
            token_ids = tuple(ids)
        else:
            # A server that returns no ids: count the text's tokens ourselves (exact for the same tokenizer).
            token_ids = tuple(self.tokenize(text)[: params.max_tokens])
        sampled: tuple[float, ...] | None = None
        top: tuple[dict[str, float], ...] | None = None
        confidences: tuple[float, ...] | None = None
        logprobs = choice.get("logprobs")
        if params.logprobs is not None and isinstance(logprobs, dict):
            values = logprobs.get("token_logprobs")
            if isinstance(values, list):
                sampled = tuple(float(v) if v is not None else -math.inf for v in values)
                # A sampled token's log-prob is finite and ≤ 0; NaN or ±Infinity (JSON that Python reads) scored
                # every sample NaN: no answer to this request (retried, then the problem unfinished).
                if any(v is not None and not (math.isfinite(float(v)) and float(v) <= 1e-6) for v in values):
                    raise ValueError("a choice's token log-probs are not finite numbers ≤ 0")
            alternatives = logprobs.get("top_logprobs")
            if params.logprobs > 0 and isinstance(alternatives, list):
                top = tuple({str(k): float(v) for k, v in (pos or {}).items()} for pos in alternatives)
                if any(math.isnan(v) or v > 1e-6 for pos in top for v in pos.values()):  # -inf: a masked token
                    raise ValueError("a choice's top log-probs are not numbers ≤ 0")
                # The server sends alternatives keyed by text: two candidates that decode alike arrive as one.
                confidences = tuple(token_confidence(pos.values()) if pos else 0.0 for pos in top)
        return Completion(
            text=text,
            token_ids=token_ids,
            logprobs=sampled,
            top_logprobs=top,
            finish_reason=_FINISH.get(choice.get("finish_reason"), "stop"),
            confidences=confidences,
        )


class OpenAIBackend(Backend):
    """The `openai` backend: a model served by an OpenAI-compatible server, configured by an OpenAIConfig."""

    config = OpenAIConfig
    own_flags = True  # --base-url and SERVER_FLAGS (ttscale.running.flags), read by server_from_flags

    @classmethod
    async def start(cls, config: OpenAIConfig) -> OpenAIEngine:
        return await OpenAIEngine.start(config)

    @classmethod
    def is_transient(cls, exc: BaseException) -> bool:
        return is_transient(exc)

    @classmethod
    def from_flags(cls, args: argparse.Namespace, stored: Any, command: str) -> OpenAIConfig:
        return server_from_flags(args, stored, command)


__all__ = ["MalformedAnswerError", "OpenAIBackend", "OpenAIConfig", "OpenAIEngine", "RequestError", "is_transient",
           "redact_url"]
