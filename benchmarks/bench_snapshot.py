"""Benchmark: taking a snapshot of a production-sized source (10,000 chunks x 1024-d + a question log).

    python benchmarks/bench_snapshot.py            # 10,000 chunks x 1024-d, 6,000 logged questions
    python benchmarks/bench_snapshot.py --quick    # 2,000 chunks, 1,000 questions

A temporary source database (production's tables, ``confluence_url`` variant, 1 in 12 questions with a
stored vector) and a temporary store are created on the store's server and dropped at the end.

Measured in the same run:
* ``snapshots.take`` on a new source (hash on the source, binary COPY into the store's partitions, hash
  of the copy to verify it);
* ``snapshots.take`` again on the unchanged source (hash only, the existing snapshot is returned);
* baseline: the straightforward copy — read every row through SQLAlchemy (vectors decoded to numpy) and
  insert them into the store with ``executemany`` — into a plain table of the same shape.
"""

from __future__ import annotations

import argparse
import time
import uuid

import numpy as np
from sqlalchemy import create_engine, event, text


def _admin_url(server_url: str) -> str:
    return "postgresql+psycopg://" + server_url.split("://", 1)[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=10_000)
    ap.add_argument("--questions", type=int, default=6_000)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.chunks, args.questions = 2_000, 1_000

    from pgvector.psycopg import register_vector

    from voproshalych_eval.config import Settings, get_settings
    from voproshalych_eval.db import get_engine, production, reset_engines, snapshots
    from voproshalych_eval.db.engine import store_url, with_database

    settings = get_settings()
    server = store_url(settings)
    name = "bench_snap_" + uuid.uuid4().hex[:10]
    admin = create_engine(_admin_url(with_database(server, "postgres")), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
        conn.execute(text(f'CREATE DATABASE "{name}_store"'))
    src_url, store_db = with_database(server, name), with_database(server, name + "_store")
    try:
        rng = np.random.default_rng(0)
        raw = create_engine(_admin_url(src_url))
        with raw.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        raw.dispose()
        event.listen(raw, "connect", lambda dbapi, _r: register_vector(dbapi))
        text_block = "Стипендия назначается по итогам сессии; общежитие предоставляется иногородним. " * 12
        with raw.begin() as conn:
            production.create_tables(conn, dim=args.dim, variant="confluence_url")
            for start in range(0, args.chunks, 1000):
                vecs = rng.standard_normal((min(1000, args.chunks - start), args.dim)).astype(np.float32)
                conn.execute(
                    text("INSERT INTO public.chunk(id, confluence_url, text, embedding) VALUES (:i, :u, :t, :e)"),
                    [{"i": start + j + 1, "u": f"https://wiki/page{(start + j) // 5}", "t": f"{start + j} {text_block}",
                      "e": v} for j, v in enumerate(vecs)],
                )
            conn.execute(text('INSERT INTO public."user"(id) SELECT g FROM generate_series(1, 500) g'))
            qv = rng.standard_normal((args.questions, args.dim)).astype(np.float32)
            conn.execute(
                text("INSERT INTO public.question_answer(id, question, embedding, answer, confluence_url, score, user_id, "
                     "created_at) VALUES (:i, :q, :e, :a, :u, :s, :uid, now() - make_interval(hours => :i))"),
                [{"i": i + 1, "q": f"вопрос {i} про стипендию", "e": qv[i] if i % 12 == 0 else None,
                  "a": "ответ" if i % 3 else None, "u": "https://wiki/page1", "s": (5 if i % 7 == 0 else None),
                  "uid": i % 500 + 1} for i in range(args.questions)],
            )
        raw.dispose()
        store = get_engine(Settings(home=settings.home, database_url=src_url, store_url=store_db))
        print(f"source: {args.chunks} chunks x {args.dim}-d, {args.questions} logged questions")

        t0 = time.perf_counter()
        snap = snapshots.take(store)
        t_take = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = snapshots.take(store)
        t_again = time.perf_counter() - t0
        assert again.reused and again.id == snap.id and snap.n_chunks == args.chunks

        # baseline: read rows through SQLAlchemy, insert them with executemany
        t0 = time.perf_counter()
        src_plain = create_engine(_admin_url(src_url))
        event.listen(src_plain, "connect", lambda dbapi, _r: register_vector(dbapi))
        with src_plain.connect() as conn:
            chunks = conn.execute(text("SELECT id, confluence_url, text, embedding FROM public.chunk ORDER BY id")).all()
            log = conn.execute(text("SELECT id, question, answer, confluence_url, score, user_id, created_at, embedding "
                                    "FROM public.question_answer ORDER BY id")).all()
        with store.begin() as conn:
            conn.execute(text("CREATE TABLE eval.bench_chunks (id integer PRIMARY KEY, url text, text text, embedding vector)"))
            conn.execute(text("CREATE TABLE eval.bench_log (id integer PRIMARY KEY, question text, answer text, url text, "
                              "score integer, user_id integer, created_at timestamptz, embedding vector)"))
            conn.execute(text("INSERT INTO eval.bench_chunks VALUES (:i, :u, :t, :e)"),
                         [{"i": r[0], "u": r[1], "t": r[2], "e": r[3]} for r in chunks])
            conn.execute(text("INSERT INTO eval.bench_log VALUES (:i, :q, :a, :u, :s, :uid, :c, :e)"),
                         [{"i": r[0], "q": r[1], "a": r[2], "u": r[3], "s": r[4], "uid": r[5], "c": r[6], "e": r[7]}
                          for r in log])
        t_base = time.perf_counter() - t0
        src_plain.dispose()

        print(f"baseline (SQLAlchemy read + executemany insert, no hash): {t_base:7.2f} s")
        print(f"snapshots.take, new source (hash + binary COPY + verify): {t_take:7.2f} s   ratio vs baseline "
              f"{t_base / t_take:5.1f}x")
        print(f"snapshots.take, unchanged source (hash only):            {t_again:7.2f} s   ratio vs baseline "
              f"{t_base / t_again:5.1f}x")
        store.dispose()
    finally:
        reset_engines()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}_store" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
