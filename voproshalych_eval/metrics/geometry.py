"""Tier 0: intrinsic geometry of an embedding space (no labels needed).

All functions take a plain ``(N, D)`` array of vectors and never build the ``N x N`` distance
matrix: pairs are visited in square tiles of ``block_size x block_size`` over the upper triangle
(``j >= i`` blocks only, the diagonal tile masked), with running float64 sums, a running maximum and a
per-row top-k for the nearest neighbours. Memory is ``O(N*D + block_size**2 + N*k)``.

Precision: cosine tiles are float32 products of the float64 unit rows (the float32 GEMM is the cost floor
of an exact all-pairs scan; float64 tiles cost about twice as much), summed in float64; the k nearest
neighbours' distances are then recomputed in float64. Against float64 tiles the pairwise mean, std and max
differ by at most ~1e-6 absolute (``tests/unit/test_metrics_geometry_float32.py`` bounds them at 1e-5), a
pair whose cosine lies within ~1e-6 of the near-duplicate threshold may count differently, and neighbours
closer than ~1e-6 to each other may swap. Euclidean tiles stay float64 (their ``||x||² + ||y||² − 2<x, y>``
form cancels).

Distances (``metric``):

* ``"cosine"``: ``d(x, y) = 1 - <x, y> / (||x|| ||y||)`` (in ``[0, 2]``); a zero vector has no
  direction, so it is rejected with a ``ValueError`` naming its row.
* ``"euclidean"``: ``d(x, y) = ||x - y||_2``. Tiles use ``||x||^2 + ||y||^2 - 2<x, y>``; the k
  nearest-neighbour distances (and hence ``min_pairwise_distance``) are then recomputed directly as
  ``||x - y||`` so that small distances carry no cancellation error (duplicates give exactly 0).

Cosine *similarity* (``mean_pairwise_cosine_similarity``, near duplicates) is always the cosine of
the raw vectors, whatever ``metric`` is; under ``metric="euclidean"`` a zero vector has cosine 0 with
everything (the ``sklearn.metrics.pairwise.cosine_similarity`` convention).

Standard deviations are population standard deviations (``ddof=0``) over the set they describe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from voproshalych_eval.metrics.threads import limit_threads
from voproshalych_eval.metrics.validation import check_matrix, nonzero_norms, unit_rows

Metric = Literal["cosine", "euclidean"]

__all__ = [
    "embedding_space_metrics",
    "knn",
    "near_duplicate_pairs",
    "outlier_scores",
    "rank_outliers",
    "trustworthiness_at_k",
    "trustworthiness_sample",
]

_Z95 = 1.959963984540054  # two-sided 95% normal quantile
_DENSITY_EPS = 1e-12
_CHECK_ROWS = 65_536  # rows per chunk when validating / computing per-row quantities


# ---------------------------------------------------------------------------------------------
# validation and preparation
# ---------------------------------------------------------------------------------------------


def _as_matrix(X: Any, name: str = "X") -> np.ndarray:
    """``X`` as a float64 ``(N, D)`` array (see :func:`voproshalych_eval.metrics.validation.check_matrix`)."""
    return check_matrix(X, name)


def _row_norms(Xf: np.ndarray) -> np.ndarray:
    out = np.empty(Xf.shape[0], dtype=np.float64)
    for s in range(0, Xf.shape[0], _CHECK_ROWS):
        blk = Xf[s : s + _CHECK_ROWS]
        out[s : s + _CHECK_ROWS] = np.sqrt(np.einsum("ij,ij->i", blk, blk))
    return out


def _unit_rows(Xf: np.ndarray, norms: np.ndarray, *, name: str = "X") -> np.ndarray:
    """Rows divided by their norms; a zero row raises ``ValueError`` naming it."""
    return unit_rows(Xf, name, norms=norms)


def _check_metric(metric: str) -> None:
    if metric not in ("cosine", "euclidean"):
        raise ValueError(f"metric must be 'cosine' or 'euclidean', got {metric!r}")


def _check_block(block_size: int) -> None:
    if int(block_size) < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")


@dataclass
class _Prepared:
    """Working matrix for the tiles: unit rows (cosine) or raw rows plus squared norms (euclidean)."""

    W: np.ndarray
    sq: np.ndarray | None  # squared norms (euclidean only)
    metric: str
    W32: np.ndarray | None = None  # float32 copy of the unit rows: the pair scan's tiles (cosine only)


def _prepare(Xf: np.ndarray, metric: str, norms: np.ndarray | None = None) -> _Prepared:
    if norms is None:
        norms = _row_norms(Xf)
    if metric == "cosine":
        U = _unit_rows(Xf, norms)
        return _Prepared(U, None, metric, U.astype(np.float32))
    return _Prepared(Xf, norms * norms, metric)


class _Workspace:
    """Reusable flat tile buffers.

    A fresh ``2048 x 2048`` float64 temporary (32 MiB) is above glibc's largest mmap threshold, so
    every such allocation would be a new mapping with all its pages faulted in again; the tile
    loop therefore writes into these buffers with ``out=``.
    """

    def __init__(self, rows: int, cols: int, dtype: Any = np.float64) -> None:
        size = max(1, rows * cols)
        self._f = np.empty(size, dtype=dtype)
        self._m = np.empty(size, dtype=bool)
        self._d: np.ndarray | None = None

    def wide(self, nr: int, nc: int) -> np.ndarray:
        """A float64 buffer of the tile's shape (float32 tiles are summed in float64)."""
        if self._d is None:
            self._d = np.empty(self._f.size)
        return self._d[: nr * nc].reshape(nr, nc)

    def tile(self, nr: int, nc: int) -> np.ndarray:
        return self._f[: nr * nc].reshape(nr, nc)

    def mask(self, nr: int, nc: int) -> np.ndarray:
        return self._m[: nr * nc].reshape(nr, nc)


