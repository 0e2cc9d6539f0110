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


def test_a_looser_cache_never_looks_better() -> None:
    """Loosening the cache threshold raises the hit rate and the false hits: the hit rate is a load statistic
    (no better direction, no baseline), the false-hit rate is lower-is-better and carries the UX baseline."""
    from voproshalych_eval.engine import baselines as bl
    from voproshalych_eval.metrics import catalog

    assert catalog.direction("cache_hit_rate") == "none" and catalog.get("cache_hit_rate").baseline is None
    assert catalog.direction("cache_false_hit_rate") == "lower"
    ux = {m: v for t, m, v, _, _ in catalog.default_baselines() if t == "ux"}
    assert "cache_hit_rate" not in ux and "cache_false_hit_rate" in ux
    tight = {"cache_hit_rate": {"value": 0.5, "n": 40}, "cache_false_hit_rate": {"value": 0.02, "n": 40}}
    loose = {"cache_hit_rate": {"value": 0.9, "n": 40}, "cache_false_hit_rate": {"value": 0.30, "n": 40}}
    rank = {"good": 0, "attention": 1, "critical": 2, "insufficient": 3}
    s_tight = bl.evaluate_run(list(bl.DEFAULT_BASELINES), "ux", "done", tight).status
    s_loose = bl.evaluate_run(list(bl.DEFAULT_BASELINES), "ux", "done", loose).status
    assert rank[s_loose] > rank[s_tight], (s_tight, s_loose)


def test_avg_nn_distance_has_no_better_direction() -> None:
    """Near 0 means near-duplicate chunks, large means a sparse space: neither end is simply better."""
    from voproshalych_eval.metrics import catalog

    spec = catalog.get("avg_nn_distance")
    assert spec.direction == "none" and spec.baseline is None


def test_offline_rows_never_carry_baseline_statuses() -> None:
    from voproshalych_eval.engine import baselines as bl
    from voproshalych_eval.engine import runs

    metrics = {"context_preservation": {"value": 0.2, "n": 40}, "multi_turn_consistency": {"value": 0.1, "n": 40}}
    off = runs.Run(id=1, tier="ux", status="done", metrics=metrics, offline=True)
    frame = runs.metrics_frame(off, list(bl.DEFAULT_BASELINES))
    assert frame["status"].isna().all(), frame[["metric", "status"]]
    on = runs.Run(id=2, tier="ux", status="done", metrics=metrics, offline=False)
    assert runs.metrics_frame(on, list(bl.DEFAULT_BASELINES)).set_index("metric").loc[
        "context_preservation", "status"] == "critical"


def test_holm_family_holds_metrics_only() -> None:
    """Item-only fields (``item.…``: latencies, token counts, distances) are tested too, but never enlarge the
    metrics' multiple-comparison family: adding them leaves the metrics' adjusted p-values unchanged."""
    from voproshalych_eval.engine.runs import adjust_comparison_pvalues

    metric_rows = [{"metric": "avg_faithfulness", "p_value": 0.01}, {"metric": "avg_answer_relevance", "p_value": 0.04}]
    alone = adjust_comparison_pvalues([dict(r) for r in metric_rows])
    extra = [{"metric": f"item.latency_{i}", "p_value": 0.5} for i in range(8)] + [{"metric": "n_items", "p_value": None}]
    mixed = adjust_comparison_pvalues([dict(r) for r in metric_rows] + extra)
    assert mixed[:2] == alone  # Holm over the 2 metrics, not over 10 tests
    assert alone[0] == 0.02 and alone[1] == 0.04
    assert mixed[2] is not None and mixed[-1] is None  # item rows adjusted in their own family
