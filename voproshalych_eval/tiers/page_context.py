"""The knowledge-base text of a page, for judging an answer whose API returned only the page URL.

The production QA service replies with ``{"answer", "confluence_url"}`` and no chunk texts. To judge
groundedness anyway, the context is *reconstructed* from the knowledge base:

* ``mode="page"`` — all chunks of that page (``chunk.confluence_url`` or ``chunk.url`` in the source) in the
  run's knowledge-base snapshot, in id order;
* ``mode="nearest"`` — the ``k`` chunks of that page nearest to the question (cosine of the embedder's
  unit vectors: query prefix for the question, passage prefix for the chunks).

The result says how the context was obtained (``source``), so that reports can say it was reconstructed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval.bot_api.profiles import CONTEXT_MODES as MODES  # one list of the modes
from voproshalych_eval.db import production


def url_variants(url: str) -> list[str]:
    """The URL as given, without and with a trailing slash (pages are stored either way)."""
    u = url.strip()
    base = u.rstrip("/")
    return list(dict.fromkeys([u, base, base + "/"]))


def read_page_chunks(engine: Engine, url: str, *, snapshot: Any = None) -> list[dict[str, Any]]:
    """``[{"id", "text"}]`` of the chunks whose page URL is ``url`` in a knowledge-base snapshot, by id.

    ``engine`` is the store; ``snapshot`` an id or a snapshot (default: the current one).
    """
    return production.read_page_chunks(engine, url_variants(url), snapshot=snapshot)


class PageContext:
    """Reconstructs contexts from page URLs; reads each page once per run (thread-safe)."""

    def __init__(self, engine: Engine, *, mode: str = "page", k: int = 3, embedder: Callable[[], Any] | None = None,
                 snapshot: Any = None) -> None:
        if mode not in MODES:
            raise ValueError(f"context reconstruction must be one of {', '.join(MODES)}, got {mode!r}")
        if mode == "nearest" and embedder is None:
            raise ValueError("nearest-chunk reconstruction needs an embedder")
        if k < 1:
            raise ValueError(f"the number of nearest chunks must be at least 1, got {k}")
        self.engine, self.mode, self.k, self._embedder, self.snapshot = engine, mode, int(k), embedder, snapshot
        self._pages: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def _page(self, url: str) -> list[dict[str, Any]]:
        with self._lock:
            if url not in self._pages:
                self._pages[url] = read_page_chunks(self.engine, url, snapshot=self.snapshot)
            return self._pages[url]

    def build(self, question: str, url: str | None) -> dict[str, Any]:
        """``{"contexts", "chunk_ids", "source", "page_chunks"}``; ``source`` is ``page`` / ``nearest`` or why not."""
        if self.mode == "none":
            return {"contexts": [], "chunk_ids": [], "source": "none", "page_chunks": 0}
        if not url:
            return {"contexts": [], "chunk_ids": [], "source": "no_url", "page_chunks": 0}
        chunks = self._page(url)
        if not chunks:
            return {"contexts": [], "chunk_ids": [], "source": "page_not_in_kb", "page_chunks": 0}
        chosen = chunks
        if self.mode == "nearest" and len(chunks) > self.k:
            emb = self._embedder()  # type: ignore[misc]
            q = np.asarray(emb.encode_queries([question]), dtype=np.float32)[0]
            vecs = np.asarray(emb.encode_passages([c["text"] for c in chunks]), dtype=np.float32)
            order = np.argsort(-(vecs @ q), kind="stable")[: self.k]
            chosen = [chunks[i] for i in order]
        return {
            "contexts": [c["text"] for c in chosen],
            "chunk_ids": [c["id"] for c in chosen],
            "source": self.mode,
            "page_chunks": len(chunks),
        }
