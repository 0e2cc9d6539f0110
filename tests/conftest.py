"""Shared fixtures: one real PostgreSQL + pgvector per test session.

``VOPROSHALYCH_EVAL_TEST_DATABASE_URL`` selects an existing server (its database is the store, used as
is; the demo database is created next to it); otherwise the embedded server starts in a temporary
folder (~2 s) and is deleted afterwards. The environment is set before anything imports the settings,
so the app, the CLI and the tests all talk to the same test store, whose source is the demo database
(``DATABASE_URL`` is unset) — the same read-only path as production.

Fixtures
    ``engine``        the session store (migrated)
    ``demo_engine``   the session store with the demo loaded into the demo source and snapshotted
    ``demo_source``   the demo source database through the read-only source engine
    ``fresh_db_url``  a new, empty database (tests use it as a SOURCE: they create production tables in it)
    ``fresh_engine``  a store on another new database whose source is ``fresh_db_url``
    ``store_for``     ``store_for(source_url)`` -> a store engine on a new database reading that source
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_TMP = Path(tempfile.mkdtemp(prefix="voproshalych-eval-tests-"))
_SERVER_PGDATA: Path | None = None


def _start_server() -> str:
    global _SERVER_PGDATA
    url = os.environ.get("VOPROSHALYCH_EVAL_TEST_DATABASE_URL")
    if url:
        return url
    from voproshalych_eval.db import server

    _SERVER_PGDATA = _TMP / "pgdata"
    return server.start(_SERVER_PGDATA, logs_dir=_TMP / "logs", cleanup_mode="delete")


def pytest_configure(config: pytest.Config) -> None:
    os.environ["VOPROSHALYCH_EVAL_HOME"] = str(_TMP / "home")
    os.environ["VOPROSHALYCH_EVAL_SECRETS"] = str(_TMP / "no-secrets.toml")
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "VOPROSHALYCH_EVAL_EMBEDDER", "VOPROSHALYCH_EVAL_LANG",
                "DATABASE_URL", "VOPROSHALYCH_EVAL_STORED_MODEL"):
        os.environ.pop(var, None)
    os.environ["VOPROSHALYCH_EVAL_STORE_URL"] = _start_server()
    # the tests' sources are made by the test server's superuser (as a DBA would make production): they opt in
    # to privileged sources; tests/integration/test_source_privileges.py unsets this to prove the refusal
    os.environ["VOPROSHALYCH_EVAL_ALLOW_PRIVILEGED_SOURCE"] = "1"


def pytest_unconfigure(config: pytest.Config) -> None:
    import sys

    from voproshalych_eval.db import reset_engines

    if "voproshalych_eval.engine.job_queue" in sys.modules:  # a page started the app's worker thread: stop it first
        sys.modules["voproshalych_eval.engine.job_queue"].stop_thread_worker()

    reset_engines()
    if _SERVER_PGDATA is not None:
        from voproshalych_eval.db import server

        server.stop(_SERVER_PGDATA)
    shutil.rmtree(_TMP, ignore_errors=True)


def database_url_for(base_url: str, dbname: str) -> str:
    """The same server's URL with another database name."""
    from voproshalych_eval.db.engine import with_database

    return with_database(base_url, dbname)


@pytest.fixture(autouse=True, scope="session")
def _stored_metrics_are_catalogued() -> Iterator[None]:
    """Every run any test finishes must store only metric keys the metric catalog knows
    (``voproshalych_eval/metrics/catalog.py``): a tier that adds a key adds its catalog entry."""
    from voproshalych_eval.engine import runs
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
    """The session store's URL (its server also hosts the demo and the fresh databases)."""
    return os.environ["VOPROSHALYCH_EVAL_STORE_URL"]


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
    """The session store with the demo corpus loaded (default embedder) and its snapshot current."""
    from voproshalych_eval.demo import load_demo

    load_demo(engine, embedder_name="use-multilingual")
    return engine


@pytest.fixture(scope="session")
def demo_source(demo_engine):  # type: ignore[no-untyped-def]
    """The demo SOURCE database, through the app's read-only engine (counts to compare snapshots with)."""
    from voproshalych_eval.db.engine import source_for

    return source_for(demo_engine)


def _admin(pg_url: str):  # type: ignore[no-untyped-def]
    from sqlalchemy import create_engine

    return create_engine("postgresql+psycopg://" + pg_url.split("://", 1)[1], isolation_level="AUTOCOMMIT")


@pytest.fixture
def new_database(pg_url: str) -> Iterator[Callable[[], str]]:
    """``new_database()`` -> the URL of a new, empty database on the session server (dropped afterwards)."""
    from sqlalchemy import text

    admin = _admin(pg_url)
    names: list[str] = []

    def make() -> str:
        name = "t_" + uuid.uuid4().hex[:12]
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        names.append(name)
        return database_url_for(pg_url, name)

    try:
        yield make
    finally:
        from voproshalych_eval.db import reset_engines

        reset_engines()
        with admin.connect() as conn:
            for name in names:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def fresh_db_url(new_database: Callable[[], str]) -> str:
    """A new, empty database on the session server; dropped afterwards (a source for tests)."""
    return new_database()


@pytest.fixture
def store_for(new_database: Callable[[], str]) -> Callable[[str], object]:
    """``store_for(source_url)`` -> a migrated store engine on a new database whose source is ``source_url``."""
    from voproshalych_eval.config import Settings
    from voproshalych_eval.db import get_engine

    def make(source_url: str):  # type: ignore[no-untyped-def]
        return get_engine(Settings(home=_TMP / "home", database_url=source_url, store_url=new_database()))

    return make


@pytest.fixture
def fresh_engine(fresh_db_url: str, store_for):  # type: ignore[no-untyped-def]
    """A store on a fresh database, migrated, whose source is ``fresh_db_url``."""
    return store_for(fresh_db_url)


@pytest.fixture(autouse=True, scope="module")
def _no_app_worker_left_behind() -> Iterator[None]:
    """An AppTest that starts a run starts the app's worker thread in the pytest process. It must not outlive its
    module: the browser journeys' app server shares the test store, and a worker left here would take its queued
    batches and rebuild their plans — the page that started a run would never hold its in-memory results."""
    yield
    import sys

    if "voproshalych_eval.engine.job_queue" in sys.modules:
        sys.modules["voproshalych_eval.engine.job_queue"].stop_thread_worker()
