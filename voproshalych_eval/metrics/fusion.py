r"""Rank fusion of several rankings of the same query (hybrid retrieval).

Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009):

.. math:: \text{RRF}(d) = \sum_{r \in R} \frac{w_r}{k_{rrf} + \text{rank}_r(d)}

where :math:`\text{rank}_r(d)` is the 1-based rank of ``d`` in ranking ``r`` (a ranking that does not
contain ``d`` contributes 0) and :math:`k_{rrf} = 60` by default. A repeated id in one ranking counts
at its first (best) position only. Ties in the fused score are broken by the best rank the item has
in any ranking, then by the order of first appearance (rankings read in the given order, each from
the top), so the result is deterministic for any hashable ids.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["reciprocal_rank_fusion"]

H = TypeVar("H", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[H]],
    *,
    rrf_k: int = 60,
    k: int | None = None,
    weights: Sequence[float] | None = None,
) -> list[tuple[H, float]]:
    """Fuse ``rankings`` (best first) into one list of ``(id, score)``, best first, cut to ``k``.

    Args:
        rankings: one ranked list of ids per retriever.
        rrf_k: the RRF constant (> 0); larger values flatten the rank discount.
        k: keep the ``k`` best fused items (all when None).
        weights: one non-negative weight per ranking (default 1 each).
    """
    if rrf_k <= 0:
        raise ValueError(f"rrf_k must be positive, got {rrf_k}")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    if any(w < 0 for w in weights):
        raise ValueError("weights must be non-negative")
    score: dict[H, float] = {}
    best: dict[H, int] = {}
    order: dict[H, int] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[H] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            score[item] = score.get(item, 0.0) + weight / (rrf_k + rank)
            best[item] = min(best.get(item, rank), rank)
            order.setdefault(item, len(order))
    fused = sorted(score, key=lambda item: (-score[item], best[item], order[item]))
    if k is not None:
        fused = fused[:k]
    return [(item, score[item]) for item in fused]
