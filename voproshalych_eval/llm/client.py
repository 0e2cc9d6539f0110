"""The one LLM client: OpenAI-compatible providers, retries, bounded concurrency, cache, call log.

Every call goes through :meth:`LLMClient.complete` (or :meth:`LLMClient.acomplete`):

* the model is routed to the provider that lists it (``"provider:model"`` picks one explicitly);
* the reply is looked up in the cache first (``use_cache=True``, the default; stability runs pass False);
* HTTP is done by the real ``openai`` SDK (its own retries off; its connection pool sized to the
  concurrency) under the process-wide limit of the provider (:mod:`voproshalych_eval.llm.limits`: every
  client of a process talking to one endpoint shares it; ``concurrency``, default 8);
* 429, 5xx, timeouts and connection errors are retried with exponential backoff (initial 2 s, x2,
  max 30 s, +-25 % jitter); a ``Retry-After`` (or ``retry-after-ms``) header is honoured exactly: the
  wait is what the server asked for, not the backoff. Then :class:`LLMCallError` with a ``kind``
  (:data:`ERROR_KINDS`): an HTTP error is named by what it is — ``context_overflow`` (the prompt does not
  fit the model's window, in the shapes OpenAI, vLLM, llama.cpp and llama-cpp-python use), ``auth``
  (401/403), ``rate_limited`` (429), ``server_error`` (5xx), ``bad_request`` (another 4xx), ``timeout``,
  ``connection``. Retries, and calls that succeeded after one, are counted per kind (``usage()``);
* with a ``schema`` the structured-output chain json_schema -> json_object with schema -> json_object ->
  text is walked once per (endpoint, model) and the working mode remembered — in the store too, so no
  later process repeats a request the server already refused (:mod:`voproshalych_eval.llm.structured`).
  Only an error that names the response format (``response_format``, ``json_schema``, a schema or
  grammar) moves down the chain; a context overflow or any other error is reported as what it is. An
  unparseable reply is ``LLMCallError("parse_error")`` with the raw text and the reply's tokens kept;
* the model's context window per endpoint (:mod:`voproshalych_eval.llm.context_window`):
  :meth:`LLMClient.context_window` (from the server, else a setting) and :meth:`LLMClient.context_budget`,
  what callers cut retrieved or page context to;
* every call (cached or not, failed or not) is logged in ``eval.llm_calls`` with latency and tokens, and
  counted per model on the usage meter of the run it belongs to (:mod:`voproshalych_eval.llm.usage`).

Real providers' quirks handled here (each has a test against the scripted server): a reply whose text is
in ``reasoning_content`` with an empty ``content`` (reasoning models); ``max_tokens`` refused in favour of
``max_completion_tokens`` (switched once per model and remembered); ``json_schema`` or any
``response_format`` unsupported (the chain above); no ``usage`` in the reply (tokens unknown, counted);
a 200 reply with no ``choices`` (retried as a server error); error bodies in any shape (the server's
message is extracted from OpenAI's ``{"error": {"message"}}``, ``{"error": "..."}``, ``{"detail": ...}``,
``{"message": ...}`` or plain text); per-provider extra headers (OpenRouter's ``HTTP-Referer`` /
``X-Title``). A base URL's query string (``?api-key=...``) is sent as query parameters of every request.

Secrets never appear in exceptions, logs, the cache or returned replies: every text is scrubbed of the
configured key values (:mod:`voproshalych_eval.redaction`) before it is stored or returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from sqlalchemy import Engine

from voproshalych_eval import redaction
from voproshalych_eval.config import env, get_settings
from voproshalych_eval.db.slots import hold_slot
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.llm import limits
from voproshalych_eval.llm import usage as usage_meter
from voproshalych_eval.llm.cache import CallLog, LLMCache, cache_key
from voproshalych_eval.llm.context_window import (
    ENV_WINDOW,
    TEMPLATE_MARGIN,
    TokenEstimate,
    messages_chars,
    probe_window,
)
from voproshalych_eval.llm.providers import (
    NO_KEY,
    Provider,
    ProviderConfigError,
    all_models,
    configured_providers,
    has_user_info,
    llm_options,
    resolve_api_key,
    split_base_url,
)
from voproshalych_eval.llm.structured import (
    MODES,
    ParseError,
    parse_structured,
    response_format,
    schema_instruction,
)

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")

ERROR_KINDS = ("rate_limited", "server_error", "timeout", "connection", "bad_request", "parse_error",
               "context_overflow", "auth")
RETRYABLE = {"rate_limited", "server_error", "timeout", "connection"}
#: an error body saying the prompt does not fit the model's window: OpenAI / llama-cpp-python
#: (``context_length_exceeded``, "maximum context length is N tokens"), vLLM (the same sentence, or "longer
#: than the maximum model length"), llama.cpp's server ("exceeds the available context size",
#: ``exceed_context_size_error``), Anthropic-style proxies ("prompt is too long")
CONTEXT_OVERFLOW_RE = re.compile(
    r"context_length_exceeded|maximum context length|exceed_context_size|exceeds? (?:the )?(?:available )?"
    r"context (?:size|window|length)|context (?:size|window|length) (?:exceeded|is exceeded)|"
    r"longer than the maximum model length|prompt is too long|too many tokens|input is too long|"
    r"requested tokens \(\d+\) exceed context window", re.IGNORECASE)
#: an error body naming the response format (what a server that cannot do structured output says)
FORMAT_REFUSED_RE = re.compile(r"response_format|json_schema|json_object|schema|grammar|structured output|"
                               r"response format", re.IGNORECASE)


class LLMCallError(VoproshalychEvalError):
    """A call that failed after its retries. ``kind`` is one of :data:`ERROR_KINDS`; ``raw_text`` keeps the
    model's reply for parse errors (and a short server message otherwise)."""

    def __init__(
        self,
        kind: str,
        raw_text: str | None = None,
        *,
        message: str | None = None,
        status: int | None = None,
        model: str | None = None,
        provider: str | None = None,
        attempts: int = 1,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> None:
        self.kind = kind
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.raw_text = raw_text
        self.status = status
        self.model = model
        self.provider = provider
        self.attempts = attempts
        self.message = message or kind
        super().__init__(f"{kind}: {self.message}" + (f" (model {model})" if model else ""))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "raw_text": self.raw_text,
            "status": self.status,
            "model": self.model,
            "provider": self.provider,
            "attempts": self.attempts,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


class Cancelled(VoproshalychEvalError):
    """An item of :meth:`LLMClient.map_concurrent` skipped because the cancel event was set."""


@dataclass
class LLMResponse:
    text: str
    parsed: dict[str, Any] | None
    model: str
    provider: str
    latency_s: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False
    attempts: int = 1
    mode: str = "text"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RetryPolicy:
    """Exponential backoff: ``initial * multiplier**(n-1)`` capped at ``max_delay``, +-``jitter`` fraction;
    a ``Retry-After`` header is honoured exactly instead (capped at ``max_retry_after``): the server said
    when to come back, so neither a longer backoff nor a doubling is added."""

    max_attempts: int = 5
    initial: float = 2.0
    multiplier: float = 2.0
    max_delay: float = 30.0
    jitter: float = 0.25
    max_retry_after: float = 120.0

    def delay(self, retry_number: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        base = min(self.max_delay, self.initial * self.multiplier ** max(0, retry_number - 1))
        r = (rng or random).uniform(-self.jitter, self.jitter) if self.jitter else 0.0
        return max(0.0, base * (1.0 + r))


@dataclass
class ClientStats:
    calls: int = 0
    http_requests: int = 0
    cached: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    no_usage: int = 0  # successful uncached calls whose reply had no ``usage``
    latencies_s: list[float] = field(default_factory=list)
    failure_kinds: dict[str, int] = field(default_factory=dict)
    #: retries made, by the kind of error retried; calls that succeeded after a retry, by that kind
    retries: dict[str, int] = field(default_factory=dict)
    recovered: dict[str, int] = field(default_factory=dict)
    format_fallbacks: int = 0
    per_model: usage_meter.UsageMeter = field(default_factory=usage_meter.UsageMeter)


class _NoChoices(VoproshalychEvalError):
    """A 200 reply without ``choices`` (OpenRouter does this when the upstream model fails)."""

    def __init__(self, body: str | None) -> None:
        super().__init__("HTTP 200 without choices")
        self.body = body


_MAX_COMPLETION = "max_completion_tokens"


def server_message(exc: Exception) -> str | None:
    """The server's own error message, whatever the shape of the error body (first 300 characters)."""
    resp = getattr(exc, "response", None)
    raw = None
    if resp is not None:
        with contextlib.suppress(Exception):
            raw = resp.text
    if not raw:
        body = getattr(exc, "body", None)
        raw = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False) if body is not None else None
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, TypeError):
        return " ".join(raw.split())[:300] or None
    for path in (("error", "message"), ("error",), ("detail",), ("message",), ("msg",), ("title",), ("errors",)):
        cur: Any = data
        for k in path:
            cur = cur.get(k) if isinstance(cur, dict) else None
        if isinstance(cur, str) and cur.strip():
            return " ".join(cur.split())[:300]
        if isinstance(cur, list | dict) and cur and path != ("error",):
            return json.dumps(cur, ensure_ascii=False)[:300]
    return " ".join(raw.split())[:300]


