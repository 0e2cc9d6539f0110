"""The source, hardened (issue 23, item 2): a superuser or table-owner login is refused unless allowed; every
source session has a statement timeout and an idle-in-transaction timeout; a connection returning to the pool
is reset with DISCARD ALL (a session advisory lock never outlives a checkout); the embedded demo is exempt."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy import text

from tests.integration.test_snapshots import _make_source
from tests.support.sources import role_url, scram_verifier
from voproshalych_eval.config import Settings
from voproshalych_eval.db import engine as E
from voproshalych_eval.db.errors import PrivilegedSourceError


@pytest.fixture
def no_privileged_opt_in(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.delenv("VOPROSHALYCH_EVAL_ALLOW_PRIVILEGED_SOURCE", raising=False)
    E.reset_engines()
    yield
    E.reset_engines()


def test_a_superuser_source_is_refused_unless_allowed(fresh_db_url: str, no_privileged_opt_in, tmp_path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    _make_source(fresh_db_url)
    settings = Settings(home=tmp_path, database_url=fresh_db_url)
    with pytest.raises(PrivilegedSourceError, match="superuser") as exc:
        E.get_source_engine(settings).connect().close()
    assert "VOPROSHALYCH_EVAL_ALLOW_PRIVILEGED_SOURCE" in str(exc.value)
    monkeypatch.setenv("VOPROSHALYCH_EVAL_ALLOW_PRIVILEGED_SOURCE", "1")
    with E.get_source_engine(settings).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM chunk")).scalar() > 0


def test_an_owner_is_refused_and_a_reader_is_accepted(fresh_db_url: str, pg_url: str, no_privileged_opt_in,
                                                      tmp_path) -> None:  # type: ignore[no-untyped-def]
    _make_source(fresh_db_url)
    owner, reader, pw = f"own_{uuid.uuid4().hex[:6]}", f"rd_{uuid.uuid4().hex[:6]}", "pw-" + uuid.uuid4().hex[:8]
    with psycopg.connect(fresh_db_url, autocommit=True) as conn:
        for role in (owner, reader):
            conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{scram_verifier(pw)}'")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {owner}, {reader}")
        conn.execute(f"ALTER TABLE chunk OWNER TO {owner}")
        conn.execute(f'GRANT SELECT ON chunk, question_answer, "user" TO {reader}')
    try:
        with pytest.raises(PrivilegedSourceError, match=r"owns the bot's tables \(chunk\)"):
            E.get_source_engine(Settings(home=tmp_path, database_url=role_url(fresh_db_url, owner, pw))).connect().close()
        with E.get_source_engine(Settings(home=tmp_path, database_url=role_url(fresh_db_url, reader, pw))).connect() as c:
            assert c.execute(text("SELECT count(*) FROM chunk")).scalar() > 0
    finally:
        E.reset_engines()
        with psycopg.connect(fresh_db_url, autocommit=True) as conn:
            conn.execute("ALTER TABLE chunk OWNER TO CURRENT_USER")
            for role in (owner, reader):
                conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}")
                conn.execute(f"REVOKE ALL ON SCHEMA public FROM {role}")
        with psycopg.connect(pg_url, autocommit=True) as admin:
            for role in (owner, reader):
                admin.execute(f"DROP ROLE IF EXISTS {role}")


def test_the_embedded_demo_source_is_exempt(demo_engine, no_privileged_opt_in) -> None:  # type: ignore[no-untyped-def]
    with E.source_for(demo_engine).connect() as conn:  # owned by the store's superuser, made by the app
        assert conn.execute(text("SELECT count(*) FROM chunk")).scalar() > 0


def test_source_sessions_have_timeouts_and_are_discarded_on_return(fresh_db_url: str, pg_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _make_source(fresh_db_url)
    eng = E.make_source_engine(fresh_db_url, text_check=False, allow_privileged=True)
    try:
        with eng.connect() as conn:
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "10min"
            assert conn.execute(text("SHOW idle_in_transaction_session_timeout")).scalar() == "5min"
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
            conn.execute(text("SELECT pg_advisory_lock(727)"))  # a session lock, kept past the transaction
            conn.execute(text("SET search_path TO pg_catalog"))  # not reachable with the text check; reset anyway
            conn.rollback()
        with psycopg.connect(pg_url, autocommit=True) as admin:
            held = admin.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (pid,)).fetchone()[0]
        assert held == 0, "the pooled connection still holds the advisory lock"
        with eng.connect() as conn:
            assert conn.execute(text("SELECT pg_backend_pid()")).scalar() == pid  # the same pooled session …
            assert conn.execute(text("SHOW search_path")).scalar() != "pg_catalog"  # … reset
            assert conn.execute(text("SHOW default_transaction_read_only")).scalar() == "on"
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "10min"
    finally:
        eng.dispose()
