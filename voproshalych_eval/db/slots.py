"""A limit shared by every process on one store: at most ``limit`` holders of a named slot set at once.

The per-provider limit of LLM requests in flight must hold across all the workers of a team, on any number
of machines, not per process. Each slot is a PostgreSQL session advisory lock ``(namespace, slot id)`` taken
with ``pg_try_advisory_lock`` on a connection kept for as long as the slot is held: the store is the one
place every worker reaches, a slot is released when its holder returns it, and by PostgreSQL when the
holder's process dies (``kill -9`` closes the connection) — no slot leaks, no table to clean.

A caller that finds every slot taken polls again after ``poll_s`` (with jitter); slots are tried from a
random start so the holders spread over them.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, text

#: advisory-lock class id of shared slots ("sl")
SLOT_NAMESPACE = 0x736C
MAX_SLOTS = 1024


def _base(name: str) -> int:
    return (zlib.crc32(name.encode("utf-8")) % (2**20)) * MAX_SLOTS


@contextmanager
def hold_slot(engine: Engine, name: str, limit: int, *, poll_s: float = 0.02) -> Iterator[int]:
    """Hold one of ``limit`` slots named ``name`` for the block (waits while all are held); yields its index."""
    limit = max(1, min(int(limit), MAX_SLOTS))
    base = _base(name)
    while True:
        conn = engine.connect()
        got = None
        try:
            start = random.randrange(limit)
            for i in range(limit):
                slot = (start + i) % limit
                if conn.execute(text("SELECT pg_try_advisory_lock(:ns, :k)"),
                                {"ns": SLOT_NAMESPACE, "k": base + slot}).scalar():
                    got = slot
                    break
            conn.commit()
        except BaseException:
            conn.close()
            raise
        if got is None:
            conn.close()
            time.sleep(poll_s * (0.5 + random.random()))
            continue
        try:
            yield got
        finally:
            try:
                conn.execute(text("SELECT pg_advisory_unlock(:ns, :k)"), {"ns": SLOT_NAMESPACE, "k": base + got})
                conn.commit()
            finally:
                conn.close()
        return


def held(engine: Engine, name: str) -> int:
    """How many slots named ``name`` are held now, by every process on the store."""
    base = _base(name)
    with engine.connect() as conn:
        return int(conn.execute(text(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = :ns AND objsubid = 2 "
            "AND granted AND objid >= :lo AND objid < :hi"),
            {"ns": SLOT_NAMESPACE, "lo": base, "hi": base + MAX_SLOTS}).scalar() or 0)
