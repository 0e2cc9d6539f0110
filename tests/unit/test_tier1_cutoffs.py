"""Tier 1 cut-offs never exceed what was retrieved; URL-level @K is over the first K distinct pages."""

from __future__ import annotations

from voproshalych_eval.datasets.store import Dataset
from voproshalych_eval.db.retrieval import Hit
from voproshalych_eval.tiers import tier1

#: a toy collection: chunk i lives on page i // 2 (two chunks per page); question 0's answer is chunk 5
PAGE = {i: f"https://utmn.ru/p{i // 2}" for i in range(1, 61)}


def _fetch(questions: list[str], depth: int) -> list[list[Hit]]:
    """Retrieval on the toy collection: chunks 1, 2, 3, … in order (the collection has 60)."""
    return [[Hit(c, PAGE[c], c / 100, c) for c in range(1, min(depth, 60) + 1)] for _ in questions]


def test_k3_still_scores_a_relevant_chunk_at_rank_5() -> None:
    ds = Dataset("t", "golden", [{"id": "q1", "question": "?", "relevant_chunk_ids": [5], "relevant_urls": [PAGE[5]]}],
                 "h")
    k = 3  # the answer depth
    depth = tier1.retrieval_depth(k)
    assert depth == 10  # at least the largest reported cut-off, whatever k is
    hits = _fetch(["?"], depth)
    url_hits, used = tier1.deepen_for_pages(["?"], hits, _fetch, pages=10)
    item = tier1.question_items(ds.records, ["?"], hits, depth=depth, url_hits=url_hits)[0]
    chunk, url = item["metrics_chunk"], item["metrics_url"]
    assert chunk["hit_rate@3"] == 0.0 and chunk["hit_rate@5"] == 1.0 and chunk["hit_rate@10"] == 1.0
    assert chunk["recall@10"] == 1.0 and chunk["mrr"] == 1 / 5
    # URL level: 10 chunks hold only 5 pages -> retrieved deeper until 10 distinct pages are there
    assert used == 30 and len(item["url_ranking"]) >= 10
    assert url["hit_rate@3"] == 1.0 and url["mrr"] == 1 / 3  # chunk 5 is on the 3rd page


def test_url_deepening_stops_at_the_cap_and_when_the_collection_ends() -> None:
    hits = _fetch(["a"], 10)
    out, used = tier1.deepen_for_pages(["a"], hits, _fetch, pages=40, cap=25)
    assert used == 25 and len(out[0]) == 25  # the stated cap
    out, used = tier1.deepen_for_pages(["a"], hits, _fetch, pages=40, cap=500)
    assert len(out[0]) == 60  # the collection ran out: 30 pages is all there is
