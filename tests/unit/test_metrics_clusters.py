"""The one KMeans rule and the exact O(n·k·d) cosine silhouette (metrics.clusters), and the k search built on them."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.metrics import adjusted_rand_score, silhouette_score

from voproshalych_eval.analytics.topics import _sample, _text_dup, caps_rows, choose_k
from voproshalych_eval.metrics.clusters import cosine_silhouette, kmeans, seeding


def _unit(X: np.ndarray) -> np.ndarray:
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def test_cosine_silhouette_equals_sklearn_on_unit_rows() -> None:
    rng = np.random.default_rng(0)
    X = _unit(rng.normal(size=(300, 24)))
    for k in (2, 5, 17):
        lab = KMeans(k, n_init=1, random_state=0).fit(X).labels_
        assert cosine_silhouette(X, lab) == pytest.approx(silhouette_score(X, lab, metric="cosine"), abs=1e-9)
    # a singleton cluster scores 0 (scikit-learn's convention) and labels need not be 0..k-1
    lab = np.array([7] * 150 + [3] * 149 + [11])
    assert cosine_silhouette(X, lab) == pytest.approx(silhouette_score(X, lab, metric="cosine"), abs=1e-9)
    # exact duplicates (distance 0) are handled like the matrix version
    D = _unit(np.vstack([X[:20], X[:20], X[20:60]]))
    lab = KMeans(4, n_init=1, random_state=1).fit(D).labels_
    assert cosine_silhouette(D, lab) == pytest.approx(silhouette_score(D, lab, metric="cosine"), abs=1e-9)
    with pytest.raises(ValueError, match="2 to n_samples - 1"):
        cosine_silhouette(X[:5], np.zeros(5, dtype=int))
    with pytest.raises(ValueError, match="labels"):
        cosine_silhouette(X[:5], np.array([0, 1]))


def test_seeding_prefixes_are_the_seeding_kmeans_uses_for_the_largest_k() -> None:
    rng = np.random.default_rng(1)
    X = _unit(rng.normal(size=(200, 16)))
    C = seeding(X, 9, seed=3)
    ref, _ = kmeans_plusplus(X, 9, random_state=3)
    np.testing.assert_array_equal(C, ref)
    # started from these centres, the fit equals KMeans' own k-means++ fit for that k
    a = kmeans(X, 9, seed=3, init=C).labels_
    b = KMeans(9, n_init=1, random_state=3).fit(X).labels_
    assert adjusted_rand_score(a, b) == pytest.approx(1.0)


def test_k_search_finds_separated_clusters_and_capped_candidate_fits_match_full_ones() -> None:
    rng = np.random.default_rng(2)
    centres = rng.normal(size=(6, 32)) * 8
    X = _unit(np.vstack([c + rng.normal(size=(60, 32)) for c in centres]))
    k, table, cent = choose_k(X, k_range=(2, 12), sample_size=300, seed=0)
    assert k == 6 and cent is not None and cent.shape == (6, 32)
    assert list(table["k"]) == list(range(2, 13))
    assert table.loc[table["k"] == 6, "silhouette"].item() == pytest.approx(table["silhouette"].max())
    # the table's silhouette is the exact one of the candidate's labels on the sample
    S = X[_sample(len(X), 300, 0)]
    cand = kmeans(S, 6, seed=0, init=seeding(S, 12, seed=0)[:6], max_iter=10, tol=0.0)
    assert table.loc[table["k"] == 6, "silhouette"].item() == pytest.approx(
        silhouette_score(S, cand.labels_, metric="cosine"), abs=1e-9)


def test_text_dup_and_caps_rows_keep_their_results_with_the_fast_paths() -> None:
    from difflib import SequenceMatcher

    pairs = [("как записатбся на пересдачу", "как записаться на пересдачу"), ("абв", "абвгдежзик"),
             ("стипендия когда", "когда стипендия"), ("", "x"), ("same", "same")]
    matchers: dict = {}
    for a, b in pairs:
        ref = bool(a and b) and (a == b or SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.88)
        assert _text_dup(a, b) == ref and _text_dup(a, b, matchers=matchers) == ref
    import csv
    from pathlib import Path

    with (Path(__file__).resolve().parents[2] / "data" / "question_log.csv").open(encoding="utf-8") as fh:
        demo = [r["question"] for r in csv.DictReader(fh)]
    texts = ["ⅫⅫⅫⅫⅫⅫⅫⅫ abc", "ПАРА ПЕРЕНЕСЕНА", "пара", "1234567890", "Ǆǅǆ ABCDEFGH", "Как ПОЛУЧИТЬ", *demo]
    ref = [len(L := [c for c in t if c.isalpha()]) >= 8 and sum(c.isupper() for c in L) >= 0.6 * len(L) for t in texts]
    assert caps_rows(texts).tolist() == ref
