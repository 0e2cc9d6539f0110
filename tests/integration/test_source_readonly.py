"""A source is read only because PostgreSQL refuses the writes, not because of a regex.

Every statement here goes through the app's source engine (:func:`voproshalych_eval.db.engine.
make_source_engine`) with the text check switched OFF, so what refuses it is the server: the
read-only transaction (SQLSTATE 25006), the pinned transaction mode (25001) or the one-statement
extended protocol (42601, "cannot insert multiple commands into a prepared statement"). Each write
is first checked to be valid SQL that succeeds on a writable connection to an identical control
database (rolled back), so a refusal is never a typo. The source's content hash is the same afterwards.

``LOCK TABLE`` is not among them: it writes nothing and PostgreSQL allows it in a read-only transaction;
the app's text check refuses it (it is not a reading statement).
"""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.support.sources import make_bot_source
from voproshalych_eval.db.engine import make_source_engine
from voproshalych_eval.db.errors import ProductionWriteError, SourceNotReadOnlyError

#: SQLSTATEs by which PostgreSQL refuses: read-only transaction, pinned transaction mode, several statements
REFUSED = {"25006", "25001", "42601"}

BYPASS_FORMS = [
    "/* c */ DELETE FROM question_answer",
    "/* x */ INSERT INTO chunk(id, url, text, embedding) VALUES (99, 'u', 't', '[1,1,1]')",
    "-- comment\nUPDATE question_answer SET score = 5",
    "WITH x AS (INSERT INTO chunk(id, url, text, embedding) VALUES (98, 'u', 't', '[1,1,1]') RETURNING id) SELECT * FROM x",
    "WITH x AS (DELETE FROM question_answer RETURNING 1) SELECT count(*) FROM x",
    "MERGE INTO chunk c USING (SELECT 1 AS id) s ON c.id = s.id WHEN MATCHED THEN DELETE",
    "CREATE TRIGGER t_guard BEFORE UPDATE ON chunk FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()",
    "CREATE RULE r_guard AS ON UPDATE TO chunk DO INSTEAD NOTHING",
    "CREATE INDEX ON chunk (id)",
    "DROP TABLE foo, chunk",
    "DROP TABLE chunk CASCADE",
    "DROP SCHEMA public CASCADE",
    "SELECT 1; DELETE FROM question_answer",
    "DO $$ BEGIN DELETE FROM question_answer; END $$",
    "EXPLAIN ANALYZE DELETE FROM question_answer",
    'DELETE FROM U&"\\0063hunk"',
    'UPDATE U&"\\0071uestion_answer" SET score = 1',
    "COPY chunk FROM STDIN",
    "COPY chunk FROM '/etc/hostname'",
    "TRUNCATE chunk CASCADE",
    "ALTER TABLE chunk ADD COLUMN x integer",
    "COMMENT ON TABLE chunk IS 'x'",
    "GRANT SELECT ON chunk TO PUBLIC",
    "CREATE TABLE stolen AS SELECT * FROM chunk",
    "CREATE TEMP TABLE tmp_x (a int)",
    "SELECT nextval('guard_seq')",
    "SELECT * FROM chunk FOR UPDATE",
    'INSERT INTO "user"(id) VALUES (77)',
    "SET TRANSACTION READ WRITE",
    "BEGIN READ WRITE",
    "COMMIT; BEGIN READ WRITE; DELETE FROM question_answer",
]

#: forms that fail on a writable connection for reasons of their own (no such table / STDIN) — their
#: refusal is still checked, but not against the writable control
NOT_VALID_ON_WRITABLE = {"DROP TABLE foo, chunk", "COPY chunk FROM STDIN", "COPY chunk FROM '/etc/hostname'"}


def _make_source(url: str) -> None:
    make_bot_source(url, variant="url", dim=3)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE guard_seq")


