"""The one retrieval query builder: vector search exactly as production does it, batched; FTS; hybrid.

Production retrieval is ``SELECT ... FROM chunk ORDER BY embedding <=> :q LIMIT k`` (SQLAlchemy
``cosine_distance``; pgvector cosine distance ``1 - a·b / (|a| |b|)``, exact sequential scan, no ANN
index). Everything here reproduces that ranking, adding only a deterministic tie-break on ``id``.

Every function takes the STORE engine and searches a **snapshot** of the knowledge base
(:mod:`voproshalych_eval.db.snapshots`): ``snapshot=`` an id or a ``Snapshot``, default the current
one. The source database itself is never searched, written or indexed.

Vector sources (within the snapshot)
    * the stored vectors (the copy of ``chunk.embedding``, ``eval.snapshot_chunks_<id>.embedding``)
      when ``model`` is None or is the model that filled that column (:func:`stored_model_name`: recorded
      with the snapshot — the demo's model, or the setting ``stored_embedding_model`` — else "same
      dimension" as a last resort);
    * otherwise the knowledge base re-embedded by that model into ``eval.chunk_vectors`` (keyed by the
      text's sha256, so snapshots share the vectors of unchanged texts; :func:`ensure_chunk_vectors`);
    * with ``use_index=True`` a copy of those vectors in an ``eval.ann_s<id>_*`` table carrying an HNSW
      index (:func:`build_hnsw_index`).

Batched exact search (:func:`search_vectors`), two strategies with identical results:
    * ``"sql"`` — one statement per batch of up to 200 queries:
      ``unnest(:queries) WITH ORDINALITY CROSS JOIN LATERAL (SELECT ... ORDER BY embedding <=> q.v, id
      LIMIT k)``: production's query, per question, in one round trip. The server still scans the table
      once per question, so on large tables this is server-bound (~1.2x faster than a loop only).
    * ``"prefilter"`` — exact two-stage search: the vectors are read once, every question is scored
      against every chunk with one matrix product, and for each question the chunks whose distance
      is within a rounding margin of its k-th best (``margin = 8 * dim * 2**-24 + 1e-6``: twice the
      worst-case float32 rounding of both computations) are sent back to PostgreSQL, which ranks them with
      the very same ``ORDER BY embedding <=> q.v, id LIMIT k``. A chunk left out has a true distance
      strictly greater than the k-th, so the top-k, their order and their distances (computed by
      pgvector) are those of the full scan.
    * ``"auto"`` (default) — ``"sql"`` up to 2,000 stored vectors, ``"prefilter"`` above.

Full-text search (:func:`search_fts`)
    ``to_tsvector('russian', text) @@ q`` with ``q`` = ``plainto_tsquery('russian', question)`` whose
    ``&`` are replaced by ``|`` (OR semantics: with AND, natural questions full of words absent from the
    chunk match nothing). Ranked by ``ts_rank``; ``distance = 1 / (1 + ts_rank)`` (lower is better,
    in (0, 1]). The tsvectors are computed on the fly once per statement (no index is created on
    production tables).

Hybrid (:func:`hybrid`): reciprocal rank fusion of the vector and FTS rankings
(:func:`voproshalych_eval.metrics.fusion.reciprocal_rank_fusion`); ``distance = 1 - score / max_score``
(0 = ranked first by every retriever).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Engine, column, select, table, text

from voproshalych_eval.bilingual import text as bi
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.engine import settings_for
from voproshalych_eval.db.errors import DimensionMismatchError, SchemaError, SnapshotError
from voproshalych_eval.db.production import parse_vector
from voproshalych_eval.db.snapshots import Snapshot
from voproshalych_eval.db.text_keys import text_hash
from voproshalych_eval.metrics.fusion import reciprocal_rank_fusion

SnapshotRef = int | Snapshot | None

__all__ = [
    "BATCH_SIZE",
    "Hit",
    "TopK",
    "ann_table_name",
    "build_hnsw_index",
    "drop_hnsw_index",
    "ensure_chunk_vectors",
    "hybrid",
    "search_fts",
    "search_one",
    "search_vectors",
    "search_vectors_in_memory",
    "stored_model_name",
    "top_k_exact",
    "uses_stored_vectors",
    "vectors_label",
]

#: Queries per SQL statement (bounds the statement size).
BATCH_SIZE = 200
#: ``strategy="auto"`` switches from per-query SQL scans to the exact prefilter above this many vectors.
AUTO_PREFILTER_MIN_VECTORS = 2000
#: Depth of the vector and FTS rankings fused by :func:`hybrid` (at least ``k``).
FUSION_DEPTH = 50


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk: its id, page URL, distance (lower is better) and 1-based rank."""

    chunk_id: int
    url: str
    distance: float
    rank: int


