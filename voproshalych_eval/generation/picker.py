"""The search-assisted chunk picker: type words or paste the question, get knowledge-base chunks with their page.

:func:`search_chunks` runs the project's own retrieval (:class:`voproshalych_eval.db.retriever.Retriever`): exact
vector search with the embedder of the stored vectors (or the configured one, re-embedding the
knowledge base once into ``eval.chunk_vectors``) and Russian full-text search, fused by reciprocal
rank; each hit carries its rank in both lists. Hits are suggestions for a person to confirm — nothing
here marks a chunk relevant.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval.db.production import read_chunks
from voproshalych_eval.db.retriever import Retriever
from voproshalych_eval.embeddings import cached_embedder
from voproshalych_eval.llm.offline import split_sentences
from voproshalych_eval.tiers.tier1 import default_embedder_name

PICKER_COLUMNS = ["chunk_id", "url", "text", "vector_rank", "vector_distance", "fts_rank", "fused_rank"]


def picker_embedder_name(engine: Engine) -> str:
    """The embedder Tier 1 uses by default: the stored vectors' model when loadable (no re-embedding)."""
    return default_embedder_name(engine)


def picker_retriever(engine: Engine, *, embedder: Any = None) -> Retriever:
    """The picker's retriever: hybrid over the current snapshot, the knowledge base embedded for ``embedder``."""
    if embedder is None:
        embedder = cached_embedder(picker_embedder_name(engine), engine)
    search = Retriever.open(engine, method="hybrid", embedder=embedder)
    search.prepare()
    return search


def search_chunks(
    engine: Engine, query: str, *, k: int = 10, embedder: Any = None, depth: int = 30, search: Retriever | None = None
) -> pd.DataFrame:
    """Top-``k`` chunks for ``query`` by vector + full-text search (reciprocal rank fusion), with their page.

    ``search``: the hybrid :class:`~voproshalych_eval.db.retriever.Retriever` to ask (default: one over the
    current snapshot with ``embedder``, else :func:`picker_embedder_name`'s). Columns :data:`PICKER_COLUMNS`;
    ranks are 1-based and None where a retriever did not return the chunk. An empty query gives an empty table.
    """
    q = (query or "").strip()
    if not q:
        return pd.DataFrame(columns=PICKER_COLUMNS)
    if search is None:
        search = picker_retriever(engine, embedder=embedder)
    depth = max(depth, k)
    vh = search.vector([q], depth)[0]
    fh = search.fts([q], depth)[0]
    fused = search.fuse([vh], [fh], k)[0]
    vrank = {h.chunk_id: h for h in vh}
    frank = {h.chunk_id: h.rank for h in fh}
    ids = [h.chunk_id for h in fused]
    texts = read_chunks(engine, ids=ids).set_index("id") if ids else pd.DataFrame()
    rows = []
    for h in fused:
        v = vrank.get(h.chunk_id)
        rows.append({
            "chunk_id": h.chunk_id,
            "url": h.url,
            "text": str(texts.loc[h.chunk_id, "text"]) if h.chunk_id in texts.index else "",
            "vector_rank": v.rank if v else None,
            "vector_distance": round(v.distance, 4) if v else None,
            "fts_rank": frank.get(h.chunk_id),
            "fused_rank": h.rank,
        })
    return pd.DataFrame(rows, columns=PICKER_COLUMNS)


def highlight_span(chunk_text: str, answer: str, *, min_chars: int = 12) -> tuple[int, int] | None:
    """Where the reference answer (or its longest sentence found verbatim) occurs in the chunk, as ``(start, end)``.

    Case-insensitive; None when no part of at least ``min_chars`` characters is found.
    """
    if not chunk_text or not answer:
        return None
    low = chunk_text.lower()
    a = answer.strip()
    i = low.find(a.lower())
    if i >= 0 and len(a) >= min_chars:
        return i, i + len(a)
    best: tuple[int, int] | None = None
    for s in sorted(split_sentences(a), key=len, reverse=True):
        s = s.strip().rstrip(".!?…")
        if len(s) < min_chars:
            continue
        j = low.find(s.lower())
        if j >= 0:
            best = (j, j + len(s))
            break
    return best
