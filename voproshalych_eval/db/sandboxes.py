"""Sandboxes: knowledge-base snapshots derived from another one by edits (the only SQL on ``eval.sandboxes``).

A sandbox is an ordinary snapshot (``source_kind = 'sandbox'``, made by
:func:`voproshalych_eval.db.snapshots.derive`), listed and deleted like the others; ``eval.sandboxes``
keeps what it was derived from: the parent snapshot, the edits (``{"op": "add"|"replace"|"remove", "url",
"text_sha256", "n_chunks", "source"}`` — the texts themselves are the sandbox's chunks) and the splitter and
embedder settings. Page texts of a snapshot are read here too (:func:`page_text`, :func:`pages`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, text

from voproshalych_eval.db import snapshots
from voproshalych_eval.db.errors import SnapshotError


@dataclass(frozen=True)
class SandboxInfo:
    """The row of ``eval.sandboxes`` of one sandbox snapshot."""

    snapshot_id: int
    parent_id: int | None
    edits: list[dict[str, Any]]
    chunk_size: int
    chunk_overlap: int
    embedder: str | None
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["created_at"] = self.created_at.isoformat()
        return out


def record(engine: Engine, snapshot_id: int, *, parent_id: int, edits: list[dict[str, Any]], chunk_size: int,
           chunk_overlap: int, embedder: str | None) -> SandboxInfo:
    """Record (or keep, when the same sandbox was derived before) the sandbox's origin."""
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO eval.sandboxes(snapshot_id, parent_id, edits, chunk_size, chunk_overlap, embedder) "
                 "VALUES (:s, :p, CAST(:e AS jsonb), :cs, :co, :m) ON CONFLICT (snapshot_id) DO NOTHING"),
            {"s": int(snapshot_id), "p": int(parent_id), "e": json.dumps(edits, ensure_ascii=False),
             "cs": int(chunk_size), "co": int(chunk_overlap), "m": embedder},
        )
    found = get(engine, snapshot_id)
    assert found is not None
    return found


def get(engine: Engine, snapshot_id: int) -> SandboxInfo | None:
    """The origin of sandbox ``snapshot_id`` (None when that snapshot is not a sandbox)."""
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT snapshot_id, parent_id, edits, chunk_size, chunk_overlap, embedder, created_at "
                 "FROM eval.sandboxes WHERE snapshot_id = :s"), {"s": int(snapshot_id)}).first()
    return SandboxInfo(**dict(row._mapping)) if row is not None else None


def list_sandboxes(engine: Engine) -> list[SandboxInfo]:
    """Every sandbox, newest first."""
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT snapshot_id, parent_id, edits, chunk_size, chunk_overlap, embedder, created_at "
                 "FROM eval.sandboxes ORDER BY created_at DESC, snapshot_id DESC")).all()
    return [SandboxInfo(**dict(r._mapping)) for r in rows]


def pages(engine: Engine, snapshot: int | snapshots.Snapshot | None = None) -> list[dict[str, Any]]:
    """The pages of a snapshot's knowledge base: ``url``, ``n_chunks``, ``n_chars``, ``source_type``."""
    snap = snapshots.resolve(engine, snapshot)
    with engine.connect() as conn:
        rows = conn.execute(text(
            f"SELECT url, count(*) AS n_chunks, sum(length(text)) AS n_chars, min(source_type) AS source_type "
            f"FROM {snap.chunks_table} GROUP BY url ORDER BY url")).all()
    return [dict(r._mapping) for r in rows]


def page_chunks(engine: Engine, url: str, snapshot: int | snapshots.Snapshot | None = None) -> list[dict[str, Any]]:
    """The chunks of page ``url`` in a snapshot (``id``, ``text``, ``source_type``), in id order."""
    snap = snapshots.resolve(engine, snapshot)
    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT id, text, source_type FROM {snap.chunks_table} WHERE url = :u ORDER BY id"),
                            {"u": url}).all()
    return [dict(r._mapping) for r in rows]


def page_text(engine: Engine, url: str, snapshot: int | snapshots.Snapshot | None = None) -> str:
    """A page's text as its chunks joined by blank lines (id order); :class:`SnapshotError` for an unknown page."""
    chunks = page_chunks(engine, url, snapshot)
    if not chunks:
        snap = snapshots.resolve(engine, snapshot)
        raise SnapshotError(f"Snapshot {snap.label} has no page {url!r} (voproshalych-eval snapshot pages).")
    return "\n\n".join(str(c["text"]) for c in chunks)
