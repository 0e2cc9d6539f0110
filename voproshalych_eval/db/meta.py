"""``eval.meta``: small JSON values the app keeps about its store (demo state, current snapshot, …)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, Engine, text


def get_meta(engine: Engine | Connection, key: str, default: Any = None) -> Any:
    """The JSON value stored under ``key`` (``default`` when absent)."""
    sql = text("SELECT value FROM eval.meta WHERE key = :k")
    if isinstance(engine, Connection):
        value = engine.execute(sql, {"k": key}).scalar()
    else:
        with engine.connect() as conn:
            value = conn.execute(sql, {"k": key}).scalar()
    return default if value is None else value


def set_meta(conn: Connection, key: str, value: Any) -> None:
    """Store ``value`` (JSON-serialisable) under ``key`` in the caller's transaction."""
    conn.execute(
        text(
            "INSERT INTO eval.meta(key, value) VALUES (:k, CAST(:v AS jsonb)) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()"
        ),
        {"k": key, "v": json.dumps(value, ensure_ascii=False)},
    )


def delete_meta(conn: Connection, key: str) -> None:
    conn.execute(text("DELETE FROM eval.meta WHERE key = :k"), {"k": key})
