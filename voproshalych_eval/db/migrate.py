"""Versioned migrations of the ``eval`` schema (Alembic), run programmatically.

Revisions live in ``voproshalych_eval/db/migrations/versions``. The version table is
``eval.alembic_version``. ``upgrade`` applies all heads, so independent branches are allowed.
"""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_lock = threading.Lock()


def alembic_config(engine: Engine | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if engine is not None:
        cfg.attributes["engine"] = engine
    return cfg


#: advisory lock key serialising migrators (and first-time extension creation) on one database
MIGRATION_LOCK = 727274


def upgrade(engine: Engine, revision: str = "heads") -> None:
    """Create the ``vector`` extension and the ``eval`` schema if needed, upgrade to ``revision`` (default: all heads).

    Concurrent callers (several app processes starting at once) are serialised by an advisory lock
    taken before anything is created, so none of them sees a half-made schema or a duplicate-key error.
    """
    with _lock, engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK})
        conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        conn.execute(text("CREATE SCHEMA IF NOT EXISTS eval"))
        cfg = alembic_config()
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def current_revisions(engine: Engine) -> set[str]:
    with engine.connect() as conn:
        if not conn.execute(text("SELECT to_regclass('eval.alembic_version') IS NOT NULL")).scalar():
            return set()
        return {r[0] for r in conn.execute(text("SELECT version_num FROM eval.alembic_version"))}
