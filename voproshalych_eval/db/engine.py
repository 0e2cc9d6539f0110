"""Connections: the read-only SOURCE and the app's read-write STORE.

* **Store** (:func:`get_engine`): the app's own database, where everything it writes lives (the
  ``eval`` schema: snapshots, datasets, runs, caches). The embedded PostgreSQL server in
  ``<home>/pgdata`` by default (:mod:`voproshalych_eval.db.server`), or any PostgreSQL given by
  ``VOPROSHALYCH_EVAL_STORE_URL``. Migrated to the latest schema on first use.
* **Source** (:func:`get_source_engine`): the bot's production database (``DATABASE_URL``), or,
  when none is configured, the demo database on the store's server (``voproshalych_demo`` next to the
  embedded store; ``<store database>_demo`` next to a store given by URL, so that stores never share one). It is read
  through read-only transactions only (:mod:`voproshalych_eval.db.guard`) and only by
  :mod:`voproshalych_eval.db.snapshots`, which copies the knowledge base and the question log into
  a versioned snapshot in the store; everything else reads that snapshot.

The demo loader is the one writer of a source, and only of the demo database it creates
(:func:`demo_admin_engine`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.pool import NullPool

from voproshalych_eval.config import Settings, allow_privileged_source, get_settings
from voproshalych_eval.db import server
from voproshalych_eval.db.errors import PrivilegedSourceError, SourceNotReadOnlyError, StoreError

log = logging.getLogger(__name__)

#: seconds to wait for the source server (an unreachable production host must not hang a page)
SOURCE_CONNECT_TIMEOUT = 10
#: name of the demo source database next to the embedded store (``postgres`` database)
DEMO_DATABASE = "voproshalych_demo"

_engines: dict[str, Engine] = {}
_source_engines: dict[tuple[str, bool, bool], Engine] = {}
_settings_of: weakref.WeakKeyDictionary[Engine, Settings] = weakref.WeakKeyDictionary()
_lock = threading.RLock()


# ---------------------------------------------------------------------------------------------- URLs


def _sqlalchemy_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    if scheme in {"postgres", "postgresql", "postgresql+psycopg"}:
        return "postgresql+psycopg://" + rest
    return url


def with_database(url: str, dbname: str) -> str:
    """The same server's URL with another database name (credentials and query kept)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + dbname))


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/") or "postgres"


def _identity(url: str) -> tuple[str, int | None, str]:
    parts = urlsplit(url)
    host = parts.hostname or dict(parse_qsl(parts.query)).get("host", "")
    return host, parts.port, database_name(url)


def _with_option(url: str, option: str) -> str:
    """``url`` with ``option`` appended to its libpq ``options`` parameter."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    existing = [v for k, v in query if k == "options"]
    rest = [(k, v) for k, v in query if k != "options"]
    merged = " ".join([*existing, option]).strip()
    return urlunsplit(parts._replace(query=urlencode([*rest, ("options", merged)], quote_via=quote)))


def start_embedded_server(settings: Settings) -> str:
    """Start (or attach to) the embedded server of ``settings.home``; return its libpq URL."""
    return server.start(settings.pgdata, logs_dir=settings.logs_dir)


def store_url(settings: Settings) -> str:
    """The store's libpq URL (starts the embedded server when no store URL is configured)."""
    return settings.store_url or start_embedded_server(settings)


def demo_database_name(store: str) -> str:
    """The demo database belonging to the store at URL ``store`` (one per store: its loader owns it)."""
    name = database_name(store)
    return DEMO_DATABASE if name == "postgres" else f"{name}_demo"[:63]


def demo_url(settings: Settings) -> str:
    """The demo source database on the store's server (:func:`demo_database_name`)."""
    url = store_url(settings)
    return with_database(url, demo_database_name(url))


def source_url(settings: Settings) -> str:
    """The source's libpq URL: ``DATABASE_URL``, else the demo database."""
    return settings.database_url or demo_url(settings)


def database_url(settings: Settings) -> str:
    """The store's URL (kept for callers that create scratch databases on the app's server)."""
    return store_url(settings)


def source_is_demo(settings: Settings) -> bool:
    return not settings.database_url


# ---------------------------------------------------------------------------------------------- engines


def _register_vector(dbapi_connection, _record) -> None:
    """Map pgvector's ``vector`` type to numpy arrays on every new psycopg connection."""
    from pgvector.psycopg import register_vector  # heavy: defers pgvector

    register_vector(dbapi_connection)


def _register_vector_if_present(dbapi_connection, _record) -> None:
    import psycopg  # heavy: defers psycopg

    with contextlib.suppress(psycopg.ProgrammingError):  # the source has no pgvector: nothing to map
        _register_vector(dbapi_connection, _record)
    dbapi_connection.rollback()