# ---------------------------------------------------------------- vector sources


def stored_model_name(engine: Engine, *, snapshot: SnapshotRef = None) -> str | None:
    """Name of the model that filled the stored chunk vectors of a snapshot, when known.

    Recorded with the snapshot (the demo's model; for a production source the ``stored_embedding_model``
    setting at the time), else the present setting.
    """
    try:
        snap = snapshots.resolve(engine, snapshot)
    except SnapshotError:
        snap = None
    if snap is not None and snap.stored_model:
        return snap.stored_model
    return settings_for(engine).stored_embedding_model


def uses_stored_vectors(engine: Engine, model: str | None, *, dim: int | None = None, snapshot: SnapshotRef = None) -> bool:
    """Whether ``model``'s questions are searched against the stored vectors (else ``eval.chunk_vectors``).

    True when ``model`` is None or the stored model; when the stored model is unknown (a production
    database without the ``stored_embedding_model`` setting), when ``dim`` equals the stored dimension.
    """
    if model is None:
        return True
    snap = snapshots.resolve(engine, snapshot)
    stored = stored_model_name(engine, snapshot=snap)
    if stored is not None:
        return model == stored
    return dim is not None and dim == snap.chunk_dim


def vectors_label(engine: Engine, model: str | None, *, dim: int | None = None, snapshot: SnapshotRef = None) -> str:
    """Where ``model``'s chunk vectors come from, for run records: ``stored`` or ``eval.chunk_vectors``."""
    return "stored chunk.embedding" if uses_stored_vectors(engine, model, dim=dim, snapshot=snapshot) else "eval.chunk_vectors"


@dataclass(frozen=True)
class _Source:
    """FROM clause (alias ``c`` exposing ``id``, ``url``, and the embedding expression)."""

    from_sql: str
    embedding: str
    url: str
    where: str
    params: dict[str, Any]
    description: str


def _require_chunks(snap: Snapshot) -> None:
    if not snap.has_chunk:
        raise SchemaError(
            f"Snapshot {snap.label} has no knowledge base (the source had no 'chunk' table). Load the demo data "
            "(voproshalych-eval demo) or point DATABASE_URL at a database with the bot's knowledge base."
        )


def _source(engine: Engine, snap: Snapshot, model: str | None, *, use_index: bool, dim: int | None) -> _Source:
    _require_chunks(snap)
    stored = uses_stored_vectors(engine, model, dim=dim, snapshot=snap)
    if use_index:
        table = ann_table_name(None if stored else model, snapshot=snap.id)
        if not _table_exists(engine, table):
            raise LookupError(
                f"No HNSW index for {model or 'the stored vectors'} in snapshot #{snap.id}: call "
                "build_hnsw_index(engine, model=...) first."
            )
        return _Source(f"{table} c", "c.embedding", "c.url", "", {}, f"HNSW copy {table}")
    if stored:
        return _Source(f"{snap.chunks_table} c", "c.embedding", "c.url", "", {}, f"snapshot #{snap.id} stored vectors")
    return _Source(
        f"{snap.chunks_table} c JOIN eval.chunk_vectors v ON v.text_hash = c.text_hash",
        "v.embedding",
        "c.url",
        "WHERE v.model = :model",
        {"model": model},
        f"eval.chunk_vectors[{model}]",
    )


def _table_exists(engine: Engine, qualified: str) -> bool:
    with engine.connect() as conn:
        return bool(conn.execute(text("SELECT to_regclass(:t) IS NOT NULL"), {"t": qualified}).scalar())


