"""Chunk utilization: which parts of the knowledge base the retriever actually reaches for real questions.

For every logged question the retriever's current top-k (exact cosine search, ``Retriever.top_k_in_memory``;
identical question vectors searched once) is taken, then:

* ``chunk_coverage`` = |{chunks retrieved at least once in some top-k}| / |chunks| (0–1, higher means
  more of the knowledge base is used); ``chunk_coverage@1`` the same for the top-1 only, which is what
  production feeds to the LLM; ``page_coverage`` / ``page_coverage@1`` at page (URL) level;
* per-chunk and per-page retrieval counts (long tail), the never-retrieved chunks with their text
  (candidates for removal or rewriting);
* thumbs-down attraction: for each chunk, the rated questions for which it is the current top-1, and the
  share of thumbs-down among them (``score`` 1 = down, 5 = up). Page-level thumbs are also given for the
  page production actually answered from (``url`` of the log), which is the retriever's own choice at the
  time — analytics, not a gold label.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval.analytics.question_log import SCORE_DOWN, SCORE_UP
from voproshalych_eval.db import production
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import cached_embedder


@dataclass
class LogRetrieval:
    """Top-k of every log row: ``chunk_ids`` (n, k) int64 (-1 = none), ``distances`` (n, k) float64 (NaN = none)."""

    chunk_ids: np.ndarray
    urls: np.ndarray  # (n, k) object
    distances: np.ndarray
    k: int
    model: str

    @property
    def top1_similarity(self) -> np.ndarray:
        """Cosine similarity ``1 - distance`` of each question's nearest chunk (NaN when none)."""
        return 1.0 - self.distances[:, 0] if self.distances.size else np.zeros(0)


def retrieve_log(engine: Engine, vectors: np.ndarray, *, k: int, model: str, snapshot: Any = None) -> LogRetrieval:
    """Top-``k`` chunks for every row's vector (identical vectors searched once) in a snapshot of the knowledge
    base (default: the current one), exact, by :meth:`~voproshalych_eval.db.retriever.Retriever.top_k_in_memory`:
    the snapshot's chunk vectors are read once and every question is scored with one blocked matrix product
    (issue 28: a pgvector scan per distinct question was 20 s of a 50,000-row log; the ranking is the same up to
    ties within float32 rounding, distances within 1e-6).

    When ``model`` did not fill ``chunk.embedding``, the knowledge base is re-embedded into
    ``eval.chunk_vectors`` first (cached; only changed chunks).
    """
    n = vectors.shape[0]
    ids = np.full((n, k), -1, dtype=np.int64)
    urls = np.full((n, k), None, dtype=object)
    dist = np.full((n, k), np.nan, dtype=np.float64)
    search = Retriever.open(engine, snapshot=snapshot, embedder=cached_embedder(model, engine))
    search.prepare()
    if n == 0:
        return LogRetrieval(ids, urls, dist, k, model)
    q = np.ascontiguousarray(vectors, dtype=np.float32)
    # distinct rows by their bytes (a hash; np.unique(axis=0) sorts 512 columns lexicographically)
    _, first, inverse = np.unique(q.view(np.dtype((np.void, q.dtype.itemsize * q.shape[1]))).ravel(),
                                  return_index=True, return_inverse=True)
    top = search.top_k_in_memory(q[first], k)
    inverse = np.asarray(inverse).ravel()
    return LogRetrieval(top.ids[inverse], top.urls[inverse], top.distances[inverse], k, model)


@dataclass
class UtilizationResult:
    metrics: dict[str, Any]
    per_chunk: pd.DataFrame
    per_page: pd.DataFrame
    never_retrieved: pd.DataFrame
    thumbs_down_chunks: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, max_rows: int = 50) -> dict[str, Any]:
        return {
            "metrics": self.metrics,
            "params": self.params,
            "never_retrieved": self.never_retrieved.head(max_rows).to_dict(orient="records"),
            "thumbs_down_chunks": self.thumbs_down_chunks.head(max_rows).to_dict(orient="records"),
            "per_page": self.per_page.to_dict(orient="records"),
        }


def _counts(ids: np.ndarray) -> pd.Series:
    flat = ids[ids >= 0]
    return pd.Series(flat).value_counts() if flat.size else pd.Series(dtype="int64")


