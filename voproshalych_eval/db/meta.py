"""``eval.meta``: the store's small key/value facts, read and written here only.

Keys: ``production_tables_owner`` (``"app"`` when the app created the production-compatible tables,
i.e. the demo), ``demo_loaded`` (files hash, embedder, counts of the loaded demo) and
``stored_embedding_model`` (``{"model", "dim"}`` of the model that filled ``chunk.embedding``).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Engine, text

OWNER_KEY = "production_tables_owner"
DEMO_KEY = "demo_loaded"
STORED_MODEL_KEY = "stored_embedding_model"


def get(engine: Engine, key: str) -> Any:
    """The value stored under ``key`` (parsed JSON), or None."""
    with engine.connect() as conn:
        return conn.execute(text("SELECT value FROM eval.meta WHERE key = :k"), {"k": key}).scalar()


def put(conn: Any, key: str, value: Any) -> None:
    """Store ``value`` (JSON) under ``key`` on an open connection (the caller's transaction)."""
    conn.execute(
        text(
            "INSERT INTO eval.meta(key, value) VALUES (:k, CAST(:v AS jsonb)) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = now()"
        ),
        {"k": key, "v": json.dumps(value, ensure_ascii=False)},
    )


def get_text_raw(cursor: Any, key: str) -> str | None:
    """The text value under ``key`` through a DBAPI cursor (used inside the write guard's event hook,
    where no SQLAlchemy statement may run); None when the table or the key is missing."""
    cursor.execute("SELECT to_regclass('eval.meta') IS NOT NULL")
    if not cursor.fetchone()[0]:
        return None
    cursor.execute("SELECT value #>> '{}' FROM eval.meta WHERE key = %s", (key,))
    row = cursor.fetchone()
    return row[0] if row else None


def stored_embedding_model(engine: Engine) -> dict[str, Any] | None:
    """``{"model": name, "dim": d}`` of the model that filled ``chunk.embedding``, when the app knows it."""
    value = get(engine, STORED_MODEL_KEY)
    return dict(value) if value else None
