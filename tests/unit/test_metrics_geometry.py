"""Tier 0 geometry metrics against a brute-force full-matrix reference (numpy/scipy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.manifold import trustworthiness
from sklearn.metrics.pairwise import cosine_similarity
from sklearn.neighbors import NearestNeighbors

from voproshalych_eval.metrics.geometry import (
    embedding_space_metrics,
    knn,
    near_duplicate_pairs,
    outlier_scores,
    rank_outliers,
    trustworthiness_at_k,
    trustworthiness_sample,
)

KEYS = {
    "total_samples", "avg_nn_distance", "std_nn_distance", "density_score", "avg_spread", "max_spread",
    "spread_std", "effective_dimensionality", "avg_pairwise_distance", "std_pairwise_distance",
    "min_pairwise_distance", "max_pairwise_distance", "mean_pairwise_cosine_similarity",
    "top1_variance_share", "top10_variance_share", "near_duplicate_pairs", "distance_metric", "k",
    "estimated",
}
METRICS = ["cosine", "euclidean"]


def brute_force(X: np.ndarray, *, k: int, metric: str, var_thr: float = 0.95, dup_thr: float = 0.95) -> dict:
    """The Tier 0 definitions computed the obvious way on full N x N matrices."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    D = cdist(X, X, metric)
    S = cosine_similarity(X)
    iu = np.triu_indices(n, 1)
    pair, cos = D[iu], S[iu]
    np.fill_diagonal(D, np.inf)
    k = min(k, n - 1)
    nn = np.sort(D, axis=1)[:, :k]
    mu = X.mean(axis=0)
    spread = np.linalg.norm(X - mu, axis=1)
    ev = np.sort(np.clip(np.linalg.eigvalsh(np.atleast_2d(np.cov(X.T))), 0, None))[::-1] if n > 1 else np.zeros(1)
    total = ev.sum()
    if total > 1e-20:
        ratio = np.cumsum(ev) / total
        eff = int(np.argmax(ratio >= var_thr - 1e-12)) + 1
        top1, top10 = ev[0] / total, ev[:10].sum() / total
    else:
        eff, top1, top10 = 0, None, None
    out = {
        "total_samples": n,
        "avg_spread": spread.mean(),
        "max_spread": spread.max(),
        "spread_std": spread.std(),
        "effective_dimensionality": eff,
        "top1_variance_share": top1,
        "top10_variance_share": top10,
        "k": k,
    }
    if n > 1:
        out.update(
            avg_nn_distance=nn.mean(),
            std_nn_distance=nn.std(),
            density_score=1 / (nn.mean() + 1e-12),
            avg_pairwise_distance=pair.mean(),
            std_pairwise_distance=pair.std(),
            min_pairwise_distance=pair.min(),
            max_pairwise_distance=pair.max(),
            mean_pairwise_cosine_similarity=cos.mean(),
            near_duplicate_pairs=int(np.count_nonzero(cos >= dup_thr)),
        )
    return out


def assert_matches(res: dict, ref: dict, tol: float = 1e-6) -> None:
    assert set(res) == KEYS
    for key, want in ref.items():
        got = res[key]
        if want is None or got is None:
            assert got is None and want is None, (key, got, want)
        elif key == "density_score":
            assert got == pytest.approx(want, rel=1e-6), key
        else:
            assert got == pytest.approx(want, abs=tol), (key, got, want)


def clustered(n: int, d: int, seed: int = 0, n_clusters: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_clusters, d)) * 3
    return centres[rng.integers(0, n_clusters, n)] + rng.standard_normal((n, d))


# --------------------------------------------------------------------------- exact values


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("block_size", [7, 16, 2048])
def test_matches_brute_force(metric: str, block_size: int) -> None:
    X = clustered(101, 12, seed=1)
    res = embedding_space_metrics(X, k=5, metric=metric, block_size=block_size)
    assert_matches(res, brute_force(X, k=5, metric=metric))
    assert res["distance_metric"] == metric and res["estimated"] is False


