r"""One question to a bot's API, one :class:`BotReply` back.

Outcomes (``BotReply.outcome``): ``answered`` (an answer text, maybe a page URL and chunk texts),
``not_found`` / ``banned`` (the bot declined — an outcome, not a failure), ``error`` (the request did not
produce a usable reply). An empty answer is an answer (scored as the bad answer it is); map it to a decline
with an outcome rule when the bot means one (``200:"answer":\s*""=not_found``). Transport failures — timeouts, connection errors, 5xx, 429 — are retried
``spec.retries`` times (pause ``retry_backoff_s`` doubled per attempt, a 429's ``Retry-After`` instead when
given, capped at :data:`MAX_PAUSE_S`) and counted by kind in ``BotReply.transport_failures`` whether or not
a later attempt succeeded. Error kinds: ``timeout``, ``connect``, ``http_429``, ``http_5xx``, ``http_4xx``
(other non-2xx, not retried), ``bad_reply`` (not JSON / no answer at the path), ``rule`` (an outcome rule
mapped the reply to ``error``), ``missing_variable`` (a header's ``${VARIABLE}`` is not set).

Header values are resolved from ``${VARIABLE}`` references at each call and exist only in the request
sent: a reply, an error message or a log line never contains them.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

from voproshalych_eval.bot_api.rate_limit import RateLimiter
from voproshalych_eval.bot_api.reply import as_text, as_texts, json_path
from voproshalych_eval.bot_api.spec import ENV_REF, BotApiSpec, OutcomeRule, check_variables, classify
from voproshalych_eval.config import secret_value
from voproshalych_eval.errors import VoproshalychEvalError
from voproshalych_eval.redaction import register_secret

MAX_PAUSE_S = 60.0
BODY_EXCERPT = 200


#: error kind -> the raw failure kind of ``metrics.failures`` named in a recorded error (its category:
#: ``transport`` for timeouts and connections, ``rate_limit``, ``server``, ``bad_request``, ``parse`` for
#: ``bad_reply``, ``error`` for the rest)
RAW_KINDS = {
    "timeout": "timeout", "connect": "connection", "http_429": "rate_limited", "http_5xx": "server_error",
    "http_4xx": "bad_request", "bad_reply": "parse_error",
}


def error_message(kind: str | None, reason: str | None) -> str:
    """The error recorded for a failed item: ``"http_5xx (server_error): HTTP 503: …"``."""
    raw = RAW_KINDS.get(kind or "")
    return f"{kind}{f' ({raw})' if raw else ''}: {reason}"


class MissingVariable(VoproshalychEvalError, ValueError):
    """A header references ``${NAME}`` but ``NAME`` is set neither in the environment nor in secrets.toml."""

    def __init__(self, header: str, variable: str) -> None:
        self.header, self.variable = header, variable
        super().__init__(
            f"header {header!r} needs the variable {variable}, which is not set "
            "(export it or put it at the top level of .streamlit/secrets.toml)"
        )


#: ``error_kind`` and transport-failure kind -> (ru, en) words, for pages and reports
ERROR_KIND_LABELS: dict[str, tuple[str, str]] = {
    "timeout": ("нет ответа за таймаут", "timeout"),
    "connect": ("нет соединения", "connection failed"),
    "http_429": ("HTTP 429 — лимит запросов", "HTTP 429 — rate limited"),
    "http_5xx": ("HTTP 5xx — ошибка сервера", "HTTP 5xx — server error"),
    "http_4xx": ("HTTP 4xx — ошибка запроса", "HTTP 4xx — request refused"),
    "http_3xx": ("HTTP 3xx — перенаправление", "HTTP 3xx — redirect"),
    "missing_variable": ("не задана переменная заголовка", "header variable not set"),
    "rule": ("ошибка по правилу исходов", "error by an outcome rule"),
    "bad_reply": ("ответ не разобран", "unreadable reply"),
    "generation": ("сбой генерации", "generation failed"),
    "internal": ("внутренняя ошибка", "internal error"),
}


@dataclass
class BotReply:
    """What one question got from the bot (JSON-ready via :meth:`to_dict`)."""

    outcome: str
    answer: str | None = None
    url: str | None = None
    contexts: list[str] = field(default_factory=list)
    status: int | None = None
    reason: str | None = None  # the decline's body ("Answer banned") or the error's description
    error_kind: str | None = None
    attempts: int = 0
    transport_failures: dict[str, int] = field(default_factory=dict)
    latency_s: float | None = None  # of the attempt that produced the reply
    waited_s: float = 0.0  # time spent waiting for the rate limit

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _excerpt(text: str) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= BODY_EXCERPT else t[: BODY_EXCERPT - 1] + "…"


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


class BotApiClient:
    """Sends questions as ``spec`` describes; thread-safe (one ``httpx.Client``, one shared rate limiter)."""

    def __init__(
        self,
        spec: BotApiSpec,
        *,
        http: Any = None,
        limiter: RateLimiter | None = None,
        secret: Callable[[str], str | None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx  # heavy: defers httpx

        self.spec = spec.validate()
        self._http = http or httpx.Client(timeout=spec.timeout_s, follow_redirects=True)
        self.limiter = limiter if limiter is not None else (RateLimiter(spec.rps) if spec.rps else None)
        if secret is None:
            secret = secret_value
        self._secret = secret
        self._sleep = sleep

    # ------------------------------------------------------------------ headers

    def _headers(self) -> dict[str, str]:
        check_variables(self.spec.headers)  # a spec from an old run's parameters is checked again here
        out: dict[str, str] = {}
        if self.spec.body is not None:
            out["Content-Type"] = "application/json; charset=utf-8"
        for name, template in self.spec.headers.items():

            def sub(m: Any, name: str = name) -> str:
                value = self._secret(m.group(1))
                if value is None:
                    raise MissingVariable(name, m.group(1))
                # whatever the variable is called, its value is masked in every log line, stored reply and error
                register_secret(value)
                return value

            out[name] = ENV_REF.sub(sub, template)
        return out

    def check_variables(self) -> None:
        """Raise :class:`MissingVariable` when a header's variable is not set (checked before a run starts)."""
        self._headers()

    # ------------------------------------------------------------------ one question

    def ask(self, question: str, dialog_context: Sequence[str] = ()) -> BotReply:
        import httpx  # heavy: defers httpx

        spec = self.spec
        url = spec.request_url(question)
        body = spec.request_body(question, dialog_context)
        failures: Counter[str] = Counter()
        attempts, waited = 0, 0.0
        while True:
            attempts += 1
            try:
                headers = self._headers()
            except MissingVariable as exc:
                return BotReply("error", reason=str(exc), error_kind="missing_variable", attempts=attempts)
            if self.limiter is not None:
                waited += self.limiter.acquire()
            retry_after: float | None = None
            t0 = time.perf_counter()
            try:
                resp = self._http.request(spec.method, url, content=body, headers=headers, timeout=spec.timeout_s)
            except httpx.TimeoutException as exc:
                kind, detail = "timeout", f"no reply within {spec.timeout_s:g} s ({type(exc).__name__})"
            except httpx.TransportError as exc:
                kind, detail = "connect", f"{type(exc).__name__}: {exc}"
            else:
                latency = time.perf_counter() - t0
                status, text = resp.status_code, resp.text
                common = {"status": status, "attempts": attempts, "transport_failures": dict(failures),
                          "latency_s": latency, "waited_s": waited}
                rule = classify(status, text, spec.outcomes)
                if rule is not None:
                    return self._by_rule(rule, resp, text, common)
                if 200 <= status < 300:
                    return self._answered(resp, common)
                if status == 429 or status >= 500:
                    kind = "http_429" if status == 429 else "http_5xx"
                    detail = f"HTTP {status}: {_excerpt(text)}"
                    retry_after = _retry_after(resp.headers.get("Retry-After")) if status == 429 else None
                else:
                    return BotReply("error", reason=f"HTTP {status}: {_excerpt(text)}" + _hint(status, spec, resp),
                                    error_kind=f"http_{status // 100}xx", **common)
            failures[kind] += 1
            if attempts > spec.retries:
                return BotReply("error", reason=detail, error_kind=kind, attempts=attempts,
                                transport_failures=dict(failures), waited_s=waited)
            pause = retry_after if retry_after is not None else spec.retry_backoff_s * 2 ** (attempts - 1)
            self._sleep(min(pause, MAX_PAUSE_S))

    def _by_rule(self, rule: OutcomeRule, resp: Any, text: str, common: dict[str, Any]) -> BotReply:
        if rule.outcome == "answered":
            return self._answered(resp, common)
        if rule.outcome == "error":
            return BotReply("error", reason=f"HTTP {resp.status_code}: {_excerpt(text)} (rule {rule.describe()})",
                            error_kind="rule", **common)
        return BotReply(rule.outcome, reason=_excerpt(text) or f"HTTP {resp.status_code}", **common)

    def _answered(self, resp: Any, common: dict[str, Any]) -> BotReply:
        spec = self.spec
        try:
            data = resp.json()
        except ValueError:
            return BotReply("error", reason=f"the reply is not JSON: {_excerpt(resp.text)}", error_kind="bad_reply", **common)
        answer = as_text(json_path(data, spec.answer_path))
        if answer is None:
            return BotReply("error", reason=f"the reply has no answer at '{spec.answer_path}'", error_kind="bad_reply", **common)
        url = json_path(data, spec.url_path) if spec.url_path else None
        if isinstance(url, list):
            url = next((u for u in url if u), None)
        contexts = as_texts(json_path(data, spec.chunks_path)) if spec.chunks_path else []
        return BotReply("answered", answer=answer, url=str(url) if url else None, contexts=contexts, **common)

    def close(self) -> None:
        self._http.close()


def _hint(status: int, spec: BotApiSpec, resp: Any) -> str:
    """What a 405 means for the settings (the bot team's QA method GET form pointed at the production ``POST /qa/``)."""
    if status != 405:
        return ""
    allow = resp.headers.get("Allow")
    return (f" (the endpoint does not accept {spec.method}" + (f"; it allows {allow}" if allow else "")
            + "; change the method (--api-method), or use the voproshalych preset (--api-preset voproshalych) "
            "for the production QA service)")
