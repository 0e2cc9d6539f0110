"""The first map picture: PCA of the same points at once, UMAP refined in the background (no database)."""

from __future__ import annotations

import numpy as np
import pytest

from voproshalych_eval.tiers import projection as proj
from voproshalych_eval.tiers import projection_refine


def _planted(n: int = 1_500, d: int = 64, seed: int = 0) -> np.ndarray:
    """Rows on a 4-D subspace with distinct variances plus a little noise (a clear top of the spectrum)."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, 4)))[0]
    latent = rng.normal(size=(n, 4)) * np.array([6.0, 3.0, 1.5, 1.0])
    return (latent @ basis.T + 0.05 * rng.normal(size=(n, d)) + 3.0).astype(np.float32)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_pca_coords_match_scikit_learn(metric: str) -> None:
    from sklearn.decomposition import PCA

    X = _planted()
    ours = proj.pca_coords(X, n_components=3, metric=metric)
    A = X / np.linalg.norm(X, axis=1, keepdims=True) if metric == "cosine" else X
    ref = PCA(n_components=3, svd_solver="full").fit_transform(A.astype(np.float64))
    assert ours.dtype == np.float32 and ours.shape == (len(X), 3)
    for j in range(3):  # the same components, up to sign
        assert abs(np.corrcoef(ours[:, j], ref[:, j])[0, 1]) > 0.9999
        assert np.allclose(np.abs(ours[:, j]), np.abs(ref[:, j]), atol=1e-3 * np.abs(ref[:, j]).max())
    # deterministic, and each component's sign fixed (its largest loading positive)
    assert np.array_equal(ours, proj.pca_coords(X, n_components=3, metric=metric))


def test_pca_coords_tiny_inputs() -> None:
    assert proj.pca_coords(np.zeros((0, 5)), n_components=2).shape == (0, 2)
    two = proj.pca_coords(np.ones((2, 5)), n_components=2)
    assert two.shape == (2, 2) and two[1, 0] == 1.0
    wide = proj.pca_coords(np.random.default_rng(0).normal(size=(30, 2)), n_components=3)
    assert wide.shape == (30, 3) and np.all(wide[:, 2] == 0)  # fewer dimensions than components


def test_pca_picture_maps_the_rows_umap_will_map() -> None:
    X = _planted(n=900)
    ids = [f"q:{i}" for i in range(len(X))]
    groups = ["chunk" if i % 3 == 0 else "question" for i in range(len(X))]
    p = proj.project_pca(X, ids, n_components=2, seed=7, limit=500, centre_groups=groups, model="m")
    req = proj.prepare(X, ids, model="m", seed=7, limit=500, centre_groups=groups)
    assert p.params["method"] == "pca" and p.params["centred_groups"] == ["chunk", "question"]
    assert np.array_equal(p.rows, req.rows) and p.point_ids == [ids[i] for i in req.rows]
    assert p.subsampled and p.n_total == 900 and p.coords.shape == (500, 2)
    assert p.trustworthiness is None and not p.from_cache  # scored on request, not for the quick picture
    with pytest.raises(ValueError, match="n_components"):
        proj.project_pca(X, ids, n_components=4)
    with pytest.raises(ValueError, match="point ids"):
        proj.project_pca(X, ids[:-1])


def test_umap_picture_is_handed_over_before_trustworthiness() -> None:
    X = _planted(n=300)
    ids = [str(i) for i in range(len(X))]
    seen: list[proj.Projection] = []
    final = proj.project(None, X, ids, model="m", n_neighbors=8, on_picture=seen.append)
    (picture,) = seen
    assert picture.trustworthiness is None and picture.params["method"] == "umap"
    assert np.array_equal(picture.coords, final.coords)
    assert final.trustworthiness is not None and 0.0 <= final.trustworthiness <= 1.0
    assert "trustworthiness" in final.timings and "trustworthiness" not in picture.timings


def test_first_picture_is_pca_then_the_background_umap_replaces_it() -> None:
    X = _planted(n=400, seed=1)
    ids = [f"p{i}" for i in range(len(X))]
    picture, ref = projection_refine.first_picture(None, X, ids, model="m", n_neighbors=8, seed=3)
    assert picture.params["method"] == "pca" and ref is not None
    assert projection_refine.get(ref.key) is ref
    # a second request for the same map finds the running fit instead of starting another
    _, again = projection_refine.first_picture(None, X, ids, model="m", n_neighbors=8, seed=3)
    assert again is ref
    ref.wait(600)
    assert ref.done and ref.error is None and ref.result is not None, ref.error
    assert ref.current is ref.result and ref.result.params["method"] == "umap"
    assert ref.result.trustworthiness is not None and ref.epoch[0] == ref.epoch[1] > 0
    # the background result is the projection a direct fit gives (same rows, same coordinates)
    direct = proj.project(None, X, ids, model="m", n_neighbors=8, seed=3)
    assert direct.point_ids == ref.result.point_ids and np.allclose(direct.coords, ref.result.coords)
    only_pca, none = projection_refine.first_picture(None, X, ids, model="m", seed=4, background=False)
    assert only_pca.params["method"] == "pca" and none is None


def test_a_failed_background_fit_is_reported_and_leaves_the_picture() -> None:
    X = _planted(n=60)
    ids = [f"p{i}" for i in range(len(X))]
    picture, ref = projection_refine.first_picture(None, X, ids, model="m", metric="chebyshev")
    assert picture.params["method"] == "pca" and ref is not None
    ref.wait(120)
    assert ref.done and ref.result is None and ref.error and "chebyshev" in ref.error