def _distance_tile(
    prep: _Prepared, A: np.ndarray, rows: slice | np.ndarray, b0: int, b1: int, G: np.ndarray,
    shift: float = 0.0, *, product: bool = True,
) -> None:
    """Write ``d(x_r, x_j) - shift`` for the rows ``A = W[rows]`` and columns ``b0:b1`` into ``G``.

    Cosine: ``1 - <u_r, u_j>`` (may be a few ulp below 0; callers clip what they report).
    Euclidean: ``A`` is ``-2 * W[rows]`` and ``G`` holds ``-2 <x_r, x_j>`` on entry when
    ``product`` is False; ``sqrt(max(||x_r||^2 + ||x_j||^2 - 2 <x_r, x_j>, 0))``.
    """
    if product:
        np.matmul(A, prep.W[b0:b1].T, out=G)
    if prep.metric == "cosine":
        np.subtract(1.0 - shift, G, out=G)
        return
    assert prep.sq is not None
    G += prep.sq[rows, None]
    G += prep.sq[None, b0:b1]
    np.maximum(G, 0.0, out=G)
    np.sqrt(G, out=G)
    if shift:
        G -= shift


# ---------------------------------------------------------------------------------------------
# running top-k
# ---------------------------------------------------------------------------------------------


def _topk_update(
    best_d: np.ndarray,
    best_i: np.ndarray,
    r0: int,
    T: np.ndarray,
    c0: int,
    k: int,
    *,
    transposed: bool = False,
    work: np.ndarray | None = None,
) -> None:
    """Merge the candidates of tile ``T`` into the running top-k of rows ``r0 : r0 + nr``.

    Row ``r`` of the update corresponds to ``T[r, :]`` (or ``T[:, r]`` when ``transposed``) and
    candidate column ``c`` to global index ``c0 + c``. Only candidates strictly below a row's current
    k-th best distance can enter; when few do (the usual case after the first tile) they are merged
    sparsely, otherwise the tile is argpartitioned. ``work`` is an optional bool buffer shaped
    like ``T``.
    """
    V = T.T if transposed else T
    nr, nc = V.shape
    if nr == 0 or nc == 0:
        return
    rows = slice(r0, r0 + nr)
    thr = best_d[rows, k - 1]
    mask = np.less(T, thr[None, :] if transposed else thr[:, None], out=work)
    n_cand = int(np.count_nonzero(mask))
    if n_cand == 0:
        return
    if n_cand > 8 * k * nr:
        kk = min(k, nc)
        if kk < nc:
            part = np.argpartition(V, kk - 1, axis=1)[:, :kk]
        else:
            part = np.broadcast_to(np.arange(nc), (nr, nc))
        vals = np.take_along_axis(V, part, axis=1)
        cd = np.concatenate([best_d[rows], vals], axis=1)
        ci = np.concatenate([best_i[rows], part + c0], axis=1)
        sel = np.argpartition(cd, k - 1, axis=1)[:, :k]
        best_d[rows] = np.take_along_axis(cd, sel, axis=1)
        best_i[rows] = np.take_along_axis(ci, sel, axis=1)
        return
    if transposed:
        cc, rr = nonzero_2d(mask)
        vals = T[cc, rr]
    else:
        rr, cc = nonzero_2d(mask)
        vals = T[rr, cc]
    urows, pos = np.unique(rr, return_inverse=True)
    u = urows.size
    g_rows = r0 + urows
    all_pos = np.concatenate([np.repeat(np.arange(u), k), pos])
    all_d = np.concatenate([best_d[g_rows].ravel(), vals])
    all_i = np.concatenate([best_i[g_rows].ravel(), cc.astype(np.int64) + c0])
    order = np.lexsort((all_d, all_pos))
    starts = np.searchsorted(all_pos[order], np.arange(u))
    take = order[starts[:, None] + np.arange(k)]
    best_d[g_rows] = all_d[take]
    best_i[g_rows] = all_i[take]


