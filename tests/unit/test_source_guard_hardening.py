"""The source's statement check, hardened (the audit's defence-in-depth cases): COPY to a file or a program,
functions outside the allow-list (also spelled with Unicode escapes), unbounded sleeps, replication slots,
advisory locks; and the session options every source connection starts with."""

from __future__ import annotations

import pytest

from voproshalych_eval.db.guard import source_statement_refusal


@pytest.mark.parametrize("sql", [
    "COPY (SELECT id FROM chunk) TO '/tmp/x.csv'",
    "COPY (SELECT 1) TO PROGRAM 'touch /tmp/pwned'",
    "copy (select 1) to e'/tmp/x'",
    "COPY (SELECT 1) TO STDIN",
])
def test_copy_to_a_file_or_program_is_refused(sql: str) -> None:
    assert source_statement_refusal(sql) is not None


@pytest.mark.parametrize("sql", [
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity",
    'SELECT U&"\\0070g_terminate_backend"(123)',
    'SELECT U&"!0070g_terminate_backend"(123) UESCAPE \'!\'',
    'SELECT "pg_terminate_backend"(123)',
    "SELECT pg_catalog.pg_terminate_backend(123)",
    "SELECT pg_cancel_backend(1)",
    "SELECT pg_sleep(100000)",
    "SELECT pg_sleep_for('1 day')",
    "SELECT pg_create_logical_replication_slot('s', 'test_decoding')",
    "SELECT * FROM pg_logical_slot_get_changes('s', NULL, NULL)",
    "SELECT pg_drop_replication_slot('s')",
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_try_advisory_lock(1)",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT query_to_xml('select 1', true, true, '')",
    "SELECT lo_export(1, '/tmp/x')",
    "SELECT some_user_function(1)",
])
def test_functions_outside_the_allow_list_are_refused(sql: str) -> None:
    refusal = source_statement_refusal(sql)
    assert refusal is not None and "function" in refusal, refusal


@pytest.mark.parametrize("sql", [
    "SELECT count(*), max(length(text)), md5(string_agg(id::text, ',' ORDER BY id)) FROM chunk",
    "WITH t(a, b) AS (SELECT 1, 2) SELECT a FROM t",
    "SELECT x.a FROM (VALUES (1)) AS x(a)",
    "SELECT coalesce(nullif(confluence_url, ''), 'x'), lower(text) FROM chunk WHERE id IN (1, 2) AND EXISTS (SELECT 1)",
    "SELECT embedding::vector(4), CAST(id AS varchar(20)), vector_dims(embedding) FROM chunk",
    "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a",
    "SELECT pg_catalog.version()",
    "COPY (SELECT id, text FROM chunk ORDER BY id) TO STDOUT (FORMAT BINARY)",
    "SELECT count(*) FILTER (WHERE score > 3) OVER (PARTITION BY user_id) FROM question_answer",
    "SELECT 'pg_terminate_backend(1)' AS a_string_is_not_a_call",
])
def test_the_apps_own_reads_pass(sql: str) -> None:
    assert source_statement_refusal(sql) is None