def _stored_dim(engine: Engine, src: _Source) -> int | None:
    with engine.connect() as conn:
        value = conn.execute(
            text(f"SELECT vector_dims({src.embedding}) FROM {src.from_sql} {src.where} LIMIT 1"), src.params
        ).scalar()
    return int(value) if value is not None else None


def _check_dim(engine: Engine, src: _Source, dim: int) -> None:
    stored = _stored_dim(engine, src)
    if stored is not None and stored != dim:
        raise DimensionMismatchError(
            f"The question vectors are {dim}-d but {src.description} holds {stored}-d vectors. "
            "Search with the embedder that filled the table, or re-embed the knowledge base "
            "(ensure_chunk_vectors) for this embedder."
        )


def _as_matrix(query_vectors: np.ndarray | Sequence[np.ndarray]) -> np.ndarray:
    q = np.asarray(query_vectors, dtype=np.float32)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2:
        raise ValueError(f"query_vectors must be 2-d (n_queries, dim), got shape {q.shape}")
    return q


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


# ---------------------------------------------------------------- exact vector search


def search_vectors(
    engine: Engine,
    query_vectors: np.ndarray,
    *,
    k: int,
    model: str | None = None,
    use_index: bool = False,
    ef_search: int | None = None,
    strategy: str = "auto",
    batch_size: int = BATCH_SIZE,
    snapshot: SnapshotRef = None,
) -> list[list[Hit]]:
    """Top-``k`` chunks per question vector, best first, by pgvector cosine distance (batched).

    Args:
        query_vectors: ``(n_queries, dim)`` question embeddings.
        k: results per question.
        model: embedder name of the question vectors (see the module docstring for the source table).
        use_index: search the HNSW copy built by :func:`build_hnsw_index` (approximate) instead.
        ef_search: HNSW ``ef_search`` (default pgvector's 40; raised to at least ``k``).
        strategy: ``"auto"``, ``"sql"`` or ``"prefilter"`` (exact search only; same results); ``"memory"``:
            :func:`search_vectors_in_memory` (numpy; the same up to ties within float32 rounding).
        batch_size: questions per SQL statement.
        snapshot: the snapshot searched (id or ``Snapshot``; default: the current one).
    """
    _check_k(k)
    q = _as_matrix(query_vectors)
    if q.shape[0] == 0:
        return []
    snap = snapshots.resolve(engine, snapshot)
    src = _source(engine, snap, model, use_index=use_index, dim=int(q.shape[1]))
    _check_dim(engine, src, int(q.shape[1]))
    if use_index:
        return _search_hnsw(engine, src, q, k=k, ef_search=ef_search, batch_size=batch_size)
    if strategy == "auto":
        with engine.connect() as conn:
            n = conn.execute(text(f"SELECT count(*) FROM {src.from_sql} {src.where}"), src.params).scalar() or 0
        strategy = "prefilter" if n > AUTO_PREFILTER_MIN_VECTORS else "sql"
    if strategy == "sql":
        return _search_sql(engine, src, q, k=k, batch_size=batch_size)
    if strategy == "prefilter":
        return _search_prefilter(engine, src, q, k=k, batch_size=batch_size)
    if strategy == "memory":
        return search_vectors_in_memory(engine, q, k=k, model=model, snapshot=snap).hits()
    raise ValueError(f"unknown strategy {strategy!r}; use 'auto', 'sql', 'prefilter' or 'memory'")


def _lateral_sql(src: _Source, *, k: int, candidates: bool, order_by_id: bool = True) -> str:
    cond = [src.where.removeprefix("WHERE ").strip()] if src.where else []
    if candidates:
        cond.append("c.id = ANY(CAST(q.cands AS integer[]))")
    where = ("WHERE " + " AND ".join(cond)) if cond else ""
    unnest = (
        "unnest(CAST(%(qs)b AS vector[]), CAST(%(cands)s AS text[])) WITH ORDINALITY AS q(v, cands, i)"
        if candidates
        else "unnest(CAST(%(qs)b AS vector[])) WITH ORDINALITY AS q(v, i)"
    )
    tie = ", c.id" if order_by_id else ""
    where = where.replace(":model", "%(model)s")
    return (
        f"SELECT q.i AS qi, h.id, h.url, h.distance FROM {unnest} CROSS JOIN LATERAL ("
        f"SELECT c.id AS id, {src.url} AS url, {src.embedding} <=> q.v AS distance FROM {src.from_sql} {where} "
        f"ORDER BY {src.embedding} <=> q.v{tie} LIMIT {int(k)}) h ORDER BY q.i, h.distance, h.id"
    )


