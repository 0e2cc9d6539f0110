"""The key of a text in the store's vector tables (``eval.embedding_cache``, ``eval.chunk_vectors``)."""

from __future__ import annotations

import hashlib


def text_hash(value: str) -> str:
    """sha256 hex digest of the UTF-8 text (the cache key and the chunk re-embedding key)."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()
