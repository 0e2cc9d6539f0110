"""One settings object, read from environment variables and `.streamlit/secrets.toml`.

Precedence: environment variable > `secrets.toml` > default. Secrets (database passwords, API keys)
are read here and nowhere else; `Settings.__repr__` never shows them.

Two databases: the SOURCE (``DATABASE_URL``: the bot's production database, only ever read; unset = the
demo database next to the store) and the STORE (``VOPROSHALYCH_EVAL_STORE_URL``: the app's own database;
unset = the embedded PostgreSQL server in ``<home>/pgdata``).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from voproshalych_eval.endpoints import public_dsn

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EMBEDDER = "use-multilingual"


#: Every environment variable the app reads, and what it sets. They are read here only (:func:`env`).
ENV_VARS: dict[str, str] = {
    "VOPROSHALYCH_EVAL_HOME": "the app's home folder (embedded database, caches); default ./.home",
    "DATABASE_URL": "the SOURCE: the bot's PostgreSQL (read only), instead of the demo database",
    "VOPROSHALYCH_EVAL_STORE_URL": "the STORE: a PostgreSQL for the app's own state, instead of the embedded server",
    "VOPROSHALYCH_EVAL_EMBEDDER": "the default embedder (use-multilingual, e5-small, st:<dir>, openai:<model>)",
    "VOPROSHALYCH_EVAL_STORED_MODEL": "the model that filled chunk.embedding, when the database does not say",
    "VOPROSHALYCH_EVAL_LANG": "the interface language (ru, en)",
    "VOPROSHALYCH_EVAL_MAX_FAILURE_SHARE": "failed share above which a finished run is done_with_failures (0.1)",
    "VOPROSHALYCH_EVAL_SECRETS": "the path of secrets.toml",
    "OPENAI_BASE_URL": "the default LLM endpoint (when secrets.toml lists no provider)",
    "OPENAI_API_KEY": "its key",
    "VOPROSHALYCH_EVAL_LLM_MODELS": "comma-separated models of the default endpoint",
    "VOPROSHALYCH_EVAL_LLM_CONCURRENCY": "LLM calls in flight at once",
    "VOPROSHALYCH_EVAL_LLM_TIMEOUT": "seconds per LLM call",
    "VOPROSHALYCH_EVAL_EMBEDDINGS_BASE_URL": "the endpoint of openai:<model> embedders (default OPENAI_BASE_URL)",
    "VOPROSHALYCH_EVAL_EMBEDDINGS_API_KEY": "its key (default OPENAI_API_KEY)",
    "VOPROSHALYCH_EVAL_LLM_CONTEXT_WINDOW": "the LLM's context window in tokens, when the server does not report it",
    "VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE": "a judged run whose share of items with a usable judgement is below this "
                                          "ends failed (0.5; none judged always fails)",
    "VOPROSHALYCH_EVAL_ALLOW_PRIVILEGED_SOURCE": "1 = read a DATABASE_URL whose login is a superuser or owns the bot's tables",
    "VOPROSHALYCH_EVAL_TIMEZONE": "the timezone of schedules' cron lines (default Asia/Yekaterinburg, Tyumen's)",
    "VOPROSHALYCH_EVAL_NO_WORKER": "1: the app starts no job-queue worker thread (workers run elsewhere)",
    "VOPROSHALYCH_EVAL_APP_URL": "the app's base URL, for links to runs in alerts (e.g. https://eval.example)",
    "VOPROSHALYCH_EVAL_TELEGRAM_TOKEN": "the Telegram bot token of alert channels (a channel may name another variable)",
    "VOPROSHALYCH_EVAL_TELEGRAM_API_URL": "the Telegram Bot API base URL (default https://api.telegram.org)",
    # team deployment (voproshalych_eval.team; README "Team deployment")
    "VOPROSHALYCH_EVAL_TEAM": "1 = team mode: sign-in through OpenID Connect and roles (serve --team sets it)",
    "VOPROSHALYCH_EVAL_TEAM_ROLES": "allow-list of roles by e-mail: a@org=admin,b@org=analyst (wins over the claim)",
    "VOPROSHALYCH_EVAL_TEAM_ROLE_CLAIM": "ID-token claims naming the role (default roles,groups)",
    "VOPROSHALYCH_EVAL_TEAM_DEFAULT_ROLE": "role of a signed-in user nobody matched (viewer; none = no access)",
    "VOPROSHALYCH_EVAL_MASK_PERSONAL_DATA": "mask e-mails, phones, full names in exports/reports: auto (viewers), on, off",
    "VOPROSHALYCH_EVAL_OIDC_METADATA_URL": "the provider's .well-known/openid-configuration URL (serve --team)",
    "VOPROSHALYCH_EVAL_OIDC_CLIENT_ID": "the app's client id at the provider",
    "VOPROSHALYCH_EVAL_OIDC_CLIENT_SECRET": "its client secret",
    "VOPROSHALYCH_EVAL_OIDC_REDIRECT_URI": "the app's URL + /oauth2callback (default http://<address>:<port>/oauth2callback)",
    "VOPROSHALYCH_EVAL_OIDC_COOKIE_SECRET": "the key signing the sign-in cookie (default: generated once into <home>/team)",
    "VOPROSHALYCH_EVAL_OIDC_SCOPE": "scopes asked for (default: openid email profile)",
    "VOPROSHALYCH_EVAL_OIDC_PROMPT": "the prompt sent to the provider (default: Streamlit's select_account; e.g. login)",
}


def env(name: str, default: str | None = None) -> str | None:
    """The value of environment variable ``name`` (the one reader of the environment; see :data:`ENV_VARS`).

    Provider key variables named in ``secrets.toml`` (``api_key_env``) are read through here too."""
    return os.environ.get(name, default)


def environ() -> Mapping[str, str]:
    """A read-only snapshot of the environment (for functions that take an ``env`` mapping)."""
    return MappingProxyType(dict(os.environ))


def _secrets_paths() -> list[Path]:
    explicit = env("VOPROSHALYCH_EVAL_SECRETS")
    paths = [Path(explicit)] if explicit else []
    paths += [Path.cwd() / ".streamlit" / "secrets.toml", PROJECT_ROOT / ".streamlit" / "secrets.toml"]
    return paths


def load_secrets() -> dict[str, Any]:
    """Return the parsed `secrets.toml` (first one found), or an empty dict."""
    for path in _secrets_paths():
        if path.is_file():
            with path.open("rb") as fh:
                return tomllib.load(fh)
    return {}


def describe_database_url(url: str | None) -> str:
    """Human-readable description of a database URL (URL or libpq ``key=value`` form) without credentials:
    host, port and database only (:func:`endpoints.public_dsn`)."""
    return public_dsn(url)


def _share(value: Any, name: str = "VOPROSHALYCH_EVAL_MAX_FAILURE_SHARE") -> float:
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {share}")
    return share


@dataclass(frozen=True)
class Settings:
    """Runtime settings. Build with :func:`get_settings` (cached) or :meth:`from_env`."""

    home: Path
    #: the SOURCE: the bot's production database (``DATABASE_URL``), read only through read-only
    #: transactions; None = the demo database next to the store
    database_url: str | None = field(default=None, repr=False)
    #: the STORE: where the app keeps its own state (``VOPROSHALYCH_EVAL_STORE_URL``); None = the
    #: embedded PostgreSQL server in ``<home>/pgdata``
    store_url: str | None = field(default=None, repr=False)
    embedder: str = DEFAULT_EMBEDDER
    stored_embedding_model: str | None = None
    language: str = "ru"
    #: a finished run with a larger share of failed items is ``done_with_failures``
    max_failure_share: float = 0.1
    #: a judged run (``judged_share`` in its metrics) with a smaller share of usable judgements is ``failed``
    min_judged_share: float = 0.5
    secrets: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def embedded(self) -> bool:
        """True when the source is the demo database (no ``DATABASE_URL``)."""
        return not self.database_url

    @property
    def source_url(self) -> str | None:
        """The configured source URL (``DATABASE_URL``); None means the demo database."""
        return self.database_url

    @property
    def embedded_store(self) -> bool:
        """True when the store is the embedded server in the home folder."""
        return not self.store_url

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def database_label(self) -> str:
        """The source without credentials (host, port, database), or ``embedded`` for the demo."""
        return describe_database_url(self.database_url)

    @property
    def source_label(self) -> str:
        return describe_database_url(self.database_url) if self.database_url else "demo (embedded)"

    @property
    def store_label(self) -> str:
        return describe_database_url(self.store_url)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(environ() if env is None else env)
        secrets = load_secrets()
        general = secrets.get("voproshalych_eval", {}) if isinstance(secrets.get("voproshalych_eval"), dict) else {}

        def pick(env_key: str, secret_key: str, default: Any = None) -> Any:
            if env.get(env_key):
                return env[env_key]
            if secrets.get(env_key):
                return secrets[env_key]
            if general.get(secret_key):
                return general[secret_key]
            return default

        home = Path(pick("VOPROSHALYCH_EVAL_HOME", "home", str(PROJECT_ROOT / ".home"))).expanduser().resolve()
        return cls(
            home=home,
            database_url=pick("DATABASE_URL", "database_url"),
            store_url=pick("VOPROSHALYCH_EVAL_STORE_URL", "store_url"),
            embedder=pick("VOPROSHALYCH_EVAL_EMBEDDER", "embedder", DEFAULT_EMBEDDER),
            stored_embedding_model=pick("VOPROSHALYCH_EVAL_STORED_MODEL", "stored_embedding_model"),
            language=pick("VOPROSHALYCH_EVAL_LANG", "language", "ru"),
            max_failure_share=_share(pick("VOPROSHALYCH_EVAL_MAX_FAILURE_SHARE", "max_failure_share", 0.1)),
            min_judged_share=_share(pick("VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE", "min_judged_share", 0.5),
                                    "VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE"),
            secrets=secrets,
        )


def allow_privileged_source(settings: Settings | None = None) -> bool:
    """Whether a source login that is a superuser or owns the bot's tables is accepted: the setting
    ``allow_privileged_source`` in ``secrets.toml`` or ``VOPROSHALYCH_EVAL_ALLOW_PRIVILEGED_SOURCE`` (1/true/yes)."""
    value = env("VOPROSHALYCH_EVAL_ALLOW_PRIVILEGED_SOURCE")
    if value is None and settings is not None:
        general = settings.secrets.get("voproshalych_eval", {})
        value = general.get("allow_privileged_source") if isinstance(general, dict) else None
    return str(value).strip().lower() in ("1", "true", "yes", "on")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings (cached). Tests call ``get_settings.cache_clear()`` after changing env."""
    return Settings.from_env()


def secret_value(name: str, *, env: dict[str, str] | None = None, settings: Settings | None = None) -> str | None:
    """The value of the secret variable ``name``: the environment first, then the top level of ``secrets.toml``.

    Read at call time (never cached by the caller, never logged); None when it is set nowhere.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    if environ.get(name):
        return environ[name]
    value = (settings or get_settings()).secrets.get(name)
    return value if isinstance(value, str) and value else None