def _refine_cosine(U: np.ndarray, rows: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``max(1 − <u_r, u_idx[r, j]>, 0)`` in float64 for every entry of ``idx``, in bounded chunks (the float32
    pair scan finds the neighbours; their distances are recomputed exactly)."""
    n, k = idx.shape
    out = np.empty((n, k), dtype=np.float64)
    if n == 0 or k == 0:
        return out
    step = max(1, (1 << 22) // max(1, k * U.shape[1]))
    for s in range(0, n, step):
        e = min(n, s + step)
        out[s:e] = 1.0 - np.einsum("ijk,ik->ij", U[idx[s:e]], U[rows[s:e]])
    return np.maximum(out, 0.0, out=out)


def _sort_rows(best_d: np.ndarray, best_i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((best_i, best_d), axis=1) if best_d.size else np.zeros_like(best_i)
    return np.take_along_axis(best_i, order, axis=1), np.take_along_axis(best_d, order, axis=1)


def _refine_euclidean(
    Xf: np.ndarray, rows: np.ndarray, idx: np.ndarray
) -> np.ndarray:
    """Exact ``||x_rows[r] - x_idx[r, j]||`` for every entry of ``idx``, in bounded chunks."""
    n, k = idx.shape
    out = np.empty((n, k), dtype=np.float64)
    if n == 0 or k == 0:
        return out
    step = max(1, (1 << 22) // max(1, k * Xf.shape[1]))
    for s in range(0, n, step):
        e = min(n, s + step)
        diff = Xf[idx[s:e]] - Xf[rows[s:e], None, :]
        out[s:e] = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    return out


# ---------------------------------------------------------------------------------------------
# the tile scan
# ---------------------------------------------------------------------------------------------


@dataclass
class _PairSums:
    """Running sums over pairs ``i < j``; values are stored shifted by ``shift`` for accuracy."""

    shift: float = 0.0
    count: int = 0
    s1: float = 0.0  # sum of (d - shift)
    s2: float = 0.0  # sum of (d - shift)**2
    dmax: float = -math.inf  # max of (d - shift)
    n_dups: int = 0  # pairs with cosine similarity >= threshold

    def mean(self) -> float:
        return self.shift + self.s1 / self.count

    def std(self) -> float:
        m = self.s1 / self.count
        return math.sqrt(max(self.s2 / self.count - m * m, 0.0))


def _scan(
    prep: _Prepared,
    *,
    k: int,
    block_size: int,
    sums: _PairSums | None = None,
    dup_threshold: float | None = None,
    raw_norms: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Visit every pair ``i < j`` once (tiles ``J >= I``) and return the unsorted top-k.

    With ``sums`` it also accumulates the pairwise distance sums, the maximum and (with
    ``dup_threshold``) the count of pairs whose cosine similarity is ``>= dup_threshold``.
    Diagonal tiles are visited first so that every row has a finite k-th best distance before the
    off-diagonal tiles, which then only need a sparse merge.
    """
    W = prep.W32 if prep.W32 is not None else prep.W
    n = W.shape[0]
    B = min(int(block_size), n)
    euclid = prep.metric == "euclidean"
    narrow = W.dtype == np.float32
    best_d = np.full((n, k), np.inf)
    best_i = np.full((n, k), -1, dtype=np.int64)
    shift = sums.shift if sums is not None else 0.0
    count_dups = sums is not None and dup_threshold is not None
    ws = _Workspace(B, B, W.dtype)
    if count_dups and euclid:
        assert raw_norms is not None and prep.sq is not None
        # a zero vector has cosine 0 with everything: an infinite norm keeps it out of the test
        safe_norm = np.where(raw_norms > 0, raw_norms, np.inf)
    starts = list(range(0, n, B))
    tiles = [(a, a) for a in starts] + [(a, b) for a in starts for b in starts if b > a]
    cached_a0, A = -1, W[:0]
    arg_max: tuple[int, int] | None = None
    for a0, b0 in tiles:
        a1, b1 = min(n, a0 + B), min(n, b0 + B)
        na, nb = a1 - a0, b1 - b0
        diag = a0 == b0
        if a0 != cached_a0:
            A = -2.0 * W[a0:a1] if euclid else W[a0:a1]
            cached_a0 = a0
        G = ws.tile(na, nb)
        np.matmul(A, W[b0:b1].T, out=G)
        if count_dups and not euclid:
            assert sums is not None and dup_threshold is not None
            hit = np.greater_equal(G, dup_threshold, out=ws.mask(na, nb))
            sums.n_dups += int(np.count_nonzero(np.triu(hit, 1) if diag else hit))
        _distance_tile(prep, A, slice(a0, a1), b0, b1, G, shift, product=False)
        if count_dups and euclid:
            assert sums is not None and raw_norms is not None and dup_threshold is not None
            sums.n_dups += _count_euclidean_dups(
                G, shift, raw_norms, safe_norm, prep.sq, a0, a1, b0, b1, dup_threshold, ws.mask(na, nb)
            )
        if sums is not None:
            if narrow:  # float32 tile, float64 sums
                wide = ws.wide(na, nb)
                np.copyto(wide, G)
                flat = wide.ravel()
            else:
                flat = G.ravel()
            t1 = float(flat.sum())
            t2 = float(np.dot(flat, flat))
            if diag:
                dg = np.diagonal(flat.reshape(na, nb))
                t1 = (t1 - float(dg.sum())) / 2.0
                t2 = (t2 - float(np.dot(dg, dg))) / 2.0
                cnt = na * (na - 1) // 2
            else:
                cnt = na * nb
            if cnt:
                sums.s1 += t1
                sums.s2 += t2
                sums.count += cnt
                # the diagonal (self distance 0) is never above an off-diagonal entry
                top = int(flat.argmax())
                if flat[top] > sums.dmax:
                    sums.dmax = float(flat[top])
                    arg_max = (a0 + top // nb, b0 + top % nb)
        if k == 0:
            continue
        work = ws.mask(na, nb)
        if diag:
            np.fill_diagonal(G, np.inf)
            _topk_update(best_d, best_i, a0, G, a0, k, work=work)
        else:
            _topk_update(best_d, best_i, a0, G, b0, k, work=work)
            _topk_update(best_d, best_i, b0, G, a0, k, transposed=True, work=work)
    if narrow and sums is not None and arg_max is not None:  # the largest pair's distance again, in float64
        i, j = arg_max
        sums.dmax = float(1.0 - np.dot(prep.W[i], prep.W[j])) - shift
    if shift:
        best_d += shift
    np.maximum(best_d, 0.0, out=best_d)
    return best_d, best_i


def _count_euclidean_dups(
    G: np.ndarray, shift: float, norms: np.ndarray, safe_norm: np.ndarray, sq: np.ndarray | None,
    a0: int, a1: int, b0: int, b1: int, t: float, work: np.ndarray,
) -> int:
    """Pairs of a Euclidean tile (``G = d - shift``) with ``cos >= t``, without a second tile.

    ``cos >= t`` implies ``d^2 <= (n_i - n_j)^2 + 2 (1 - t) n_i n_j``, bounded over the tile by a
    scalar; only entries under it are checked, with ``cos = (n_i^2 + n_j^2 - d^2) / (2 n_i n_j)``
    (the same Gram-matrix value the cosine path compares).
    """
    assert sq is not None
    na_, nb_ = norms[a0:a1], norms[b0:b1]
    spread = max(float(na_.max() - nb_.min()), float(nb_.max() - na_.min()), 0.0)
    bound = math.sqrt(spread * spread + 2.0 * (1.0 - t) * float(na_.max()) * float(nb_.max()))
    hit = np.less_equal(G, bound * (1 + 1e-9) + 1e-12 - shift, out=work)
    if a0 == b0:
        np.fill_diagonal(hit, False)
    if not np.any(hit):
        return 0
    r, c = nonzero_2d(hit)
    if a0 == b0:
        keep = r < c
        r, c = r[keep], c[keep]
    d = G[r, c] + shift
    cos = (sq[a0 + r] + sq[b0 + c] - d * d) / (2.0 * safe_norm[a0 + r] * safe_norm[b0 + c])
    return int(np.count_nonzero(cos >= t))


def _knn_prepared(
    Xf: np.ndarray, prep: _Prepared, k: int, block_size: int, sums: _PairSums | None = None,
    dup_threshold: float | None = None, raw_norms: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    best_d, best_i = _scan(prep, k=k, block_size=block_size, sums=sums, dup_threshold=dup_threshold,
                           raw_norms=raw_norms)
    if k == 0:
        return best_i, best_d
    if prep.metric == "euclidean":
        best_d = _refine_euclidean(Xf, np.arange(Xf.shape[0]), best_i)
    elif prep.W32 is not None:
        best_d = _refine_cosine(prep.W, np.arange(Xf.shape[0]), best_i)
    return _sort_rows(best_d, best_i)


def knn(
    X: np.ndarray,
    *,
    k: int,
    metric: Metric = "cosine",
    block_size: int = 2048,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest neighbours of every row, self excluded, without an ``N x N`` matrix.

    Returns ``(indices, distances)``, both ``(N, k)``, each row sorted by ascending distance (ties by
    index). ``d`` is ``1 - cos`` for ``metric="cosine"`` and ``||x - y||_2`` for ``"euclidean"``;
    a duplicate row is a neighbour at distance 0. Requires ``1 <= k <= N - 1`` (``ValueError``
    otherwise). The output matches ``sklearn.neighbors.NearestNeighbors(...).kneighbors()`` and can be
    passed to UMAP as ``precomputed_knn=(indices, distances, None)`` (UMAP expects self in column 0:
    prepend it yourself if you use ``n_neighbors=k+1``).
    Cost: ``N^2 D`` flops, memory ``O(N D + block_size^2 + N k)``.
    """
    _check_metric(metric)
    _check_block(block_size)
    Xf = _as_matrix(X)
    n = Xf.shape[0]
    if not 1 <= int(k) <= n - 1:
        raise ValueError(f"k must satisfy 1 <= k <= N - 1 = {n - 1}, got k={k}")
    prep = _prepare(Xf, metric)
    return _knn_prepared(Xf, prep, int(k), block_size)


def outlier_scores(knn_distances: np.ndarray) -> np.ndarray:
    """Outlier score of each row: ``score_i = (1/k) * sum_j d(i, nn_j(i))`` (mean kNN distance)."""
    d = np.asarray(knn_distances, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] < 1:
        raise ValueError(f"knn_distances must have shape (N, k) with k >= 1, got {d.shape}")
    return d.mean(axis=1)


def rank_outliers(
    X: np.ndarray,
    *,
    k: int = 5,
    metric: Metric = "cosine",
    top: int = 20,
    block_size: int = 2048,
) -> list[dict[str, Any]]:
    """The ``top`` rows with the largest mean distance to their k nearest neighbours.

    Each item: ``{"index", "score", "neighbors", "neighbor_distances"}`` with
    ``score = mean_j d(i, nn_j(i))``; sorted by score descending (ties by index). ``k`` is capped at
    ``N - 1``; with a single row there are no neighbours and the list is empty. Exact (full kNN).
    """
    Xf = _as_matrix(X)
    n = Xf.shape[0]
    if n < 2 or top <= 0:
        return []
    k_used = max(1, min(int(k), n - 1))
    idx, dist = knn(Xf, k=k_used, metric=metric, block_size=block_size)
    scores = outlier_scores(dist)
    order = np.lexsort((np.arange(n), -scores))[: int(top)]
    return [
        {
            "index": int(i),
            "score": float(scores[i]),
            "neighbors": [int(j) for j in idx[i]],
            "neighbor_distances": [float(v) for v in dist[i]],
        }
        for i in order
    ]


#: float32 tiles of :func:`near_duplicate_pairs` keep candidates this far below the threshold (float32
#: rounding of a unit-row dot product is ~1e-7·√D; the kept pairs are then decided in float64)
NEAR_DUP_MARGIN = 1e-3
_PAIR_CHUNK = 16384  # candidate pairs recomputed at once (two 16384 x D float64 gathers)


def nonzero_2d(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.nonzero`` of a 2-D array — the same row and column indices in the same (row-major) order — from
    ``np.flatnonzero`` and one ``divmod``: numpy's 2-D ``nonzero`` is ~20x slower on a tile (44 ms against 2 ms
    for 2048 x 2048 with a few thousand hits), a quarter of a near-duplicate scan's time."""
    flat = np.flatnonzero(mask)
    return np.divmod(flat, mask.shape[1])


def near_duplicate_pairs(
    X: np.ndarray,
    *,
    threshold: float = 0.95,
    block_size: int = 2048,
    limit: int = 1000,
) -> list[tuple[int, int, float]]:
    """Pairs ``(i, j, cos)`` with ``i < j`` and ``cos(x_i, x_j) >= threshold``.

    ``cos(x, y) = <x, y> / (||x|| ||y||)``; a zero row raises ``ValueError``. Sorted by similarity
    descending (ties by ``i`` then ``j``) and cut to the ``limit`` most similar pairs (memory stays
    ``O(limit + block_size^2)``). Use ``embedding_space_metrics(...)["near_duplicate_pairs"]`` for the
    full count.

    Tiles are float32 products (half the cost of float64 ones, issue 28): a tile keeps the pairs at or
    above ``threshold − NEAR_DUP_MARGIN`` (:data:`NEAR_DUP_MARGIN` is far above float32's rounding of a
    unit-row dot product), and each kept pair's cosine is recomputed in float64 from the unit rows and
    compared with ``threshold`` — the pairs and similarities of the float64 scan, to ~1e-15.
    """
    _check_block(block_size)
    if not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [-1, 1], got {threshold}")
    Xf = _as_matrix(X)
    U = _unit_rows(Xf, _row_norms(Xf))
    U32 = U.astype(np.float32)
    coarse = np.float32(threshold - NEAR_DUP_MARGIN)
    n, B = U.shape[0], int(block_size)
    lim = max(0, int(limit))
    ci: list[np.ndarray] = []
    cj: list[np.ndarray] = []
    cs: list[np.ndarray] = []
    held = 0

    def prune() -> None:
        nonlocal ci, cj, cs, held
        i, j, s = np.concatenate(ci), np.concatenate(cj), np.concatenate(cs)
        order = np.lexsort((j, i, -s))[:lim]
        ci, cj, cs, held = [i[order]], [j[order]], [s[order]], order.size

    ws = _Workspace(min(B, n), min(B, n), dtype=np.float32)
    for a0 in range(0, n, B):
        a1 = min(n, a0 + B)
        A = U32[a0:a1]
        for b0 in range(a0, n, B):
            b1 = min(n, b0 + B)
            S = ws.tile(a1 - a0, b1 - b0)
            np.matmul(A, U32[b0:b1].T, out=S)
            hit = np.greater_equal(S, coarse, out=ws.mask(a1 - a0, b1 - b0))
            if a0 == b0:
                hit = np.triu(hit, 1)
            r, c = nonzero_2d(hit)
            if r.size:
                ri, cj_ = r.astype(np.int64) + a0, c.astype(np.int64) + b0
                exact = np.empty(ri.size)  # float64 cosine of the candidates, in bounded chunks
                for s0 in range(0, ri.size, _PAIR_CHUNK):
                    s1 = s0 + _PAIR_CHUNK
                    exact[s0:s1] = np.einsum("ij,ij->i", U[ri[s0:s1]], U[cj_[s0:s1]])
                keep = exact >= threshold
                r = ri[keep]
                if not r.size:
                    continue
                ci.append(r)
                cj.append(cj_[keep])
                cs.append(np.minimum(exact[keep], 1.0))
                held += r.size
                if held > 4 * lim + 4096:
                    prune()
    if not ci or lim == 0:
        return []
    prune()
    return [(int(i), int(j), float(s)) for i, j, s in zip(ci[0], cj[0], cs[0], strict=True)]


# ---------------------------------------------------------------------------------------------
# spread and spectrum
# ---------------------------------------------------------------------------------------------


def _spread(Xf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centroid and ``||x_i - mu||_2`` for every row (blockwise)."""
    mu = Xf.mean(axis=0)
    dist = np.empty(Xf.shape[0], dtype=np.float64)
    for s in range(0, Xf.shape[0], _CHECK_ROWS):
        c = Xf[s : s + _CHECK_ROWS] - mu
        dist[s : s + _CHECK_ROWS] = np.sqrt(np.einsum("ij,ij->i", c, c))
    return mu, dist


def _covariance_eigenvalues(Xf: np.ndarray, mu: np.ndarray, block_size: int) -> np.ndarray:
    """Eigenvalues (descending, >= 0) of the sample covariance ``Xc^T Xc / (N - 1)``.

    Uses the ``D x D`` scatter matrix accumulated in row blocks when ``N >= D`` and the squared
    singular values of the ``N x D`` centred matrix (same non-zero eigenvalues) when ``N < D``.
    """
    n, d = Xf.shape
    if n < 2:
        return np.zeros(0)
    if n >= d:
        C = np.zeros((d, d))
        step = max(block_size, 1024)
        for s in range(0, n, step):
            c = Xf[s : s + step] - mu
            C += c.T @ c
        with limit_threads(1):  # a D x D eigenproblem: LAPACK's threads only spin (4-13 s vs 1 s on a busy 2-core box)
            ev = np.linalg.eigvalsh(C)
        ev = np.clip(ev[::-1], 0.0, None)
    else:
        ev = np.linalg.svd(Xf - mu, compute_uv=False) ** 2  # singular values of the N x D centred data
    return ev / (n - 1)


def _spectrum_summary(ev: np.ndarray, variance_threshold: float) -> tuple[int, float | None, float | None]:
    """``(effective_dimensionality, top1_share, top10_share)`` from covariance eigenvalues.

    ``effective_dimensionality = min{m : sum_{i<=m} lambda_i / sum_i lambda_i >= threshold}``; when the
    total variance is 0 (one row, or all rows equal) it is defined as 0 and both shares are ``None``.
    """
    total = float(ev.sum()) if ev.size else 0.0
    if total <= 0.0:
        return 0, None, None
    ratio = np.cumsum(ev) / total
    m = int(np.searchsorted(ratio, variance_threshold - 1e-12, side="left")) + 1
    m = min(m, int(np.count_nonzero(ev > 0)))
    return m, float(ev[0] / total), float(min(1.0, ev[:10].sum() / total))


# ---------------------------------------------------------------------------------------------
# the Tier 0 metrics
# ---------------------------------------------------------------------------------------------


def _mean_pairwise_cosine(Xf: np.ndarray, norms: np.ndarray) -> float | None:
    """Exact mean of ``cos(x_i, x_j)`` over ``i < j`` in ``O(N D)``.

    With unit rows ``u_i`` (a zero row counts as ``u_i = 0``) and ``s = sum_i u_i``:
    ``sum_{i<j} <u_i, u_j> = (||s||^2 - sum_i ||u_i||^2) / 2``.
    """
    n = Xf.shape[0]
    if n < 2:
        return None
    s = np.zeros(Xf.shape[1])
    sq = 0.0
    for a in range(0, n, _CHECK_ROWS):
        nb = norms[a : a + _CHECK_ROWS]
        inv = np.where(nb > 0, 1.0 / np.where(nb > 0, nb, 1.0), 0.0)
        s += inv @ Xf[a : a + _CHECK_ROWS]
        sq += float(np.count_nonzero(nb > 0))
    return float((s @ s - sq) / (n * (n - 1)))


def _wilson(hits: int, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    z2 = _Z95 * _Z95
    den = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / den
    half = _Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def _sampled_metrics(
    Xf: np.ndarray,
    prep: _Prepared,
    norms: np.ndarray,
    *,
    k: int,
    block_size: int,
    near_duplicate_threshold: float,
    sample_pairs: int,
    sample_queries: int,
    seed: int,
) -> dict[str, Any]:
    n = Xf.shape[0]
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}

    # --- pairwise: i.i.d. uniform pairs i != j (with replacement from the finite set of pairs)
    m = max(2, int(sample_pairs))
    pi = rng.integers(0, n, size=m)
    pj = (pi + rng.integers(1, n, size=m)) % n
    d = np.empty(m)
    hits = 0
    step = max(1, (1 << 22) // Xf.shape[1])
    safe = np.where(norms > 0, norms, np.inf)
    for s in range(0, m, step):
        a, b = pi[s : s + step], pj[s : s + step]
        if prep.metric == "cosine":
            cos = np.einsum("ij,ij->i", prep.W[a], prep.W[b])
            d[s : s + step] = np.maximum(1.0 - cos, 0.0)
        else:
            xa, xb = Xf[a], Xf[b]
            diff = xa - xb
            d[s : s + step] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
            cos = np.einsum("ij,ij->i", xa, xb) / (safe[a] * safe[b])
        hits += int(np.count_nonzero(cos >= near_duplicate_threshold))
    mean = float(d.mean())
    sd = float(d.std())
    se_mean = float(d.std(ddof=1)) / math.sqrt(m)
    m4 = float(np.mean((d - mean) ** 4))
    se_var = math.sqrt(max(m4 - sd**4, 0.0) / m)
    se_sd = se_var / (2 * sd) if sd > 0 else 0.0
    out["avg_pairwise_distance"] = mean
    out["avg_pairwise_distance_ci"] = (mean - _Z95 * se_mean, mean + _Z95 * se_mean)
    out["std_pairwise_distance"] = sd
    out["std_pairwise_distance_ci"] = (max(0.0, sd - _Z95 * se_sd), sd + _Z95 * se_sd)
    out["max_pairwise_distance"] = float(d.max())
    n_pairs = n * (n - 1) // 2
    lo, hi = _wilson(hits, m)
    out["near_duplicate_pairs"] = int(round(hits / m * n_pairs))
    out["near_duplicate_pairs_ci"] = (lo * n_pairs, hi * n_pairs)

    # --- kNN of a uniform random subset of query rows against all rows
    q = min(n, max(2, int(sample_queries)))
    rows = np.sort(rng.choice(n, size=q, replace=False))
    best_d = np.full((q, k), np.inf)
    best_i = np.full((q, k), -1, dtype=np.int64)
    B = int(block_size)
    ws = _Workspace(min(B, q), min(B, n))
    for r0 in range(0, q, B):
        rsel = rows[r0 : r0 + B]
        Q = -2.0 * prep.W[rsel] if prep.metric == "euclidean" else prep.W[rsel]
        for c0 in range(0, n, B):
            c1 = min(n, c0 + B)
            G = ws.tile(rsel.size, c1 - c0)
            _distance_tile(prep, Q, rsel, c0, c1, G)
            own = np.flatnonzero((rsel >= c0) & (rsel < c1))
            G[own, rsel[own] - c0] = np.inf
            _topk_update(best_d, best_i, r0, G, c0, k, work=ws.mask(rsel.size, c1 - c0))
    np.maximum(best_d, 0.0, out=best_d)
    if prep.metric == "euclidean":
        best_d = _refine_euclidean(Xf, rows, best_i)
    best_i, best_d = _sort_rows(best_d, best_i)
    out["min_pairwise_distance"] = float(min(best_d[:, 0].min(), d.min()))
    row_s1 = best_d.sum(axis=1)
    row_s2 = np.einsum("ij,ij->i", best_d, best_d)
    nn_mean = float(row_s1.sum() / (q * k))
    nn_sd = math.sqrt(max(float(row_s2.sum() / (q * k)) - nn_mean**2, 0.0))
    fpc = math.sqrt(max(0.0, 1.0 - q / n))
    se_nn = float((row_s1 / k).std(ddof=1)) / math.sqrt(q) * fpc if q > 1 else 0.0
    boot = rng.integers(0, q, size=(1000, q))
    b1 = row_s1[boot].sum(axis=1) / (q * k)
    b2 = row_s2[boot].sum(axis=1) / (q * k)
    bsd = np.sqrt(np.maximum(b2 - b1 * b1, 0.0))
    out["avg_nn_distance"] = nn_mean
    out["avg_nn_distance_ci"] = (nn_mean - _Z95 * se_nn, nn_mean + _Z95 * se_nn)
    out["std_nn_distance"] = nn_sd
    out["std_nn_distance_ci"] = (float(np.quantile(bsd, 0.025)), float(np.quantile(bsd, 0.975)))
    lo_nn, hi_nn = out["avg_nn_distance_ci"]
    out["density_score_ci"] = (1.0 / (hi_nn + _DENSITY_EPS), 1.0 / (max(lo_nn, 0.0) + _DENSITY_EPS))
    out["sample_size"] = m
    out["knn_query_sample_size"] = q
    return out


def embedding_space_metrics(X: np.ndarray, **options: Any) -> dict[str, Any]:
    """The methodology's twelve Tier 0 metrics plus readability aids (see :func:`embedding_space_metrics_and_knn`,
    which takes the same options and also returns the exact kNN the pair scan found on the way)."""
    return embedding_space_metrics_and_knn(X, **options)[0]


def _private_copy(Xf: np.ndarray, X: Any) -> bool:
    """Whether ``Xf`` (``_as_matrix(X)``) is a new array the caller cannot see (so it may be overwritten)."""
    return Xf is not X and not (isinstance(X, np.ndarray) and np.shares_memory(Xf, X))


def embedding_space_metrics_and_knn(
    X: np.ndarray,
    *,
    k: int = 5,
    metric: Metric = "cosine",
    variance_threshold: float = 0.95,
    near_duplicate_threshold: float = 0.95,
    block_size: int = 2048,
    exact_limit: int = 50_000,
    sample_pairs: int = 2_000_000,
    seed: int = 0,
    sample_queries: int = 2_000,
) -> tuple[dict[str, Any], tuple[np.ndarray, np.ndarray] | None]:
    """The methodology's twelve Tier 0 metrics plus readability aids, for ``X`` of shape ``(N, D)``, and the exact
    kNN ``(indices, distances)`` of every row (self excluded, ``k`` used; as :func:`knn` returns it) found by
    the same pass over the pairs — ``None`` in estimated mode and for ``N < 2``. Callers that also need the
    neighbours (Tier 0's outliers) reuse it instead of scanning every pair again.

    ``d`` is the ``metric`` distance (``1 - cos`` or ``||x - y||_2``); ``nn_j(i)`` the j-th nearest
    other row of ``i`` (self excluded, a duplicate counts at distance 0); ``k`` is capped at ``N - 1``
    and the value used is returned under ``"k"``.

    * ``total_samples = N``
    * ``avg_nn_distance = (1 / (N k)) sum_i sum_{j<=k} d(i, nn_j(i))``; ``std_nn_distance`` the
      population std of the same ``N k`` distances.
    * ``density_score = 1 / (avg_nn_distance + 1e-12)``.
    * ``avg_spread / max_spread / spread_std``: mean / max / population std of ``||x_i - mu||_2`` with
      ``mu = (1/N) sum_i x_i`` -- always Euclidean and on the vectors as given, whatever ``metric``.
    * ``effective_dimensionality = min{m : sum_{i<=m} lambda_i / sum_i lambda_i >= variance_threshold}``
      with ``lambda`` the eigenvalues (descending) of the sample covariance of ``X``; 0 when the total
      variance is 0 (``N = 1`` or all rows equal).
    * ``avg / std / min / max_pairwise_distance`` over the ``N (N - 1) / 2`` pairs ``i < j``
      (``avg = 2 / (N (N - 1)) sum_{i<j} d(x_i, x_j)``, std is the population std).
    * ``mean_pairwise_cosine_similarity``: mean of ``cos(x_i, x_j)`` over ``i < j`` (exact, ``O(N D)``).
    * ``top1_variance_share = lambda_1 / sum lambda``, ``top10_variance_share = sum_{i<=10} lambda_i /
      sum lambda`` (anisotropy: close to 1 means a few directions dominate); ``None`` at zero variance.
    * ``near_duplicate_pairs``: number of pairs ``i < j`` with ``cos(x_i, x_j) >= near_duplicate_threshold``.
    * ``distance_metric``, ``k`` (used), ``estimated``.

    With ``N = 1`` every nn/pairwise value (and ``density_score``, the mean cosine) is ``None``.

    **Exact mode** (``N <= exact_limit``): every pair is visited once (float32 tiles for cosine, float64 for
    euclidean; see the module docstring); values match a brute-force float64 matrix to rounding (euclidean) or
    within 1e-5 (cosine: the neighbour distances and the largest pair are recomputed in float64).

    **Estimated mode** (``N > exact_limit``), ``"estimated": True``: spread, effective dimensionality,
    variance shares and mean cosine stay exact. Pairwise statistics come from ``sample_pairs`` uniform
    random pairs (with replacement, seeded) with 95% normal-approximation CIs (mean; std by the delta
    method); nn statistics from the exact kNN of ``sample_queries`` random rows against all rows (mean:
    normal CI with finite-population correction; std: bootstrap over query rows); the near-duplicate
    count is ``hits / sample_pairs * N (N - 1) / 2`` with a Wilson CI. ``max_pairwise_distance`` is
    then the largest sampled distance (a lower bound) and ``min_pairwise_distance`` the smallest
    distance seen (an upper bound). Extra keys: ``sample_size`` (pairs), ``knn_query_sample_size``,
    ``confidence_level`` and ``<key>_ci = (low, high)`` for ``avg/std_nn_distance``, ``density_score``,
    ``avg/std_pairwise_distance`` and ``near_duplicate_pairs``.

    Raises ``ValueError`` for NaN/inf (naming the row), zero rows under ``metric="cosine"`` (naming the
    row), bad shapes or options.
    """
    _check_metric(metric)
    _check_block(block_size)
    if int(k) < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not 0.0 < variance_threshold <= 1.0:
        raise ValueError(f"variance_threshold must be in (0, 1], got {variance_threshold}")
    if not 0.0 < near_duplicate_threshold <= 1.0:
        raise ValueError(f"near_duplicate_threshold must be in (0, 1], got {near_duplicate_threshold}")
    Xf = _as_matrix(X)
    n = Xf.shape[0]
    norms = _row_norms(Xf)
    if metric == "cosine":
        nonzero_norms(norms, "X")  # a zero row is refused before any work, as _prepare does
    # the float64 copy of a float32 input may become the unit rows in place once the statistics below have
    # read it (exact cosine scan): two float64 N x D arrays never live at once (100k x 1024: 0.8 GB less)
    private = metric == "cosine" and n <= int(exact_limit) and n >= 2 and _private_copy(Xf, X)
    prep = None if private else _prepare(Xf, metric, norms)
    k_used = min(int(k), n - 1)

    mu, spread = _spread(Xf)
    ev = _covariance_eigenvalues(Xf, mu, block_size)
    eff_dim, top1, top10 = _spectrum_summary(ev, variance_threshold)
    mean_cos = _mean_pairwise_cosine(Xf, norms)
    if prep is None:
        np.divide(Xf, norms[:, None], out=Xf)  # the same division as unit_rows, into the copy
        prep = _Prepared(Xf, None, metric, Xf.astype(np.float32))

    res: dict[str, Any] = {
        "total_samples": int(n),
        "avg_nn_distance": None,
        "std_nn_distance": None,
        "density_score": None,
        "avg_spread": float(spread.mean()),
        "max_spread": float(spread.max()),
        "spread_std": float(spread.std()),
        "effective_dimensionality": int(eff_dim),
        "avg_pairwise_distance": None,
        "std_pairwise_distance": None,
        "min_pairwise_distance": None,
        "max_pairwise_distance": None,
        "mean_pairwise_cosine_similarity": mean_cos,
        "top1_variance_share": top1,
        "top10_variance_share": top10,
        "near_duplicate_pairs": 0,
        "distance_metric": metric,
        "k": int(k_used),
        "estimated": False,
    }
    if n < 2:
        return res, None

    if n > int(exact_limit):
        est = _sampled_metrics(
            Xf, prep, norms, k=k_used, block_size=block_size,
            near_duplicate_threshold=near_duplicate_threshold, sample_pairs=sample_pairs,
            sample_queries=sample_queries, seed=seed,
        )
        res.update(est)
        res["density_score"] = 1.0 / (res["avg_nn_distance"] + _DENSITY_EPS)
        res["estimated"] = True
        res["confidence_level"] = 0.95
        return res, None

    # shift the running sums by a value near the mean pairwise distance (exact closed forms)
    if metric == "cosine":
        assert mean_cos is not None
        shift = 1.0 - mean_cos
    else:
        shift = math.sqrt(2.0 * float(np.dot(spread, spread)) / (n - 1))
    sums = _PairSums(shift=shift)
    idx, dist = _knn_prepared(Xf, prep, k_used, block_size, sums=sums,
                              dup_threshold=near_duplicate_threshold, raw_norms=norms)
    avg_nn = float(dist.mean())
    res.update(
        avg_nn_distance=avg_nn,
        std_nn_distance=float(dist.std()),
        density_score=1.0 / (avg_nn + _DENSITY_EPS),
        avg_pairwise_distance=sums.mean(),
        std_pairwise_distance=sums.std(),
        min_pairwise_distance=float(dist[:, 0].min()),
        max_pairwise_distance=float(sums.dmax + shift),
        near_duplicate_pairs=int(sums.n_dups),
    )
    return res, (idx, dist)


# ---------------------------------------------------------------------------------------------
# trustworthiness of a low-dimensional projection
# ---------------------------------------------------------------------------------------------


def trustworthiness_sample(
    X_high: np.ndarray,
    X_low: np.ndarray,
    *,
    k: int = 10,
    metric: Metric = "cosine",
    max_n: int = 5_000,
    seed: int = 0,
) -> tuple[float, int]:
    """``(trustworthiness, n_used)`` via ``sklearn.manifold.trustworthiness``.

    ``T(k) = 1 - 2 / (n k (2n - 3k - 1)) * sum_i sum_{j in U_k(i)} (r(i, j) - k)`` where ``U_k(i)``
    are the low-dimensional k neighbours of ``i`` that are not among its high-dimensional k
    neighbours and ``r(i, j)`` is the rank of ``j`` in the high-dimensional space (``metric``; the
    low-dimensional space is Euclidean). sklearn builds ``n x n`` matrices, so when ``N > max_n`` the
    score is computed on a fixed random subsample of ``max_n`` rows (``seed``): it is then the
    trustworthiness of that subsample (neighbourhoods within it), not of the whole set.
    Requires ``k < n_used / 2`` (sklearn's condition).
    """
    from sklearn.manifold import trustworthiness  # heavy: defers sklearn

    _check_metric(metric)
    H = _as_matrix(X_high, "X_high")
    L = _as_matrix(X_low, "X_low")
    if H.shape[0] != L.shape[0]:
        raise ValueError(f"X_high and X_low must have the same rows, got {H.shape[0]} and {L.shape[0]}")
    n = H.shape[0]
    if n > max_n:
        rows = np.sort(np.random.default_rng(seed).choice(n, size=int(max_n), replace=False))
        H, L, n = H[rows], L[rows], int(max_n)
    if metric == "cosine":
        _unit_rows(H, _row_norms(H), name="X_high")
    if not 1 <= k < n / 2:
        raise ValueError(f"k must satisfy 1 <= k < n/2 = {n / 2} (n = {n}), got k={k}")
    return float(trustworthiness(H, L, n_neighbors=int(k), metric=metric)), n


def trustworthiness_at_k(
    X_high: np.ndarray,
    X_low: np.ndarray,
    *,
    k: int = 10,
    metric: Metric = "cosine",
    max_n: int = 5_000,
    seed: int = 0,
) -> float:
    """Trustworthiness in ``[0, 1]`` of ``X_low`` as a picture of ``X_high`` (1 = no false neighbours).

    Same as ``trustworthiness_sample(...)[0]``; use that function to also get the number of rows
    actually used (it is ``min(N, max_n)``; above ``max_n`` a fixed random subsample is scored).
    """
    return trustworthiness_sample(X_high, X_low, k=k, metric=metric, max_n=max_n, seed=seed)[0]
