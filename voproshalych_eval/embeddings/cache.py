"""The embedding cache: ``eval.embedding_cache`` keyed by (model key, sha256 of the text).

No text is ever embedded twice by the same model: :class:`CachedEmbedder` looks every text up first
and sends only the missing ones to the model, in one batch, then stores them. Asymmetric models
(e5) cache queries and passages under distinct keys (``name#query`` / ``name#passage``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import Engine, text

from voproshalych_eval.db.errors import DimensionMismatchError
from voproshalych_eval.db.production import parse_vector
from voproshalych_eval.db.text_keys import text_hash
from voproshalych_eval.embeddings.base import Embedder

__all__ = ["CacheStats", "CachedEmbedder", "text_hash"]


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    model_calls: int = 0


class CachedEmbedder:
    """An :class:`Embedder` backed by ``eval.embedding_cache``; same protocol as the wrapped model."""

    def __init__(self, model: Embedder, engine: Engine, *, write_batch: int = 1000) -> None:
        self.model = model
        self.engine = engine
        self.name = model.name
        self.dim = model.dim
        self.asymmetric = model.asymmetric
        self.stats = CacheStats()
        self._write_batch = write_batch

    def cache_key(self, kind: str) -> str:
        return f"{self.name}#{kind}" if self.asymmetric else self.name

    def _lookup(self, key: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors of ``hashes``, read in pgvector's binary format on a psycopg connection.

        pgvector's text format costs ~0.45 ms of Python float parsing per 512-d vector (issue 28: 5.5 s of a
        10k-row real-users run); its binary format is one ``numpy.frombuffer``. Other drivers read text.
        """
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        sql = "SELECT text_hash, embedding FROM eval.embedding_cache WHERE model = :m AND text_hash = ANY(:h)"
        with self.engine.connect() as conn:
            dbapi = conn.connection.dbapi_connection
            binary = self.engine.dialect.driver == "psycopg" and hasattr(dbapi, "cursor")
            for i in range(0, len(unique), 5000):
                params = {"m": key, "h": unique[i : i + 5000]}
                if binary:
                    with dbapi.cursor(binary=True) as cur:  # type: ignore[union-attr]
                        cur.execute(sql.replace(":m", "%(m)s").replace(":h", "%(h)s"), params)
                        rows = cur.fetchall()
                else:
                    rows = list(conn.execute(text(sql), params))
                for h, emb in rows:
                    found[h] = parse_vector(emb)
        return found

    def _store(self, key: str, items: list[tuple[str, np.ndarray]]) -> None:
        with self.engine.begin() as conn:
            for i in range(0, len(items), self._write_batch):
                conn.execute(
                    text(
                        "INSERT INTO eval.embedding_cache(model, text_hash, dim, embedding) "
                        "VALUES (:m, :h, :d, :e) ON CONFLICT DO NOTHING"
                    ),
                    [{"m": key, "h": h, "d": int(v.shape[0]), "e": v} for h, v in items[i : i + self._write_batch]],
                )

    def _encode(self, texts: list[str], kind: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        key = self.cache_key(kind)
        hashes = [text_hash(t) for t in texts]
        found = self._lookup(key, hashes)
        missing: dict[str, str] = {}
        for h, t in zip(hashes, texts, strict=True):
            if h not in found and h not in missing:
                missing[h] = t
        self.stats.hits += sum(1 for h in hashes if h in found)
        self.stats.misses += len(missing)
        if missing:
            fn = self.model.encode_queries if kind == "query" else self.model.encode_passages
            new = fn(list(missing.values()))
            self.stats.model_calls += 1
            items = list(zip(missing.keys(), new, strict=True))
            self._store(key, items)
            found.update(dict(items))
        out = np.vstack([found[h] for h in hashes]).astype(np.float32, copy=False)
        if out.shape[1] != self.dim:
            raise DimensionMismatchError(
                f"Cached vectors for '{key}' are {out.shape[1]}-d but the embedder is {self.dim}-d."
            )
        return out

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts), "query")

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts), "passage")
