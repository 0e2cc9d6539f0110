r"""Ranking metrics for retrieval evaluation (Tier 1), at chunk level and URL level.

All per-query functions take a ranked list ``retrieved`` (best first, any hashable ids: chunk ids
or URLs) and the set ``relevant`` of relevant ids for that query, with binary relevance.

Duplicates in ``retrieved``
    A ranked list may contain the same id more than once (e.g. several chunks mapped to one URL).
    Every position keeps its rank, but a repeated relevant id counts as relevant only at its *first*
    occurrence; later copies have gain 0. Hence no metric can exceed 1 (the shipped defect was an
    NDCG@10 of 1.09 from counting several chunks of one page as separate relevant hits). For
    URL-level metrics, collapse the list first with :func:`to_url_ranking`, which removes the
    duplicates and so moves the following results up.

Cut-off ``k``
    ``top_k`` is ``retrieved[:k]``; when the list is shorter than ``k`` the missing positions are
    non-relevant (as in ``trec_eval``), so ``precision@k`` still divides by ``k``.

Unanswerable queries
    A query with no relevant id has undefined recall/NDCG/AP; the per-query functions raise
    ``ValueError`` for it, and :func:`evaluate_retrieval` excludes such queries from the means and
    counts them in ``n_unanswerable``.

Definitions (rel_i = 1 if the id at rank i is relevant and appears for the first time, else 0;
R = set of relevant ids):

* ``hit_rate@k  = 1[sum_{i<=k} rel_i > 0]``
* ``recall@k    = sum_{i<=k} rel_i / |R|``
* ``precision@k = sum_{i<=k} rel_i / k``
* ``ndcg@k      = DCG@k / IDCG@k``, ``DCG@k = sum_{i<=k} rel_i / log2(i + 1)``,
  ``IDCG@k = sum_{i=1}^{min(k, |R|)} 1 / log2(i + 1)``
* ``reciprocal_rank = 1 / rank of the first relevant id`` (0 if none)
* ``average_precision = (1/|R|) * sum_{i: rel_i = 1} precision@i`` (``trec_eval`` map)

These agree with ``trec_eval`` (``P_k``, ``recall_k``, ``ndcg_cut_k``, ``recip_rank``, ``map``) on
duplicate-free rankings.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TypeVar

from voproshalych_eval.metrics.statistics import Aggregate, summarize
from voproshalych_eval.metrics.validation import check_positive_int

__all__ = [
    "DEFAULT_KS",
    "DEFAULT_NDCG_KS",
    "RetrievalEvaluation",
    "average_precision",
    "dedupe_preserve_order",
    "evaluate_retrieval",
    "first_relevant_rank",
    "hit_rate_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "recall_against_exact",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_consistency",
    "retrieval_metrics",
    "to_url_ranking",
]

H = TypeVar("H", bound=Hashable)

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)
DEFAULT_NDCG_KS: tuple[int, ...] = (5, 10)


def dedupe_preserve_order(items: Sequence[H]) -> list[H]:
    """Remove repeated items, keeping the first occurrence of each and the original order."""
    return list(dict.fromkeys(items))


def to_url_ranking(retrieved_urls: Sequence[str]) -> list[str]:
    """URL-level ranking: the chunk ranking mapped to URLs, deduplicated with order kept.

    ``["u1", "u1", "u2", "u1", "u3"] -> ["u1", "u2", "u3"]``: a page is ranked where its best chunk is.
    """
    return dedupe_preserve_order(retrieved_urls)


def _check_k(k: int) -> None:
    check_positive_int(k, "k")


def _relevant_set(relevant: Collection[Hashable]) -> set[Hashable]:
    rel = set(relevant)
    if not rel:
        raise ValueError(
            "relevant is empty: the query is unanswerable and has no retrieval metric; "
            "exclude it (evaluate_retrieval does this and counts it in n_unanswerable)"
        )
    return rel


def _gains(retrieved: Sequence[Hashable], rel: set[Hashable], k: int | None) -> list[int]:
    """Binary gains of the first ``k`` positions; repeated relevant ids gain only once."""
    items = retrieved if k is None else retrieved[:k]
    seen: set[Hashable] = set()
    gains: list[int] = []
    for item in items:
        if item in rel and item not in seen:
            seen.add(item)
            gains.append(1)
        else:
            gains.append(0)
    return gains


def hit_rate_at_k(retrieved: Sequence[Hashable], relevant: Collection[Hashable], *, k: int) -> float:
    """1.0 if any relevant id is among the first ``k`` results, else 0.0."""
    _check_k(k)
    rel = _relevant_set(relevant)
    return 1.0 if any(item in rel for item in retrieved[:k]) else 0.0


def recall_at_k(retrieved: Sequence[Hashable], relevant: Collection[Hashable], *, k: int) -> float:
    """Share of the relevant ids found in the first ``k`` results: ``|R ∩ top_k| / |R|`` in [0, 1]."""
    _check_k(k)
    rel = _relevant_set(relevant)
    return sum(_gains(retrieved, rel, k)) / len(rel)


def precision_at_k(retrieved: Sequence[Hashable], relevant: Collection[Hashable], *, k: int) -> float:
    """Distinct relevant ids in the first ``k`` results divided by ``k`` (not by the list length), in [0, 1]."""
    _check_k(k)
    rel = _relevant_set(relevant)
    return sum(_gains(retrieved, rel, k)) / k


def _dcg(gains: Sequence[int]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains) if g)


def ndcg_at_k(retrieved: Sequence[Hashable], relevant: Collection[Hashable], *, k: int) -> float:
    """NDCG@k with binary gains; the ideal DCG places ``min(k, |R|)`` relevant ids first. In [0, 1]."""
    _check_k(k)
    rel = _relevant_set(relevant)
    dcg = _dcg(_gains(retrieved, rel, k))
    idcg = _dcg([1] * min(k, len(rel)))
    return min(1.0, dcg / idcg)


def first_relevant_rank(retrieved: Sequence[Hashable], relevant: Collection[Hashable]) -> int | None:
    """1-based rank of the first relevant id, or ``None`` when no relevant id was retrieved."""
    rel = set(relevant)
    for rank, item in enumerate(retrieved, start=1):
        if item in rel:
            return rank
    return None


def reciprocal_rank(retrieved: Sequence[Hashable], relevant: Collection[Hashable]) -> float:
    """``1 / rank`` of the first relevant id (whole list, no cut-off); 0.0 if none. In [0, 1]."""
    _relevant_set(relevant)
    rank = first_relevant_rank(retrieved, relevant)
    return 0.0 if rank is None else 1.0 / rank


def average_precision(
    retrieved: Sequence[Hashable], relevant: Collection[Hashable], *, k: int | None = None
) -> float:
    """Average precision (``trec_eval`` map): sum of precision@i at each relevant rank i, divided by |R|.

    Relevant ids never retrieved contribute 0. With ``k`` only the first ``k`` results are used
    (the denominator stays |R|). In [0, 1].
    """
    if k is not None:
        _check_k(k)
    rel = _relevant_set(relevant)
    hits = 0
    total = 0.0
    for rank, gain in enumerate(_gains(retrieved, rel, k), start=1):
        if gain:
            hits += 1
            total += hits / rank
    return total / len(rel)


def retrieval_metrics(
    retrieved: Sequence[Hashable],
    relevant: Collection[Hashable],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    ndcg_ks: Sequence[int] = DEFAULT_NDCG_KS,
) -> dict[str, float]:
    """All per-query metrics under the methodology's keys.

    Keys, in order: ``hit_rate@K`` for K in ``ks``, ``recall@K``, ``precision@K``, ``ndcg@K`` for K in
    ``ndcg_ks``, ``mrr`` (reciprocal rank, whole list) and ``map`` (average precision, whole list).
    Raises ``ValueError`` when ``relevant`` is empty.
    """
    _relevant_set(relevant)
    out: dict[str, float] = {}
    for k in ks:
        out[f"hit_rate@{k}"] = hit_rate_at_k(retrieved, relevant, k=k)
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(retrieved, relevant, k=k)
    for k in ks:
        out[f"precision@{k}"] = precision_at_k(retrieved, relevant, k=k)
    for k in ndcg_ks:
        out[f"ndcg@{k}"] = ndcg_at_k(retrieved, relevant, k=k)
    out["mrr"] = reciprocal_rank(retrieved, relevant)
    out["map"] = average_precision(retrieved, relevant)
    for key, value in out.items():
        assert 0.0 <= value <= 1.0, f"{key}={value} outside [0, 1]"
    return out


@dataclass
class RetrievalEvaluation:
    """Retrieval metrics over a query set.

    Attributes:
        per_query: one dict of :func:`retrieval_metrics` per query, ``None`` for unanswerable
            queries (no relevant id).
        means: mean of each metric over the evaluated queries (empty when none was evaluable).
        n_evaluated: number of queries in the means.
        n_unanswerable: number of queries excluded because they have no relevant id.
        omitted_ks: cut-offs left out because they exceed the retrieval depth.
    """

    per_query: list[dict[str, float] | None]
    means: dict[str, float]
    n_evaluated: int
    n_unanswerable: int
    keys: list[str] = field(default_factory=list)
    omitted_ks: list[int] = field(default_factory=list)

    def values(self, key: str) -> list[float]:
        """Per-query values of one metric over the evaluated queries."""
        return [row[key] for row in self.per_query if row is not None]

    def aggregates(self, *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0) -> dict[str, Aggregate]:
        """Each metric as an :class:`Aggregate` (mean, n, bootstrap CI) over the evaluated queries.

        Unanswerable queries are *excluded*, not failures: ``n_failed`` is 0.
        """
        return {
            key: summarize(self.values(key), n_resamples=n_resamples, confidence=confidence, seed=seed)
            for key in self.keys
        }


def evaluate_retrieval(
    rankings: Sequence[Sequence[H]],
    qrels: Sequence[Collection[H]],
    *,
    ks: Sequence[int] = DEFAULT_KS,
    ndcg_ks: Sequence[int] = DEFAULT_NDCG_KS,
    depth: int | None = None,
) -> RetrievalEvaluation:
    """Per-query :func:`retrieval_metrics` and their means over a query set.

    ``rankings[i]`` is the ranked list for query i and ``qrels[i]`` its relevant ids. Queries with
    no relevant id are unanswerable: ``per_query[i] is None``, excluded from the means, counted in
    ``n_unanswerable``. Each mean is ``(1/|Q_eval|) * sum_q metric(q)`` and lies in [0, 1].

    ``depth`` is how many results were *asked for* per query: a cut-off above it cannot be computed
    (the list would be scored as if that depth had been retrieved) and is left out — never reported
    under its @K name (``omitted_ks``). A list shorter than ``depth`` because the collection ran out is
    scored as usual (the missing positions are non-relevant, as in ``trec_eval``).
    """
    if len(rankings) != len(qrels):
        raise ValueError(f"rankings and qrels differ in length: {len(rankings)} != {len(qrels)}")
    omitted: list[int] = []
    if depth is not None:
        check_positive_int(depth, "depth")
        omitted = sorted({k for k in (*ks, *ndcg_ks) if k > depth})
        ks = [k for k in ks if k <= depth]
        ndcg_ks = [k for k in ndcg_ks if k <= depth]
    per_query: list[dict[str, float] | None] = []
    for ranking, relevant in zip(rankings, qrels, strict=True):
        if len(set(relevant)) == 0:
            per_query.append(None)
        else:
            per_query.append(retrieval_metrics(ranking, relevant, ks=ks, ndcg_ks=ndcg_ks))
    evaluated = [row for row in per_query if row is not None]
    keys = list(evaluated[0]) if evaluated else []
    means: dict[str, float] = {}
    for key in keys:
        mean = math.fsum(row[key] for row in evaluated) / len(evaluated)
        mean = min(1.0, max(0.0, mean))
        assert 0.0 <= mean <= 1.0, f"mean {key}={mean} outside [0, 1]"
        means[key] = mean
    return RetrievalEvaluation(
        per_query=per_query,
        means=means,
        n_evaluated=len(evaluated),
        n_unanswerable=len(per_query) - len(evaluated),
        keys=keys,
        omitted_ks=omitted,
    )


def _jaccard(a: set[H], b: set[H]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def retrieval_consistency(result_sets: Sequence[Sequence[Sequence[H]]], *, k: int) -> float:
    """Stability of the top-k results when the same query is run repeatedly (``retrieval_consistency``).

    ``result_sets[q]`` holds the R >= 2 ranked lists returned by R repeated runs of query q.
    For each query, the mean pairwise Jaccard similarity of the top-k *sets*,

        ``c_q = mean_{r < s} |T_r ∩ T_s| / |T_r ∪ T_s|``   (two empty sets: 1.0),

    then the mean over queries. 1.0 means identical top-k sets every time; in [0, 1].

    With exact (sequential-scan) search over a fixed index and a deterministic embedder this is 1.0
    by construction and says nothing: report it as "not applicable" there. It can vary only with an
    approximate index (HNSW/IVFFlat), re-embedding with a non-deterministic embedder, or a remote
    retrieval API.
    """
    _check_k(k)
    if not result_sets:
        raise ValueError("retrieval_consistency needs at least one query")
    per_query: list[float] = []
    for q, runs in enumerate(result_sets):
        if len(runs) < 2:
            raise ValueError(f"query {q} has {len(runs)} run(s); consistency needs at least 2 repeats")
        tops = [set(run[:k]) for run in runs]
        pairs = [_jaccard(x, y) for x, y in combinations(tops, 2)]
        per_query.append(math.fsum(pairs) / len(pairs))
    return math.fsum(per_query) / len(per_query)


def recall_against_exact(approx: Sequence[Sequence[H]], exact: Sequence[Sequence[H]], *, k: int) -> float:
    """Recall@k of an approximate index (e.g. HNSW) against exact search, averaged over queries.

        ``recall_q = |top_k(approx_q) ∩ top_k(exact_q)| / |top_k(exact_q)|``   (sets, duplicates ignored)

    Queries whose exact top-k is empty are skipped; ``ValueError`` if none remains. In [0, 1].
    """
    _check_k(k)
    if len(approx) != len(exact):
        raise ValueError(f"approx and exact differ in length: {len(approx)} != {len(exact)}")
    recalls: list[float] = []
    for a, e in zip(approx, exact, strict=True):
        truth = set(e[:k])
        if not truth:
            continue
        recalls.append(len(set(a[:k]) & truth) / len(truth))
    if not recalls:
        raise ValueError("no query has a non-empty exact top-k")
    return math.fsum(recalls) / len(recalls)
