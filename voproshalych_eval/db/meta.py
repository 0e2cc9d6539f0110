"""``eval.meta``: the store's small key/value facts, read and written here only.

Keys: ``current_snapshot`` (id of the snapshot readers use by default, :mod:`voproshalych_eval.db.snapshots`),
``demo_source`` (what the demo loader wrote: files hash, embedder, counts, content hashes) and
``stored_embedding_model`` (``{"model", "dim"}`` of the model that filled the demo's ``chunk.embedding``).
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, Engine, text

CURRENT_SNAPSHOT_KEY = "current_snapshot"
DEMO_KEY = "demo_source"
STORED_MODEL_KEY = "stored_embedding_model"


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


#: short names
get = get_meta
put = set_meta


def stored_embedding_model(engine: Engine) -> dict[str, Any] | None:
    """``{"model": name, "dim": d}`` of the model that filled the demo's ``chunk.embedding``, when loaded."""
    value = get_meta(engine, STORED_MODEL_KEY)
    return dict(value) if value else None
