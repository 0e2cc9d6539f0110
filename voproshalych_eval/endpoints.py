"""Endpoint and database URLs: the public form of an HTTP URL (no credentials), the split of a base URL into
the SDK's base and query parameters (the LLM client and the ``openai:<model>`` embedder), and the one
secret-aware rendering of a PostgreSQL connection string in either form — a URL (``postgresql://u:p@h/db``)
or libpq ``key=value`` pairs (``host=h password=p dbname=db``): :func:`dsn_fields`, :func:`public_dsn`,
:func:`dsn_secrets`."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit, urlunsplit

from voproshalych_eval.errors import VoproshalychEvalError


def public_url(url: str | None) -> str | None:
    """The URL without user-info or query string (which could carry credentials)."""
    if not url:
        return url
    p = urlsplit(url)
    host = p.hostname or ""
    if p.port:
        host += f":{p.port}"
    return urlunsplit((p.scheme, host, p.path, "", ""))


class ProviderConfigError(VoproshalychEvalError, ValueError):
    """A provider's configuration cannot work (the message names the provider, never a credential)."""


def split_base_url(url: str | None, provider: str = "default") -> tuple[str | None, dict[str, str]]:
    """``(base URL without query, query parameters)``: the SDK appends ``/chat/completions`` to the base URL's
    path, so a query left in it would make ``/v1?api-key=K/chat/completions``. The parameters are sent as
    the client's default query instead. A fragment, a repeated parameter or a non-HTTP scheme is refused."""
    if not url:
        return url, {}
    try:
        p = urlsplit(url.strip())
        _ = p.port  # raises on a malformed port
    except ValueError as exc:
        raise ProviderConfigError(f"provider {provider!r}: malformed base URL ({exc})") from None
    shown = public_url(url)
    if p.scheme not in ("http", "https") or not p.hostname:
        raise ProviderConfigError(f"provider {provider!r}: base URL {shown!r} must be http(s)://host[:port]/path")
    if p.fragment:
        raise ProviderConfigError(f"provider {provider!r}: base URL {shown} has a '#fragment'; remove it")
    pairs = parse_qsl(p.query, keep_blank_values=True)
    names = [k for k, _ in pairs]
    dup = sorted({k for k in names if names.count(k) > 1})
    if dup:
        raise ProviderConfigError(f"provider {provider!r}: base URL {shown} repeats query parameter(s) {', '.join(dup)}")
    return urlunsplit((p.scheme, p.netloc, p.path, "", "")), dict(pairs)


#: libpq parameters that hold a credential (never shown, always masked)
DSN_SECRET_KEYS = ("password", "sslpassword")


def dsn_fields(dsn: str | None) -> dict[str, str]:
    """The parameters of a PostgreSQL connection string, URL or ``key=value`` form (libpq's own parser,
    through psycopg); an unparsable string gives ``{}`` (callers then show nothing of it)."""
    if not dsn:
        return {}
    from psycopg.conninfo import conninfo_to_dict  # heavy: defers psycopg

    try:
        return {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v is not None}
    except Exception:  # noqa: BLE001 - psycopg.ProgrammingError: not a connection string
        return {}


def public_dsn(dsn: str | None) -> str:
    """``host[:port]/dbname`` of a connection string in either form — never the user, password or options;
    ``embedded`` for none; ``unparsable connection string`` when libpq cannot read it."""
    if not dsn:
        return "embedded"
    f = dsn_fields(dsn)
    if not f:
        return "unparsable connection string"
    host = f.get("host") or f.get("hostaddr") or "local socket"
    if host.startswith("/"):
        host = "local socket"
    port = f":{f['port']}" if f.get("port") else ""
    return f"{host.split(',')[0]}{port}/{f.get('dbname') or 'postgres'}"


def dsn_secrets(dsn: str | None) -> list[str]:
    """The credential values of a connection string in either form (passwords)."""
    f = dsn_fields(dsn)
    return [f[k] for k in DSN_SECRET_KEYS if f.get(k)]
