r"""Vector similarity between embeddings (Tier 3 semantic similarity, judge SemanticSimilarity).

.. math:: \cos(a, b) = \frac{a \cdot b}{\lVert a \rVert\,\lVert b \rVert} \in [-1, 1],\qquad
          d(a, b) = \lVert a - b \rVert_2

On unit-normalised vectors (most sentence-embedding models normalise their output) the dot
product *equals* the cosine, and ``||a - b||^2 = 2 - 2 cos(a, b)``, so the three numbers carry the
same information. Do not report ``dot`` next to ``cosine`` as if it were a separate metric
(a shipped defect): :func:`dot_similarity` documents this and callers should show one of them and
say why (see :func:`is_unit_norm`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "cosine_similarity",
    "dot_similarity",
    "euclidean_distance",
    "is_unit_norm",
    "rowwise_cosine",
    "semantic_similarity_score",
]

ArrayLike1D = Sequence[float] | np.ndarray


def _vector(x: ArrayLike1D, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def _pair(a: ArrayLike1D, b: ArrayLike1D) -> tuple[np.ndarray, np.ndarray]:
    va, vb = _vector(a, "a"), _vector(b, "b")
    if va.shape != vb.shape:
        raise ValueError(f"vectors differ in dimension: {va.shape[0]} != {vb.shape[0]}")
    return va, vb


def cosine_similarity(a: ArrayLike1D, b: ArrayLike1D) -> float:
    """Cosine similarity ``a.b / (|a| |b|)`` in [-1, 1] (clipped against rounding).

    Raises ``ValueError`` for a zero vector (cosine undefined), mismatched dimensions or NaN.
    """
    va, vb = _pair(a, b)
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    if na == 0.0 or nb == 0.0:
        raise ValueError("cosine similarity is undefined for a zero vector (an empty or failed embedding?)")
    return float(np.clip(np.dot(va, vb) / (na * nb), -1.0, 1.0))


def rowwise_cosine(A: np.ndarray | Sequence[Sequence[float]], B: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """Cosine similarity of each row of ``A`` with the same row of ``B``: shape ``(n,)``, values in [-1, 1].

    ``A`` and ``B`` must both have shape ``(n, d)``. A zero row raises ``ValueError`` naming the row.
    """
    a = np.asarray(A, dtype=float)
    b = np.asarray(B, dtype=float)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"rowwise_cosine expects 2-D arrays, got shapes {a.shape} and {b.shape}")
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: {a.shape} != {b.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("inputs contain NaN or infinity")
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    zero = np.flatnonzero((na == 0) | (nb == 0))
    if zero.size:
        raise ValueError(f"cosine similarity is undefined for zero vectors (rows {zero[:10].tolist()})")
    sims = np.einsum("ij,ij->i", a, b) / (na * nb)
    return np.clip(sims, -1.0, 1.0)


def euclidean_distance(a: ArrayLike1D, b: ArrayLike1D) -> float:
    """Euclidean distance ``||a - b||_2`` (>= 0). On unit vectors it equals ``sqrt(2 - 2 cos)``, in [0, 2]."""
    va, vb = _pair(a, b)
    return float(np.linalg.norm(va - vb))


def dot_similarity(a: ArrayLike1D, b: ArrayLike1D) -> float:
    """Dot product ``a.b`` (unbounded; in [-1, 1] on unit vectors).

    On unit-normalised embeddings this is *identical* to :func:`cosine_similarity`; it differs only
    for unnormalised vectors, where it also measures vector length. Check :func:`is_unit_norm`
    before reporting it separately from cosine.
    """
    va, vb = _pair(a, b)
    return float(np.dot(va, vb))


def is_unit_norm(vectors: np.ndarray | Sequence[float] | Sequence[Sequence[float]], *, atol: float = 1e-3) -> bool:
    """True when every vector (1-D input, or each row of a 2-D input) has L2 norm 1 within ``atol``."""
    arr = np.asarray(vectors, dtype=float)
    norms = np.linalg.norm(arr, axis=-1)
    return bool(np.all(np.abs(norms - 1.0) <= atol))


def semantic_similarity_score(a: ArrayLike1D, b: ArrayLike1D, *, threshold: float | None = None) -> float:
    """Semantic similarity of an answer embedding ``a`` and a reference embedding ``b``.

    ``score = cos(a, b)`` in [-1, 1]; with a ``threshold``: ``1.0 if score >= threshold else 0.0``
    (binary pass/fail, as in the SemanticSimilarity specification).
    """
    score = cosine_similarity(a, b)
    if threshold is None:
        return score
    return 1.0 if score >= threshold else 0.0