@pytest.mark.parametrize("metric", METRICS)
def test_near_duplicates_counted_and_thresholds(metric: str) -> None:
    rng = np.random.default_rng(2)
    X = rng.standard_normal((80, 6))
    X[40:50] = X[:10] + 0.01 * rng.standard_normal((10, 6))  # 10 near-duplicate pairs
    X[60:65] = X[20:25] * rng.uniform(0.2, 5.0, (5, 1))  # same direction, far apart in Euclidean terms
    for thr in (0.9, 0.99):
        res = embedding_space_metrics(X, metric=metric, near_duplicate_threshold=thr, block_size=13)
        assert_matches(res, brute_force(X, k=5, metric=metric, dup_thr=thr))
    assert embedding_space_metrics(X, metric=metric, near_duplicate_threshold=0.99)["near_duplicate_pairs"] >= 15


@pytest.mark.parametrize("metric", METRICS)
def test_larger_n_sparse_merge_path(metric: str) -> None:
    X = clustered(700, 10, seed=3, n_clusters=7)
    assert_matches(embedding_space_metrics(X, k=7, metric=metric, block_size=128), brute_force(X, k=7, metric=metric))


def test_float32_input_is_computed_in_float64() -> None:
    X = clustered(90, 16, seed=4).astype(np.float32)
    assert_matches(embedding_space_metrics(X, block_size=32), brute_force(X.astype(np.float64), k=5, metric="cosine"))


def test_euclidean_far_from_origin_keeps_precision() -> None:
    # large common offset: naive sum / sum-of-squares and ||x||^2 + ||y||^2 - 2<x,y> lose digits
    X = clustered(120, 5, seed=5) * 0.01 + 1e4
    res = embedding_space_metrics(X, metric="euclidean", block_size=17)
    ref = brute_force(X, k=5, metric="euclidean")
    for key in ("avg_pairwise_distance", "std_pairwise_distance", "max_pairwise_distance"):
        assert res[key] == pytest.approx(ref[key], rel=1e-5, abs=1e-6), key
    for key in ("avg_nn_distance", "min_pairwise_distance"):  # refined exactly
        assert res[key] == pytest.approx(ref[key], rel=1e-9), key


# --------------------------------------------------------------------------- degenerate inputs


@pytest.mark.parametrize("metric", METRICS)
def test_single_vector(metric: str) -> None:
    res = embedding_space_metrics(np.array([[1.0, 2.0, 3.0]]), metric=metric)
    assert set(res) == KEYS
    assert res["total_samples"] == 1 and res["k"] == 0
    for key in ("avg_nn_distance", "std_nn_distance", "density_score", "avg_pairwise_distance",
                "std_pairwise_distance", "min_pairwise_distance", "max_pairwise_distance",
                "mean_pairwise_cosine_similarity", "top1_variance_share", "top10_variance_share"):
        assert res[key] is None, key
    assert res["avg_spread"] == 0 and res["max_spread"] == 0 and res["spread_std"] == 0
    assert res["effective_dimensionality"] == 0 and res["near_duplicate_pairs"] == 0


