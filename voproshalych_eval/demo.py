"""The demo: a source database of its own, loaded from the shipped corpus (``data/``), then snapshotted.

The demo database (``voproshalych_demo`` next to the embedded store; ``<store database>_demo`` next to a
store given by URL) holds
production-compatible tables (``chunk`` in the ``url`` + ``source_type`` variant, ``question_answer``,
``user``). It is the source when ``DATABASE_URL`` is not set, and the app reads it exactly as it reads
production: through read-only connections, into a snapshot in the store. The golden, judge and dialog
datasets go to the store's ``eval.datasets``. Chunks are embedded with the configured embedder
(through the cache); like production, only a minority of logged questions get a stored embedding.

The loader is the only writer of a source, and it writes only the demo database, in one transaction.
It replaces tables there only when their content hash is one it wrote itself (recorded in the store's
``eval.meta``), so data restored into the demo database by someone else is never dropped; a
configured ``DATABASE_URL`` is never written.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.db import meta, production, snapshots
from voproshalych_eval.db.engine import (
    admin_engine,
    database_name,
    demo_admin_engine,
    demo_url,
    get_source_engine,
    settings_for,
)
from voproshalych_eval.db.errors import ProductionWriteError
from voproshalych_eval.db.meta import get_meta, set_meta
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.errors import VoproshalychEvalError

log = logging.getLogger(__name__)

DATA_DIR = PROJECT_ROOT / "data"
DEMO_FILES = {
    "knowledge_base": "knowledge_base.json",
    "golden": "golden_dataset.json",
    "log": "question_log.csv",
    "users": "users.csv",
    "judge": "judge_set.json",
    "dialogs": "dialogs.json",
}
#: ``eval.meta`` key: what the loader wrote into the demo database (files, embedder, content hashes)
DEMO_META_KEY = meta.DEMO_KEY
STORED_MODEL_META_KEY = meta.STORED_MODEL_KEY
QUESTION_EMBEDDING_EVERY = 12  # like production: only a minority of logged questions carry an embedding
#: advisory lock key (on the store) serialising demo loaders
LOAD_LOCK = 727275
#: how many content hashes written by the loader are remembered as its own
OWNED_HASHES = 20

Progress = Callable[[str], None]


class DemoNotAvailableError(VoproshalychEvalError, RuntimeError):
    """The demo cannot be used with the present configuration (a production source is configured)."""


def _files_hash(data_dir: Path) -> str:
    h = hashlib.sha256()
    for key in sorted(DEMO_FILES):
        h.update(DEMO_FILES[key].encode())
        h.update((data_dir / DEMO_FILES[key]).read_bytes())
    return h.hexdigest()


def stored_embedding_model(engine: Engine) -> dict[str, Any] | None:
    """``{"model": name, "dim": d}`` of the model that filled the demo's ``chunk.embedding``, when loaded."""
    return meta.stored_embedding_model(engine)


def demo_state(engine: Engine) -> dict[str, Any] | None:
    """What the loader last wrote (``files_hash``, ``embedder``, ``counts``, ``content_hash``), or None."""
    value = get_meta(engine, DEMO_META_KEY)
    return dict(value) if value else None


def _parse_ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def demo_database(engine: Engine) -> str:
    """Name of the demo database of the store ``engine``."""
    return database_name(demo_url(settings_for(engine)))


def _ensure_database(engine: Engine) -> None:
    """Create the demo database on the store's server when it does not exist (never drops one)."""
    name = demo_database(engine)
    admin = admin_engine(settings_for(engine))
    try:
        with admin.connect() as conn:
            exists = conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": name}).scalar()
            if not exists:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()


def _demo_content_hash(conn: Any) -> str | None:
    """Content hash of the demo database's production tables (None when it has none)."""
    shape = snapshots._shape(conn)
    if not (shape.has_chunk or shape.has_question_answer or shape.has_user):
        return None
    if not (shape.has_chunk or shape.has_question_answer):
        return "users-only"
    return snapshots._hashes(
        conn, shape, "public.chunk", "public.question_answer", 'public."user"' if shape.has_user else None
    )["content_hash"]


