"""OpenAI-compatible endpoint URLs, shared by the LLM client and the ``openai:<model>`` embedder: the public
form of a URL (no credentials) and the split of a base URL into the SDK's base and query parameters."""

from __future__ import annotations


def public_url(url: str | None) -> str | None:
    """The URL without user-info or query string (which could carry credentials)."""
    if not url:
        return url
    from urllib.parse import urlsplit, urlunsplit

    p = urlsplit(url)
    host = p.hostname or ""
    if p.port:
        host += f":{p.port}"
    return urlunsplit((p.scheme, host, p.path, "", ""))


class ProviderConfigError(ValueError):
    """A provider's configuration cannot work (the message names the provider, never a credential)."""


def split_base_url(url: str | None, provider: str = "default") -> tuple[str | None, dict[str, str]]:
    """``(base URL without query, query parameters)``: the SDK appends ``/chat/completions`` to the base URL's
    path, so a query left in it would make ``/v1?api-key=K/chat/completions``. The parameters are sent as
    the client's default query instead. A fragment, a repeated parameter or a non-HTTP scheme is refused."""
    if not url:
        return url, {}
    from urllib.parse import parse_qsl, urlsplit, urlunsplit

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