@pytest.mark.parametrize("metric", METRICS)
def test_two_vectors(metric: str) -> None:
    X = np.array([[1.0, 0.0], [1.0, 1.0]])
    res = embedding_space_metrics(X, metric=metric)
    assert_matches(res, brute_force(X, k=5, metric=metric))
    assert res["k"] == 1 and res["effective_dimensionality"] == 1
    d = 1 - 1 / math.sqrt(2) if metric == "cosine" else 1.0
    assert res["avg_pairwise_distance"] == pytest.approx(d)
    assert res["min_pairwise_distance"] == pytest.approx(d)
    assert res["max_pairwise_distance"] == pytest.approx(d)
    assert res["std_pairwise_distance"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("n", [3, 5, 6])
def test_k_at_least_n_uses_n_minus_1(metric: str, n: int) -> None:
    X = clustered(n, 4, seed=6)
    res = embedding_space_metrics(X, k=5, metric=metric, block_size=2)
    assert res["k"] == min(5, n - 1)
    assert_matches(res, brute_force(X, k=5, metric=metric))


@pytest.mark.parametrize("metric", METRICS)
def test_duplicates_have_distance_zero(metric: str) -> None:
    X = clustered(30, 5, seed=7)
    X[10] = X[3]
    X[20] = X[3]
    res = embedding_space_metrics(X, metric=metric, block_size=7)
    assert_matches(res, brute_force(X, k=5, metric=metric))
    assert res["min_pairwise_distance"] == pytest.approx(0.0, abs=1e-12)
    idx, dist = knn(X, k=2, metric=metric, block_size=7)
    assert set(idx[3]) == {10, 20} and np.allclose(dist[3], 0.0, atol=1e-12)


@pytest.mark.parametrize("metric", METRICS)
def test_zero_variance_all_rows_equal(metric: str) -> None:
    X = np.tile([[0.5, -1.0, 2.0]], (9, 1))
    res = embedding_space_metrics(X, metric=metric, block_size=4)
    assert res["effective_dimensionality"] == 0
    assert res["top1_variance_share"] is None and res["top10_variance_share"] is None
    assert res["avg_spread"] == pytest.approx(0.0, abs=1e-12)
    for key in ("avg_nn_distance", "avg_pairwise_distance", "max_pairwise_distance", "min_pairwise_distance",
                "std_pairwise_distance"):
        assert res[key] == pytest.approx(0.0, abs=1e-7), key
    assert res["near_duplicate_pairs"] == 9 * 8 // 2
    assert res["mean_pairwise_cosine_similarity"] == pytest.approx(1.0)
    assert res["density_score"] > 1e6


def test_effective_dimensionality_of_known_spectrum() -> None:
    rng = np.random.default_rng(8)
    Z = rng.standard_normal((1000, 3))
    Z = (Z - Z.mean(0)) @ np.linalg.inv(np.linalg.cholesky(np.cov(Z.T))).T  # exactly white
    X = np.zeros((1000, 20))
    X[:, :3] = Z * np.sqrt([0.90, 0.06, 0.04])  # variance shares 0.90 / 0.06 / 0.04
    rot, _ = np.linalg.qr(rng.standard_normal((20, 20)))
    X = X @ rot + 5.0
    res = embedding_space_metrics(X, metric="euclidean", exact_limit=10, sample_pairs=1000, sample_queries=20)
    assert res["effective_dimensionality"] == 2
    assert res["top1_variance_share"] == pytest.approx(0.90)
    assert res["top10_variance_share"] == pytest.approx(1.0)
    assert embedding_space_metrics(X[:50], variance_threshold=0.999)["effective_dimensionality"] == 3
    assert embedding_space_metrics(X[:50], variance_threshold=0.5)["effective_dimensionality"] == 1


def test_effective_dimensionality_when_n_below_d() -> None:
    X = clustered(15, 60, seed=9)
    assert_matches(embedding_space_metrics(X, metric="euclidean"), brute_force(X, k=5, metric="euclidean"))


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_row_is_named(bad: float) -> None:
    X = clustered(10, 3)
    X[7, 1] = bad
    with pytest.raises(ValueError, match="row 7"):
        embedding_space_metrics(X)
    with pytest.raises(ValueError, match="row 7"):
        knn(X, k=2)


def test_zero_vector_under_cosine_is_named() -> None:
    X = clustered(10, 3)
    X[4] = 0.0
    with pytest.raises(ValueError, match="row 4"):
        embedding_space_metrics(X, metric="cosine")
    with pytest.raises(ValueError, match="row 4"):
        near_duplicate_pairs(X)


def test_zero_vector_under_euclidean_has_cosine_zero() -> None:
    X = clustered(12, 3, seed=10)
    X[4] = 0.0
    X[5] = 0.0
    res = embedding_space_metrics(X, metric="euclidean", near_duplicate_threshold=0.5, block_size=5)
    assert_matches(res, brute_force(X, k=5, metric="euclidean", dup_thr=0.5))


@pytest.mark.parametrize(
    "X, kwargs",
    [
        (np.zeros((0, 3)), {}),
        (np.ones(3), {}),
        (np.ones((3, 2)), {"metric": "manhattan"}),
        (np.ones((3, 2)), {"k": 0}),
        (np.ones((3, 2)), {"block_size": 0}),
        (np.ones((3, 2)), {"variance_threshold": 1.5}),
    ],
)
def test_invalid_arguments(X: np.ndarray, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        embedding_space_metrics(X, **kwargs)


# --------------------------------------------------------------------------- knn, outliers, duplicates


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("block_size", [5, 64, 2048])
def test_knn_matches_sklearn(metric: str, block_size: int) -> None:
    X = clustered(150, 8, seed=11)
    idx, dist = knn(X, k=6, metric=metric, block_size=block_size)
    ref_d, ref_i = NearestNeighbors(n_neighbors=6, metric=metric, algorithm="brute").fit(X).kneighbors()
    assert idx.shape == dist.shape == (150, 6)
    assert np.all(np.diff(dist, axis=1) >= 0)
    assert not np.any(idx == np.arange(150)[:, None])
    np.testing.assert_allclose(dist, ref_d, atol=1e-9)
    assert (idx == ref_i).mean() > 0.99  # ties aside, the same neighbours


def test_knn_rejects_bad_k() -> None:
    X = clustered(5, 3)
    for k in (0, 5):
        with pytest.raises(ValueError, match="k must"):
            knn(X, k=k)


def test_outlier_scores_and_ranking() -> None:
    X = clustered(60, 5, seed=12, n_clusters=2)
    X[17] = 100.0  # far away from everything
    d = np.array([[1.0, 3.0], [0.0, 0.5]])
    np.testing.assert_allclose(outlier_scores(d), [2.0, 0.25])
    ranked = rank_outliers(X, k=4, metric="euclidean", top=5)
    assert len(ranked) == 5 and ranked[0]["index"] == 17
    assert set(ranked[0]) == {"index", "score", "neighbors", "neighbor_distances"}
    assert [r["score"] for r in ranked] == sorted((r["score"] for r in ranked), reverse=True)
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    assert ranked[0]["score"] == pytest.approx(np.sort(D[17])[:4].mean())
    assert len(ranked[0]["neighbors"]) == 4
    assert rank_outliers(X[:1]) == []
    assert len(rank_outliers(X[:3], k=10)) == 3


def test_near_duplicate_pairs_list() -> None:
    rng = np.random.default_rng(13)
    X = rng.standard_normal((70, 5))
    X[50:60] = X[:10] + 0.02 * rng.standard_normal((10, 5))
    S = cosine_similarity(X)
    iu = np.triu_indices(70, 1)
    want = sorted(((int(i), int(j), float(S[i, j])) for i, j in zip(*iu, strict=True) if S[i, j] >= 0.9),
                  key=lambda t: (-t[2], t[0], t[1]))
    got = near_duplicate_pairs(X, threshold=0.9, block_size=9)
    assert [(i, j) for i, j, _ in got] == [(i, j) for i, j, _ in want]
    np.testing.assert_allclose([s for *_, s in got], [s for *_, s in want], atol=1e-12)
    assert all(i < j for i, j, _ in got)
    assert near_duplicate_pairs(X, threshold=0.9, block_size=9, limit=3) == got[:3]
    assert embedding_space_metrics(X, near_duplicate_threshold=0.9)["near_duplicate_pairs"] == len(want)


# --------------------------------------------------------------------------- trustworthiness


def test_trustworthiness_delegates_and_subsamples() -> None:
    X = clustered(120, 10, seed=14)
    low = X[:, :2]
    want = trustworthiness(X, low, n_neighbors=5, metric="cosine")
    assert trustworthiness_at_k(X, low, k=5) == pytest.approx(want)
    t, n_used = trustworthiness_sample(X, low, k=5, metric="euclidean", max_n=50, seed=1)
    assert n_used == 50 and 0.0 <= t <= 1.0
    assert trustworthiness_sample(X, low, k=5, max_n=50, seed=1) == trustworthiness_sample(X, low, k=5, max_n=50, seed=1)
    with pytest.raises(ValueError):
        trustworthiness_at_k(X, low[:10], k=5)


# --------------------------------------------------------------------------- sampled estimate


@pytest.mark.parametrize("metric", METRICS)
def test_estimated_mode_is_marked_and_close(metric: str) -> None:
    X = clustered(400, 8, seed=15)
    exact = embedding_space_metrics(X, metric=metric)
    est = embedding_space_metrics(X, metric=metric, exact_limit=100, sample_pairs=20_000, sample_queries=150)
    assert est["estimated"] is True and est["sample_size"] == 20_000 and est["knn_query_sample_size"] == 150
    assert KEYS.issubset(est)
    for key in ("avg_pairwise_distance", "std_pairwise_distance", "avg_nn_distance", "std_nn_distance",
                "density_score", "near_duplicate_pairs"):
        lo, hi = est[f"{key}_ci"]
        assert lo <= est[key] <= hi, key
    # exact parts stay exact
    for key in ("avg_spread", "max_spread", "spread_std", "effective_dimensionality",
                "mean_pairwise_cosine_similarity", "top1_variance_share"):
        assert est[key] == pytest.approx(exact[key], abs=1e-9), key
    # extremes are bounds
    assert est["max_pairwise_distance"] <= exact["max_pairwise_distance"] + 1e-12
    assert est["min_pairwise_distance"] >= exact["min_pairwise_distance"] - 1e-12


@pytest.mark.parametrize("metric", METRICS)
def test_estimated_ci_covers_exact_value(metric: str) -> None:
    X = clustered(500, 8, seed=16)
    exact = embedding_space_metrics(X, metric=metric)
    seeds = range(20)
    covered = {key: 0 for key in ("avg_pairwise_distance", "std_pairwise_distance", "avg_nn_distance",
                                   "std_nn_distance")}
    for seed in seeds:
        est = embedding_space_metrics(X, metric=metric, exact_limit=200, sample_pairs=5_000,
                                      sample_queries=100, seed=seed)
        for key in covered:
            lo, hi = est[f"{key}_ci"]
            covered[key] += lo <= exact[key] <= hi
    # nominal 95%: 20 draws, allow a few misses (P(<= 15 of 20) < 0.3% for true 95% coverage)
    for key, c in covered.items():
        assert c >= 16, (key, c)
    est = embedding_space_metrics(X, metric=metric, exact_limit=200, sample_pairs=20_000, seed=3)
    lo, hi = est["avg_pairwise_distance_ci"]
    assert lo <= exact["avg_pairwise_distance"] <= hi


@pytest.mark.parametrize("metric", METRICS)
def test_the_metrics_scan_returns_the_same_knn_as_knn(metric: str) -> None:
    """The pair scan of the metrics finds the exact kNN on the way; it equals a separate ``knn`` call."""
    from voproshalych_eval.metrics.geometry import embedding_space_metrics_and_knn

    X = np.random.default_rng(5).normal(size=(157, 12))
    res, found = embedding_space_metrics_and_knn(X, k=4, metric=metric, block_size=37)
    idx, dist = knn(X, k=4, metric=metric, block_size=37)
    assert found is not None and res == embedding_space_metrics(X, k=4, metric=metric, block_size=37)
    np.testing.assert_array_equal(found[0], idx)
    np.testing.assert_array_equal(found[1], dist)
    assert embedding_space_metrics_and_knn(X[:1], k=4, metric=metric)[1] is None


def test_tier0_scans_the_whole_set_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Metrics and outliers share one pass over all pairs (it was two: 34% of a Tier 0 run)."""
    import voproshalych_eval.metrics.geometry as geometry
    from voproshalych_eval.tiers import tier0

    X = np.random.default_rng(6).normal(size=(120, 16))
    calls: list[int] = []
    real = geometry._scan

    def counting(prep, **kw):  # type: ignore[no-untyped-def]
        calls.append(prep.W.shape[0])
        return real(prep, **kw)

    monkeypatch.setattr(geometry, "_scan", counting)
    vs = tier0.vector_set_from_array(X)
    res = tier0.analyse(vs, k=5, n_clusters=None)
    assert res["outliers"] is not None
    assert calls.count(120) == 1, calls