def _fingerprint(url: str) -> tuple:
    with psycopg.connect(url) as conn:
        return (
            conn.execute("SELECT md5(string_agg(c::text, ',' ORDER BY id)) FROM chunk c").fetchone()[0],
            conn.execute("SELECT md5(string_agg(q::text, ',' ORDER BY id)) FROM question_answer q").fetchone()[0],
            conn.execute('SELECT count(*) FROM "user"').fetchone()[0],
            conn.execute("SELECT last_value FROM guard_seq").fetchone()[0],
            conn.execute("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                         "WHERE n.nspname = 'public'").fetchone()[0],
            conn.execute("SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal").fetchone()[0],
            conn.execute("SELECT count(*) FROM pg_rewrite WHERE rulename = 'r_guard'").fetchone()[0],
        )


def _valid_on_writable(url: str, sql: str) -> bool:
    """Whether ``sql`` succeeds on an ordinary writable connection (rolled back)."""
    with psycopg.connect(url) as conn:
        try:
            conn.execute(sql)
            return True
        except psycopg.Error:
            return False
        finally:
            conn.rollback()


def _refusal_state(engine, sql: str) -> str | None:  # type: ignore[no-untyped-def]
    """The SQLSTATE with which PostgreSQL refused ``sql`` on the source engine (None: it ran)."""
    try:
        with engine.begin() as conn:
            conn.execute(text(sql))
    except DBAPIError as exc:
        return getattr(exc.orig, "sqlstate", None) or "?"
    return None


@pytest.fixture
def source_url(fresh_db_url: str) -> str:
    _make_source(fresh_db_url)
    return fresh_db_url


@pytest.fixture
def control_url(new_database) -> str:  # type: ignore[no-untyped-def]
    """An identical database on which the writes are tried on a writable connection (sequences are not
    transactional, so the control never runs on the source itself)."""
    url = new_database()
    _make_source(url)
    return url


def test_every_bypass_form_is_refused_by_postgresql(source_url: str, control_url: str) -> None:
    engine = make_source_engine(source_url, text_check=False)
    before = _fingerprint(source_url)
    try:
        for sql in BYPASS_FORMS:
            if sql not in NOT_VALID_ON_WRITABLE:
                assert _valid_on_writable(control_url, sql), f"control: {sql!r} should work on a writable connection"
            state = _refusal_state(engine, sql)
            assert state in REFUSED, f"{sql!r}: expected PostgreSQL to refuse it, got {state!r}"
            assert _fingerprint(source_url) == before, f"{sql!r} changed the source"
        # reading still works on the same engine afterwards
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM chunk")).scalar() == 2
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    "steps",
    [
        ["SET default_transaction_read_only = off", "COMMIT", "DELETE FROM question_answer"],
        ["SELECT set_config('default_transaction_read_only', 'off', false)", "COMMIT", "DELETE FROM question_answer"],
        ["SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE", "COMMIT", "DELETE FROM question_answer"],
        ["COMMIT", "BEGIN READ WRITE", "DELETE FROM question_answer"],
        ["ROLLBACK", "SET TRANSACTION READ WRITE", "DELETE FROM question_answer"],
    ],
)
def test_transaction_mode_flips_never_reach_a_write(source_url: str, steps: list[str]) -> None:
    """Statements that make the NEXT transaction read-write: the check pinned before every statement refuses
    the write (and drops the connection), or PostgreSQL refuses the flip itself."""
    engine = make_source_engine(source_url, text_check=False)
    before = _fingerprint(source_url)
    try:
        with pytest.raises((DBAPIError, SourceNotReadOnlyError)), engine.connect() as conn:
            for sql in steps:
                conn.execute(text(sql))
        assert _fingerprint(source_url) == before
        with engine.connect() as conn:  # a fresh connection is read-only again
            assert conn.execute(text("SELECT current_setting('transaction_read_only')")).scalar() == "on"
    finally:
        engine.dispose()