def _fetch_binary(conn: Any, sql: str, params: dict[str, Any]) -> list[Any]:
    """Run a psycopg-style statement (``%(name)b`` = binary parameter) with binary results.

    The query vectors travel in pgvector's binary format (text formatting of thousands of floats
    costs more than the search itself). Read-only statements only.
    """
    with conn.connection.dbapi_connection.cursor(binary=True) as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def _collect(rows: Sequence[Any], n: int, offset: int, out: list[list[Hit]]) -> None:
    for qi, cid, url, dist in rows:
        lst = out[offset + int(qi) - 1]
        lst.append(Hit(int(cid), str(url), float(dist), len(lst) + 1))


def _search_sql(engine: Engine, src: _Source, q: np.ndarray, *, k: int, batch_size: int) -> list[list[Hit]]:
    out: list[list[Hit]] = [[] for _ in range(q.shape[0])]
    sql = _lateral_sql(src, k=k, candidates=False)
    with engine.connect() as conn:
        for start in range(0, q.shape[0], batch_size):
            batch = q[start : start + batch_size]
            rows = _fetch_binary(conn, sql, {**src.params, "qs": list(batch)})
            _collect(rows, len(batch), start, out)
    return out


def prefilter_margin(dim: int) -> float:
    """Distance margin covering twice the worst-case rounding difference between numpy's and pgvector's float32 sums."""
    return 8.0 * dim * 2.0**-24 + 1e-6


def _candidates(ids: np.ndarray, vectors: np.ndarray, q: np.ndarray, *, k: int) -> list[np.ndarray]:
    """Per question, the chunk ids whose cosine distance is within the margin of the k-th best.

    Dot products in float32 (BLAS; error <= dim * 2**-24 for the cosine), norms in float64; pgvector
    sums in float32 too (dot and both norms: <= 3 * dim * 2**-24). Two computations differ by at most
    ``4 * dim * 2**-24``, so a margin of twice that keeps every chunk that can be in the exact top-k.
    """
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", x, x, dtype=np.float64))
    q64 = q.astype(np.float64)
    qn = np.sqrt(np.einsum("ij,ij->i", q64, q64))
    margin = prefilter_margin(vectors.shape[1])
    out: list[np.ndarray] = []
    block = max(1, 4_000_000 // max(len(ids), 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        for start in range(0, q.shape[0], block):
            qb = np.ascontiguousarray(q[start : start + block], dtype=np.float32)
            dist = 1.0 - (qb @ x.T).astype(np.float64) / np.outer(qn[start : start + block], norms)
            dist = np.where(np.isfinite(dist), dist, np.inf)  # pgvector: NaN for zero vectors, sorted last
            kk = min(k, dist.shape[1])
            kth = np.partition(dist, kk - 1, axis=1)[:, kk - 1]
            for row, threshold in zip(dist, kth, strict=True):
                if not np.isfinite(threshold):
                    out.append(ids)  # fewer than k comparable vectors: let PostgreSQL rank them all
                else:
                    out.append(ids[row <= threshold + margin])
    return out


def _search_prefilter(engine: Engine, src: _Source, q: np.ndarray, *, k: int, batch_size: int) -> list[list[Hit]]:
    ids, _, vectors = _read_vectors_urls(engine, src)  # the one read of a source's vectors
    out: list[list[Hit]] = [[] for _ in range(q.shape[0])]
    if ids.size == 0:
        return out
    cands = _candidates(ids, vectors, q, k=k)
    sql = _lateral_sql(src, k=k, candidates=True)
    with engine.connect() as conn:
        for start in range(0, q.shape[0], batch_size):
            batch = q[start : start + batch_size]
            lits = ["{" + ",".join(map(str, c.tolist())) + "}" for c in cands[start : start + batch_size]]
            rows = _fetch_binary(conn, sql, {**src.params, "qs": list(batch), "cands": lits})
            _collect(rows, len(batch), start, out)
    return out


@dataclass(frozen=True)
class TopK:
    """Top-``k`` of a batch of question vectors as arrays, best first: chunk ``ids`` (n, k) int64 (-1 = none),
    ``urls`` (n, k) object (None = none), ``distances`` (n, k) float64 (NaN = none)."""

    ids: np.ndarray
    urls: np.ndarray
    distances: np.ndarray

    def hits(self) -> list[list[Hit]]:
        """The same as :class:`Hit` lists (what :func:`search_vectors` returns)."""
        return [
            [Hit(int(c), str(u), float(d), r) for r, (c, u, d) in enumerate(zip(ids, urls, dist, strict=True), 1)
             if c >= 0]
            for ids, urls, dist in zip(self.ids, self.urls, self.distances, strict=True)
        ]


def _read_vectors_urls(engine: Engine, src: _Source) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ids, urls, vectors)`` of a source in id order, read once in pgvector's binary format (no NULL vectors)."""
    sql = (f"SELECT c.id, {src.url}, {src.embedding} FROM {src.from_sql} {src.where} "
           f"{'AND' if src.where else 'WHERE'} {src.embedding} IS NOT NULL ORDER BY c.id").replace(":model", "%(model)s")
    with engine.connect() as conn:
        rows = _fetch_binary(conn, sql, src.params)
    ids = np.asarray([r[0] for r in rows], dtype=np.int64)
    urls = np.asarray([r[1] for r in rows] + [None], dtype=object)[:-1]  # 1-d even when urls are sequences
    if not rows:
        return ids, urls, np.zeros((0, 0), dtype=np.float32)
    return ids, urls, np.vstack([parse_vector(r[2]) for r in rows])


