"""Read-only access to a source database, enforced by PostgreSQL, with a statement check as second line.

A *source* (the bot's production database, or the demo database) is only ever read. Its connections
(:func:`voproshalych_eval.db.engine.get_source_engine`) are made so that PostgreSQL itself refuses
every write:

1. **Read-only transactions.** Every connection starts with ``default_transaction_read_only=on``
   (a connection option); PostgreSQL then refuses INSERT, UPDATE, DELETE, MERGE, COPY FROM, every
   CREATE / ALTER / DROP, TRUNCATE, GRANT, COMMENT, ``nextval`` and EXPLAIN ANALYZE of those, however
   the statement is spelled (comments, CTEs, ``DO`` blocks, Unicode-escaped identifiers …).
2. **Pinned transactions.** Before each statement, :func:`install_source_guard` asks the server, in
   the same transaction, whether it is read-only (``current_setting('transaction_read_only')``).
   That query takes the transaction's snapshot, after which PostgreSQL no longer lets it become
   read-write (``SET TRANSACTION READ WRITE`` fails); a transaction that is *not* read-only — because
   a statement changed the session default, or ``BEGIN READ WRITE`` was sent after a ``COMMIT`` —
   is refused and its connection discarded.
3. **One statement at a time.** Statements are sent with the extended protocol
   (``prepare_threshold=0``), so PostgreSQL rejects a string with several statements
   (``SELECT 1; COMMIT; BEGIN READ WRITE; DELETE …``).
4. **Second line.** :func:`source_statement_refusal` lets through only statements that begin with
   a reading keyword (``SELECT``, ``WITH`` without a data-modifying part, ``SHOW``, ``VALUES``,
   ``TABLE``, ``EXPLAIN`` without ``ANALYZE``, ``COPY (…) TO``) after comments are skipped. It is a
   convenience that gives a clearer message; the promise is PostgreSQL's enforcement above.

A database owner can always undo a session setting through a side door the app never uses (e.g. a
``dblink`` connection back to the same server). The guarantee a DBA can give is a login role that is
only granted ``SELECT`` (see the README, "Read-only role"); the app works with such a role as is.
"""

from __future__ import annotations

import re

from sqlalchemy import Engine, event

from voproshalych_eval.db.errors import ProductionWriteError, SourceNotReadOnlyError

#: the connection option every source connection starts with
READ_ONLY_OPTION = "-c default_transaction_read_only=on"
#: the query run before each statement on a source connection (pins the transaction read-only)
READ_ONLY_CHECK = "SELECT current_setting('transaction_read_only')"

_READING_KEYWORDS = {"select", "with", "show", "values", "table", "explain", "copy"}
_MODIFYING_RE = re.compile(r"\b(insert|update|delete|merge|truncate|create|drop|alter|grant|revoke|call|do)\b", re.I)
_ANALYZE_RE = re.compile(r"\banalyze\b|\banalyse\b", re.I)
_SIDE_DOORS_RE = re.compile(
    r"read[\s_]+write|session\s+characteristics|set_config|dblink|lo_(?:import|export|create|unlink)"
    r"|\bfrom\s+stdin\b|\bto\s+program\b|\bfrom\s+program\b|\bnextval\b|\bsetval\b|\bpg_terminate_backend\b",
    re.I,
)


def _skip_noise(sql: str) -> str:
    """``sql`` without leading whitespace, comments (``--``, nested ``/* */``) and opening parentheses."""
    i, n = 0, len(sql)
    while i < n:
        if sql[i].isspace() or sql[i] == "(":
            i += 1
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif sql.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if sql.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif sql.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        else:
            break
    return sql[i:]


def source_statement_refusal(statement: str) -> str | None:
    """Why ``statement`` may not be sent to a source, or None when it reads (the second line of defence)."""
    body = _skip_noise(statement)
    word = re.match(r"[A-Za-z_]+", body)
    keyword = word.group(0).lower() if word else ""
    if keyword not in _READING_KEYWORDS:
        return f"'{keyword or body[:20]}' is not a reading statement"
    if keyword == "with" and _MODIFYING_RE.search(body):
        return "a WITH query with a data-modifying part"
    if keyword == "explain" and _ANALYZE_RE.search(body):
        return "EXPLAIN ANALYZE executes its statement"
    if keyword == "copy" and not re.match(r"copy\s*\(", body, re.I):
        return "COPY of a table (only COPY (SELECT …) TO is reading)"
    if _SIDE_DOORS_RE.search(body):
        return "it changes the transaction mode, calls a writing function or reaches outside the database"
    return None


def install_source_guard(engine: Engine, *, text_check: bool = True) -> None:
    """Pin every transaction of ``engine`` read-only before each statement (and refuse non-reading text).

    ``text_check=False`` leaves only PostgreSQL's enforcement (tests that prove it).
    """

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _check(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if text_check:
            reason = source_statement_refusal(statement)
            if reason:
                raise ProductionWriteError(
                    f"Refused a statement on the source database: {reason}. Sources (production, demo) "
                    "are only read; the app's own data goes to its store."
                )
        verify_read_only(conn.connection.dbapi_connection, invalidate=conn.invalidate)
        return statement, parameters


def verify_read_only(dbapi_connection, *, invalidate=None) -> None:  # type: ignore[no-untyped-def]
    """Run :data:`READ_ONLY_CHECK` in the current transaction; refuse (and discard the connection) if off."""
    value = dbapi_connection.execute(READ_ONLY_CHECK).fetchone()[0]
    if value != "on":
        if invalidate is not None:
            invalidate()
        else:
            dbapi_connection.close()
        raise SourceNotReadOnlyError(
            "The source connection's transaction is not read-only (a statement changed the transaction "
            "mode); the connection was discarded and nothing was sent."
        )