def test_the_apps_source_engine_refuses_with_a_clear_message(source_url: str) -> None:
    """With the text check on (the app's default), non-reading statements stop before the server, and the
    forms it lets through are still refused by PostgreSQL."""
    engine = make_source_engine(source_url)
    before = _fingerprint(source_url)
    try:
        for sql in BYPASS_FORMS:
            with pytest.raises((ProductionWriteError, DBAPIError)), engine.begin() as conn:
                conn.execute(text(sql))
        assert _fingerprint(source_url) == before
        with pytest.raises(ProductionWriteError, match="source database"), engine.begin() as conn:
            conn.execute(text("/* c */ DELETE FROM question_answer"))
        with pytest.raises(ProductionWriteError, match="not a reading statement"), engine.begin() as conn:
            conn.execute(text("LOCK TABLE chunk IN ACCESS EXCLUSIVE MODE"))
    finally:
        engine.dispose()


# ---------------------------------------------------------------------------------------------- fuzzed writes

TABLES = ["chunk", "public.chunk", '"chunk"', 'public."chunk"', 'U&"\\0063hunk"', "question_answer",
          'U&"\\0071uestion_answer"', '"user"', 'public."user"']
PREFIXES = ["", " ", "\n\t", "/* c */ ", "-- c\n", "/* a /* nested */ b */ ", "/**/"]
CONDS = ["true", "id > 0", "id = 1", "false", "id IN (SELECT 1)"]
TEMPLATES = [
    "INSERT INTO {t} SELECT * FROM {t} WHERE {c}",
    "UPDATE {t} SET id = id WHERE {c}",
    "DELETE FROM {t} WHERE {c}",
    "TRUNCATE {t} CASCADE",
    "ALTER TABLE {t} ADD COLUMN x_{n} integer",
    "ALTER TABLE {t} RENAME TO renamed_{n}",
    "DROP TABLE {t} CASCADE",
    "CREATE INDEX ON {t} (id)",
    "COMMENT ON TABLE {t} IS 'x{n}'",
    "GRANT SELECT ON {t} TO PUBLIC",
    "WITH w AS (DELETE FROM {t} WHERE {c} RETURNING 1) SELECT count(*) FROM w",
    "WITH w AS (UPDATE {t} SET id = id WHERE {c} RETURNING 1) SELECT count(*) FROM w",
    "MERGE INTO {t} AS m USING (SELECT 1 AS id) s ON m.id = s.id WHEN MATCHED THEN UPDATE SET id = m.id",
    "DO $x$ BEGIN DELETE FROM {t} WHERE {c}; END $x$",
    "EXPLAIN ANALYZE DELETE FROM {t} WHERE {c}",
    "EXPLAIN (ANALYZE, FORMAT JSON) UPDATE {t} SET id = id WHERE {c}",
    "CREATE TABLE copy_{n} AS SELECT * FROM {t}",
    "CREATE RULE rule_{n} AS ON UPDATE TO {t} DO INSTEAD NOTHING",
    "CREATE TRIGGER trg_{n} BEFORE UPDATE ON {t} FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()",
    "SELECT * FROM {t} WHERE {c} FOR UPDATE",
    "SELECT 1; DELETE FROM {t} WHERE {c}",
    "CREATE VIEW view_{n} AS SELECT * FROM {t}",
    "SELECT setval('guard_seq', 100)",
]


def _recase(sql: str, flips: list[bool]) -> str:
    """Keyword case varied (identifiers in quotes are left alone)."""
    out, quoted = [], False
    for i, ch in enumerate(sql):
        if ch in "\"'":
            quoted = not quoted
        out.append(ch.swapcase() if not quoted and flips[i % len(flips)] and ch.isascii() and ch.isalpha() else ch)
    return "".join(out)


@st.composite
def write_statements(draw: st.DrawFn) -> str:
    template = draw(st.sampled_from(TEMPLATES))
    sql = template.format(t=draw(st.sampled_from(TABLES)), c=draw(st.sampled_from(CONDS)),
                          n=draw(st.integers(0, 10_000)))
    if "U&" not in sql and "$x$" not in sql:
        sql = _recase(sql, draw(st.lists(st.booleans(), min_size=1, max_size=8)))
    return draw(st.sampled_from(PREFIXES)) + sql


