"""Tests of voproshalych_eval.metrics.retrieval."""

from __future__ import annotations

import math
import random

import pytest

from voproshalych_eval.metrics.retrieval import (
    RetrievalEvaluation,
    average_precision,
    dedupe_preserve_order,
    evaluate_retrieval,
    first_relevant_rank,
    hit_rate_at_k,
    ndcg_at_k,
    precision_at_k,
    recall_against_exact,
    recall_at_k,
    reciprocal_rank,
    retrieval_consistency,
    retrieval_metrics,
    to_url_ranking,
)

EXPECTED_KEYS = [
    "hit_rate@1", "hit_rate@3", "hit_rate@5", "hit_rate@10",
    "recall@1", "recall@3", "recall@5", "recall@10",
    "precision@1", "precision@3", "precision@5", "precision@10",
    "ndcg@5", "ndcg@10", "mrr", "map",
]  # fmt: skip


def _log2(i: int) -> float:
    return math.log2(i)


def test_dedupe_preserve_order() -> None:
    assert dedupe_preserve_order(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
    assert dedupe_preserve_order([]) == []
    assert to_url_ranking(["u1", "u1", "u2", "u1", "u3"]) == ["u1", "u2", "u3"]


def test_hand_computed_single_relevant() -> None:
    retrieved = ["x", "y", "a", "z"]
    relevant = {"a"}
    assert hit_rate_at_k(retrieved, relevant, k=1) == 0.0
    assert hit_rate_at_k(retrieved, relevant, k=3) == 1.0
    assert recall_at_k(retrieved, relevant, k=2) == 0.0
    assert recall_at_k(retrieved, relevant, k=3) == 1.0
    assert precision_at_k(retrieved, relevant, k=3) == pytest.approx(1 / 3)
    assert precision_at_k(retrieved, relevant, k=10) == pytest.approx(1 / 10)
    assert ndcg_at_k(retrieved, relevant, k=5) == pytest.approx(1 / _log2(4))  # 0.5
    assert reciprocal_rank(retrieved, relevant) == pytest.approx(1 / 3)
    assert average_precision(retrieved, relevant) == pytest.approx(1 / 3)
    assert first_relevant_rank(retrieved, relevant) == 3


def test_hand_computed_multiple_relevant() -> None:
    retrieved = ["a", "x", "b", "y", "z"]
    relevant = {"a", "b", "c"}
    assert recall_at_k(retrieved, relevant, k=3) == pytest.approx(2 / 3)
    assert precision_at_k(retrieved, relevant, k=5) == pytest.approx(2 / 5)
    dcg = 1.0 + 1 / _log2(4)
    idcg = 1.0 + 1 / _log2(3) + 1 / _log2(4)
    assert ndcg_at_k(retrieved, relevant, k=5) == pytest.approx(dcg / idcg)
    # IDCG over min(k, |R|): at k=2 only two ideal positions.
    assert ndcg_at_k(retrieved, relevant, k=2) == pytest.approx(1.0 / (1.0 + 1 / _log2(3)))
    assert average_precision(retrieved, relevant) == pytest.approx((1 / 1 + 2 / 3) / 3)
    assert average_precision(retrieved, relevant, k=1) == pytest.approx(1 / 3)
    assert reciprocal_rank(retrieved, relevant) == 1.0


def test_perfect_and_empty_rankings() -> None:
    relevant = {"a", "b"}
    perfect = retrieval_metrics(["a", "b", "x"], relevant)
    assert perfect["ndcg@5"] == pytest.approx(1.0)
    assert perfect["map"] == pytest.approx(1.0)
    assert perfect["mrr"] == 1.0
    assert perfect["recall@3"] == 1.0
    assert perfect["precision@1"] == 1.0
    empty = retrieval_metrics([], relevant)
    assert all(v == 0.0 for v in empty.values())
    assert first_relevant_rank([], relevant) is None


def test_retrieval_metrics_keys_exact_and_in_range() -> None:
    m = retrieval_metrics(["x", "a", "y"], {"a"})
    assert list(m) == EXPECTED_KEYS
    assert all(0.0 <= v <= 1.0 for v in m.values())
    custom = retrieval_metrics(["a"], {"a"}, ks=(2,), ndcg_ks=(3,))
    assert list(custom) == ["hit_rate@2", "recall@2", "precision@2", "ndcg@3", "mrr", "map"]


def test_duplicates_count_once() -> None:
    # "a" appears three times: counted at its first position only.
    retrieved = ["a", "a", "x", "a"]
    relevant = {"a"}
    assert precision_at_k(retrieved, relevant, k=4) == pytest.approx(1 / 4)
    assert recall_at_k(retrieved, relevant, k=4) == 1.0
    assert ndcg_at_k(retrieved, relevant, k=4) == pytest.approx(1.0)
    assert average_precision(retrieved, relevant) == pytest.approx(1.0)
    # A later duplicate keeps its rank; the next distinct relevant id is at rank 3.
    retrieved2 = ["a", "a", "b"]
    relevant2 = {"a", "b"}
    assert average_precision(retrieved2, relevant2) == pytest.approx((1 + 2 / 3) / 2)


def test_pitfall_url_level_ndcg_never_exceeds_one() -> None:
    # Ten chunks, seven from the single relevant page: counting each as a hit gave NDCG > 1.
    chunk_urls = ["u/rel", "u/rel", "u/a", "u/rel", "u/rel", "u/b", "u/rel", "u/rel", "u/c", "u/rel"]
    relevant = {"u/rel"}
    naive_dcg = sum(1 / _log2(i + 1) for i, u in enumerate(chunk_urls, start=1) if u in relevant)
    assert naive_dcg / 1.0 > 1.0  # the defect being designed out
    url_ranking = to_url_ranking(chunk_urls)
    assert url_ranking == ["u/rel", "u/a", "u/b", "u/c"]
    for k in (1, 5, 10):
        assert 0.0 <= ndcg_at_k(url_ranking, relevant, k=k) <= 1.0
        assert 0.0 <= ndcg_at_k(chunk_urls, relevant, k=k) <= 1.0
    assert ndcg_at_k(url_ranking, relevant, k=10) == pytest.approx(1.0)
    m = retrieval_metrics(chunk_urls, relevant)
    assert all(0.0 <= v <= 1.0 for v in m.values())


def test_empty_relevant_raises() -> None:
    for fn in (hit_rate_at_k, recall_at_k, precision_at_k, ndcg_at_k):
        with pytest.raises(ValueError, match="unanswerable"):
            fn(["a"], set(), k=1)
    with pytest.raises(ValueError):
        reciprocal_rank(["a"], [])
    with pytest.raises(ValueError):
        average_precision(["a"], [])
    with pytest.raises(ValueError):
        retrieval_metrics(["a"], set())


def test_bad_k_raises() -> None:
    for bad in (0, -1):
        with pytest.raises(ValueError):
            precision_at_k(["a"], {"a"}, k=bad)
    with pytest.raises(ValueError):
        average_precision(["a"], {"a"}, k=0)


def test_evaluate_retrieval_with_unanswerable() -> None:
    rankings = [["a", "x"], ["x", "b"], ["z"]]
    qrels = [{"a"}, {"b"}, set()]
    ev = evaluate_retrieval(rankings, qrels)
    assert isinstance(ev, RetrievalEvaluation)
    assert ev.n_evaluated == 2
    assert ev.n_unanswerable == 1
    assert ev.per_query[2] is None
    assert ev.means["mrr"] == pytest.approx((1.0 + 0.5) / 2)
    assert ev.means["hit_rate@1"] == pytest.approx(0.5)
    assert list(ev.means) == EXPECTED_KEYS
    assert all(0.0 <= v <= 1.0 for v in ev.means.values())
    aggs = ev.aggregates(n_resamples=200)
    assert aggs["mrr"].value == pytest.approx(0.75)
    assert aggs["mrr"].n == 2 and aggs["mrr"].n_failed == 0


def test_evaluate_retrieval_all_unanswerable_and_length_mismatch() -> None:
    ev = evaluate_retrieval([["a"]], [[]])
    assert ev.means == {} and ev.n_evaluated == 0 and ev.n_unanswerable == 1
    with pytest.raises(ValueError):
        evaluate_retrieval([["a"]], [])


def test_retrieval_consistency() -> None:
    identical = [[["a", "b", "c"], ["a", "b", "c"]], [["x", "y"], ["x", "y"], ["x", "y"]]]
    assert retrieval_consistency(identical, k=3) == 1.0
    # Order inside the top-k does not matter (sets).
    assert retrieval_consistency([[["a", "b"], ["b", "a"]]], k=2) == 1.0
    # {a,b} vs {a,c}: Jaccard 1/3.
    assert retrieval_consistency([[["a", "b", "z"], ["a", "c", "z"]]], k=2) == pytest.approx(1 / 3)
    # Three runs: pairs (1/3, 1, 1/3) -> 5/9; mean with a perfect query.
    runs = [[["a", "b"], ["a", "c"], ["a", "b"]], [["q"], ["q"]]]
    assert retrieval_consistency(runs, k=2) == pytest.approx((5 / 9 + 1.0) / 2)
    assert retrieval_consistency([[[], []]], k=3) == 1.0
    with pytest.raises(ValueError):
        retrieval_consistency([[["a"]]], k=1)
    with pytest.raises(ValueError):
        retrieval_consistency([], k=1)


def test_recall_against_exact() -> None:
    exact = [["a", "b", "c", "d"], ["x", "y", "z"]]
    approx = [["a", "c", "e", "b"], ["x", "y", "z"]]
    # q1 top-3: {a,c,e} vs {a,b,c} -> 2/3; q2: 1.
    assert recall_against_exact(approx, exact, k=3) == pytest.approx((2 / 3 + 1) / 2)
    assert recall_against_exact(exact, exact, k=2) == 1.0
    # Exact list shorter than k: denominator is its size.
    assert recall_against_exact([["a", "q"]], [["a"]], k=5) == 1.0
    # Empty exact lists are skipped.
    assert recall_against_exact([["a"], ["b"]], [[], ["b"]], k=1) == 1.0
    with pytest.raises(ValueError):
        recall_against_exact([["a"]], [[]], k=1)
    with pytest.raises(ValueError):
        recall_against_exact([["a"]], [], k=1)


# --------------------------------------------------------------------------- pytrec_eval agreement


def _random_cases(seed: int, n_queries: int) -> tuple[list[list[str]], list[set[str]]]:
    rng = random.Random(seed)
    corpus = [f"d{i}" for i in range(40)]
    rankings: list[list[str]] = []
    qrels: list[set[str]] = []
    for _ in range(n_queries):
        n_rel = rng.randint(1, 6)
        relevant = set(rng.sample(corpus, n_rel))
        length = rng.choice([0, 1, 2, 3, 5, 7, 12, 20])
        ranking = rng.sample(corpus, length)
        if length and rng.random() < 0.5:
            ranking[rng.randrange(length)] = rng.choice(sorted(relevant))
        # duplicates removed, as the caller does for URL-level lists
        rankings.append(dedupe_preserve_order(ranking))
        qrels.append(relevant)
    return rankings, qrels


def test_agreement_with_pytrec_eval() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rankings, qrels = _random_cases(seed=7, n_queries=80)
    # Fixed cases: empty result list, k larger than the list, perfect ranking.
    rankings += [[], ["d1"], ["d2", "d3", "d4"]]
    qrels += [{"d1"}, {"d1", "d9"}, {"d2", "d3", "d4"}]
    ks = (1, 3, 5, 10, 25)
    measures = {f"P_{k}" for k in ks} | {f"recall_{k}" for k in ks} | {f"ndcg_cut_{k}" for k in ks}
    measures |= {"recip_rank", "map"}
    qrel_dict = {f"q{i}": {doc: 1 for doc in rel} for i, rel in enumerate(qrels)}
    # trec_eval sorts by score (descending): distinct descending scores reproduce our order.
    run_dict = {
        f"q{i}": {doc: float(len(ranking) - rank) for rank, doc in enumerate(ranking)}
        for i, ranking in enumerate(rankings)
    }
    results = pytrec_eval.RelevanceEvaluator(qrel_dict, measures).evaluate(run_dict)
    for i, (ranking, relevant) in enumerate(zip(rankings, qrels, strict=True)):
        ref = results[f"q{i}"]
        for k in ks:
            assert precision_at_k(ranking, relevant, k=k) == pytest.approx(ref[f"P_{k}"], abs=1e-9)
            assert recall_at_k(ranking, relevant, k=k) == pytest.approx(ref[f"recall_{k}"], abs=1e-9)
            assert ndcg_at_k(ranking, relevant, k=k) == pytest.approx(ref[f"ndcg_cut_{k}"], abs=1e-9)
        assert reciprocal_rank(ranking, relevant) == pytest.approx(ref["recip_rank"], abs=1e-9)
        assert average_precision(ranking, relevant) == pytest.approx(ref["map"], abs=1e-9)


def test_cut_offs_above_the_retrieval_depth_are_omitted_not_reported() -> None:
    # 3 results asked for: @5 and @10 would score a list as if that depth had been retrieved
    ev = evaluate_retrieval([[1, 2, 3]], [[5]], depth=3)
    assert set(ev.means) == {"hit_rate@1", "hit_rate@3", "recall@1", "recall@3", "precision@1", "precision@3", "mrr", "map"}
    assert ev.omitted_ks == [5, 10]
    with pytest.raises(ValueError, match="depth must be a positive integer"):
        evaluate_retrieval([[1]], [[1]], depth=0)
