"""How to reach an OpenAI-compatible server (`OpenAIConfig`), and how its URL is shown in run files and messages.

A query string in the base URL is sent with every request (some gateways take their key or API version
there); run files, `describe()` and messages show each of its values as `***` unless its name is known to
be harmless (`HARMLESS_QUERY`: a key may go by any name, `code=` or `sas=`), and a user:password part not
at all. A URL read back from a run's files with a masked value is refused
at the engine's start: give `--base-url` again.
"""

from __future__ import annotations

import argparse
import math
import re
import urllib.parse
from dataclasses import asdict, dataclass, field
from typing import Any

from ttscale.engine.args import chat_template_kwargs
from ttscale.errors import UsageError

#: A query parameter whose name says it holds a credential (matched case-insensitively, anywhere in the name): masked
#: wherever it appears after a `?`, `&` or `;`, even in text that is not a whole URL.
_SECRET_QUERY = re.compile(
    r"(?i)(?<=[?&;])([^=&;#\s]*(?:key|token|sig|password|passwd|pwd|secret|auth|credential)[^=&;#\s]*=)[^&;#\s]*"
)
#: A query string (from its `?` to a space or a fragment) and one `name=value` parameter of it.
_QUERY = re.compile(r"\?[^\s#]*")
_PARAMETER = re.compile(r"(?<=[?&;])([^=&;#\s?]+)=([^&;#\s]*)")
#: Query parameters whose values are known to hold no secret, shown as they are (compared case-insensitively).
#: Every other value is masked: a gateway's key may go by any name (Azure Functions' `code`, a SAS's `sv`/`se`/...).
HARMLESS_QUERY = frozenset({"api-version", "api_version"})
MASK = "***"


def harmless(name: str) -> bool:
    """Whether a query parameter's value is known to hold no secret (see `HARMLESS_QUERY`)."""
    return urllib.parse.unquote_plus(name).strip().lower() in HARMLESS_QUERY


def redact_url(text: str) -> str:
    """`text` with any user:password of a URL masked, and every query value but those `HARMLESS_QUERY` names."""
    text = re.sub(r"(?<=://)[^/@\s]*@", MASK + "@", text)

    def query(match: re.Match[str]) -> str:
        return _PARAMETER.sub(lambda m: m.group(0) if harmless(m.group(1)) else f"{m.group(1)}={MASK}", match.group(0))

    text = _QUERY.sub(query, text)
    return _SECRET_QUERY.sub(lambda m: m.group(1) + MASK, text)


@dataclass(frozen=True, kw_only=True)
class OpenAIConfig:
    """How to reach an OpenAI-compatible server. Validated at construction."""

    base_url: str
    """The API root, e.g. `http://127.0.0.1:8000/v1` (a URL without a path gets `/v1`). A query string is sent
    with every request; run files and messages show its values as `***` (all but `api-version`'s), and a
    user:password part not at all."""
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
    """Retries of a request after a timeout, a dropped connection, 408/409/429, 5xx or a 200 that is no answer."""
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
        shown = redact_url(self.base_url)  # messages reach terminals and logs: no credentials in them
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL with a host, got {shown!r}")
        try:
            url.port  # noqa: B018 - raises on a port that is not a number in 0-65535
        except ValueError:
            raise ValueError(f"base_url has an invalid port: {shown!r}") from None
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
        """The URL without its query string and fragment; `/v1` when it has no path."""
        url = urllib.parse.urlsplit(self.base_url)
        path = url.path.rstrip("/") or "/v1"
        return urllib.parse.urlunsplit((url.scheme, url.netloc, path, "", ""))

    def endpoint(self, path: str, *, public: bool = False) -> str:
        """The URL of `path` (`/completions`) under the API root, with the base URL's query string, without any
        user:password; `public`: with its query values masked (for run files and messages)."""
        url = urllib.parse.urlsplit(self.api_root)
        host = url.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if url.port is not None:
            netloc += f":{url.port}"
        query = urllib.parse.urlsplit(self.base_url).query
        if public and query:
            query = redact_url("?" + query)[1:]
        return urllib.parse.urlunsplit((url.scheme, netloc, url.path + path, query, ""))

    def public_url(self) -> str:
        """The URL without any user:password part and with its query values masked, fit for run files and
        messages."""
        return self.endpoint("", public=True)

    def query_secrets(self) -> dict[str, str]:
        """The query parameters of the base URL whose values are masked in what is stored (all but the harmless
        ones), name -> value."""
        query = urllib.parse.urlsplit(self.base_url).query
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        return {name: value for name, value in pairs if not harmless(name)}

    def masked_parameters(self) -> list[str]:
        """Query parameters whose value is the mask: a URL read back from a run's files."""
        return [name for name, value in self.query_secrets().items() if value == MASK]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "base_url": self.public_url()}


#: --backend openai settings (OpenAIConfig fields besides base_url and model).
SERVER_FLAGS = {
    "tokenizer": (str, "the served model's tokenizer: embedded, a local folder or a hub id (default: --model)"),
    "api_key_env": (str, "environment variable holding the API key (default OPENAI_API_KEY; the key is never stored)"),
    "max_concurrency": (int, "requests in flight to the server at once (default 64)"),
    "request_timeout": (float, "seconds one request may take before it is retried (default 600)"),
    "max_retries": (int, "retries after a timeout, a dropped connection, 408/409/429, 5xx or a malformed 200 "
                    "(default 6)"),
}


def server_from_flags(args: argparse.Namespace, stored: OpenAIConfig | None, command: str) -> OpenAIConfig:
    """The --backend openai settings (an OpenAIConfig): the `stored` ones (on resume) with the flags on top."""
    values: dict[str, Any] = dict(vars(stored)) if stored is not None else {}
    values.update({f: getattr(args, f) for f in ("base_url", *SERVER_FLAGS) if getattr(args, f, None) is not None})
    if getattr(args, "chat_template_kwargs", None):
        values["chat_template_kwargs"] = chat_template_kwargs(args.chat_template_kwargs, command)
    if args.model is not None:
        values["model"] = args.model
    if not values.get("base_url"):
        raise UsageError(f"{command}: --backend openai needs --base-url URL (the server's API root)")
    if not values.get("model"):
        raise UsageError(f"{command}: --backend openai needs --model NAME (the name the server serves the model under)")
    try:
        return OpenAIConfig(**values)
    except ValueError as exc:
        raise UsageError(f"{command}: {exc}") from None


__all__ = ["HARMLESS_QUERY", "MASK", "SERVER_FLAGS", "OpenAIConfig", "harmless", "redact_url", "server_from_flags"]
