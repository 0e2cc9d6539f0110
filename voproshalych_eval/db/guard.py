"""Production read-only guard.

When the database holds production tables that the app did not create itself (a production database
or a restored dump), every statement that would modify ``chunk``, ``question_answer`` or ``user`` is
refused before it reaches the server, with :class:`ProductionWriteError`. The app's own results live
in the ``eval`` schema. Demo tables created by ``voproshalych-eval demo`` are marked as app-owned in
``eval.meta`` and may be written.
"""

from __future__ import annotations

import re

from sqlalchemy import Engine, event

from voproshalych_eval.db import meta
from voproshalych_eval.db.errors import ProductionWriteError

PRODUCTION_TABLES = ("chunk", "question_answer", "user")
OWNER_META_KEY = meta.OWNER_KEY

_IDENT = r'(?:"?public"?\s*\.\s*)?"?(chunk|question_answer|user)"?(?![\w.])'
_WRITE_RE = re.compile(
    r"^\s*(?:with\b.*?\)\s*)?(?:insert\s+into|update|delete\s+from|truncate(?:\s+table)?|"
    r"alter\s+table(?:\s+if\s+exists)?|drop\s+table(?:\s+if\s+exists)?|copy)\s+(?:only\s+)?" + _IDENT,
    re.IGNORECASE | re.DOTALL,
)


def production_table_written(statement: str) -> str | None:
    """Return the production table a SQL statement would modify, or None."""
    match = _WRITE_RE.search(statement)
    return match.group(1).lower() if match else None


def _production_is_protected(conn) -> bool:  # type: ignore[no-untyped-def]
    info = conn.info
    if "production_protected" not in info:
        raw = conn.connection.dbapi_connection
        with raw.cursor() as cur:
            cur.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' "
                "AND table_name = ANY(%s)",
                (list(PRODUCTION_TABLES),),
            )
            has_tables = cur.fetchone()[0] > 0
            owned = has_tables and meta.get_text_raw(cur, OWNER_META_KEY) == "app"
        info["production_protected"] = has_tables and not owned
    return bool(info["production_protected"])


def install_guard(engine: Engine) -> None:
    """Refuse writes to production tables on ``engine`` unless the app owns them."""

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _check(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        table = production_table_written(statement)
        if table and _production_is_protected(conn):
            raise ProductionWriteError(
                f"Refused to modify the production table '{table}': this database holds production "
                "tables, which voproshalych_eval only reads. The app's own results go to the 'eval' schema."
            )
        return statement, parameters


def forget_protection_state(engine: Engine) -> None:
    """Drop cached per-connection protection flags (after the demo loader claims the tables)."""
    engine.dispose()


def mark_tables_app_owned(conn) -> None:  # type: ignore[no-untyped-def]
    """Record that the app created the production-compatible tables in this database (demo data)."""
    meta.put(conn, OWNER_META_KEY, "app")