def _retry_after(exc: Exception) -> float | None:
    resp = getattr(exc, "response", None)
    headers = getattr(resp, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    if value is None:
        ms = headers.get("retry-after-ms")
        try:
            return float(ms) / 1000.0 if ms is not None else None
        except ValueError:
            return None
    try:
        return float(value)
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def _error_text(exc: Exception) -> str:
    """The error's body and message as one string (what the patterns below look at)."""
    parts = [server_message(exc) or ""]
    resp = getattr(exc, "response", None)
    if resp is not None:
        with contextlib.suppress(Exception):
            parts.append(resp.text[:2000])
    body = getattr(exc, "body", None)
    if body is not None:
        with contextlib.suppress(Exception):
            parts.append(body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)[:2000])
    return " ".join(parts)


def classify(exc: Exception) -> tuple[str, int | None]:
    """Map an ``openai`` SDK exception to an error kind (:data:`ERROR_KINDS`) and HTTP status: what the error
    is, not only its status — a 400 saying the prompt exceeds the context window is ``context_overflow``."""
    import openai  # heavy: defers openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout", None
    if isinstance(exc, openai.APIConnectionError):
        return "connection", None
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if status in (400, 413, 422, 500) and CONTEXT_OVERFLOW_RE.search(_error_text(exc)):
            return "context_overflow", status
        if status == 429:
            return "rate_limited", status
        if status in (401, 403):
            return "auth", status
        if status >= 500 or status == 408:
            return "server_error" if status != 408 else "timeout", status
        return "bad_request", status
    return "connection", None


