"""The ``Embedder`` protocol shared by every backend.

An embedder has a stable ``name`` (stored with every vector), a ``dim``, and two encoders: queries and
passages (asymmetric models such as e5 prefix them differently; symmetric ones encode both alike).
Outputs are float32 unit vectors, shape ``(n, dim)``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from voproshalych_eval.errors import VoproshalychEvalError

#: the packaged embedders' vector sizes: the one table (the backends and ``status`` read it)
BUILTIN_DIMENSIONS = {"use-multilingual": 512, "e5-small": 384}


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int
    asymmetric: bool

    def encode_queries(self, texts: list[str]) -> np.ndarray: ...

    def encode_passages(self, texts: list[str]) -> np.ndarray: ...


class EmbedderError(VoproshalychEvalError, RuntimeError):
    """The embedder could not be created or failed to encode (message is user-facing)."""


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Return float32 rows scaled to unit L2 norm (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (x / norms).astype(np.float32, copy=False)
