"""Secret redaction: one layer for every log line, error message, stored reply and export.

What is masked (replaced by ``***``):

* **configured secret values** — every API key, token or password the app can see: the
  ``OPENAI_API_KEY`` / ``*_API_KEY`` / ``*_TOKEN`` / ``*_SECRET`` / ``*PASSWORD*`` environment variables
  and ``secrets.toml`` entries, the passwords of user-info in configured URLs (``OPENAI_BASE_URL``,
  provider base URLs, ``DATABASE_URL``) and the values of credential-like query parameters in them
  (``?api-key=...``), and the base64 ``user:password`` of the Basic auth header built from user-info.
  Values shorter than :data:`MIN_SECRET_LEN` characters (``"local"``) are not masked as free text —
  they would mangle ordinary words — but still are in the structural rules below;
* **URLs** anywhere in a text: user-info (``user:pass@``) and the values of credential-like query
  parameters (``api-key``, ``key``, ``token``, ``access_token``, ``secret``, ``password``, ``sig``...);
* **headers**: ``Authorization`` / ``Proxy-Authorization`` / ``api-key`` / ``x-api-key`` values,
  and any ``Bearer <token>``;
* **libpq connection strings** in ``key=value`` form: ``password=…`` / ``sslpassword=…`` (quoted or not), and the
  passwords of configured ``*_URL`` variables in that form (:func:`endpoints.dsn_secrets`).

:class:`RedactingFilter` applies :func:`redact` to a log record (message, arguments, formatted
traceback). :func:`configure_logging` is the one logging setup of the CLI, the app and background jobs:
it redacts every log record at creation (a record factory: handlers installed later, such as the
embedded server's log file, are covered too), installs a stderr handler with that filter and puts the
filter on every other handler found on the root logger and on the HTTP libraries' loggers (the ``openai`` SDK logs each request through
``httpx2`` (3.x) or ``httpx`` (1.x), and configures logging itself when ``OPENAI_LOG`` is set).
"""

from __future__ import annotations

import base64
import logging
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any, TextIO
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

from voproshalych_eval.config import environ, load_secrets
from voproshalych_eval.endpoints import dsn_secrets

MASK = "***"
#: Shorter configured values are not masked as free text (a local server's key "local" is a common word).
MIN_SECRET_LEN = 8
#: Loggers of the HTTP stack under the SDKs (openai 3.x logs each request under ``httpx2``; 1.x under ``httpx``).
HTTP_LOGGERS = ("openai", "httpx", "httpcore", "httpx2", "httpcore2", "urllib3")
#: Other loggers with handlers of their own (Streamlit logs page exceptions through its own handler).
OWN_HANDLER_LOGGERS = ("streamlit",)

#: A variable or setting whose name has one of these words (split at ``_ - .``) holds a secret: ``OPENAI_API_KEY``,
#: ``BOT_TOKEN``, ``db.password``. (Not ``PWD``, the working directory, nor ``SSH_AUTH_SOCK``.)
_SECRET_WORDS = {"key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials",
                 "authorization", "cookie"}
_SECRET_PARAM = re.compile(
    r"^(api[-_]?key|apikey|key|token|access[-_]?token|auth|auth[-_]?token|secret|client[-_]?secret|"
    r"password|passwd|pwd|sig|signature|x-api-key)$",
    re.IGNORECASE,
)
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")
#: A ``${VARIABLE}`` reference (a header template of a bot API) names a secret, it holds none: kept as is.
_HEADER = re.compile(
    r"(?P<name>\b(?:proxy-)?authorization|\bx-api-key|\bapi[-_]key)(?P<sep>[\"']?\s*[:=]\s*[\"']?)"
    r"(?!(?:(?:bearer|basic|token)\s+)?\$\{[A-Za-z_][A-Za-z0-9_]*\}(?:[\s\"',;\]]|$))"
    r"(?:(?P<scheme>bearer|basic|token)\s+)?(?P<value>[^\s\"',;}]+)",
    re.IGNORECASE,
)
#: a libpq ``key=value`` connection string's password (``password=s3cret``, ``password='a b'``)
_DSN_PASSWORD = re.compile(r"\b(?P<key>(?:ssl)?password)\s*=\s*(?:'(?:\\.|[^'\\])*'|[^\s'\",;)]+)", re.IGNORECASE)
_BEARER = re.compile(r"\b(bearer)\s+[A-Za-z0-9._~+/=-]{6,}", re.IGNORECASE)

_lock = threading.Lock()
_extra: set[str] = set()
_cache: tuple[int, frozenset[str]] | None = None


