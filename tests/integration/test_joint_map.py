"""Questions over the knowledge base on one map: the modality gap, measured and removed (demo corpus)."""

from __future__ import annotations

import numpy as np

from voproshalych_eval.datasets import store as datasets
from voproshalych_eval.tiers import projection, tier0


def _golden_on_their_pages(coords: np.ndarray, chunk_urls: np.ndarray, relevant: list[set[str]]) -> float:
    """Share of answerable golden questions whose nearest chunk in the map is on one of their relevant pages."""
    n_c = len(chunk_urls)
    is_ref = np.r_[np.ones(n_c, dtype=bool), np.zeros(len(relevant), dtype=bool)]
    nn = projection.nearest_reference(coords, is_ref)[n_c:]
    hits = [chunk_urls[nn[i]] in rel for i, rel in enumerate(relevant) if rel]
    return float(np.mean(hits))


def test_golden_questions_land_beside_their_pages_after_centring(demo_engine) -> None:  # type: ignore[no-untyped-def]
    chunks = tier0.load_vector_set(demo_engine, "chunks", embedder="use-multilingual")
    golden = tier0.load_vector_set(demo_engine, "golden", embedder="use-multilingual", dataset="demo_golden")
    ds = datasets.get_dataset(demo_engine, "demo_golden", "golden")
    relevant = [set(r.get("relevant_urls") or ([r["confluence_url"]] if r.get("confluence_url") else []))
                for r in ds.records]
    assert len(relevant) == len(golden) and sum(map(bool, relevant)) >= 100
    X = np.vstack([chunks.X, golden.X])
    ids = chunks.point_ids + golden.point_ids
    kinds = ["chunk"] * len(chunks) + ["golden"] * len(golden)
    urls = chunks.meta["url"].to_numpy()

    gap = projection.modality_gap(X, kinds)
    assert gap["groups"] == ["chunk", "golden"] and gap["gap_ratio"] > 0.4  # the gap is large on this embedder
    centred = projection.centre_by_group(X, kinds)
    assert projection.modality_gap(centred, kinds)["gap_ratio"] < 0.1 * gap["gap_ratio"]

    before = projection.project(None, X, ids, model=chunks.model, seed=42)
    after = projection.project(None, X, ids, model=chunks.model, seed=42, centre_groups=kinds)
    assert after.params["centred_groups"] == ["chunk", "golden"] and "centred_groups" not in before.params
    share_before = _golden_on_their_pages(before.coords, urls, relevant)
    share_after = _golden_on_their_pages(after.coords, urls, relevant)
    print(f"golden questions beside a relevant page in 2-D: {share_before:.3f} -> {share_after:.3f}")
    assert share_after >= share_before + 0.25
    # the reference: nearest chunk by cosine in the full space (what the retriever sees)
    full = projection.nearest_reference(X, np.r_[np.ones(len(chunks), bool), np.zeros(len(golden), bool)],
                                        metric="cosine")[len(chunks):]
    ceiling = np.mean([urls[full[i]] in rel for i, rel in enumerate(relevant) if rel])
    assert share_after <= ceiling + 0.1


def test_nearest_reference_and_gap_by_hand() -> None:
    coords = np.array([[0.0, 0.0], [10.0, 0.0], [1.0, 0.0], [9.0, 1.0], [4.0, 0.0]])
    is_ref = np.array([True, True, False, False, True])
    assert projection.nearest_reference(coords, is_ref).tolist() == [4, 4, 0, 1, 0]
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    g = projection.modality_gap(X, ["chunk", "chunk", "question", "question"])
    assert np.isclose(g["gap"], np.sqrt(2)) and g["spread"]["chunk"] == 0.0
    assert projection.modality_gap(X, ["a"] * 4)["gap"] is None
