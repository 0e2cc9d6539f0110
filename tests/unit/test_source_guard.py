"""The source's statement check (second line of defence): reading statements pass, everything else is named."""

from __future__ import annotations

import pytest

from voproshalych_eval.db.engine import _with_option, with_database
from voproshalych_eval.db.guard import READ_ONLY_OPTION, source_statement_refusal


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM chunk",
        "  /* a /* nested */ comment */ -- line\n select 1",
        "(SELECT 1) UNION (SELECT 2)",
        "WITH x AS (SELECT id FROM chunk) SELECT * FROM x",
        "SHOW default_transaction_read_only",
        "SELECT current_setting('transaction_read_only')",
        "EXPLAIN SELECT * FROM chunk",
        "VALUES (1)",
        "TABLE chunk",
        "COPY (SELECT id FROM chunk) TO STDOUT (FORMAT BINARY)",
        "SELECT created_at, updated_at FROM question_answer",
    ],
)
def test_reading_statements_pass(sql: str) -> None:
    assert source_statement_refusal(sql) is None


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("/* c */ DELETE FROM question_answer", "'delete' is not a reading statement"),
        ("-- x\nINSERT INTO chunk VALUES (1)", "'insert'"),
        ("/* a /* b */ c */ UPDATE chunk SET text = ''", "'update'"),
        ("WITH x AS (INSERT INTO chunk VALUES (1) RETURNING id) SELECT * FROM x", "data-modifying"),
        ("EXPLAIN ANALYZE DELETE FROM chunk", "EXPLAIN ANALYZE"),
        ("EXPLAIN (ANALYSE) UPDATE chunk SET id = id", "EXPLAIN ANALYZE"),
        ("COPY chunk FROM STDIN", "COPY of a table"),
        ("COPY chunk TO '/tmp/x'", "COPY of a table"),
        ("DO $$ BEGIN DELETE FROM chunk; END $$", "'do'"),
        ("SET default_transaction_read_only = off", "'set'"),
        ("SELECT set_config('default_transaction_read_only', 'off', false)", "transaction mode"),
        ("BEGIN READ WRITE", "'begin'"),
        ("SELECT dblink_exec('dbname=x', 'DELETE FROM chunk')", "outside the database"),
        ("SELECT nextval('s')", "writing function"),
        ("LOCK TABLE chunk", "'lock'"),
        ('MERGE INTO chunk USING (SELECT 1 AS id) s ON chunk.id = s.id WHEN MATCHED THEN DELETE', "'merge'"),
    ],
)
def test_other_statements_are_refused_with_a_reason(sql: str, reason: str) -> None:
    refusal = source_statement_refusal(sql)
    assert refusal is not None and reason in refusal


def test_read_only_option_is_appended_to_existing_options() -> None:
    url = _with_option("postgresql://u:p@h:5432/db?sslmode=require&options=-c%20search_path%3Dx", READ_ONLY_OPTION)
    assert "sslmode=require" in url
    # spaces as %20 (libpq does not read '+' as a space)
    assert "options=-c%20search_path%3Dx%20-c%20default_transaction_read_only%3Don" in url
    assert with_database("postgresql://u:p@h:5432/db?host=/tmp/s", "other") == "postgresql://u:p@h:5432/other?host=/tmp/s"