#: plain words for each error kind (logs, failure messages, the UI)
KIND_WORDS = {
    "context_overflow": "the prompt does not fit the model's context window",
    "bad_request": "the server refused the request as malformed",
    "auth": "the server refused the credentials (API key)",
    "rate_limited": "the server's rate limit (HTTP 429) persisted through the retries",
    "server_error": "the server failed (HTTP 5xx)",
    "timeout": "no reply within the timeout",
    "connection": "the server could not be reached",
    "parse_error": "the reply could not be read as the expected answer",
}


def format_refused(exc: LLMCallError, body_text: str | None = None) -> bool:
    """Whether a failed structured-output request was refused *because of its response format*: a 4xx (or
    llama-cpp-python's 500) whose error names the format. A context overflow, an auth error or anything else
    is not a reason to try another format."""
    if exc.kind not in ("bad_request", "server_error") or exc.status not in (400, 404, 415, 422, 500):
        return False
    return bool(FORMAT_REFUSED_RE.search(f"{exc.message or ''} {body_text or exc.raw_text or ''}"))


class LLMClient:
    """OpenAI-compatible chat client shared by every judge, generator and tier. Thread-safe."""

    def __init__(
        self,
        providers: Sequence[Provider],
        engine: Engine | None = None,
        *,
        concurrency: int | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        settings: Any = None,
        lang: str = "ru",
    ) -> None:
        """``concurrency``: requests in flight per provider in this process (None: the default, 8, unless a
        client of the process already set one explicitly — see :mod:`voproshalych_eval.llm.limits`)."""
        if not providers:
            raise ValueError("LLMClient needs at least one provider (see docs/LLM.md)")
        self.providers = list(providers)
        self.engine = engine
        self.timeout = float(timeout)
        self.retry = retry or RetryPolicy()
        self.settings = settings
        self.lang = lang
        self.cache = LLMCache(engine)
        self.call_log = CallLog(engine)
        self.stats = ClientStats()
        self._lock = threading.Lock()
        self._sdk_clients: dict[str, Any] = {}
        self._pool_sizes: dict[str, int] = {}
        self._limits = {p.name: limits.limit_for(p.endpoint) for p in self.providers}
        self.set_concurrency(concurrency or limits.DEFAULT_CONCURRENCY, explicit=concurrency is not None)
        self._modes: dict[tuple[str, str], str] = {}
        self._modes_loaded: set[tuple[str, str]] = set()
        self._token_param: dict[tuple[str, str], str] = {}
        self._windows: dict[tuple[str, str], int | None] = {}
        self._estimates: dict[str, TokenEstimate] = {}
        self._keys: list[str] = []
        self._secret_values: list[str] | None = None
        self._async_pool: ThreadPoolExecutor | None = None
        self._rng = random.Random()

    @property
    def concurrency(self) -> int:
        """Requests in flight at once per provider (the process-wide limit of the first provider)."""
        return self._limits[self.providers[0].name].capacity

    @concurrency.setter
    def concurrency(self, n: int) -> None:
        self.set_concurrency(n)

    def set_concurrency(self, n: int, *, explicit: bool = True) -> None:
        """Set the process-wide limit of every provider of this client (``--concurrency`` of a command)."""
        for lim in self._limits.values():
            lim.configure(n, explicit=explicit)
        with self._lock:  # an HTTP pool smaller than the new limit is rebuilt on the next call
            for name, size in list(self._pool_sizes.items()):
                if size < self._limits[name].capacity:
                    self._sdk_clients.pop(name, None)
                    self._pool_sizes.pop(name, None)

    # ----------------------------------------------------------------- routing
    @property
    def models(self) -> list[str]:
        return all_models(self.providers)

    def route(self, model: str) -> tuple[Provider, str]:
        """The provider serving ``model`` and the model id to send. ``"provider:model"`` is explicit."""
        if ":" in model:
            head, _, tail = model.partition(":")
            for p in self.providers:
                if p.name == head:
                    return p, tail
        for p in self.providers:
            if model in p.models:
                return p, model
        return self.providers[0], model

    def structured_mode(self, model: str) -> str:
        """The remembered structured-output mode for ``model`` (``json_schema`` until a fallback happened)."""
        p, mid = self.route(model)
        return self._mode(p, mid)

    def _mode(self, provider: Provider, model_id: str) -> str:
        """The learned mode of (endpoint, model): this client's, else the store's, else ``json_schema``."""
        mkey = (provider.name, model_id)
        if mkey not in self._modes_loaded:
            stored = self.cache.get(_mode_key(provider, model_id))
            with self._lock:
                self._modes_loaded.add(mkey)
                if stored and stored.get("mode") in MODES and mkey not in self._modes:
                    self._modes[mkey] = stored["mode"]
        return self._modes.get(mkey, MODES[0])

    def _learn_mode(self, provider: Provider, model_id: str, mode: str, refused: str | None) -> None:
        mkey = (provider.name, model_id)
        with self._lock:
            if self._modes.get(mkey) == mode:
                return
            self._modes[mkey] = mode
        if mode != MODES[0]:
            self.cache.put(_mode_key(provider, model_id), model_id,
                           {"endpoint": provider.endpoint, "model": model_id, "what": "structured_output_mode"},
                           {"mode": mode, "refused": refused})

    # ----------------------------------------------------------------- context window
    def token_estimate(self, model: str) -> TokenEstimate:
        """Characters per token of the endpoint serving ``model`` (lowered as replies' usage comes in)."""
        p, _ = self.route(model)
        with self._lock:
            est = self._estimates.get(p.endpoint)
            if est is None:
                est = self._estimates[p.endpoint] = TokenEstimate()
            return est

    def context_window(self, model: str) -> int | None:
        """The model's context window in tokens: what the server reports (llama.cpp ``/props``, ``/v1/models``),
        else the provider's ``context_window`` setting, else ``VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW``, else None.
        Asked once per endpoint and model."""
        p, mid = self.route(model)
        key = (p.endpoint, mid)
        if key in self._windows:
            return self._windows[key]
        n = p.context_window
        if n is None:
            base, _ = split_base_url(p.base_url, p.name) if p.base_url else (None, None)
            n = probe_window(base, mid, timeout=min(5.0, self.timeout)) if base else None
        if n is None:
            raw = env(ENV_WINDOW) or (llm_options(self.settings).get("context_window") if self.settings else None)
            try:
                n = int(raw) if raw else None
            except (TypeError, ValueError):
                raise ProviderConfigError(f"{ENV_WINDOW} must be a number of tokens, got {raw!r}") from None
        with self._lock:
            self._windows[key] = n
        return n

    def context_budget(self, model: str, messages: Sequence[dict[str, Any]], max_tokens: int) -> int | None:
        """Tokens left for retrieved or page context in ``messages`` (sent without it) with a reply of
        ``max_tokens``; None when the window is unknown. Negative: not even the rest fits."""
        window = self.context_window(model)
        if window is None:
            return None
        est = self.token_estimate(model)
        return window - max_tokens - est.tokens(messages_chars(messages)) - TEMPLATE_MARGIN

    def _sdk(self, provider: Provider) -> Any:
        with self._lock:
            client = self._sdk_clients.get(provider.name)
            if client is None:
                from openai import OpenAI  # heavy: defers openai

                base, query = split_base_url(provider.base_url, provider.name)
                key = resolve_api_key(provider, self.settings) or NO_KEY
                if key != NO_KEY and has_user_info(base):
                    raise ProviderConfigError(
                        f"provider {provider.name!r}: the base URL carries user:password (sent as HTTP Basic auth) and "
                        f"an API key is set too ({provider.api_key_env}); the HTTP client would send only the Basic "
                        "auth and drop the key — keep one of them"
                    )
                if key != NO_KEY:
                    self._keys.append(key)
                    self._secret_values = None
                client = OpenAI(base_url=base, api_key=key, timeout=self.timeout, max_retries=0,
                                default_query=query or None, default_headers=dict(provider.headers) or None,
                                http_client=_http_client(self.timeout, self._limits[provider.name].capacity))
                self._sdk_clients[provider.name] = client
                self._pool_sizes[provider.name] = self._limits[provider.name].capacity
            return client

    def secret_values(self) -> list[str]:
        """Values scrubbed from replies, errors and the cache: configured keys, the providers' keys and the
        credentials in their base URLs."""
        vals = self._secret_values
        if vals is None:
            found = redaction.configured_secrets(secrets=getattr(self.settings, "secrets", None))
            found.update(self._keys)
            for p in self.providers:
                found.update(redaction.url_secrets(p.base_url))
                found.update(v for v in p.headers.values() if v)
            vals = sorted((v for v in found if len(v) >= redaction.MIN_SECRET_LEN), key=len, reverse=True)
            self._secret_values = vals
        return vals

    def _scrub(self, s: str | None) -> str | None:
        if s is None:
            return None
        return redaction.redact(s, self.secret_values())

    def _store_slot(self, provider: Provider, capacity: int) -> Any:
        """One of the provider's ``capacity`` request slots shared by every process on the store (every
        worker of the queue, on any machine: :mod:`voproshalych_eval.db.slots`) — taken after the process's
        own slot (:mod:`~voproshalych_eval.llm.limits`); no store, no sharing."""
        if self.engine is None:
            return contextlib.nullcontext()
        return hold_slot(self.engine, f"llm:{provider.name}", capacity)

    # ----------------------------------------------------------------- one HTTP call with retries
    def _request(self, provider: Provider, model_id: str, messages: list[dict[str, Any]], params: dict[str, Any],
                 *, format_request: bool = False) -> tuple[Any, int]:
        """One request with its retries. ``format_request``: the request carries a ``response_format``; an error
        that names the format is then raised at once (the caller falls back) instead of being retried."""
        sdk = self._sdk(provider)
        limit = self._limits[provider.name]
        tkey = (provider.name, model_id)
        attempt = 0
        retried: list[str] = []
        while True:
            attempt += 1
            sent = dict(params)
            if self._token_param.get(tkey) == _MAX_COMPLETION and "max_tokens" in sent:
                sent[_MAX_COMPLETION] = sent.pop("max_tokens")
            try:
                with limit.slot(), self._store_slot(provider, limit.capacity):
                    with self._lock:
                        self.stats.http_requests += 1
                    resp = _post_chat(sdk, {"model": model_id, "messages": messages, **sent})
                if not resp.get("choices"):
                    raise _NoChoices(_dump(resp))
                if retried:
                    meter, _ = usage_meter.current()
                    with self._lock:
                        for k in set(retried):
                            self.stats.recovered[k] = self.stats.recovered.get(k, 0) + 1
                    for k in set(retried):
                        if meter is not None:
                            meter.recovered(k)
                return resp, attempt
            except Exception as exc:  # noqa: BLE001 - classified below
                status: int | None
                body: str | None
                detail: str | None
                if isinstance(exc, _NoChoices):
                    kind, status, body, detail = "server_error", 200, exc.body, "no choices in the reply"
                else:
                    kind, status = classify(exc)
                    body = None
                    r = getattr(exc, "response", None)
                    if r is not None:
                        try:
                            body = r.text[:500]
                        except Exception:  # noqa: BLE001
                            body = None
                    detail = server_message(exc)
                if (kind == "bad_request" and "max_tokens" in sent and _MAX_COMPLETION in (detail or body or "")
                        and self._token_param.get(tkey) != _MAX_COMPLETION):
                    log.info("%s refuses max_tokens; using max_completion_tokens from now on", model_id)
                    with self._lock:
                        self._token_param[tkey] = _MAX_COMPLETION
                    continue
                head = f"HTTP {status}" if status else type(exc).__name__
                words = KIND_WORDS.get(kind)
                msg = self._scrub(f"{head}: {detail}" if detail else head)
                if words and kind in ("context_overflow", "auth", "bad_request"):
                    msg = f"{words} ({msg})"
                refused = format_request and status in (400, 404, 415, 422, 500) and bool(
                    FORMAT_REFUSED_RE.search(f"{detail or ''} {body or ''}"))
                retryable = kind in RETRYABLE and not refused
                if not retryable or attempt >= self.retry.max_attempts:
                    raise LLMCallError(
                        kind, self._scrub(body), message=msg, status=status, model=model_id,
                        provider=provider.name, attempts=attempt,
                    ) from None
                wait = self.retry.delay(attempt, _retry_after(exc), self._rng)
                retried.append(kind)
                with self._lock:
                    self.stats.retries[kind] = self.stats.retries.get(kind, 0) + 1
                meter, _ = usage_meter.current()
                if meter is not None:
                    meter.retry(kind)
                log.info("LLM %s on %s (attempt %d), retrying in %.2fs", kind, model_id, attempt, wait)
                time.sleep(wait)

    # ----------------------------------------------------------------- public API
    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        temperature: float = 0.0,
        max_tokens: int = 1000,
        schema: dict[str, Any] | None = None,
        use_cache: bool = True,
        purpose: str | None = None,
        run_id: int | None = None,
        cache_salt: str | None = None,
    ) -> LLMResponse:
        """One chat completion. With ``schema`` the reply is parsed into ``LLMResponse.parsed``.

        ``cache_salt`` distinguishes deliberate repeats of one prompt (e.g. ``strictness`` runs).
        Raises :class:`LLMCallError` after retries (``parse_error`` keeps the raw reply).
        """
        provider, model_id = self.route(model)
        meter, ctx_run = usage_meter.current()
        run_id = run_id if run_id is not None else ctx_run
        # the endpoint (scheme, host, port, path; no credentials) is part of the key: another server with the
        # same model name never answers from this one's cache
        params_key: dict[str, Any] = {"provider": provider.name, "endpoint": provider.endpoint,
                                      "temperature": temperature, "max_tokens": max_tokens}
        if schema is not None:
            params_key["schema"] = schema
        if cache_salt:
            params_key["salt"] = cache_salt
        key = cache_key(model_id, messages, params_key)
        t0 = time.perf_counter()
        with self._lock:
            self.stats.calls += 1
        if use_cache:
            hit = self.cache.get(key)
            if hit is not None:
                latency = time.perf_counter() - t0
                with self._lock:
                    self.stats.cached += 1
                self.stats.per_model.add(model_id, None, None, cached=True)
                if meter is not None:
                    meter.add(model_id, None, None, cached=True)
                self.call_log.record(
                    run_id=run_id, provider=provider.name, model=model_id, purpose=purpose, status="ok", attempts=0,
                    latency_ms=latency * 1000, prompt_tokens=hit.get("prompt_tokens"),
                    completion_tokens=hit.get("completion_tokens"), cached=True,
                )
                return LLMResponse(
                    text=hit.get("text", ""), parsed=hit.get("parsed"), model=model_id, provider=provider.name,
                    latency_s=latency, prompt_tokens=hit.get("prompt_tokens"),
                    completion_tokens=hit.get("completion_tokens"), cached=True, attempts=0,
                    mode=hit.get("mode", "text"),
                )
        try:
            resp = self._complete_uncached(provider, model_id, messages, temperature, max_tokens, schema)
        except LLMCallError as exc:
            latency = time.perf_counter() - t0
            with self._lock:
                self.stats.failures += 1
                self.stats.failure_kinds[exc.kind] = self.stats.failure_kinds.get(exc.kind, 0) + 1
                self.stats.latencies_s.append(latency)
                self.stats.prompt_tokens += exc.prompt_tokens or 0
                self.stats.completion_tokens += exc.completion_tokens or 0
            if exc.prompt_tokens is not None or exc.completion_tokens is not None:
                # a reply came back but could not be used: its tokens were spent and are counted
                self.stats.per_model.add(model_id, exc.prompt_tokens, exc.completion_tokens, cached=False)
                if meter is not None:
                    meter.add(model_id, exc.prompt_tokens, exc.completion_tokens, cached=False)
            self.call_log.record(
                run_id=run_id, provider=provider.name, model=model_id, purpose=purpose, status=exc.kind,
                attempts=exc.attempts, latency_ms=latency * 1000, prompt_tokens=exc.prompt_tokens,
                completion_tokens=exc.completion_tokens, cached=False, error=(exc.message or "")[:500],
            )
            raise
        resp.latency_s = time.perf_counter() - t0
        if resp.prompt_tokens:
            self.token_estimate(model).observe(messages_chars(messages), resp.prompt_tokens)
        secrets = self.secret_values()
        resp.text = redaction.scrub_values(resp.text, secrets)
        resp.parsed = redaction.scrub_obj(resp.parsed, secrets) if resp.parsed is not None else None
        with self._lock:
            self.stats.prompt_tokens += resp.prompt_tokens or 0
            self.stats.completion_tokens += resp.completion_tokens or 0
            if resp.prompt_tokens is None and resp.completion_tokens is None:
                self.stats.no_usage += 1
            self.stats.latencies_s.append(resp.latency_s)
        self.stats.per_model.add(model_id, resp.prompt_tokens, resp.completion_tokens, cached=False)
        if meter is not None:
            meter.add(model_id, resp.prompt_tokens, resp.completion_tokens, cached=False)
        self.call_log.record(
            run_id=run_id, provider=provider.name, model=model_id, purpose=purpose, status="ok",
            attempts=resp.attempts, latency_ms=resp.latency_s * 1000, prompt_tokens=resp.prompt_tokens,
            completion_tokens=resp.completion_tokens, cached=False,
        )
        if use_cache:
            self.cache.put(
                key, model_id, redaction.scrub_obj({"messages": messages, "params": params_key}, secrets),
                {"text": resp.text, "parsed": resp.parsed, "prompt_tokens": resp.prompt_tokens,
                 "completion_tokens": resp.completion_tokens, "mode": resp.mode},
            )
        return resp

    def _complete_uncached(self, provider: Provider, model_id: str, messages: list[dict[str, Any]],
                           temperature: float, max_tokens: int, schema: dict[str, Any] | None) -> LLMResponse:
        base: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        if schema is None:
            resp, attempts = self._request(provider, model_id, messages, base)
            text = _text(resp)
            if not text.strip():
                pt, ct = _usage(resp)
                raise LLMCallError("parse_error", text, message="empty reply", model=model_id,
                                   provider=provider.name, attempts=attempts, prompt_tokens=pt, completion_tokens=ct)
            return _response(resp, text, None, model_id, provider.name, attempts, "text")
        start = MODES.index(self._mode(provider, model_id))
        total_attempts = 0
        for mode in MODES[start:]:
            msgs = messages if mode == "json_schema" else _with_instruction(messages, schema, self.lang)
            params = dict(base)
            rf = response_format(mode, schema)
            if rf is not None:
                params["response_format"] = rf
            try:
                resp, attempts = self._request(provider, model_id, msgs, params, format_request=rf is not None)
            except LLMCallError as exc:
                total_attempts += exc.attempts
                if mode != "text" and format_refused(exc):
                    log.info("%s at %s refused response_format %s (%s); using the next mode from now on",
                             model_id, provider.endpoint, mode, exc.message)
                    with self._lock:
                        self.stats.format_fallbacks += 1
                    self._learn_mode(provider, model_id, MODES[MODES.index(mode) + 1], f"{mode}: {exc.message}")
                    continue
                exc.attempts = total_attempts
                raise
            total_attempts += attempts
            self._learn_mode(provider, model_id, mode, None)
            text = _text(resp)
            try:
                parsed = parse_structured(text, schema)
            except ParseError as exc:
                pt, ct = _usage(resp)
                raise LLMCallError("parse_error", text, message=str(exc), model=model_id, provider=provider.name,
                                   attempts=total_attempts, prompt_tokens=pt, completion_tokens=ct) from None
            return _response(resp, text, parsed, model_id, provider.name, total_attempts, mode)
        raise AssertionError("unreachable")  # pragma: no cover

    async def acomplete(self, messages: list[dict[str, Any]], **kwargs: Any) -> LLMResponse:
        """Async :meth:`complete` (runs on the client's worker pool; the concurrency bound still applies)."""
        if self._async_pool is None:
            with self._lock:
                if self._async_pool is None:
                    self._async_pool = ThreadPoolExecutor(max_workers=max(16, self.concurrency * 2),
                                                          thread_name_prefix="llm-async")
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()  # the caller's usage meter / run id follow the call
        return await loop.run_in_executor(self._async_pool, ctx.run, functools.partial(self.complete, messages, **kwargs))

    def map_concurrent(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        concurrency: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> list[R | BaseException]:
        """``fn`` over ``items``, at most ``concurrency`` requests in flight; results in input order, an exception in
        place of a failed item (:class:`Cancelled` for items skipped after ``cancel`` was set). ``progress(done,
        total)`` is called from the calling thread.

        Twice ``concurrency`` threads run the items: a thread asleep on a 429's ``Retry-After`` (or a backoff) holds
        no request slot, so another item takes the slot meanwhile; the provider's limit (:mod:`.limits`) still
        bounds the requests in flight at ``concurrency`` (at concurrency 64 with a 429 in ten, a sleeping retry had
        kept a thread and its slot idle: ``benchmarks/bench_llm_concurrency.py``)."""
        conc = concurrency or self.concurrency
        return map_concurrent(fn, items, concurrency=conc, progress=progress, cancel=cancel, spare_threads=conc)

    def test_connection(self, model: str | None = None) -> dict[str, Any]:
        """One tiny uncached call; ``{"ok", "model", "latency_s", "error"}`` (no secrets)."""
        model = model or (self.models[0] if self.models else "gpt-4o-mini")
        t0 = time.perf_counter()
        try:
            r = self.complete([{"role": "user", "content": "Reply with one word: ok"}], model=model, max_tokens=5,
                              use_cache=False, purpose="connection_test")
            return {"ok": True, "model": model, "latency_s": time.perf_counter() - t0, "reply": r.text[:50], "error": None}
        except LLMCallError as exc:
            return {"ok": False, "model": model, "latency_s": time.perf_counter() - t0, "reply": None,
                    "error": f"{exc.kind}: {exc.message}"}

    def usage(self, *, with_cost: bool = False) -> dict[str, Any]:
        """Totals of this client: calls, HTTP requests, cache hits, failures, tokens (and calls whose reply had
        no usage). ``with_cost``: also ``per_model`` tokens and money and the total ``cost_usd`` (None =
        unknown) from the price table (:mod:`voproshalych_eval.llm.prices`)."""
        with self._lock:
            s = self.stats
            out = {
                "calls": s.calls, "http_requests": s.http_requests, "cached": s.cached, "failures": s.failures,
                "prompt_tokens": s.prompt_tokens, "completion_tokens": s.completion_tokens, "no_usage": s.no_usage,
                "failure_kinds": dict(s.failure_kinds), "retries": dict(s.retries), "recovered": dict(s.recovered),
                "format_fallbacks": s.format_fallbacks,
            }
        if with_cost:
            # heavy: keeps llm.prices out of --help (+1 ms)
            from voproshalych_eval.llm.prices import price_table, summarize_usage

            summary = summarize_usage(self.stats.per_model.snapshot(), price_table(self.engine, self.settings))
            out.update(per_model=summary["per_model"], cost_usd=summary["cost_usd"])
        return out

    def close(self) -> None:
        for c in self._sdk_clients.values():
            with contextlib.suppress(Exception):
                c.close()
        if self._async_pool is not None:
            self._async_pool.shutdown(wait=False)


def map_concurrent(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    concurrency: int = 8,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
    spare_threads: int = 0,
) -> list[R | BaseException]:
    """Order-preserving thread map returning per-item results or exceptions (see :meth:`LLMClient.map_concurrent`):
    ``concurrency + spare_threads`` threads (spare ones only where something else bounds the work, e.g. the
    provider's request limit)."""
    items = list(items)
    total = len(items)
    results: list[Any] = [None] * total
    if total == 0:
        return results

    def run(i: int) -> tuple[int, Any]:
        if cancel is not None and cancel.is_set():
            return i, Cancelled("cancelled")
        try:
            return i, fn(items[i])
        except BaseException as exc:  # noqa: BLE001 - returned to the caller per item
            return i, exc

    done = 0
    workers = max(1, min(concurrency + max(0, int(spare_threads)), total))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm-map") as pool:
        # each item runs in a copy of the caller's context: the run's usage meter and run id follow it
        futures = [pool.submit(contextvars.copy_context().run, run, i) for i in range(total)]
        for fut in as_completed(futures):
            i, res = fut.result()
            results[i] = res
            done += 1
            if progress is not None:
                try:
                    progress(done, total)
                except Exception:  # noqa: BLE001 - a broken progress bar must not lose results
                    log.debug("progress callback failed", exc_info=True)
    return results


def _post_chat(sdk: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /chat/completions`` through the SDK's own HTTP layer (its auth, headers, query parameters, timeouts
    and its error classes for non-2xx replies), returning the reply as plain JSON.

    ``chat.completions.create`` would walk the whole request through the SDK's typed-dict transformer and the
    reply through pydantic models: ~45 % of the client's CPU per call in the profile (issue 28), for a request
    that is already plain JSON and a reply of which we read four fields."""
    import httpx  # heavy: defers httpx

    raw = sdk.post("/chat/completions", body=body, cast_to=httpx.Response)
    try:
        data = raw.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return {"choices": None, "_raw": raw.text[:500]}
    return data


def _text(resp: Mapping[str, Any]) -> str:
    """The reply's text: ``content``, or — reasoning models served with an empty ``content`` — the
    ``reasoning_content`` (or ``reasoning``) field."""
    try:
        message = resp["choices"][0]["message"] or {}
    except (KeyError, IndexError, TypeError):
        return ""
    content = message.get("content")
    if isinstance(content, str) and content.strip():
        return content
    for name in ("reasoning_content", "reasoning"):
        value = message.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return content if isinstance(content, str) else ""


def _dump(resp: Mapping[str, Any]) -> str | None:
    with contextlib.suppress(Exception):
        return json.dumps(resp, ensure_ascii=False)[:500]
    return None


def _usage(resp: Mapping[str, Any]) -> tuple[int | None, int | None]:
    usage = resp.get("usage")
    if not isinstance(usage, Mapping):
        return None, None
    return usage.get("prompt_tokens"), usage.get("completion_tokens")


def _mode_key(provider: Provider, model_id: str) -> str:
    """The store key of the structured-output mode learned for an endpoint and model."""
    return cache_key(model_id, [], {"endpoint": provider.endpoint, "what": "structured_output_mode"})


def _http_client(timeout: float, pool: int) -> Any:
    """The SDK's HTTP client with a connection pool as large as the requests allowed in flight (the SDK's
    default keeps 20 alive: above that every request would open a new connection)."""
    import httpx  # heavy: defers httpx
    from openai import DefaultHttpxClient  # heavy: defers openai

    n = max(20, int(pool) + 4)
    return DefaultHttpxClient(timeout=timeout, limits=httpx.Limits(max_connections=None, max_keepalive_connections=n))  # type: ignore[arg-type]  # the SDK's annotation names a re-exported httpx; the object is httpx's own


def _response(resp: Mapping[str, Any], text: str, parsed: dict[str, Any] | None, model: str, provider: str,
              attempts: int, mode: str) -> LLMResponse:
    pt, ct = _usage(resp)
    return LLMResponse(
        text=text, parsed=parsed, model=model, provider=provider, latency_s=0.0,
        prompt_tokens=pt, completion_tokens=ct, cached=False, attempts=attempts, mode=mode,
    )


def _with_instruction(messages: list[dict[str, Any]], schema: dict[str, Any], lang: str) -> list[dict[str, Any]]:
    """Append the schema instruction to the last user message (json_object / text modes)."""
    out = [dict(m) for m in messages]
    instr = schema_instruction(schema, lang)
    for m in reversed(out):
        if m.get("role") == "user":
            m["content"] = f"{m.get('content', '')}\n\n{instr}"
            return out
    out.append({"role": "user", "content": instr})
    return out


def default_client(settings: Any = None, engine: Engine | None = None, **kwargs: Any) -> LLMClient | None:
    """A client over the configured providers, or None when none is configured (offline mode).

    Options: ``[llm] concurrency / timeout`` in secrets.toml or ``VOPROSHALYCH_EVAL_LLM_CONCURRENCY`` /
    ``VOPROSHALYCH_EVAL_LLM_TIMEOUT``; keyword arguments win.
    """
    if settings is None:
        settings = get_settings()
    providers = configured_providers(settings)
    if not providers:
        return None
    opts = llm_options(settings)
    conc = kwargs.pop("concurrency", None) or env("VOPROSHALYCH_EVAL_LLM_CONCURRENCY") or opts.get("concurrency")
    timeout = kwargs.pop("timeout", None) or env("VOPROSHALYCH_EVAL_LLM_TIMEOUT") or opts.get("timeout") or 60
    lang = kwargs.pop("lang", None) or getattr(settings, "language", "ru") or "ru"
    return LLMClient(providers, engine, concurrency=int(conc) if conc else None, timeout=float(timeout), settings=settings, lang=lang, **kwargs)