def load_demo(
    engine: Engine,
    *,
    embedder_name: str = "use-multilingual",
    data_dir: Path = DATA_DIR,
    force: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Load the demo corpus into the demo database, snapshot it into the store (``engine``), store the datasets.

    Returns counts per kind, ``already_loaded`` and ``snapshot_id``. A second call with the same files and
    embedder does nothing but confirm the snapshot. Concurrent calls are serialised.
    """
    settings = settings_for(engine)
    if settings.database_url:
        raise DemoNotAvailableError(
            "A source database is configured (DATABASE_URL): the demo is a source of its own and is not loaded. "
            "Unset DATABASE_URL to work on the demo."
        )
    say = progress or (lambda msg: log.info(msg))
    t0 = time.perf_counter()
    missing = [f for f in DEMO_FILES.values() if not (data_dir / f).is_file()]
    if missing:
        raise FileNotFoundError(f"Demo files missing in {data_dir}: {', '.join(missing)}")
    files_hash = _files_hash(data_dir)
    with engine.connect() as lock_conn:
        lock_conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": LOAD_LOCK})
        lock_conn.commit()
        try:
            return _load_locked(engine, embedder_name, data_dir, files_hash, force, say, t0)
        finally:
            lock_conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": LOAD_LOCK})
            lock_conn.commit()


def _load_locked(
    engine: Engine, embedder_name: str, data_dir: Path, files_hash: str, force: bool, say: Progress, t0: float
) -> dict[str, Any]:
    settings = settings_for(engine)
    state = demo_state(engine) or {}
    _ensure_database(engine)
    if not force and state.get("files_hash") == files_hash and state.get("embedder") == embedder_name:
        with get_source_engine(settings).connect() as conn:
            present = _demo_content_hash(conn)
        if present == state.get("content_hash"):
            snap = snapshots.take(engine, progress=say)
            say("Demo data already loaded.")
            return {**state["counts"], "already_loaded": True, "snapshot_id": snap.id,
                    "seconds": round(time.perf_counter() - t0, 2)}

    kb = json.loads((data_dir / DEMO_FILES["knowledge_base"]).read_text(encoding="utf-8"))
    golden = datasets.load_file(data_dir / DEMO_FILES["golden"], "golden", name="demo_golden")
    judge = datasets.load_file(data_dir / DEMO_FILES["judge"], "judge", name="demo_judge")
    dialogs = datasets.load_file(data_dir / DEMO_FILES["dialogs"], "dialogs", name="demo_dialogs")
    users = _read_csv(data_dir / DEMO_FILES["users"])
    log_rows = _read_csv(data_dir / DEMO_FILES["log"])

    emb = cached_embedder(embedder_name, engine)
    say(f"Embedding {len(kb)} chunks with {embedder_name}…")
    chunk_vecs = emb.encode_passages([c["text"] for c in kb])
    q_rows = [r for r in log_rows if int(r["id"]) % QUESTION_EMBEDDING_EVERY == 0]
    say(f"Embedding {len(q_rows)} of {len(log_rows)} logged questions (as production stores only some)…")
    q_vecs = dict(zip((r["id"] for r in q_rows), emb.encode_queries([r["question"] for r in q_rows]), strict=True))

    name = demo_database(engine)
    say(f"Writing the demo database ({name})…")
    owned = set(state.get("content_hashes") or [])
    writer = demo_admin_engine(settings)
    try:
        with writer.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            from pgvector.psycopg import register_vector  # heavy: defers pgvector

            register_vector(conn.connection.dbapi_connection)  # the extension may be new in this transaction
            for table in ("chunk", "question_answer", '"user"'):
                if conn.execute(text("SELECT to_regclass(:t)"), {"t": f"public.{table}"}).scalar() is not None:
                    conn.execute(text(f"LOCK TABLE public.{table} IN ACCESS EXCLUSIVE MODE"))
            present = _demo_content_hash(conn)
            if present is not None and present not in owned:
                raise ProductionWriteError(
                    f"The demo database '{name}' holds chunk / question_answer / user tables that the demo "
                    "loader did not write (their content differs from every load it recorded). They are left "
                    f"untouched. If they are disposable, drop them yourself (DROP DATABASE {name}); to "
                    "evaluate such data, point DATABASE_URL at it."
                )
            conn.execute(text('DROP TABLE IF EXISTS public.question_answer, public.chunk, public."user"'))
            production.create_tables(conn, dim=emb.dim, variant="url")
            conn.execute(
                text(
                    "INSERT INTO public.chunk(id, url, source_type, text, embedding) "
                    "VALUES (:id, :url, :st, :text, :emb)"
                ),
                [
                    {"id": int(c["id"]), "url": c["url"], "st": c.get("source_type"), "text": c["text"], "emb": v}
                    for c, v in zip(kb, chunk_vecs, strict=True)
                ],
            )
            conn.execute(
                text(
                    'INSERT INTO public."user"(id, vk_id, telegram_id, is_subscribed, created_at) '
                    "VALUES (:id, :vk, :tg, :sub, :ts)"
                ),
                [
                    {
                        "id": int(u["id"]),
                        "vk": int(u["vk_id"]) if u.get("vk_id") else None,
                        "tg": int(u["telegram_id"]) if u.get("telegram_id") else None,
                        "sub": (u.get("is_subscribed") or "true").lower() in {"true", "1", "t"},
                        "ts": _parse_ts(u.get("created_at")),
                    }
                    for u in users
                ],
            )
            conn.execute(
                text(
                    "INSERT INTO public.question_answer(id, question, embedding, answer, confluence_url, score, "
                    "user_id, stop_point, created_at, updated_at) VALUES (:id, :q, :emb, :a, :url, :score, :uid, "
                    ":sp, :ts, :ts)"
                ),
                [
                    {
                        "id": int(r["id"]),
                        "q": r["question"],
                        "emb": q_vecs.get(r["id"]),
                        "a": r["answer"] or None,
                        "url": r["confluence_url"] or None,
                        "score": int(r["score"]) if r.get("score") else None,
                        "uid": int(r["user_id"]) if r.get("user_id") else None,
                        "sp": (r.get("stop_point") or "false").lower() in {"true", "1", "t"},
                        "ts": _parse_ts(r.get("created_at")),
                    }
                    for r in log_rows
                ],
            )
            counts = {
                "chunks": len(kb),
                "pages": len({c["url"] for c in kb}),
                "golden_questions": len(golden),
                "log_questions": len(log_rows),
                "log_questions_with_embedding": len(q_rows),
                "users": len(users),
                "judge_labels": len(judge),
                "dialogs": len(dialogs),
            }
            written = _demo_content_hash(conn)
            # recorded in the store BEFORE the demo transaction commits: whatever a crash leaves behind
            # (the previous content or this one) is recognised as the loader's own next time
            with engine.begin() as sconn:
                set_meta(sconn, STORED_MODEL_META_KEY, {"model": emb.name, "dim": emb.dim})
                set_meta(sconn, DEMO_META_KEY, {
                    "files_hash": files_hash, "embedder": embedder_name, "counts": counts, "content_hash": written,
                    "content_hashes": [written, *[h for h in state.get("content_hashes") or [] if h != written]][
                        :OWNED_HASHES],
                })
    finally:
        writer.dispose()
    snap = snapshots.take(engine, progress=say)
    for ds in (golden, judge, dialogs):
        datasets.store(engine, ds)
    seconds = round(time.perf_counter() - t0, 2)
    say(f"Demo data loaded in {seconds} s (snapshot {snap.label}).")
    return {**counts, "already_loaded": False, "snapshot_id": snap.id, "seconds": seconds}