# --------------------------------------------------------------------------- URLs
def url_secrets(url: str | None) -> list[str]:
    """The secret parts of a URL: the user-info password (and user name) and credential-like query values."""
    if not url or "://" not in url:
        return []
    try:
        p = urlsplit(url)
        out = [x for x in (p.password, p.username if p.password else None) if x]
        if p.username or p.password:  # the Basic auth header the HTTP client builds from them
            pair = f"{unquote(p.username or '')}:{unquote(p.password or '')}".encode()
            out.append(base64.b64encode(pair).decode("ascii"))
        out += [v for k, v in parse_qsl(p.query, keep_blank_values=False) if _SECRET_PARAM.match(k) and v]
    except ValueError:
        return []
    return out


def redact_url(url: str) -> str:
    """``url`` with user-info and credential-like query values masked (structure kept readable)."""
    try:
        p = urlsplit(url)
        netloc = p.netloc
        if "@" in netloc:
            netloc = f"{MASK}@" + netloc.rsplit("@", 1)[1]
        query = p.query
        if query:
            parts = []
            for piece in query.split("&"):
                k, eq, v = piece.partition("=")
                parts.append(f"{k}={MASK}" if eq and v and _SECRET_PARAM.match(k) else piece)
            query = "&".join(parts)
        return urlunsplit((p.scheme, netloc, p.path, query, p.fragment))
    except ValueError:  # unparseable: keep scheme and host-ish head only
        head = url.split("://", 1)
        return f"{head[0]}://{MASK}" if len(head) == 2 else MASK


# --------------------------------------------------------------------------- configured values
def register_secret(value: str | None) -> None:
    """Add a value to mask everywhere (e.g. a header value read from an environment variable)."""
    if value and isinstance(value, str):
        with _lock:
            _extra.add(value)
            global _cache
            _cache = None


def secret_name(name: str) -> bool:
    """Whether a variable, setting, run parameter or audit detail called ``name`` holds a secret — the one rule
    for secret names: one of its words (split at anything but letters and digits) is in :data:`_SECRET_WORDS`
    or ends with ``apikey`` / ``password`` (``OPENAI_API_KEY``, ``bot-token``, ``db.password``,
    ``openaiapikey``); counts such as ``max_tokens`` are not secrets."""
    return any(w in _SECRET_WORDS or w.endswith(("apikey", "password"))
               for w in re.split(r"[^a-z0-9]+", name.lower()) if w)


def _walk(obj: Any, name: str = "") -> Iterable[str]:
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from _walk(v, str(k))
    elif isinstance(obj, list | tuple):
        for v in obj:
            yield from _walk(v, name)
    elif isinstance(obj, str):
        if secret_name(name):
            yield obj
        yield from url_secrets(obj)


def configured_secrets(env: Mapping[str, str] | None = None, secrets: Mapping[str, Any] | None = None) -> set[str]:
    """Every secret value visible to the app (see the module docstring), of any length."""
    if env is None:
        env = environ()
    out: set[str] = set()
    for k, v in env.items():
        if not v:
            continue
        if secret_name(k) and not k.endswith(("_ENV", "_FILE", "_PATH")):
            out.add(v)
        if k.endswith("_URL") or k.endswith("_URI"):
            out.update(url_secrets(v))
            if "://" not in v:  # a libpq key=value connection string
                out.update(dsn_secrets(v))
    if secrets is None:
        try:
            secrets = load_secrets()
        except Exception:  # noqa: BLE001 - an unreadable secrets file must not break logging
            secrets = {}
    out.update(_walk(secrets))
    with _lock:
        out.update(_extra)
    return {s for s in out if isinstance(s, str) and s.strip()}


def _maskable() -> frozenset[str]:
    """Configured values long enough to mask as free text, longest first; re-read when the env changes."""
    global _cache
    env = environ()
    stamp = hash((tuple(sorted(env.items())), env.get("VOPROSHALYCH_EVAL_SECRETS"), len(_extra)))
    with _lock:
        if _cache is not None and _cache[0] == stamp:
            return _cache[1]
    values = frozenset(s for s in configured_secrets() if len(s) >= MIN_SECRET_LEN)
    with _lock:
        _cache = (stamp, values)
    return values


def refresh() -> None:
    """Forget the cached set of configured values (after secrets.toml changed)."""
    global _cache
    with _lock:
        _cache = None


def scrub_values(text: str, values: Iterable[str] | None = None) -> str:
    """``text`` with every configured secret value (and its URL-encoded form) replaced by ``***``."""
    if not text:
        return text
    vals = _maskable() if values is None else [v for v in values if v and len(v) >= MIN_SECRET_LEN]
    for v in sorted(vals, key=len, reverse=True):
        if v in text:
            text = text.replace(v, MASK)
        q = quote(v, safe="")
        if q != v and q in text:
            text = text.replace(q, MASK)
    return text


