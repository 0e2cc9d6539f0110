"""A scripted OpenAI-compatible HTTP server over real sockets, for tests and benchmarks.

Use as a context manager or through the pytest fixture::

    from tests.support.scripted_openai import ScriptedOpenAI, scripted_openai  # noqa: F401 (fixture)

    with ScriptedOpenAI() as srv:
        srv.script(Reply.json({"score": 1}), Reply.status(429, retry_after=0), Reply.garbage())
        client = OpenAI(base_url=srv.base_url, api_key="x")

Each request to ``POST /v1/chat/completions`` takes the next scripted behaviour (a global queue, or a
per-model queue set with ``srv.script(..., model="m")``); when none is left it answers in *smart* mode:
valid JSON filling the requested schema deterministically (numbers at ``srv.model_scores[model]``
of their range, default 0.8), ``Yes`` to show/no-show prompts, and a short deterministic answer to
generation prompts. ``srv.reject_json_schema = 400`` (or 500, as llama.cpp does) rejects requests whose
``response_format.type == "json_schema"``. ``srv.delay`` adds latency to every reply.

The server records every request (``srv.requests``; their headers in ``srv.headers_seen`` and paths with
query strings in ``srv.paths``), counts them (``srv.count``) and tracks the maximum number of requests
in flight (``srv.max_in_flight``).

Quirks of real providers, each switched on by an attribute (and cleared by :meth:`ScriptedOpenAI.reset`):

* ``reasoning_field = True`` — the text comes in ``message.reasoning_content`` and ``content`` is empty
  (reasoning models behind some providers);
* ``refuse_max_tokens = True`` — HTTP 400 "Unsupported parameter: 'max_tokens' ... use
  'max_completion_tokens'" (OpenAI's o-series / gpt-5);
* ``accept_formats = {"json_object"}`` — only these ``response_format`` types are accepted (422 for others,
  as Mistral does for ``json_schema``); ``set()`` refuses every response format (400);
  ``strict_formats = True`` additionally refuses extra keys in it (``{"type": "json_object", "schema": ...}``);
* ``omit_usage = True`` — replies without ``usage``;
* ``Reply.no_choices()`` — a 200 reply whose ``choices`` is empty; ``Reply.raw(status, text)`` — an error
  body in any shape (``{"detail": ...}``, ``{"error": "..."}``, plain text);
* ``responder = fn`` — ``fn(body)`` gives the reply text of a scripted model (``None``: the smart reply),
  e.g. a judge biased in a known way;
* ``echo_auth = True`` — every text the server produces carries the ``Authorization`` header and the query
  string it received (a misbehaving server echoing credentials back).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    """One scripted behaviour."""

    kind: str  # json | text | prose | garbage | empty | status | smart | raw | no_choices
    body: Any = None
    status: int = 200
    retry_after: float | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, obj: dict[str, Any], delay: float = 0.0) -> Reply:
        return cls("json", obj, delay=delay)

    @classmethod
    def text(cls, text: str, delay: float = 0.0) -> Reply:
        return cls("text", text, delay=delay)

    @classmethod
    def prose(cls, obj: dict[str, Any]) -> Reply:
        """JSON wrapped in prose and a code fence."""
        return cls("text", "Конечно! Вот моя оценка:\n```json\n" + json.dumps(obj, ensure_ascii=False) + "\n```\nНадеюсь, помог.")

    @classmethod
    def garbage(cls) -> Reply:
        return cls("text", "Оценка: где-то между хорошо и отлично, {не json} ¯\\_(ツ)_/¯")

    @classmethod
    def empty(cls) -> Reply:
        return cls("text", "")

    @classmethod
    def error(cls, status: int, retry_after: float | None = None) -> Reply:
        return cls("status", {"error": {"message": f"scripted {status}", "type": "scripted"}}, status=status,
                   retry_after=retry_after)

    @classmethod
    def slow(cls, delay: float) -> Reply:
        """A smart reply after ``delay`` seconds (longer than the client timeout -> timeout)."""
        return cls("smart", delay=delay)

    @classmethod
    def smart(cls) -> Reply:
        return cls("smart")

    @classmethod
    def no_choices(cls) -> Reply:
        """HTTP 200 with ``"choices": []`` (and an error object, as OpenRouter sends when the upstream fails)."""
        return cls("no_choices")

    @classmethod
    def raw(cls, status: int, text: str, content_type: str = "application/json") -> Reply:
        """An arbitrary body (a non-OpenAI error shape, plain text, HTML)."""
        return cls("raw", text, status=status, headers={"Content-Type": content_type})


def _fill(schema: dict[str, Any], frac: float, seed: str) -> Any:
    t = schema.get("type")
    t = next((x for x in t if x != "null"), None) if isinstance(t, list) else t
    if "enum" in schema:
        return schema["enum"][0]
    if t == "object":
        return {k: _fill(v, frac, seed + k) for k, v in schema.get("properties", {}).items()}
    if t in ("number", "integer"):
        lo = float(schema.get("minimum", 0.0))
        hi = float(schema.get("maximum", 1.0))
        v = lo + frac * (hi - lo)
        return int(round(v)) if t == "integer" else round(v, 4)
    if t == "boolean":
        return frac >= 0.5
    if t == "array":
        n = max(int(schema.get("minItems", 0)), 3)
        return [_fill(schema.get("items", {"type": "string"}), frac, seed + str(i)) for i in range(n)]
    if t == "string":
        return "ok" if frac >= 0.5 else "недостаточно обосновано"
    return None


def _echo(obj: Any, echo: str) -> Any:
    """Append ``echo`` to every string of a filled schema object (enum strings left alone)."""
    if not echo:
        return obj
    if isinstance(obj, dict):
        return {k: _echo(v, echo) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_echo(v, echo) for v in obj]
    return obj + echo if isinstance(obj, str) and obj in ("ok", "недостаточно обосновано") else obj


_SCHEMA_RE = re.compile(r"JSON Schema: ")


class ScriptedOpenAI:
    """See the module docstring."""

    def __init__(self, *, delay: float = 0.0, reject_json_schema: int | None = None) -> None:
        self.delay = delay
        self.reject_json_schema = reject_json_schema
        self.model_scores: dict[str, float] = {}
        self.default_score = 0.8
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.paths: list[str] = []
        self._quirks_off()
        self.in_flight = 0
        self.max_in_flight = 0
        self._queue: deque[Reply] = deque()
        self._model_queues: dict[str, deque[Reply]] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _quirks_off(self) -> None:
        self.reasoning_field = False
        self.refuse_max_tokens = False
        self.accept_formats: set[str] | None = None
        self.strict_formats = False
        self.omit_usage = False
        self.echo_auth = False
        self.every_429 = 0  # every Nth request answered 429 with Retry-After: retry_after_429 (benchmarks)
        self.retry_after_429 = 1.0
        self._n_seen = 0
        self.responder: Any = None  # responder(body) -> str | None: a scripted model's answer in smart mode

    # ---------------------------------------------------------------- control
    def script(self, *replies: Reply, model: str | None = None) -> ScriptedOpenAI:
        with self._lock:
            (self._model_queues.setdefault(model, deque()) if model else self._queue).extend(replies)
        return self

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.headers_seen.clear()
            self.paths.clear()
            self._quirks_off()
            self._queue.clear()
            self._model_queues.clear()
            self.max_in_flight = 0
            self.model_scores.clear()
            self.reject_json_schema = None
            self.delay = 0.0
            self.default_score = 0.8

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> ScriptedOpenAI:
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms delayed-ACK stalls

            def log_message(self, *args: Any) -> None:  # silence
                pass

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                status, payload, headers, delay = srv._handle(body, dict(self.headers.items()), self.path)
                with srv._lock:
                    srv.in_flight += 1
                    srv.max_in_flight = max(srv.max_in_flight, srv.in_flight)
                try:
                    if delay:
                        time.sleep(delay)
                    self._send(status, payload, headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with srv._lock:
                        srv.in_flight -= 1

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                headers = dict(headers or {})
                ctype = headers.pop("Content-Type", "application/json")
                data = (payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> ScriptedOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---------------------------------------------------------------- behaviour
    def _next(self, model: str) -> Reply:
        with self._lock:
            q = self._model_queues.get(model)
            if q:
                return q.popleft()
            if self._queue:
                return self._queue.popleft()
        return Reply.smart()

    def _handle(self, body: dict[str, Any], headers: dict[str, str] | None = None,
                path: str = "/v1/chat/completions") -> tuple[int, Any, dict[str, str], float]:
        model = str(body.get("model", ""))
        headers = {k.lower(): v for k, v in (headers or {}).items()}
        with self._lock:
            self.requests.append(body)
            self.headers_seen.append(headers)
            self.paths.append(path)
        echo = f" [auth: {headers.get('authorization', '')} query: {path.partition('?')[2]}]" if self.echo_auth else ""
        rf = body.get("response_format") or {}
        if self.reject_json_schema and rf.get("type") == "json_schema":
            return self.reject_json_schema, {"error": {"message": "json_schema is not supported" + echo}}, {}, self.delay
        if rf and self.accept_formats is not None:
            if not self.accept_formats:
                return 400, {"error": {"message": "response_format is not supported", "type": "invalid_request_error"}}, {}, self.delay
            if rf.get("type") not in self.accept_formats or (self.strict_formats and set(rf) - {"type"}):
                return 422, {"object": "error", "message": {"detail": [{"type": "extra_forbidden",
                             "loc": ["body", "response_format"], "msg": "Extra inputs are not permitted"}]},
                             "type": "invalid_request_message_error"}, {}, self.delay
        if self.refuse_max_tokens and "max_tokens" in body:
            return 400, {"error": {
                "message": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                           "Use 'max_completion_tokens' instead.",
                "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}}, {}, self.delay
        reply = self._next(model)
        if self.every_429:
            with self._lock:
                self._n_seen += 1
                limited = self._n_seen % self.every_429 == 0
            if limited:  # a rate limit, answered at once (a provider's gateway does not wait)
                return 429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}}, {
                    "Retry-After": f"{self.retry_after_429:g}"}, 0.0
        delay = self.delay + reply.delay
        if reply.kind == "status":
            out_headers = {}
            if reply.retry_after is not None:
                out_headers["Retry-After"] = str(reply.retry_after)
            payload = reply.body
            if echo and isinstance(payload, dict):
                payload = {"error": {**payload.get("error", {}), "message": str(payload.get("error", {}).get("message", "")) + echo}}
            return reply.status, payload, out_headers, delay
        if reply.kind == "raw":
            return reply.status, str(reply.body) + echo, dict(reply.headers), delay
        if reply.kind == "no_choices":
            return 200, {"id": "gen-scripted", "object": "chat.completion", "created": int(time.time()), "model": model,
                         "choices": [], "error": {"message": "upstream provider error", "code": 502}}, {}, delay
        if reply.kind == "json":
            content = json.dumps(reply.body, ensure_ascii=False)
        elif reply.kind == "text":
            content = reply.body + echo if reply.body else reply.body
        else:
            content = self.smart_content(body, echo=echo)
        return 200, self._completion(model, content, body), {}, delay

    def smart_content(self, body: dict[str, Any], echo: str = "") -> str:
        """Deterministic valid content for a request (see the module docstring)."""
        if self.responder is not None and (own := self.responder(body)) is not None:
            return str(own) + echo
        model = str(body.get("model", ""))
        frac = self.model_scores.get(model, self.default_score)
        messages = body.get("messages") or []
        text = "\n".join(str(m.get("content", "")) for m in messages)
        rf = body.get("response_format") or {}
        schema = None
        if rf.get("type") == "json_schema":
            schema = (rf.get("json_schema") or {}).get("schema")
        elif rf.get("schema"):
            schema = rf["schema"]
        else:
            m = _SCHEMA_RE.search(text)
            if m:
                try:
                    schema, _ = json.JSONDecoder().raw_decode(text, m.end())
                except json.JSONDecodeError:
                    schema = None
        if isinstance(schema, dict):
            return json.dumps(_echo(_fill(schema, frac, model), echo), ensure_ascii=False)
        if "No: " in text and "Yes" in text:  # the production show/no-show prompt
            return ("Yes" if frac >= 0.5 else "No: ответ не опирается на контекст") + (f"\n{echo}" if echo else "")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
        return f"Тестовый ответ модели {model} ({digest}).{echo}"

    def _completion(self, model: str, content: str, body: dict[str, Any]) -> dict[str, Any]:
        n_prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [])
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if self.reasoning_field:
            message = {"role": "assistant", "content": "", "reasoning_content": content}
        out: dict[str, Any] = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": n_prompt, "completion_tokens": len(content.split()),
                      "total_tokens": n_prompt + len(content.split())},
        }
        if self.omit_usage:
            del out["usage"]
        return out


@pytest.fixture
def scripted_openai() -> Iterator[ScriptedOpenAI]:
    """A running :class:`ScriptedOpenAI`; ``.base_url`` points at it."""
    with ScriptedOpenAI() as srv:
        yield srv


@pytest.fixture
def scripted_openai_env(scripted_openai: ScriptedOpenAI, monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAI]:
    """The scripted server as the default provider (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` set, settings reloaded)."""
    from voproshalych_eval.config import get_settings

    monkeypatch.setenv("OPENAI_BASE_URL", scripted_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-123")
    get_settings.cache_clear()
    yield scripted_openai
    get_settings.cache_clear()


def _main() -> None:  # pragma: no cover - used by benchmarks: a server in its own process
    import argparse
    import sys

    ap = argparse.ArgumentParser(description="Run the scripted OpenAI-compatible server (smart mode) until killed.")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--every-429", type=int, default=0, help="answer every Nth request with HTTP 429 (0: never)")
    ap.add_argument("--retry-after", type=float, default=1.0, help="the Retry-After of those 429s, seconds")
    a = ap.parse_args()
    with ScriptedOpenAI(delay=a.delay) as srv:
        srv.every_429, srv.retry_after_429 = a.every_429, a.retry_after
        print(srv.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            sys.exit(0)


if __name__ == "__main__":  # pragma: no cover
    _main()
