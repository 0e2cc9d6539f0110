"""KMeans on unit vectors and the cosine silhouette of a partition — the one clustering rule of the package.

:func:`kmeans` is the only place that fits scikit-learn's ``KMeans`` (topics of the question log, the Tier 0
cluster column): float64 input, k-means++ seeding or given centres, single-threaded up to
:data:`SINGLE_THREAD_ROWS` rows. :func:`cosine_silhouette` is the exact mean silhouette under the cosine
distance of unit rows, computed from per-cluster sums in ``O(N·k·D)`` instead of the ``O(N²·D)`` distance
matrix; :func:`seeding` gives the shared k-means++ centres a k search starts every candidate from.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from voproshalych_eval.metrics.threads import limit_threads

__all__ = ["SINGLE_THREAD_ROWS", "cosine_silhouette", "kmeans", "seeding"]

#: fits of at most this many rows run single-threaded (see :func:`kmeans`)
SINGLE_THREAD_ROWS = 5000


def kmeans(X: np.ndarray, k: int, *, seed: int = 0, n_init: int = 1, init: np.ndarray | None = None,
           max_iter: int = 300, tol: float = 1e-4, sample_weight: np.ndarray | None = None) -> Any:
    """scikit-learn ``KMeans`` fitted on the rows of ``X`` (unit vectors), in float64.

    k-means++ initialisation, best of ``n_init`` runs, or the given ``init`` centroids; at most ``max_iter``
    Lloyd iterations (scikit-learn's defaults, 300 and ``tol=1e-4``, run to convergence; ``tol=0`` stops only
    when no label changes and skips scikit-learn's per-fit variance pass over ``X``). float64 on purpose: on float32 input
    scikit-learn computes distances in slow up-cast chunks (several times slower here). Fits of at most
    :data:`SINGLE_THREAD_ROWS` rows (a k search, stability samples) run on one OpenMP/BLAS thread: their
    parallel chunks are too small to pay for the threads, and on a busy machine the spinning threads made the
    k search 5× slower (``benchmarks/bench_topics_click.py``); the results are the same to 1e-15.

    ``sample_weight``: a row standing for that many identical rows (scikit-learn's weighted Lloyd: the same
    centres and labels as the repeated rows, up to the order of float sums).
    """
    from sklearn.cluster import KMeans  # heavy: defers sklearn

    X64 = np.asarray(X, dtype=np.float64)
    if init is not None:
        model = KMeans(n_clusters=k, init=np.asarray(init, dtype=np.float64), n_init=1, random_state=seed,
                       max_iter=max_iter, tol=tol)
    else:
        model = KMeans(n_clusters=k, init="k-means++", n_init=n_init, random_state=seed, max_iter=max_iter,
                       tol=tol)
    single = X64.shape[0] <= SINGLE_THREAD_ROWS
    with warnings.catch_warnings(), limit_threads(1 if single else None):
        warnings.simplefilter("ignore")  # ConvergenceWarning on duplicate points / max_iter reached
        return model.fit(X64, sample_weight=sample_weight)


def seeding(X: np.ndarray, k: int, *, seed: int = 0) -> np.ndarray:
    """``k`` greedy k-means++ centres of the rows of ``X`` (``sklearn.cluster.kmeans_plusplus``, float64).

    k-means++ picks centres one after another, so the first ``j`` of them are a k-means++ seeding for ``j``
    clusters: a k search seeds once for its largest k and starts each candidate from a prefix. (The local
    trials per centre, ``2 + ln k``, follow the largest k; for that k the seeding equals ``KMeans``'s own.)
    """
    from sklearn.cluster import kmeans_plusplus  # heavy: defers sklearn

    X64 = np.asarray(X, dtype=np.float64)
    with limit_threads(1 if X64.shape[0] <= SINGLE_THREAD_ROWS else None):
        centres, _ = kmeans_plusplus(X64, n_clusters=k, random_state=seed)
    return centres


def cosine_silhouette(X: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette of ``labels`` under the distance ``d(i, j) = 1 − <x_i, x_j>`` of the rows of ``X``.

    With ``S_c = Σ_{j∈c} x_j`` and ``n_c`` rows in cluster ``c``, the summed distance of row ``i`` to ``c`` is
    ``n_c − <x_i, S_c>``, so, for ``i`` in cluster ``a``::

        a(i) = (n_a − <x_i, S_a> − (1 − <x_i, x_i>)) / (n_a − 1)      (self excluded)
        b(i) = min_{c ≠ a} (n_c − <x_i, S_c>) / n_c
        s(i) = (b(i) − a(i)) / max(a(i), b(i)),   s(i) = 0 when n_a = 1  (scikit-learn's convention)
        silhouette = mean_i s(i)

    For unit rows this is ``sklearn.metrics.silhouette_score(X, labels, metric="cosine")`` exactly (the
    matrix version clips rounding-negative distances at 0: the two agree to ~1e-8), at ``O(N·k·D)`` cost
    instead of ``O(N²·D)``. Needs at least 2 clusters and fewer clusters than rows (``ValueError`` otherwise).
    """
    X64 = np.asarray(X, dtype=np.float64)
    _, lab = np.unique(np.asarray(labels), return_inverse=True)
    lab = lab.ravel()
    n, k = X64.shape[0], int(lab.max()) + 1 if len(lab) else 0
    if len(lab) != n:
        raise ValueError(f"{n} rows but {len(lab)} labels")
    if not 2 <= k <= n - 1:
        raise ValueError(f"silhouette needs 2 to n_samples - 1 clusters, got {k} for {n} rows")
    counts = np.bincount(lab, minlength=k).astype(np.float64)
    onehot = np.zeros((k, n))
    onehot[lab, np.arange(n)] = 1.0
    with limit_threads(1 if n <= SINGLE_THREAD_ROWS else None):  # small products: threads only spin
        sums = onehot @ X64  # (k, D) per-cluster sums
        total = counts[None, :] - X64 @ sums.T  # (n, k) summed distances to each cluster
    rows = np.arange(n)
    own_n = counts[lab]
    self_d = 1.0 - np.einsum("ij,ij->i", X64, X64)
    a = (total[rows, lab] - self_d) / np.maximum(own_n - 1.0, 1.0)
    mean_other = total / counts[None, :]
    mean_other[rows, lab] = np.inf
    b = mean_other.min(axis=1)
    denom = np.maximum(a, b)
    s = np.divide(b - a, denom, out=np.zeros(n), where=denom > 0)
    s[own_n <= 1] = 0.0
    return float(s.mean())
