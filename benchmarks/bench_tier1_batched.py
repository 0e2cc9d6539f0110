"""Benchmark: batched exact vector retrieval vs the per-query loop (and HNSW recall against exact).

    python benchmarks/bench_tier1_batched.py                  # 1,000 queries, 10,000 chunks, 1024-d, top-10
    python benchmarks/bench_tier1_batched.py --quick          # smoke run (100 queries, 2,000 chunks)

Data: synthetic unit float32 vectors (a mixture of 100 Gaussian clusters around a shared direction,
like text embeddings, ``--noise`` sets how tight the clusters are; ~1% exact duplicate chunks so
that ties occur), fixed seed, in a *temporary source database* (production's ``chunk`` table,
``confluence_url`` variant) created on the store's server, snapshotted into a *temporary store
database*; both are dropped at the end. Searches run on the snapshot, as the app's do; the HNSW index
goes on a copy in the store.

Baseline: :func:`voproshalych_eval.db.retrieval.search_one` for each question — one SQLAlchemy
``cosine_distance`` query per question, i.e. what production does. Batched:
:func:`~voproshalych_eval.db.retrieval.search_vectors` with ``strategy="sql"`` (lateral join, 200
questions per statement) and ``strategy="prefilter"`` (exact two-stage). Results (ids, order and
distances) are asserted identical to the baseline; the ratios are measured in the same run.
"""

from __future__ import annotations

import argparse
import time
import uuid

import numpy as np
from sqlalchemy import create_engine, text


def make_vectors(
    n: int, d: int, *, rng: np.random.Generator, noise: float, n_clusters: int = 100, seed_centers: int = 12345
) -> np.ndarray:
    """Clustered anisotropic unit vectors; chunks and questions share the cluster centres."""
    crng = np.random.default_rng(seed_centers)
    common = crng.standard_normal(d)
    centers = crng.standard_normal((n_clusters, d)) + 1.5 * common
    labels = rng.integers(0, n_clusters, size=n)
    x = centers[labels] + noise * rng.standard_normal((n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


def _admin_url(server_url: str) -> str:
    return "postgresql+psycopg://" + server_url.split("://", 1)[1]


def _db_url(server_url: str, name: str) -> str:
    head, sep, query = server_url.partition("?")
    return f"{head.rsplit('/', 1)[0]}/{name}{sep}{query}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--chunks", type=int, default=10000)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=0.6,
                    help="within-cluster noise per dimension (1.2 = nearly uniform on the sphere: worst case for HNSW)")
    args = ap.parse_args()
    if args.quick:
        args.queries, args.chunks = 100, 2000

    from voproshalych_eval.config import Settings, get_settings
    from voproshalych_eval.db import get_engine, production, snapshots
    from voproshalych_eval.db import retrieval as R
    from voproshalych_eval.db.engine import database_url
    from voproshalych_eval.metrics.retrieval import recall_against_exact

    settings = get_settings()
    server = database_url(settings)
    name = "bench_tier1_" + uuid.uuid4().hex[:10]
    admin = create_engine(_admin_url(server), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
        conn.execute(text(f'CREATE DATABASE "{name}_store"'))
    url = _db_url(server, name)
    try:
        rng = np.random.default_rng(args.seed)
        chunks = make_vectors(args.chunks, args.dim, rng=rng, noise=args.noise)
        dup = rng.choice(args.chunks, size=args.chunks // 100, replace=False)
        chunks[dup] = chunks[(dup + 1) % args.chunks]  # exact duplicates -> tied distances
        queries = make_vectors(args.queries, args.dim, rng=rng, noise=args.noise)
        queries[: args.queries // 50] = chunks[: args.queries // 50]  # some questions equal a chunk

        raw = create_engine(_admin_url(url))
        from pgvector.psycopg import register_vector
        from sqlalchemy import event

        with raw.begin() as conn:
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        raw.dispose()
        event.listen(raw, "connect", lambda dbapi, _r: register_vector(dbapi))
        with raw.begin() as conn:
            production.create_tables(conn, dim=args.dim, variant="confluence_url")
            conn.execute(
                text("INSERT INTO public.chunk(id, confluence_url, text, embedding) VALUES (:i, :u, :t, :e)"),
                [{"i": i + 1, "u": f"https://wiki/page{i // 5}", "t": f"chunk {i + 1}", "e": v} for i, v in enumerate(chunks)],
            )
            conn.execute(text("ANALYZE public.chunk"))
        raw.dispose()
        engine = get_engine(Settings(home=settings.home, database_url=url, store_url=_db_url(server, name + "_store")))
        t0 = time.perf_counter()
        snap = snapshots.take(engine)
        print(f"snapshot #{snap.id} of {snap.n_chunks} chunks taken in {time.perf_counter() - t0:.2f} s")
        with engine.connect() as conn:  # warm the table into shared buffers for every contender alike
            conn.execute(text(f"SELECT count(*) FROM {snap.chunks_table} WHERE vector_dims(embedding) > 0")).scalar()

        print(f"{args.queries} queries x {args.chunks} chunks, {args.dim}-d, top-{args.k}, cluster noise {args.noise}")
        t0 = time.perf_counter()
        loop = [R.search_one(engine, q, k=args.k) for q in queries]
        t_loop = time.perf_counter() - t0
        print(f"per-query loop (SQLAlchemy cosine_distance): {t_loop:8.2f} s  ({1000 * t_loop / args.queries:.2f} ms/query)")

        results = {}
        for strategy in ("sql", "prefilter"):
            t0 = time.perf_counter()
            hits = R.search_vectors(engine, queries, k=args.k, strategy=strategy)
            dt = time.perf_counter() - t0
            assert hits == loop, f"batched ({strategy}) results differ from the per-query loop"
            results[strategy] = dt
            print(
                f"batched, strategy={strategy:9s}:               {dt:8.2f} s  ({1000 * dt / args.queries:.2f} ms/query)"
                f"  ratio {t_loop / dt:6.1f}x  identical results: yes"
            )

        exact_ids = [[h.chunk_id for h in row] for row in loop]
        t0 = time.perf_counter()
        info = R.build_hnsw_index(engine, m=16, ef_construction=64)
        print(f"HNSW (m=16, ef_construction=64) built on {info['table']} in {time.perf_counter() - t0:.1f} s")
        for ef in (40, 100, 200, 400):
            t0 = time.perf_counter()
            approx = R.search_vectors(engine, queries, k=args.k, use_index=True, ef_search=ef)
            dt = time.perf_counter() - t0
            rec = recall_against_exact([[h.chunk_id for h in row] for row in approx], exact_ids, k=args.k)
            print(f"HNSW ef_search={ef:3d}: recall@{args.k} vs exact = {rec:.4f}   ({dt:.2f} s, ratio vs loop {t_loop / dt:.1f}x)")
        engine.dispose()
    finally:
        from voproshalych_eval.db import reset_engines

        reset_engines()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}_store" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
