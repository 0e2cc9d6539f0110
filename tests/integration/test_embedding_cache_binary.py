"""The embedding cache reads vectors in pgvector's binary format: the same float32 values as the text format."""

from __future__ import annotations

import numpy as np
from sqlalchemy import text


def test_cache_hits_read_in_binary_equal_the_text_format(engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.db.production import parse_vector
    from voproshalych_eval.db.text_keys import text_hash
    from voproshalych_eval.embeddings import cached_embedder

    texts = ["двоичный формат кэша 1", "двоичный формат кэша 2", "двоичный формат кэша 1"]
    first = cached_embedder("use-multilingual", engine).encode_queries(texts)
    again = cached_embedder("use-multilingual", engine)
    hit = again.encode_queries(texts)
    assert again.stats.model_calls == 0 and again.stats.hits == 3
    with engine.connect() as conn:
        stored = {h: parse_vector(v) for h, v in conn.execute(
            text("SELECT text_hash, embedding::text FROM eval.embedding_cache WHERE model = :m AND text_hash = ANY(:h)"),
            {"m": again.cache_key("query"), "h": [text_hash(t) for t in texts]})}
    want = np.vstack([stored[text_hash(t)] for t in texts])
    assert hit.dtype == np.float32 and np.array_equal(hit, want)  # bit for bit what the text format gives
    np.testing.assert_allclose(first, hit, atol=1e-6)
