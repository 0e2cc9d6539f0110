"""Issue 28: the real-users analytics take every question's top-k from an exact in-memory search
(:meth:`Retriever.top_k_in_memory`) instead of a pgvector scan per question; it must rank as pgvector does
(real PostgreSQL + pgvector, the demo knowledge base and log)."""

from __future__ import annotations

import numpy as np

from voproshalych_eval.analytics import embed_log, read_log
from voproshalych_eval.analytics.question_log import text_rows
from voproshalych_eval.analytics.utilization import retrieve_log
from voproshalych_eval.db import retrieval as R
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import cached_embedder

STORED = "use-multilingual"


def _same_up_to_ties(mem: R.TopK, sql: list[list[R.Hit]], *, tol: float = 1e-6) -> int:
    """Asserts the same chunks in the same order, swaps allowed only between neighbours whose distances tie
    within ``tol``, and distances within ``tol``; returns the number of tie swaps seen."""
    swaps = 0
    for i, hits in enumerate(sql):
        ids = [h.chunk_id for h in hits]
        dist = np.array([h.distance for h in hits])
        got = mem.ids[i, : len(hits)].tolist()
        assert np.all(mem.ids[i, len(hits):] == -1)
        assert np.allclose(mem.distances[i, : len(hits)], dist, rtol=0, atol=tol), i
        assert [str(u) for u in mem.urls[i, : len(hits)]] == [h.url for h in hits]
        if got != ids:
            for a, b in zip(got, ids, strict=True):
                if a != b:  # a different chunk at this rank: its pgvector distance ties the expected one
                    da = dist[ids.index(a)] if a in ids else None
                    db = dist[ids.index(b)]
                    assert da is not None and abs(da - db) <= tol, (i, got, ids)
            swaps += 1
    return swaps


def test_in_memory_top_k_is_pgvectors_on_the_demo_log(demo_engine) -> None:  # type: ignore[no-untyped-def]
    df, _ = text_rows(read_log(demo_engine))
    emb = embed_log(demo_engine, df, embedder_name=STORED)
    q = np.unique(emb.vectors, axis=0)
    assert len(q) > 2000  # the demo's distinct questions
    snap = snapshots.current(demo_engine)
    search = Retriever.open(demo_engine, snapshot=snap, embedder=cached_embedder(STORED, demo_engine))
    for k in (1, 5, 10):
        mem = search.top_k_in_memory(q, k)
        sql = R.search_vectors(demo_engine, q, k=k, model=STORED, snapshot=snap, strategy="sql")
        swaps = _same_up_to_ties(mem, sql)
        assert swaps <= len(q) // 1000  # ties within rounding are rare
    # the Hit form is search_vectors(strategy="memory")
    assert R.search_vectors(demo_engine, q[:20], k=5, model=STORED, snapshot=snap, strategy="memory") == \
        search.top_k_in_memory(q[:20], 5).hits()


def test_retrieve_log_equals_the_pgvector_path(demo_engine) -> None:  # type: ignore[no-untyped-def]
    df, _ = text_rows(read_log(demo_engine))
    emb = embed_log(demo_engine, df, embedder_name=STORED)
    got = retrieve_log(demo_engine, emb.vectors, k=5, model=STORED)
    # the path before issue 28: distinct vectors through the batched pgvector query builder
    uniq, inverse = np.unique(emb.vectors, axis=0, return_inverse=True)
    hits = R.search_vectors(demo_engine, uniq, k=5, model=STORED)
    want = [hits[j] for j in np.asarray(inverse).ravel()]
    _same_up_to_ties(R.TopK(got.chunk_ids, got.urls, got.distances), want)
    assert got.chunk_ids.shape == (len(df), 5)


def test_top_k_exact_ties_zero_vectors_and_short_lists() -> None:
    X = np.array([[1, 0], [1, 0], [0, 1], [0, 0], [-1, 0]], dtype=np.float32)
    ids = np.array([3, 7, 9, 11, 12])
    q = np.array([[1, 0], [0, 0], [0.6, 0.8]], dtype=np.float32)
    pos, dist = R.top_k_exact(ids, X, q, k=6)
    assert ids[pos[0, :5]].tolist() == [3, 7, 9, 12, 11]  # the tie by id, the zero vector (NaN) last
    assert np.allclose(dist[0, :4], [0, 0, 1, 2]) and np.isnan(dist[0, 4])
    assert pos[0, 5] == -1 and np.isnan(dist[0, 5])  # fewer vectors than k
    assert ids[pos[1, :5]].tolist() == [3, 7, 9, 11, 12] and np.isnan(dist[1, :5]).all()  # a zero question
    assert ids[pos[2, :2]].tolist() == [9, 3] and np.allclose(dist[2, :2], [0.2, 0.4])


def test_top_k_exact_matches_a_float64_sort() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(700, 32)).astype(np.float32)
    X[5] = X[6]  # a duplicate: tie broken by id
    ids = np.arange(100, 800, dtype=np.int64)
    q = rng.normal(size=(300, 32)).astype(np.float32)
    q[0] = X[5]
    pos, dist = R.top_k_exact(ids, X, q, k=7, pair_block=97)
    x64, q64 = X.astype(np.float64), q.astype(np.float64)
    d = 1 - np.clip((q64 @ x64.T) / np.outer(np.linalg.norm(q64, axis=1), np.linalg.norm(x64, axis=1)), -1, 1)
    for i in range(len(q)):
        order = np.lexsort((ids, d[i]))[:7]
        assert pos[i].tolist() == order.tolist()
        assert np.allclose(dist[i], d[i, order], rtol=0, atol=1e-12)
    assert pos[0, :2].tolist() == [5, 6]
