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

from voproshalych_eval.metrics.validation import (
    check_matrix,
    check_same_shape,
    check_vector,
    unit_rows,
    unit_vector,
)

__all__ = [
    "cosine_similarity",
    "cosine_to_rows",
    "dot_similarity",
    "euclidean_distance",
    "is_unit_norm",
    "response_relevancy_score",
    "rowwise_cosine",
    "semantic_similarity_score",
]

ArrayLike1D = Sequence[float] | np.ndarray


def _pair(a: ArrayLike1D, b: ArrayLike1D) -> tuple[np.ndarray, np.ndarray]:
    va, vb = check_vector(a, "a"), check_vector(b, "b")
    check_same_shape(va, vb)
    return va, vb


def cosine_similarity(a: ArrayLike1D, b: ArrayLike1D) -> float:
    """Cosine similarity ``a.b / (|a| |b|)`` in [-1, 1] (clipped against rounding).

    Raises ``ValueError`` for a zero vector (cosine undefined), mismatched dimensions or NaN.
    """
    va, vb = _pair(a, b)
    return float(np.clip(np.dot(unit_vector(va, "a"), unit_vector(vb, "b")), -1.0, 1.0))


def rowwise_cosine(A: np.ndarray | Sequence[Sequence[float]], B: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """Cosine similarity of each row of ``A`` with the same row of ``B``: shape ``(n,)``, values in [-1, 1].

    ``A`` and ``B`` must both have shape ``(n, d)``. A zero row raises ``ValueError`` naming the row.
    """
    a, b = check_matrix(A, "A"), check_matrix(B, "B")
    check_same_shape(a, b, ("A", "B"))
    sims = np.einsum("ij,ij->i", unit_rows(a, "A"), unit_rows(b, "B"))
    return np.clip(sims, -1.0, 1.0)


def cosine_to_rows(query: ArrayLike1D, rows: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """Cosine of one ``query`` vector with every row of ``rows`` (shape ``(n,)``, in [-1, 1])."""
    q = unit_vector(check_vector(query, "query"), "query")
    m = check_matrix(rows, "rows")
    if m.shape[1] != q.shape[0]:
        raise ValueError(f"query and rows differ in dimension: {q.shape[0]} != {m.shape[1]}")
    return np.clip(unit_rows(m, "rows") @ q, -1.0, 1.0)


def response_relevancy_score(question: ArrayLike1D, generated: np.ndarray | Sequence[Sequence[float]], *,
                             noncommittal: bool = False) -> tuple[float, list[float]]:
    r"""Response Relevancy (Ragas Response Relevancy): mean cosine of the user question with the questions generated
    from the answer.

    .. math:: 	ext{score} = rac{1}{n}\sum_{i=1}^{n} \maxigl(0, \cos(e_q, e_{g_i})igr)

    Negative cosines count as 0 (the methodology reads the cosine on 0–1), so the score is in [0, 1]; a
    noncommittal answer scores 0. Returns ``(score, raw cosines)``. Higher is better; the methodology reads
    90–100% "answers directly", 70–90% "mostly", 50–70% "partly", below 50% "does not answer".

    >>> response_relevancy_score([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]])
    (0.5, [1.0, 0.0])
    """
    cos = cosine_to_rows(question, generated)
    score = 0.0 if noncommittal else float(np.mean(np.clip(cos, 0.0, 1.0)))
    return score, [float(c) for c in cos]


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
