"""Load the shipped demo corpus (``data/``) into the configured database, idempotently.

Production-compatible tables (``chunk`` in the ``url`` + ``source_type`` variant, ``question_answer``,
``user``) are created and marked as app-owned; the golden, judge and dialog datasets go to
``eval.datasets``. Chunks are embedded with the configured embedder (through the cache); like
production, only a minority of logged questions get a stored embedding — analytics embeds the rest.
A database that already holds production tables the app does not own is refused.
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

from voproshalych_eval import datasets
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.db import meta, production
from voproshalych_eval.db.errors import ProductionWriteError
from voproshalych_eval.db.guard import OWNER_META_KEY, forget_protection_state, mark_tables_app_owned
from voproshalych_eval.embeddings import cached_embedder

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
DEMO_META_KEY = meta.DEMO_KEY
STORED_MODEL_META_KEY = meta.STORED_MODEL_KEY
QUESTION_EMBEDDING_EVERY = 12  # like production: only a minority of logged questions carry an embedding

Progress = Callable[[str], None]


def _files_hash(data_dir: Path) -> str:
    h = hashlib.sha256()
    for key in sorted(DEMO_FILES):
        h.update(DEMO_FILES[key].encode())
        h.update((data_dir / DEMO_FILES[key]).read_bytes())
    return h.hexdigest()


def _parse_ts(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def load_demo(
    engine: Engine,
    *,
    embedder_name: str = "use-multilingual",
    data_dir: Path = DATA_DIR,
    force: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Load the demo corpus; return counts per kind. A second call with the same files does nothing."""
    say = progress or (lambda msg: log.info(msg))
    t0 = time.perf_counter()
    missing = [f for f in DEMO_FILES.values() if not (data_dir / f).is_file()]
    if missing:
        raise FileNotFoundError(f"Demo files missing in {data_dir}: {', '.join(missing)}")
    files_hash = _files_hash(data_dir)

    schema = production.inspect_schema(engine)
    owner = meta.get(engine, OWNER_META_KEY)
    has_prod = schema.has_chunk or schema.has_question_answer or schema.has_user
    if has_prod and owner != "app":
        raise ProductionWriteError(
            "This database already holds production tables (chunk / question_answer / user) that "
            "voproshalych_eval did not create. The demo is only loaded into the embedded database or an "
            "empty one; production data is read, never overwritten."
        )
    done = meta.get(engine, DEMO_META_KEY)
    if not force and done and done.get("files_hash") == files_hash and done.get("embedder") == embedder_name:
        say("Demo data already loaded.")
        return {**done["counts"], "already_loaded": True, "seconds": round(time.perf_counter() - t0, 2)}

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

    say("Writing tables…")
    with engine.begin() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(727275)"))
        if has_prod:
            conn.execute(text('DROP TABLE IF EXISTS public.question_answer, public.chunk, public."user" CASCADE'))
        mark_tables_app_owned(conn)
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
        meta.put(conn, STORED_MODEL_META_KEY, {"model": emb.name, "dim": emb.dim})
        meta.put(conn, DEMO_META_KEY, {"files_hash": files_hash, "embedder": embedder_name, "counts": counts})
    forget_protection_state(engine)
    for ds in (golden, judge, dialogs):
        datasets.store(engine, ds)
    seconds = round(time.perf_counter() - t0, 2)
    say(f"Demo data loaded in {seconds} s.")
    return {**counts, "already_loaded": False, "seconds": seconds}
