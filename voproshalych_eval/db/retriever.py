"""Retrieval as one object: a :class:`Retriever` knows what it searches and how, and is built once per use.

A retriever is one knowledge-base snapshot, one method (``vector``, ``fts`` or ``hybrid``), the embedder
whose vectors it compares (none for ``fts``), and, for vector search, whether it reads the HNSW copy
(``use_index``, ``ef_search``) and the fusion constant of ``hybrid`` (``rrf_k``). Tier 1, Tier 3's
internal pipeline, the chunk picker, the gap diagnosis and the what-if plan build one and ask it for hits;
the queries themselves are :mod:`voproshalych_eval.db.retrieval`'s (production's ranking, batched).

``search(questions, k)`` is the method's top-``k``: vector and FTS directly; ``hybrid`` fuses the vector
and FTS rankings, each ``max(k, FUSION_DEPTH)`` deep, by reciprocal rank
(:func:`voproshalych_eval.db.retrieval.hybrid`). :meth:`Retriever.uncached` is the same retriever with the
embedder's own model instead of the database cache in front of it (a fresh call to an external API, for
Tier 1's consistency repeats); :meth:`Retriever.exact` the same without the HNSW copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval.bilingual import text as bi
from voproshalych_eval.db import retrieval as R
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.snapshots import Snapshot

__all__ = ["METHODS", "Retriever"]

#: the retrieval methods (Tier 1's ``retriever`` parameter)
METHODS: tuple[str, ...] = ("vector", "fts", "hybrid")

Hits = list[list[R.Hit]]


@dataclass(frozen=True)
class Retriever:
    """One way of searching one snapshot of the knowledge base (build it with :meth:`open`)."""

    engine: Engine
    snapshot: Snapshot
    method: str = "vector"
    #: an object with ``name``, ``dim`` and ``encode_queries`` / ``encode_passages`` (None for ``fts``)
    embedder: Any = None
    use_index: bool = False
    ef_search: int | None = None
    rrf_k: int = 60

    @classmethod
    def open(
        cls,
        engine: Engine,
        *,
        snapshot: R.SnapshotRef = None,
        method: str = "vector",
        embedder: Any = None,
        use_index: bool = False,
        ef_search: int | None = None,
        rrf_k: int = 60,
    ) -> Retriever:
        """A retriever of ``snapshot`` (an id, a ``Snapshot``; default the current one) by ``method``."""
        if method not in METHODS:
            raise ValueError(f"unknown retriever {method!r}; use one of {', '.join(METHODS)}")
        if method != "fts" and embedder is None:
            raise ValueError("vector and hybrid retrieval need an embedder")
        snap = snapshots.resolve(engine, snapshot)
        return cls(engine, snap, method, embedder, bool(use_index) and method != "fts", ef_search, int(rrf_k))

    # ------------------------------------------------------------ what it reads

    @property
    def model(self) -> str | None:
        """The embedder's name (the key of its vectors), None for full-text search."""
        return None if self.embedder is None else str(self.embedder.name)

    def stored_model(self) -> str | None:
        """The model that filled the snapshot's stored vectors, when known."""
        return R.stored_model_name(self.engine, snapshot=self.snapshot)

    def uses_stored_vectors(self) -> bool:
        """Whether the embedder's questions are compared with the stored vectors (else ``eval.chunk_vectors``)."""
        dim = None if self.embedder is None else self.embedder.dim
        return R.uses_stored_vectors(self.engine, self.model, dim=dim, snapshot=self.snapshot)

    def vectors_label(self) -> str:
        """Where the chunk vectors come from, for run records."""
        dim = None if self.embedder is None else self.embedder.dim
        return R.vectors_label(self.engine, self.model, dim=dim, snapshot=self.snapshot)

    def prepare(self, progress: Callable[[str], None] | None = None) -> bool:
        """Re-embed the snapshot into ``eval.chunk_vectors`` when the embedder did not fill the stored vectors.

        Returns whether the stored vectors are used. Full-text search needs nothing (True)."""
        if self.embedder is None:
            return True
        stored = self.uses_stored_vectors()
        if not stored:
            say = progress or (lambda _m: None)
            n = R.ensure_chunk_vectors(self.engine, self.embedder, progress=say, snapshot=self.snapshot)
            name = self.embedder.name
            say(bi(f"Векторы базы знаний для {name}: переэмбеддено чанков — {n} (eval.chunk_vectors).",
                   f"Knowledge base vectors for {name}: {n} chunk(s) (re-)embedded into eval.chunk_vectors."))
        return stored

    def build_index(self, *, m: int = 16, ef_construction: int = 64) -> dict[str, Any]:
        """(Re)build the HNSW copy of the embedder's vectors in this snapshot (a new random graph each time)."""
        return R.build_hnsw_index(self.engine, model=self.model, m=m, ef_construction=ef_construction,
                                  snapshot=self.snapshot)

    # ------------------------------------------------------------ variants

    def uncached(self) -> Retriever:
        """The same retriever calling the embedder's own model (no ``eval.embedding_cache`` in front of it)."""
        return replace(self, embedder=getattr(self.embedder, "model", self.embedder))

    def exact(self) -> Retriever:
        """The same retriever with exact search instead of the HNSW copy."""
        return replace(self, use_index=False)

    # ------------------------------------------------------------ hits

    def embed(self, questions: Sequence[str]) -> np.ndarray:
        """The question vectors of the embedder."""
        if self.embedder is None:
            raise ValueError("full-text retrieval has no embedder")
        return np.asarray(self.embedder.encode_queries([str(q) for q in questions]))

    def by_vectors(self, query_vectors: np.ndarray, k: int) -> Hits:
        """Top-``k`` chunks per question vector (exact, or the HNSW copy with ``use_index``)."""
        return R.search_vectors(self.engine, query_vectors, k=k, model=self.model, use_index=self.use_index,
                                ef_search=self.ef_search, snapshot=self.snapshot)

    def top_k_in_memory(self, query_vectors: np.ndarray, k: int) -> R.TopK:
        """Exact top-``k`` chunks of a large batch of question vectors as arrays, computed in numpy from the
        snapshot's vectors read once (:func:`voproshalych_eval.db.retrieval.search_vectors_in_memory`; the
        ranking of :meth:`by_vectors` without the HNSW copy, up to ties within float32 rounding)."""
        return R.search_vectors_in_memory(self.engine, query_vectors, k=k, model=self.model, snapshot=self.snapshot)

    def vector(self, questions: Sequence[str], k: int) -> Hits:
        """Top-``k`` chunks per question by vector search."""
        return self.by_vectors(self.embed(questions), k)

    def fts(self, questions: Sequence[str], k: int) -> Hits:
        """Top-``k`` chunks per question by Russian full-text search."""
        return R.search_fts(self.engine, [str(q) for q in questions], k=k, snapshot=self.snapshot)

    def fuse(self, vector_hits: Sequence[Sequence[R.Hit]], fts_hits: Sequence[Sequence[R.Hit]], k: int) -> Hits:
        """Reciprocal rank fusion of a vector and an FTS ranking per question (``rrf_k`` of this retriever)."""
        return R.hybrid(vector_hits, fts_hits, k=k, rrf_k=self.rrf_k)

    def search(self, questions: Sequence[str], k: int) -> Hits:
        """Top-``k`` hits per question by this retriever's method (best first)."""
        qs = [str(q) for q in questions]
        if self.method == "fts":
            return self.fts(qs, k)
        if self.method == "vector":
            return self.vector(qs, k)
        depth = max(k, R.FUSION_DEPTH)
        return self.fuse(self.vector(qs, depth), self.fts(qs, depth), k)
