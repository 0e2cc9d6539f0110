"""Issue 22 §3, the audit's smaller points (pure functions): URL-level MRR/MAP over a fixed depth, cache metrics'
directions and baselines, ``avg_nn_distance``'s direction, offline UX rows without baseline statuses, and the
multiple-comparison (Holm) family holding metrics only."""

from __future__ import annotations

from voproshalych_eval.db.retrieval import Hit


def _hits(urls: list[str]) -> list[Hit]:
    return [Hit(i, u, 0.1 * i, i) for i, u in enumerate(urls, start=1)]


def test_url_mrr_and_map_over_a_fixed_depth_of_pages() -> None:
    """Two questions whose only relevant page is the 12th distinct page: one list was deepened to reach it (a
    question short of pages is retrieved again, deeper), the other was not. Their URL-level MRR/MAP must not
    differ by how deep each list happened to be retrieved: both are over the first ``max(cutoffs)`` pages."""
    from voproshalych_eval.tiers.tier1 import question_items

    deep = _hits([f"p{i}" for i in range(1, 13)])  # 12 distinct pages, the relevant one last
    shallow = _hits([f"p{i}" for i in range(1, 11)])  # 10 pages: the relevant one never retrieved
    recs = [{"relevant_chunk_ids": [999], "relevant_urls": ["p12"]}] * 2
    items = question_items(recs, ["q1", "q2"], [deep[:10], shallow], cutoffs=(1, 3, 5, 10), depth=10,
                           url_hits=[deep, shallow])
    a, b = items[0]["metrics_url"], items[1]["metrics_url"]
    assert a["mrr"] == b["mrr"] == 0.0 and a["map"] == b["map"] == 0.0
    assert a["hit_rate@10"] == b["hit_rate@10"] == 0.0