def top_k_exact(ids: np.ndarray, vectors: np.ndarray, q: np.ndarray, *, k: int,
                pair_block: int = 16_384) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine top-``k`` of every row of ``q`` among ``vectors`` (rows keyed by ``ids``), in numpy.

    ``distance = 1 - clip(a·b / sqrt(|a|² |b|²), -1, 1)`` in float64 from the float32 vectors (pgvector's
    ``<=>`` formula; pgvector sums in float32, so its values differ by rounding only: <= ``4 * dim * 2**-24``,
    in practice ~1e-7), ranked by ``(distance, id)`` like ``ORDER BY embedding <=> q, id``; a zero vector has
    a NaN distance and ranks last, as in PostgreSQL. The float32 matrix product (blocked) keeps, per question,
    the chunks within :func:`prefilter_margin` of its k-th best (every chunk that can be in the exact top-k);
    only those are scored in float64. Returns ``(positions into ids (n, k), distances (n, k))``, -1 / NaN
    where fewer than ``k`` vectors exist.
    """
    n, kk = q.shape[0], min(k, len(ids))
    pos = np.full((n, k), -1, dtype=np.int64)
    dist = np.full((n, k), np.nan, dtype=np.float64)
    if n == 0 or kk == 0:
        return pos, dist
    cands = _candidates(ids, vectors, q, k=kk)
    lens = np.fromiter((len(c) for c in cands), dtype=np.int64, count=n)
    qi = np.repeat(np.arange(n, dtype=np.int64), lens)
    ci = np.searchsorted(ids, np.concatenate(cands))  # ids are sorted (read in id order)
    x64 = vectors.astype(np.float64)
    q64 = q.astype(np.float64)
    xn = np.einsum("ij,ij->i", x64, x64)
    qn = np.einsum("ij,ij->i", q64, q64)
    d = np.empty(len(qi), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for s in range(0, len(qi), pair_block):
            a, b = qi[s : s + pair_block], ci[s : s + pair_block]
            sim = np.einsum("ij,ij->i", q64[a], x64[b]) / np.sqrt(qn[a] * xn[b])
            d[s : s + pair_block] = 1.0 - np.clip(sim, -1.0, 1.0)
    order = np.lexsort((ids[ci], np.where(np.isnan(d), np.inf, d), qi))  # per question: distance, then id
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    rank = np.arange(len(qi)) - np.repeat(starts, lens)
    keep = rank < kk
    rows, cols = qi[order][keep], rank[keep]
    pos[rows, cols] = ci[order][keep]
    dist[rows, cols] = d[order][keep]
    return pos, dist


def search_vectors_in_memory(
    engine: Engine, query_vectors: np.ndarray, *, k: int, model: str | None = None, snapshot: SnapshotRef = None
) -> TopK:
    """Exact top-``k`` of a batch of question vectors computed here (:func:`top_k_exact`) from the snapshot's
    vectors read once — the source of :func:`search_vectors` (stored vectors or ``eval.chunk_vectors``).

    For large batches (the real-users log: every distinct question): one float32 matrix product instead of a
    pgvector scan per question. The same chunks in the same order as :func:`search_vectors` up to ties within
    pgvector's float32 rounding, distances within 1e-6 (``tests/integration/test_retrieval_in_memory.py``).
    """
    _check_k(k)
    q = _as_matrix(query_vectors)
    n = q.shape[0]
    empty = TopK(np.full((n, k), -1, dtype=np.int64), np.full((n, k), None, dtype=object),
                 np.full((n, k), np.nan, dtype=np.float64))
    if n == 0:
        return empty
    snap = snapshots.resolve(engine, snapshot)
    src = _source(engine, snap, model, use_index=False, dim=int(q.shape[1]))
    ids, urls, vectors = _read_vectors_urls(engine, src)
    if ids.size and vectors.shape[1] != q.shape[1]:
        _check_dim(engine, src, int(q.shape[1]))
    if ids.size == 0:
        return empty
    pos, dist = top_k_exact(ids, vectors, q, k=k)
    found = pos >= 0
    out_ids, out_urls = empty.ids, empty.urls
    out_ids[found] = ids[pos[found]]
    out_urls[found] = urls[pos[found]]
    return TopK(out_ids, out_urls, dist)


def _search_hnsw(
    engine: Engine, src: _Source, q: np.ndarray, *, k: int, ef_search: int | None, batch_size: int
) -> list[list[Hit]]:
    # No ", id" in the ORDER BY: the index only delivers distance order; ties are re-sorted here.
    sql = _lateral_sql(src, k=k, candidates=False, order_by_id=False)
    ef = max(int(ef_search or 40), k)
    out: list[list[Hit]] = [[] for _ in range(q.shape[0])]
    with engine.begin() as conn:
        conn.execute(text(f"SET LOCAL hnsw.ef_search = {ef}"))
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        for start in range(0, q.shape[0], batch_size):
            batch = q[start : start + batch_size]
            rows = _fetch_binary(conn, sql, {"qs": list(batch)})
            _collect(rows, len(batch), start, out)
    return [
        [Hit(h.chunk_id, h.url, h.distance, r) for r, h in enumerate(sorted(hits, key=lambda h: (h.distance, h.chunk_id)), 1)]
        for hits in out
    ]


def search_one(
    engine: Engine, query_vector: np.ndarray, *, k: int, model: str | None = None, snapshot: SnapshotRef = None
) -> list[Hit]:
    """Reference implementation: one SQLAlchemy ``cosine_distance`` query for one question (production's path).

    ``select(chunk).order_by(chunk.c.embedding.cosine_distance(q), chunk.c.id).limit(k)``; used as the
    per-query baseline the batched :func:`search_vectors` must reproduce.
    """
    from pgvector.sqlalchemy import Vector  # heavy: defers pgvector
    _check_k(k)
    q = np.asarray(query_vector, dtype=np.float32).ravel()
    snap = snapshots.resolve(engine, snapshot)
    _require_chunks(snap)
    chunk = table(
        f"snapshot_chunks_{snap.id}", column("id"), column("url"), column("text_hash"), column("embedding", Vector()),
        schema="eval",
    )
    if uses_stored_vectors(engine, model, dim=int(q.shape[0]), snapshot=snap):
        emb = chunk.c.embedding
        stmt = select(chunk.c.id, chunk.c.url, emb.cosine_distance(q).label("distance"))
    else:
        vec = table("chunk_vectors", column("model"), column("text_hash"), column("embedding", Vector()), schema="eval")
        emb = vec.c.embedding
        stmt = (
            select(chunk.c.id, chunk.c.url, emb.cosine_distance(q).label("distance"))
            .select_from(vec.join(chunk, chunk.c.text_hash == vec.c.text_hash))
            .where(vec.c.model == model)
        )
    stmt = stmt.order_by(emb.cosine_distance(q), chunk.c.id).limit(k)
    with engine.connect() as conn:
        rows = conn.execute(stmt).all()
    return [Hit(int(r[0]), str(r[1]), float(r[2]), i) for i, r in enumerate(rows, start=1)]


# ---------------------------------------------------------------- re-embedding and HNSW


def ensure_chunk_vectors(engine: Engine, embedder: Any, *, progress: Any = None, snapshot: SnapshotRef = None) -> int:
    """Re-embed the knowledge base of a snapshot into ``eval.chunk_vectors`` for ``embedder`` (model = ``embedder.name``).

    Only texts without a vector of this model and dimension (by sha256 of the text) are embedded, through
    ``embedder.encode_passages`` (pass a cached embedder to use ``eval.embedding_cache``); vectors are
    shared by every snapshot holding the same text. Returns the number of texts (re-)embedded.
    """
    snap = snapshots.resolve(engine, snapshot)
    _require_chunks(snap)
    model = embedder.name
    with engine.connect() as conn:
        todo = conn.execute(
            text(
                f"SELECT DISTINCT ON (c.text_hash) c.text_hash, c.text FROM {snap.chunks_table} c "
                "LEFT JOIN eval.chunk_vectors v ON v.model = :m AND v.text_hash = c.text_hash AND v.dim = :d "
                "WHERE v.text_hash IS NULL ORDER BY c.text_hash"
            ),
            {"m": model, "d": int(embedder.dim)},
        ).all()
    if progress is not None and todo:
        progress(bi(f"Эмбеддинг {len(todo)} чанков моделью {model}…", f"Embedding {len(todo)} chunks with {model}…"))
    if not todo:
        return 0
    vecs = embedder.encode_passages([r.text for r in todo])
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO eval.chunk_vectors(model, text_hash, dim, embedding) VALUES (:m, :h, :d, :e) "
                "ON CONFLICT (model, text_hash) DO UPDATE SET dim = excluded.dim, embedding = excluded.embedding"
            ),
            [
                {"m": model, "h": r.text_hash.strip(), "d": int(v.shape[0]), "e": np.asarray(v, dtype=np.float32)}
                for r, v in zip(todo, vecs, strict=True)
            ],
        )
    return len(todo)


def ann_table_name(model: str | None, *, snapshot: int | Snapshot) -> str:
    """``eval.ann_s<snapshot>_<slug>``: the HNSW copy of the vectors of ``model`` (None: the stored vectors)."""
    sid = snapshot.id if isinstance(snapshot, Snapshot) else int(snapshot)
    slug = re.sub(r"[^a-z0-9]+", "_", (model or "stored").lower()).strip("_")[:36]
    return f"eval.ann_s{sid}_{slug}_{text_hash(model or '')[:8]}"


def build_hnsw_index(
    engine: Engine, *, model: str | None = None, m: int = 16, ef_construction: int = 64, snapshot: SnapshotRef = None
) -> dict[str, Any]:
    """Copy the vectors of ``model`` in a snapshot into ``eval.ann_s<id>_*`` and build an HNSW (cosine) index on it.

    The copy (``id, url, embedding vector(dim)``) is rebuilt on every call (a new random graph).
    Returns ``{"table", "n", "dim", "m", "ef_construction", "snapshot_id"}``.
    """
    snap = snapshots.resolve(engine, snapshot)
    stored = uses_stored_vectors(engine, model, snapshot=snap)
    src = _source(engine, snap, None if stored else model, use_index=False, dim=None)
    dim = _stored_dim(engine, src)
    if dim is None:
        raise LookupError(f"No vectors to index for {model or 'the stored model'} (run ensure_chunk_vectors first).")
    table = ann_table_name(None if stored else model, snapshot=snap)
    with engine.begin() as conn:
        conn.execute(text(f"DROP TABLE IF EXISTS {table}"))
        conn.execute(text(f"CREATE TABLE {table} (id integer PRIMARY KEY, url text, embedding vector({dim}) NOT NULL)"))
        conn.execute(
            text(
                f"INSERT INTO {table}(id, url, embedding) SELECT c.id, {src.url}, "
                f"CAST({src.embedding} AS vector({dim})) FROM {src.from_sql} {src.where}"
            ),
            src.params,
        )
        conn.execute(
            text(
                f"CREATE INDEX ON {table} USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})"
            )
        )
        n = conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
        conn.execute(text(f"ANALYZE {table}"))
    return {"table": table, "n": int(n), "dim": dim, "m": m, "ef_construction": ef_construction, "snapshot_id": snap.id}


def drop_hnsw_index(engine: Engine, *, model: str | None = None, snapshot: SnapshotRef = None) -> None:
    """Drop the HNSW copy of ``model``'s vectors in a snapshot (if any)."""
    snap = snapshots.resolve(engine, snapshot)
    stored = uses_stored_vectors(engine, model, snapshot=snap)
    with engine.begin() as conn:
        conn.execute(text(f"DROP TABLE IF EXISTS {ann_table_name(None if stored else model, snapshot=snap)}"))


# ---------------------------------------------------------------- full-text search and hybrid


def search_fts(
    engine: Engine, queries: Sequence[str], *, k: int, batch_size: int = BATCH_SIZE, snapshot: SnapshotRef = None
) -> list[list[Hit]]:
    """Top-``k`` chunks per question by PostgreSQL Russian full-text search (OR of the question's lexemes).

    ``distance = 1 / (1 + ts_rank)``; ties broken by ``id``. A question with no lexeme (only stop
    words) or no matching chunk gets an empty list.
    """
    _check_k(k)
    snap = snapshots.resolve(engine, snapshot)
    _require_chunks(snap)
    sql = text(
        "WITH docs AS MATERIALIZED ("
        f"SELECT c.id, c.url AS url, to_tsvector('russian', c.text) AS tsv FROM {snap.chunks_table} c), "
        "qs AS (SELECT q.i, CAST(replace(CAST(plainto_tsquery('russian', q.t) AS text), '&', '|') AS tsquery) AS tq "
        "FROM unnest(CAST(:qs AS text[])) WITH ORDINALITY AS q(t, i)) "
        "SELECT qs.i, h.id, h.url, h.distance FROM qs CROSS JOIN LATERAL ("
        "SELECT d.id, d.url, 1.0 / (1.0 + ts_rank(d.tsv, qs.tq)) AS distance FROM docs d WHERE d.tsv @@ qs.tq "
        f"ORDER BY ts_rank(d.tsv, qs.tq) DESC, d.id LIMIT {int(k)}) h ORDER BY qs.i, h.distance, h.id"
    )
    out: list[list[Hit]] = [[] for _ in queries]
    with engine.connect() as conn:
        for start in range(0, len(queries), batch_size):
            batch = [str(x) for x in queries[start : start + batch_size]]
            rows = conn.execute(sql, {"qs": batch}).all()
            _collect(rows, len(batch), start, out)
    return out


def hybrid(
    vector_hits: Sequence[Sequence[Hit]],
    fts_hits: Sequence[Sequence[Hit]],
    *,
    k: int,
    rrf_k: int = 60,
) -> list[list[Hit]]:
    """Reciprocal rank fusion of two rankings per question; ``distance = 1 - score / max_score``."""
    _check_k(k)
    if len(vector_hits) != len(fts_hits):
        raise ValueError(f"vector_hits and fts_hits differ in length: {len(vector_hits)} != {len(fts_hits)}")
    max_score = 2.0 / (rrf_k + 1)
    out: list[list[Hit]] = []
    for vh, fh in zip(vector_hits, fts_hits, strict=True):
        urls = {h.chunk_id: h.url for h in [*vh, *fh]}
        fused = reciprocal_rank_fusion([[h.chunk_id for h in vh], [h.chunk_id for h in fh]], rrf_k=rrf_k, k=k)
        out.append(
            [Hit(cid, urls[cid], max(0.0, 1.0 - score / max_score), rank) for rank, (cid, score) in enumerate(fused, 1)]
        )
    return out