def scrub_obj(obj: Any, values: Iterable[str] | None = None) -> Any:
    """:func:`scrub_values` applied to every string inside a JSON-like object (dict keys included)."""
    vals = list(_maskable() if values is None else values)
    if not vals:
        return obj
    if isinstance(obj, str):
        return scrub_values(obj, vals)
    if isinstance(obj, Mapping):
        return {scrub_obj(k, vals) if isinstance(k, str) else k: scrub_obj(v, vals) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(scrub_obj(v, vals) for v in obj)
    return obj


def redact(text: str | None, values: Iterable[str] | None = None) -> str | None:
    """The full rule set: configured values, URLs (user-info, credential query values), auth headers."""
    if not text:
        return text
    text = scrub_values(text, values)
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = _HEADER.sub(
        lambda m: f"{m.group('name')}{m.group('sep')}{(m.group('scheme') + ' ') if m.group('scheme') else ''}{MASK}",
        text,
    )
    text = _DSN_PASSWORD.sub(lambda m: f"{m.group('key')}={MASK}", text)
    return _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)


def redact_obj(obj: Any, values: Iterable[str] | None = None) -> Any:
    """:func:`redact` applied to every string inside a JSON-like object (dict keys included)."""
    vals = list(_maskable() if values is None else values)
    if isinstance(obj, str):
        return redact(obj, vals)
    if isinstance(obj, Mapping):
        return {redact_obj(k, vals) if isinstance(k, str) else k: redact_obj(v, vals) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(redact_obj(v, vals) for v in obj)
    return obj


# --------------------------------------------------------------------------- logging
class RedactingFilter(logging.Filter):
    """Rewrites a record so that its message, arguments and traceback text are redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is still logged, redacted
            msg = f"{record.msg!s} {record.args!r}"
        record.msg = redact(msg)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
            record.exc_info = None  # the redacted text is what gets printed
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (pytest and Streamlit swap it)."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:  # StreamHandler.__init__/setStream assign it; ignored
        pass


_FILTER = RedactingFilter()
_HANDLER_ATTR = "_voproshalych_eval_handler"


_FACTORY_ATTR = "_voproshalych_eval_redacting"


def install_record_factory() -> None:
    """Redact every log record when it is created, whichever handler emits it — also handlers installed
    later (the embedded server's log file, a library's own). Idempotent; :func:`uninstall_record_factory`."""
    current = logging.getLogRecordFactory()
    if getattr(current, _FACTORY_ATTR, False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = current(*args, **kwargs)
        _FILTER.filter(record)
        return record

    setattr(factory, _FACTORY_ATTR, True)
    factory.wrapped = current  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


def uninstall_record_factory() -> None:
    current = logging.getLogRecordFactory()
    if getattr(current, _FACTORY_ATTR, False):
        logging.setLogRecordFactory(current.wrapped)  # type: ignore[attr-defined]


def protect_handlers() -> None:
    """Put the redacting filter on every handler of the root logger, the HTTP loggers and Streamlit's."""
    loggers = [logging.getLogger()] + [logging.getLogger(n) for n in (*HTTP_LOGGERS, *OWN_HANDLER_LOGGERS)]
    for lg in loggers:
        for h in lg.handlers:
            if not any(isinstance(f, RedactingFilter) for f in h.filters):
                h.addFilter(_FILTER)


def configure_logging(*, verbose: bool = False, stream: TextIO | None = None,
                      fmt: str = "%(levelname)s %(name)s: %(message)s") -> logging.Handler | None:
    """The one logging setup (CLI, app, background jobs); idempotent.

    One stderr handler with the redacting filter on the root logger (INFO, DEBUG with ``verbose``); the
    HTTP libraries are kept at WARNING unless ``verbose`` (their INFO line is one per request); every
    other handler already installed is given the filter too. When the host already configured the root
    logger (a test runner, an embedding application) and no ``stream`` is given, no handler is added —
    like ``logging.basicConfig`` — and None is returned; its handlers are protected all the same.
    """
    root = logging.getLogger()
    handler = next((h for h in root.handlers if getattr(h, _HANDLER_ATTR, False)), None)
    install_record_factory()
    if handler is None and stream is None and root.handlers:
        root.setLevel(logging.DEBUG if verbose else min(root.level or logging.INFO, logging.INFO))
        _quiet_http(verbose)
        protect_handlers()
        return None
    if handler is not None and (stream is not None) != (type(handler) is logging.StreamHandler):
        root.removeHandler(handler)  # switching between the live stderr and an explicit stream
        handler = None
    if handler is None:
        handler = logging.StreamHandler(stream) if stream is not None else _StderrHandler()
        setattr(handler, _HANDLER_ATTR, True)
        root.addHandler(handler)
    elif stream is not None and isinstance(handler, logging.StreamHandler):
        handler.setStream(stream)
    handler.setFormatter(logging.Formatter(fmt))
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    _quiet_http(verbose)
    protect_handlers()
    return handler


def _quiet_http(verbose: bool) -> None:
    quiet = logging.INFO if verbose else logging.WARNING
    for name in (*HTTP_LOGGERS, "alembic", "numba", "urllib3"):
        logging.getLogger(name).setLevel(quiet)
