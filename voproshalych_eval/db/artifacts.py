"""The one module with SQL on ``eval.run_artifacts``: binary results of a run kept beside it (tables, vectors)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, text


def save_artifact(engine: Engine, run_id: int, name: str, data: bytes, *, fmt: str,
                  code_version: str | None = None) -> None:
    """Store (or replace) artefact ``name`` of run ``run_id``."""
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO eval.run_artifacts (run_id, name, format, code_version, n_bytes, data) "
            "VALUES (:r, :n, :f, :cv, :nb, :d) ON CONFLICT (run_id, name) DO UPDATE SET format = EXCLUDED.format, "
            "code_version = EXCLUDED.code_version, n_bytes = EXCLUDED.n_bytes, data = EXCLUDED.data, created_at = now()"),
            {"r": int(run_id), "n": name, "f": fmt, "cv": code_version, "nb": len(data), "d": data})


def load_artifact(engine: Engine, run_id: int, name: str) -> dict[str, Any] | None:
    """``{"format", "code_version", "n_bytes", "created_at", "data"}`` of artefact ``name`` of the run, or None."""
    with engine.connect() as conn:
        row = conn.execute(text(
            "SELECT format, code_version, n_bytes, created_at, data FROM eval.run_artifacts "
            "WHERE run_id = :r AND name = :n"), {"r": int(run_id), "n": name}).one_or_none()
    if row is None:
        return None
    out = dict(row._mapping)
    out["data"] = bytes(out["data"])
    return out


def has_artifact(engine: Engine, run_id: int, name: str) -> bool:
    with engine.connect() as conn:
        return conn.execute(text("SELECT 1 FROM eval.run_artifacts WHERE run_id = :r AND name = :n"),
                            {"r": int(run_id), "n": name}).first() is not None