def chunk_utilization(
    log: pd.DataFrame,
    retrieval_result: LogRetrieval,
    chunks: pd.DataFrame,
    *,
    min_rated: int = 3,
) -> UtilizationResult:
    """Utilization of ``chunks`` (``id, url, text``) by the log's current retrieval (see the module docstring).

    ``thumbs_down_chunks`` lists chunks that are the top-1 of at least ``min_rated`` rated questions,
    sorted by the number of thumbs-down.
    """
    n = len(log)
    ids = retrieval_result.chunk_ids
    k = retrieval_result.k
    topk_counts = _counts(ids)  # a top-k list holds distinct chunks: a question counts once per chunk
    top1 = ids[:, 0] if n else np.zeros(0, dtype=np.int64)
    top1_counts = _counts(top1)
    per_chunk = chunks[["id", "url", "text"]].rename(columns={"id": "chunk_id"}).copy()
    per_chunk["retrieved_topk"] = per_chunk["chunk_id"].map(topk_counts).fillna(0).astype(int)
    per_chunk["retrieved_top1"] = per_chunk["chunk_id"].map(top1_counts).fillna(0).astype(int)
    scores = log["score"].to_numpy(dtype="float64", na_value=np.nan) if n else np.zeros(0)
    frame = pd.DataFrame({"chunk_id": top1, "score": scores})
    down = frame[frame["score"] == SCORE_DOWN].groupby("chunk_id").size()
    up = frame[frame["score"] == SCORE_UP].groupby("chunk_id").size()
    per_chunk["thumbs_down_top1"] = per_chunk["chunk_id"].map(down).fillna(0).astype(int)
    per_chunk["thumbs_up_top1"] = per_chunk["chunk_id"].map(up).fillna(0).astype(int)
    rated = per_chunk["thumbs_down_top1"] + per_chunk["thumbs_up_top1"]
    per_chunk["down_share_top1"] = np.where(rated > 0, per_chunk["thumbs_down_top1"] / rated.where(rated > 0, 1), np.nan)
    per_chunk["text_preview"] = per_chunk["text"].str.slice(0, 160)
    per_chunk = per_chunk.sort_values(["retrieved_topk", "retrieved_top1", "chunk_id"], ascending=[False, False, True])
    per_chunk["rank"] = np.arange(1, len(per_chunk) + 1)

    n_chunks = len(chunks)
    pages = per_chunk.groupby("url").agg(
        n_chunks=("chunk_id", "size"),
        retrieved_topk=("retrieved_topk", "sum"),
        retrieved_top1=("retrieved_top1", "sum"),
        chunks_reached_topk=("retrieved_topk", lambda s: int((s > 0).sum())),
        chunks_reached_top1=("retrieved_top1", lambda s: int((s > 0).sum())),
    )
    logged = log.dropna(subset=["url"]) if n else log
    if len(logged):
        g = logged.groupby("url")
        pages["logged_answers"] = g.size()
        pages["logged_thumbs_down"] = g["score"].apply(lambda s: int((s == SCORE_DOWN).sum()))
        pages["logged_thumbs_up"] = g["score"].apply(lambda s: int((s == SCORE_UP).sum()))
    for c in ("logged_answers", "logged_thumbs_down", "logged_thumbs_up"):
        pages[c] = pages[c].fillna(0).astype(int) if c in pages else 0
    per_page = pages.reset_index().sort_values(["retrieved_topk", "url"], ascending=[False, True])
    n_pages = len(per_page)

    never = per_chunk[per_chunk["retrieved_topk"] == 0][["chunk_id", "url", "text"]].sort_values("chunk_id")
    rated_sorted = per_chunk["thumbs_down_top1"] + per_chunk["thumbs_up_top1"]
    td = per_chunk[rated_sorted >= min_rated].sort_values(
        ["thumbs_down_top1", "down_share_top1"], ascending=[False, False]
    )[["chunk_id", "url", "thumbs_down_top1", "thumbs_up_top1", "down_share_top1", "retrieved_top1", "text_preview"]]
    td = td[td["thumbs_down_top1"] > 0]

    total_topk = int(per_chunk["retrieved_topk"].sum())
    top10 = max(1, int(np.ceil(0.1 * n_chunks)))
    metrics: dict[str, Any] = {
        "n_questions_used": n,
        "n_chunks": n_chunks,
        "n_pages": n_pages,
        "top_k": k,
        "chunk_coverage": float((per_chunk["retrieved_topk"] > 0).sum() / n_chunks) if n_chunks else None,
        "chunk_coverage@1": float((per_chunk["retrieved_top1"] > 0).sum() / n_chunks) if n_chunks else None,
        "page_coverage": float((per_page["retrieved_topk"] > 0).sum() / n_pages) if n_pages else None,
        "page_coverage@1": float((per_page["retrieved_top1"] > 0).sum() / n_pages) if n_pages else None,
        "n_never_retrieved": int(len(never)),
        "top10pct_chunk_share": (
            float(per_chunk["retrieved_topk"].nlargest(top10).sum() / total_topk) if total_topk else None
        ),
        "mean_top1_similarity": float(np.nanmean(retrieval_result.top1_similarity)) if n else None,
    }
    params = {"top_k": k, "model": retrieval_result.model, "min_rated": min_rated}
    return UtilizationResult(metrics, per_chunk.drop(columns=["text"]), per_page, never, td, params)


def utilization_for_log(
    engine: Engine, log: pd.DataFrame, retrieval_result: LogRetrieval, *, snapshot: Any = None, **kwargs: Any
) -> UtilizationResult:
    """:func:`chunk_utilization` with the chunks read from a snapshot of the knowledge base (default: current)."""
    return chunk_utilization(log, retrieval_result, production.read_chunks(engine, snapshot=snapshot), **kwargs)
