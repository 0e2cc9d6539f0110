"""LLM providers: a list of OpenAI-compatible endpoints (name, base URL, API-key variable, models).

Configured in ``.streamlit/secrets.toml``::

    [llm]
    concurrency = 8          # optional
    timeout = 60             # seconds per call, optional

    [[llm.providers]]
    name = "openrouter"
    base_url = "https://openrouter.ai/api/v1"
    api_key_env = "OPENROUTER_API_KEY"      # read from the environment or from the top level of secrets.toml
    models = ["google/gemini-2.5-flash", "openai/gpt-4o-mini"]
    headers = { "HTTP-Referer" = "https://example.org", "X-Title" = "Voproshalych eval" }  # optional
    context_window = 4096    # optional: tokens, when the server does not report its window

A base URL may carry query parameters (``https://host/openai/v1?api-version=2024-06-01&api-key=...``): they
are sent with every request (:func:`split_base_url`); user-info (``https://user:pass@host/v1``) is sent as
HTTP Basic auth by the HTTP client — which then drops the API key, so a provider with both is refused.
Both are masked in logs and never stored.

When no provider is listed, the SDK's own ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` variables define a
provider named ``default`` whose models come from ``VOPROSHALYCH_EVAL_LLM_MODELS`` (comma list) or
``["gpt-4o-mini"]``. Nothing configured -> an empty list (the app runs on offline heuristics).

A :class:`Provider` never holds the key itself; :func:`resolve_api_key` reads it at call time and the
key never reaches a repr, a log line, the database or the UI.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from voproshalych_eval.config import environ, get_settings

# the endpoint-URL helpers live below the LLM layer (the embedder uses them too); re-exported here
from voproshalych_eval.endpoints import ProviderConfigError as ProviderConfigError
from voproshalych_eval.endpoints import public_url as public_url
from voproshalych_eval.endpoints import split_base_url as split_base_url

DEFAULT_MODELS = ["gpt-4o-mini"]
#: The SDK's endpoint when no base URL is given.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Placeholder key for local servers that need none (the SDK refuses an empty key).
NO_KEY = "not-needed"


@dataclass(frozen=True)
class Provider:
    """One OpenAI-compatible endpoint. ``api_key_env`` is the *name* of the variable holding the key."""

    name: str
    base_url: str | None
    api_key_env: str | None = None
    models: list[str] = field(default_factory=list)
    #: extra request headers (OpenRouter's optional ``HTTP-Referer`` / ``X-Title`` attribution)
    headers: dict[str, str] = field(default_factory=dict)
    #: the model's context window in tokens when the server does not report it (``context_window = 4096``)
    context_window: int | None = None

    @property
    def endpoint(self) -> str:
        """The base URL without credentials (scheme, host, port, path): what the cache key and the UI use."""
        return public_url(self.base_url or DEFAULT_BASE_URL) or DEFAULT_BASE_URL

    def describe(self) -> dict[str, Any]:
        """Public description (no key): name, host of the base URL, key variable name, models."""
        return {
            "name": self.name,
            "base_url": public_url(self.base_url),
            "headers": sorted(self.headers),
            "api_key_env": self.api_key_env,
            "api_key_set": resolve_api_key(self) is not None,
            "models": list(self.models),
        }


def has_user_info(url: str | None) -> bool:
    """Whether ``url`` carries ``user[:password]@`` (sent as HTTP Basic auth by the HTTP client)."""
    try:
        return bool(url) and "@" in urlsplit(url).netloc
    except ValueError:
        return False


def _secrets(settings: Any) -> Mapping[str, Any]:
    sec = getattr(settings, "secrets", None) if settings is not None else None
    return sec if isinstance(sec, Mapping) else {}


def resolve_api_key(provider: Provider, settings: Any = None, env: Mapping[str, str] | None = None) -> str | None:
    """The provider's key from the environment, else from the top level (or ``[llm]``) of secrets.toml."""
    if not provider.api_key_env:
        return None
    env = environ() if env is None else env
    if env.get(provider.api_key_env):
        return env[provider.api_key_env]
    if settings is None:
        try:
            settings = get_settings()
        except Exception:  # noqa: BLE001
            settings = None
    sec = _secrets(settings)
    for scope in (sec, sec.get("llm") if isinstance(sec.get("llm"), Mapping) else {}):
        value = scope.get(provider.api_key_env) if isinstance(scope, Mapping) else None
        if isinstance(value, str) and value:
            return value
    return None


def _models(value: Any) -> list[str]:
    if isinstance(value, str):
        return [m.strip() for m in value.split(",") if m.strip()]
    if isinstance(value, list | tuple):
        out = []
        for m in value:
            if isinstance(m, Mapping):
                m = m.get("id") or m.get("name")
            if m:
                out.append(str(m).strip())
        return out
    return []


def llm_options(settings: Any = None) -> dict[str, Any]:
    """Non-secret options of the ``[llm]`` table (concurrency, timeout, ...)."""
    llm = _secrets(settings).get("llm")
    if not isinstance(llm, Mapping):
        return {}
    return {k: v for k, v in llm.items() if k != "providers" and not k.isupper()}


def configured_providers(settings: Any = None, env: Mapping[str, str] | None = None) -> list[Provider]:
    """Providers from ``[[llm.providers]]`` in secrets.toml, else the ``OPENAI_*`` default, else ``[]``.

    Never raises for a malformed entry: entries without a name or a base URL are skipped.
    """
    env = environ() if env is None else env
    providers: list[Provider] = []
    llm = _secrets(settings).get("llm")
    entries = llm.get("providers") if isinstance(llm, Mapping) else None
    if isinstance(entries, Mapping):  # [llm.providers.<name>] tables
        entries = [{"name": k, **v} for k, v in entries.items() if isinstance(v, Mapping)]
    if isinstance(entries, list):
        for i, e in enumerate(entries):
            if not isinstance(e, Mapping):
                continue
            base = e.get("base_url") or e.get("base-url")
            if not base:
                continue
            headers = e.get("headers")
            providers.append(
                Provider(
                    name=str(e.get("name") or f"provider{i + 1}"),
                    base_url=str(base),
                    api_key_env=(e.get("api_key_env") or e.get("api-key-env") or None),
                    models=_models(e.get("models") or e.get("chat_models") or e.get("chat-models")) or list(DEFAULT_MODELS),
                    headers={str(k): str(v) for k, v in headers.items()} if isinstance(headers, Mapping) else {},
                    context_window=_window(e.get("context_window"), str(e.get("name") or f"provider{i + 1}")),
                )
            )
    if providers:
        return providers
    base = env.get("OPENAI_BASE_URL")
    if base or env.get("OPENAI_API_KEY"):
        models = _models(env.get("VOPROSHALYCH_EVAL_LLM_MODELS", "")) or list(DEFAULT_MODELS)
        return [Provider("default", base, "OPENAI_API_KEY", models)]
    return []


def _window(value: Any, name: str) -> int | None:
    if value in (None, ""):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n <= 0:
        raise ProviderConfigError(f"provider {name!r}: context_window must be a positive number of tokens, got {value!r}")
    return n


def all_models(providers: list[Provider]) -> list[str]:
    """Every configured model, in order, without duplicates."""
    return list(dict.fromkeys(m for p in providers for m in p.models))