def _check_store(engine: Engine, settings: Settings, url: str) -> None:
    if settings.database_url and _identity(settings.database_url) == _identity(url):
        raise StoreError(
            "VOPROSHALYCH_EVAL_STORE_URL points at the source database (DATABASE_URL). The store must be a "
            "separate database: the source is only read. Leave VOPROSHALYCH_EVAL_STORE_URL unset to use the "
            "embedded store."
        )
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT (to_regclass('public.chunk') IS NOT NULL OR to_regclass('public.question_answer') IS NOT NULL), "
                "to_regnamespace('eval') IS NOT NULL"
            )
        ).one()
    if row[0] and not row[1]:
        raise StoreError(
            f"The store database ({settings.store_label}) holds the bot's tables (chunk / question_answer) and no "
            "'eval' schema: it looks like a production database. Give the app a separate, empty database as "
            "VOPROSHALYCH_EVAL_STORE_URL (the production database is the source, DATABASE_URL)."
        )


def get_engine(settings: Settings | None = None, *, migrate: bool = True) -> Engine:
    """The STORE engine for ``settings`` (default: the process settings), cached and migrated to head."""
    settings = settings or get_settings()
    with _lock:
        url = store_url(settings)
        engine = _engines.get(url)
        if engine is None:
            engine = create_engine(_sqlalchemy_url(url), pool_pre_ping=True, pool_size=10, max_overflow=10)
            _check_store(engine, settings, url)
            if migrate:
                from voproshalych_eval.db.migrate import upgrade  # heavy: defers alembic (via db.migrate)

                upgrade(engine)  # creates the vector extension under the migration lock
            event.listen(engine, "connect", _register_vector)
            engine.dispose()  # connections made before the extension existed cannot map the vector type
            _engines[url] = engine
        _settings_of[engine] = settings
        return engine


def get_store_engine(settings: Settings | None = None) -> Engine:
    """Alias of :func:`get_engine` (the store)."""
    return get_engine(settings)


def settings_for(engine: Engine) -> Settings:
    """The settings a store engine was made for (its source); the process settings otherwise."""
    return _settings_of.get(engine) or get_settings()


def _check_session_read_only(dbapi_connection, _record) -> None:
    """Connect-time check that the read-only option took effect (poolers may drop startup options)."""
    value = dbapi_connection.execute("SHOW default_transaction_read_only").fetchone()[0]
    if value != "on":
        dbapi_connection.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        value = dbapi_connection.execute("SHOW default_transaction_read_only").fetchone()[0]
        log.warning("The source ignored the startup option default_transaction_read_only; set per session instead.")
    dbapi_connection.rollback()
    if value != "on":
        dbapi_connection.close()
        raise SourceNotReadOnlyError("The source connection could not be made read-only; nothing was read.")


#: every source statement is cancelled after this long (a snapshot copies a table in one statement)
SOURCE_STATEMENT_TIMEOUT_MS = 600_000
#: a source transaction left idle this long is ended by the server (a stuck page never holds a snapshot)
SOURCE_IDLE_IN_TRANSACTION_TIMEOUT_MS = 300_000
#: the session options every source connection starts with, after the read-only one
SOURCE_SESSION_OPTIONS = (f"-c statement_timeout={SOURCE_STATEMENT_TIMEOUT_MS} "
                          f"-c idle_in_transaction_session_timeout={SOURCE_IDLE_IN_TRANSACTION_TIMEOUT_MS}")
#: the bot's tables whose owner may not be the source login
SOURCE_TABLES = ("chunk", "question_answer", "user")


def _check_session_timeouts(dbapi_connection, _record) -> None:
    """The timeouts of :data:`SOURCE_SESSION_OPTIONS` took effect (a pooler may drop startup options)."""
    for name, value in (("statement_timeout", SOURCE_STATEMENT_TIMEOUT_MS),
                        ("idle_in_transaction_session_timeout", SOURCE_IDLE_IN_TRANSACTION_TIMEOUT_MS)):
        shown = dbapi_connection.execute(f"SELECT current_setting('{name}')").fetchone()[0]
        if shown in ("0", ""):
            dbapi_connection.execute(f"SET SESSION {name} = {int(value)}")
    dbapi_connection.rollback()


def privileged_source_problem(dbapi_connection) -> str | None:
    """Why the login of a source connection is more than a reader: a superuser, or (a member of) the owner of
    the bot's tables; None for a login that can only have been granted ``SELECT``."""
    row = dbapi_connection.execute(
        "SELECT current_user, (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user), "
        "(SELECT string_agg(c.relname, ', ' ORDER BY c.relname) FROM pg_catalog.pg_class c "
        " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        " WHERE n.nspname = 'public' AND c.relname = ANY(%s) "
        " AND pg_catalog.pg_has_role(current_user, c.relowner, 'USAGE'))",
        (list(SOURCE_TABLES),),
    ).fetchone()
    dbapi_connection.rollback()
    user, superuser, owned = row
    if superuser:
        return f"the source login '{user}' is a superuser"
    if owned:
        return f"the source login '{user}' owns the bot's tables ({owned})"
    return None