def test_fuzzed_writes_are_refused_by_postgresql(fresh_db_url: str, control_url: str) -> None:
    _make_source(fresh_db_url)
    engine = make_source_engine(fresh_db_url, text_check=False)
    before = _fingerprint(fresh_db_url)
    seen: list[str] = []

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                        HealthCheck.function_scoped_fixture])
    @given(write_statements())
    def check(sql: str) -> None:
        assume(_valid_on_writable(control_url, sql))
        state = _refusal_state(engine, sql)
        assert state in REFUSED, f"{sql!r}: not refused (state {state!r})"
        seen.append(sql)

    try:
        check()
    finally:
        engine.dispose()
    assert len(seen) >= 100  # the property ran on enough valid write statements
    assert _fingerprint(fresh_db_url) == before


def _readme_role_sql() -> str:
    """The README's ``### Read-only role`` SQL block, exactly as documented."""
    from voproshalych_eval.config import PROJECT_ROOT

    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Read-only role", 1)[1]
    return section.split("```sql", 1)[1].split("```", 1)[0].strip()


def test_the_documented_read_only_role_is_enough_and_cannot_write(source_url: str, store_for, pg_url: str,  # type: ignore[no-untyped-def]
                                                                  tmp_path) -> None:
    """A DBA runs the README's statements (database name and password filled in); the app takes a snapshot
    and runs Tier 1 through that login, and a write through it fails on the role's privileges as well as on
    the read-only transaction."""
    import json

    from sqlalchemy.engine import make_url

    from tests.support.plans import run
    from tests.support.sources import role_url, scram_verifier
    from voproshalych_eval.db import snapshots

    statements = [s.strip() for s in _readme_role_sql().split(";") if s.strip()]
    assert [s.split()[0] for s in statements] == ["CREATE", "GRANT", "GRANT", "GRANT"]
    assert all("voproshalych_reader" in s for s in statements)
    password = "reader-" + tmp_path.name
    db = make_url(source_url).database
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("DROP ROLE IF EXISTS voproshalych_reader")
    try:
        with psycopg.connect(source_url, autocommit=True) as conn:  # the DBA, on the production database
            for s in statements:
                conn.execute(s.replace("PASSWORD '...'", f"PASSWORD '{scram_verifier(password)}'")
                             .replace("ON DATABASE voproshalych ", f'ON DATABASE "{db}" '))
        reader = role_url(source_url, "voproshalych_reader", password)
        with psycopg.connect(reader) as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == "voproshalych_reader"

        store = store_for(reader)
        snap = snapshots.take(store)
        assert (snap.n_chunks, snap.n_questions, snap.n_users) == (2, 3, 2)
        golden = tmp_path / "golden.json"
        golden.write_text(json.dumps([{"id": "g1", "question": "стипендия", "ground_truth_answer": "—",
                                       "relevant_chunk_ids": [1]}], ensure_ascii=False), encoding="utf-8")
        ran = run(store, "tier1", {"dataset": str(golden), "retriever": "fts", "k": 1, "n_resamples": 20})
        assert ran.progress.status == "done" and ran.run.snapshot_id == snap.id
        assert ran.records[0]["result"]["retrieved_ids"] == [1] and ran.records[0]["result"]["metrics_chunk"]["mrr"] == 1.0

        before = _fingerprint(source_url)
        with psycopg.connect(reader, autocommit=True) as conn:  # a plain session, not even read-only
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("DELETE FROM question_answer")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("INSERT INTO chunk(id, url, text, embedding) VALUES (9, 'u', 't', '[1,1,1]')")
        assert _refusal_state(make_source_engine(reader, text_check=False), "DELETE FROM question_answer") in (
            REFUSED | {"42501"})
        assert _fingerprint(source_url) == before
    finally:
        from voproshalych_eval.db import reset_engines

        reset_engines()
        with psycopg.connect(source_url, autocommit=True) as conn:
            conn.execute("DROP OWNED BY voproshalych_reader")  # its grants here and on the database
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("DROP ROLE IF EXISTS voproshalych_reader")