def _refuse_privileged(dbapi_connection, _record) -> None:
    problem = privileged_source_problem(dbapi_connection)
    if problem:
        dbapi_connection.close()
        raise PrivilegedSourceError(
            f"Refused to read the source: {problem}, which could change production despite the app's read-only "
            "sessions. Connect with a role that is only granted SELECT (README, 'Read-only role'), or accept the "
            "risk explicitly with VOPROSHALYCH_EVAL_ALLOW_PRIVILEGED_SOURCE=1."
        )


def _discard_on_return(dbapi_connection, _record, reset_state) -> None:
    """A connection coming back to the pool: roll back, then ``DISCARD ALL`` (advisory locks, temporary tables,
    prepared statements, session settings), then check again that the session is read-only and bounded."""
    dbapi_connection.rollback()
    if reset_state.terminate_only:
        return
    dbapi_connection.autocommit = True
    try:
        dbapi_connection.execute("DISCARD ALL")
    finally:
        dbapi_connection.autocommit = False
    _check_session_read_only(dbapi_connection, _record)
    _check_session_timeouts(dbapi_connection, _record)


def make_source_engine(url: str, *, text_check: bool = True, allow_privileged: bool | None = None) -> Engine:
    """A read-only engine on ``url`` (see :mod:`voproshalych_eval.db.guard`); not cached.

    Every session is read-only and bounded (:data:`SOURCE_SESSION_OPTIONS`), reset with ``DISCARD ALL`` when it
    returns to the pool, and — unless ``allow_privileged`` — refused at connect when its login is a superuser
    or owns the bot's tables (:func:`privileged_source_problem`); None = the setting
    (:func:`voproshalych_eval.config.allow_privileged_source`)."""
    # heavy: keeps db.guard out of --help (+1 ms)
    from voproshalych_eval.db.guard import READ_ONLY_OPTION, install_source_guard

    if allow_privileged is None:
        allow_privileged = allow_privileged_source()

    connect_args: dict[str, object] = {"prepare_threshold": 0}  # extended protocol: one statement at a time
    if "connect_timeout" not in dict(parse_qsl(urlsplit(url).query)):
        connect_args["connect_timeout"] = SOURCE_CONNECT_TIMEOUT
    engine = create_engine(
        _sqlalchemy_url(_with_option(url, f"{READ_ONLY_OPTION} {SOURCE_SESSION_OPTIONS}")),
        pool_pre_ping=True,
        pool_size=2,
        max_overflow=2,
        pool_reset_on_return=None,  # _discard_on_return does the rollback and more
        connect_args=connect_args,
    )
    if not allow_privileged:
        event.listen(engine, "connect", _refuse_privileged)
    event.listen(engine, "connect", _check_session_read_only)
    event.listen(engine, "connect", _check_session_timeouts)
    event.listen(engine, "connect", _register_vector_if_present)
    event.listen(engine, "reset", _discard_on_return)
    install_source_guard(engine, text_check=text_check)
    return engine


def get_source_engine(settings: Settings | None = None, *, text_check: bool = True) -> Engine:
    """The read-only SOURCE engine for ``settings`` (cached): ``DATABASE_URL`` or the demo database.

    A configured ``DATABASE_URL`` whose login is a superuser or owns the bot's tables is refused unless
    ``VOPROSHALYCH_EVAL_ALLOW_PRIVILEGED_SOURCE`` is set (:func:`voproshalych_eval.config.allow_privileged_source`).
    The embedded demo database is exempt: the app created it (owned by the store's superuser) and it holds no
    production data."""
    settings = settings or get_settings()
    with _lock:
        url = source_url(settings)
        allow = not settings.database_url or allow_privileged_source(settings)
        key = (url, text_check, allow)
        if key not in _source_engines:
            _source_engines[key] = make_source_engine(url, text_check=text_check, allow_privileged=allow)
        return _source_engines[key]


def source_for(store: Engine, *, text_check: bool = True) -> Engine:
    """The source engine belonging to a store engine."""
    return get_source_engine(settings_for(store), text_check=text_check)


def admin_engine(settings: Settings) -> Engine:
    """An AUTOCOMMIT engine on the store server's maintenance database (CREATE DATABASE for the demo)."""
    return create_engine(_sqlalchemy_url(with_database(store_url(settings), "postgres")), isolation_level="AUTOCOMMIT",
                         poolclass=_null_pool())


def demo_admin_engine(settings: Settings) -> Engine:
    """A read-WRITE engine on the demo database (the demo loader only; never a configured source)."""
    url = demo_url(settings)
    engine = create_engine(_sqlalchemy_url(url), poolclass=_null_pool())
    event.listen(engine, "connect", _register_vector_if_present)
    return engine


def _null_pool():
    return NullPool


def reset_engines() -> None:
    """Dispose every cached engine (tests, settings changes)."""
    with _lock:
        for engine in [*_engines.values(), *_source_engines.values()]:
            engine.dispose()
        _engines.clear()
        _source_engines.clear()
