"""UMAP projections (2D / 3D) of a vector set, cached in ``eval.projections``; a PCA picture first.

* The first picture of a map is a PCA projection (:func:`project_pca`, about a second for 20,000 points) or the
  stored UMAP projection of the same request; UMAP refines in the background
  (:mod:`voproshalych_eval.tiers.projection_refine`) and hands its coordinates over before trustworthiness is
  scored (``on_picture``).

* The kNN graph is exact and precomputed (``geometry.knn``, blockwise, no ``N x N`` matrix) and handed
  to UMAP as ``precomputed_knn``. UMAP expects every point to be its own first neighbour, so self is
  prepended at column 0 (distance 0) and ``geometry.knn`` is asked for ``n_neighbors - 1`` others.
  This skips pynndescent and its numba compilation (see INFRA.md: first fit ~8 s instead of 30-45 s).
* Above ``limit`` points a fixed random subsample (``seed``) is projected; :class:`Projection` says so.
* Trustworthiness@10 (``geometry.trustworthiness_sample``; on a subsample of at most 5,000 points) tells
  how far neighbourhoods in the picture can be trusted.
* Cache key: sha256 of (point ids of the vector set, model, a fingerprint of the vectors, parameters).
  Coordinates are stored as float32 bytes; reopening is a single row read, across restarts.

Questions and knowledge-base chunks in one map (the *modality gap*): query and passage embeddings of one
model occupy two offset regions of the sphere (short questions vs long passages; e5's ``query:`` /
``passage:`` prefixes), so a joint UMAP puts every chunk in one cluster apart from all questions — a
property of the embedder, not a finding. :func:`modality_gap` measures it: the distance between the two
groups' centroids of the unit vectors, ``gap = ‖μ_q − μ_c‖``, against their spread (mean distance of a
point to its own group's centroid), ``gap_ratio = gap / mean(spread_q, spread_c)``. :func:`project` with
``centre_groups`` removes it before the fit: every group's mean is subtracted from its vectors and the rows
are renormalised (Liang et al., 2022, "Mind the Gap"). Of the two remedies — fitting UMAP on the knowledge
base and placing questions with ``UMAP.transform``, or centring each set before one joint fit — centring is
used: on the demo (use-multilingual, seed 42) it puts the golden questions beside a chunk of one of their own
pages in 2-D for 64.5% of them against 26.6% with ``transform`` and 6.5% for the plain joint fit (cosine nearest
chunk in the full space: 76.6%; benchmark ``bench_joint_map.py``, docs/REAL_USERS.md), and it keeps the exact
precomputed kNN, the cache and 3-D.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import Engine, text

from voproshalych_eval.bilingual import text as say_text
from voproshalych_eval.metrics import geometry

log = logging.getLogger(__name__)
Progress = Callable[[str], None]
#: ``steps(step, n_steps, message, done, total)``: step ``step`` of ``n_steps`` (1-based) is under way, ``done`` of
#: ``total`` of its units finished (``total`` 0 when the step has no countable units; UMAP counts its epochs)
StepProgress = Callable[[int, int, str, int, int], None]
EpochProgress = Callable[[int, int], None]


class _EpochSink:
    """A file for umap-learn's tqdm bar (``bar_format="{n}/{total}"``): hands ``(epoch, n_epochs)`` on."""

    def __init__(self, on_epoch: EpochProgress) -> None:
        self.on_epoch = on_epoch

    def write(self, s: str) -> int:
        for part in s.replace("\n", "\r").split("\r"):
            done, sep, total = part.strip().partition("/")
            if sep and done.isdigit() and total.isdigit():
                self.on_epoch(int(done), int(total))
        return len(s)

    def flush(self) -> None:
        return None

DEFAULT_LIMIT = 5_000
TRUST_K = 10
TRUST_MAX_N = 5_000

_FIT_COUNT = 0
_NUMBA_CACHE_ENABLED = False


def enable_umap_numba_cache() -> int:
    """Turn on numba's on-disk cache for umap-learn's jitted functions; return how many were switched.

    umap-learn compiles its layout optimiser and fuzzy-graph functions on the first fit of every process
    (~6 s on an idle 2-core machine, 25+ s under load) and does not cache them. ``Dispatcher.enable_caching``
    (numba's public API) stores the machine code next to the package (``__pycache__``, or
    ``NUMBA_CACHE_DIR``), so later processes load it in milliseconds. Numba invalidates the cache when
    the source file changes. Failures are ignored (then every process compiles, as before).
    """
    global _NUMBA_CACHE_ENABLED
    if _NUMBA_CACHE_ENABLED:
        return 0
    _NUMBA_CACHE_ENABLED = True
    n = 0
    try:
        import umap.layouts  # noqa: F401  # heavy: defers umap and numba
        import umap.umap_  # noqa: F401  # heavy: defers umap and numba
        import umap.utils  # noqa: F401  # heavy: defers umap and numba
        from numba.core.registry import CPUDispatcher  # heavy: defers umap and numba

        for name, module in list(sys.modules.items()):
            if module is None or not (name == "umap" or name.startswith("umap.")):
                continue
            for value in list(vars(module).values()):
                if isinstance(value, CPUDispatcher):
                    try:
                        value.enable_caching()
                        n += 1
                    except Exception:  # noqa: BLE001 - e.g. a read-only package folder
                        log.debug("numba caching unavailable for %s", value, exc_info=True)
    except Exception:  # noqa: BLE001
        log.debug("numba caching not enabled", exc_info=True)
    return n


_PREWARM_STARTED = False


def prewarm_in_background() -> None:
    """Import umap-learn and compile its layout code on a tiny input, in a daemon thread (once per process).

    Called when the explorer page opens, so that the imports (2-4 s) and, on a machine whose numba cache is
    still empty, the compilation happen while the user chooses the parameters; with the cache warm the
    tiny fit takes well under a second. It does not count as a fit (:func:`umap_fit_count`).
    """
    global _PREWARM_STARTED
    if _PREWARM_STARTED:
        return
    _PREWARM_STARTED = True

    def _work() -> None:
        try:
            X = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)
            _umap(X, n_components=2, n_neighbors=5, min_dist=0.1, seed=0, metric="cosine")
        except Exception:  # noqa: BLE001
            log.debug("umap prewarm failed", exc_info=True)

    threading.Thread(target=_work, name="umap-prewarm", daemon=True).start()


def umap_fit_count() -> int:
    """How many UMAP fits this process has run (a cached projection does not fit)."""
    return _FIT_COUNT


@dataclass
class Projection:
    key: str
    coords: np.ndarray  # (n_points, n_components) float32
    point_ids: list[str]
    rows: np.ndarray  # row of each projected point in the vector set
    params: dict[str, Any]
    trustworthiness: float | None
    trust_n: int | None
    n_total: int
    from_cache: bool
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def subsampled(self) -> bool:
        return len(self.point_ids) < self.n_total

    @property
    def n_components(self) -> int:
        return int(self.coords.shape[1])


def modality_gap(X: np.ndarray, groups: Sequence[Any], *, reference: str | None = None) -> dict[str, Any]:
    """Gap between the centroids of two groups of unit vectors and their spread (module docstring).

    ``groups`` labels every row; ``reference`` (default: the first label in order of appearance) is set
    against all the other labels together (``chunk`` vs every kind of question). Returns ``gap``, ``spread``
    per group, ``gap_ratio`` and ``n`` per group; ``gap`` is None with fewer than two groups.
    """
    g = np.asarray([str(x) for x in groups], dtype=object)
    if len(g) != X.shape[0]:
        raise ValueError(f"{len(g)} group labels for {X.shape[0]} vectors")
    labels = list(dict.fromkeys(g.tolist()))
    if reference is not None and reference in labels:
        labels = [reference] + [x for x in labels if x != reference]
    if len(labels) < 2:
        return {"gap": None, "gap_ratio": None, "groups": labels}
    U = np.asarray(X, dtype=np.float64)
    U = U / np.maximum(np.linalg.norm(U, axis=1, keepdims=True), 1e-12)
    a = g == labels[0]
    mu_a, mu_b = U[a].mean(axis=0), U[~a].mean(axis=0)
    spread_a = float(np.linalg.norm(U[a] - mu_a, axis=1).mean())
    spread_b = float(np.linalg.norm(U[~a] - mu_b, axis=1).mean())
    gap = float(np.linalg.norm(mu_a - mu_b))
    rest = "+".join(labels[1:])
    return {"gap": gap, "gap_ratio": gap / max((spread_a + spread_b) / 2, 1e-12), "groups": [labels[0], rest],
            "spread": {labels[0]: spread_a, rest: spread_b}, "n": {labels[0]: int(a.sum()), rest: int((~a).sum())}}


def centre_by_group(X: np.ndarray, groups: Sequence[Any]) -> np.ndarray:
    """Unit rows with each group's mean subtracted and renormalised (removes the modality gap), float32."""
    g = np.asarray([str(x) for x in groups], dtype=object)
    if len(g) != X.shape[0]:
        raise ValueError(f"{len(g)} group labels for {X.shape[0]} vectors")
    U = np.asarray(X, dtype=np.float64)
    U = U / np.maximum(np.linalg.norm(U, axis=1, keepdims=True), 1e-12)
    out = np.empty_like(U)
    for label in dict.fromkeys(g.tolist()):
        m = g == label
        out[m] = U[m] - U[m].mean(axis=0)
    return (out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def nearest_reference(coords: np.ndarray, is_reference: np.ndarray, *, metric: str = "euclidean") -> np.ndarray:
    """For every row, the row index of its nearest reference row (``is_reference``) other than itself, in
    ``coords`` (2-D/3-D map coordinates, Euclidean; or vectors with ``metric="cosine"``); -1 without one."""
    ref = np.flatnonzero(np.asarray(is_reference, dtype=bool))
    out = np.full(coords.shape[0], -1, dtype=np.int64)
    if not len(ref):
        return out
    R = np.asarray(coords[ref], dtype=np.float64)
    if metric == "cosine":
        R = R / np.maximum(np.linalg.norm(R, axis=1, keepdims=True), 1e-12)
    for start in range(0, coords.shape[0], 4096):
        P = np.asarray(coords[start:start + 4096], dtype=np.float64)
        if metric == "cosine":
            P = P / np.maximum(np.linalg.norm(P, axis=1, keepdims=True), 1e-12)
            D = -(P @ R.T)
        else:
            D = (P**2).sum(1)[:, None] - 2 * P @ R.T + (R**2).sum(1)[None, :]
        rows = np.arange(start, start + len(P))
        D[np.isin(rows, ref)[:, None] & (rows[:, None] == ref[None, :])] = np.inf  # not itself
        out[start:start + len(P)] = ref[D.argmin(axis=1)]
    return out


def subsample_rows(n: int, limit: int, seed: int) -> np.ndarray:
    """All rows when ``n <= limit``, else a sorted fixed random subset of ``limit`` rows."""
    if limit <= 0 or n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=int(limit), replace=False))


def fingerprint(X: np.ndarray) -> str:
    """sha256 of the float32 bytes of ``X`` (so that changed vectors under the same ids miss the cache)."""
    return hashlib.sha256(np.ascontiguousarray(X, dtype=np.float32).tobytes()).hexdigest()


def projection_key(point_ids: Sequence[str], model: str, params: dict[str, Any], data_hash: str = "") -> str:
    h = hashlib.sha256()
    h.update(json.dumps(list(point_ids), ensure_ascii=False).encode())
    h.update(b"\0" + model.encode() + b"\0" + data_hash.encode() + b"\0")
    h.update(json.dumps(params, sort_keys=True).encode())
    return h.hexdigest()


def knn_with_self(X: np.ndarray, n_neighbors: int, metric: str = "cosine") -> tuple[np.ndarray, np.ndarray]:
    """``(indices, distances)`` of shape ``(N, n_neighbors)`` with self at column 0 (UMAP's convention)."""
    n = X.shape[0]
    idx, dist = geometry.knn(X, k=n_neighbors - 1, metric=metric)  # type: ignore[arg-type]
    self_col = np.arange(n, dtype=np.int64)[:, None]
    return (
        np.hstack([self_col, idx.astype(np.int64)]),
        np.hstack([np.zeros((n, 1)), dist]).astype(np.float32),
    )


def fit_umap(
    X: np.ndarray,
    *,
    n_components: int = 2,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    seed: int | None = 42,
    metric: str = "cosine",
    on_epoch: EpochProgress | None = None,
) -> np.ndarray:
    """UMAP coordinates (float32) with an exact precomputed kNN graph; tiny inputs get a trivial layout.

    ``on_epoch(epoch, n_epochs)`` follows the layout optimisation (umap-learn's own epoch counter)."""
    global _FIT_COUNT
    n = X.shape[0]
    if n == 0:
        return np.zeros((0, n_components), np.float32)
    if n <= n_components + 1:
        # too few points for a manifold: spread them on the first axis
        out = np.zeros((n, n_components), np.float32)
        out[:, 0] = np.arange(n, dtype=np.float32)
        return out
    Y = _umap(X, n_components=n_components, n_neighbors=n_neighbors, min_dist=min_dist, seed=seed, metric=metric,
              on_epoch=on_epoch)
    _FIT_COUNT += 1
    return Y


def _umap(X: np.ndarray, *, n_components: int, n_neighbors: int, min_dist: float, seed: int | None,
          metric: str, on_epoch: EpochProgress | None = None) -> np.ndarray:
    n = X.shape[0]
    nn = max(2, min(int(n_neighbors), n - 1))
    idx, dist = knn_with_self(X, nn, metric)
    import umap  # heavy: defers umap

    enable_umap_numba_cache()
    reducer = umap.UMAP(
        n_components=n_components,
        n_neighbors=nn,
        min_dist=float(min_dist),
        metric=metric,
        random_state=seed,
        init="spectral" if n > 3 * n_components + 10 else "random",
        precomputed_knn=(idx, dist, None),
        **({} if on_epoch is None else {"tqdm_kwds": {"disable": False, "file": _EpochSink(on_epoch),
                                                        "bar_format": "{n}/{total}", "mininterval": 0.25}}),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no search index" / "random_state disables parallelism"
        Y = reducer.fit_transform(np.asarray(X, dtype=np.float32))
    return np.asarray(Y, dtype=np.float32)


def _read_cache(engine: Engine, key: str) -> dict[str, Any] | None:
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT params, n_points, coords, point_ids, trustworthiness FROM eval.projections WHERE key = :k"),
            {"k": key},
        ).one_or_none()
    return dict(row._mapping) if row is not None else None


def _write_cache(engine: Engine, key: str, params: dict[str, Any], coords: np.ndarray, point_ids: list[str],
                 trust: float | None) -> None:
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO eval.projections(key, params, n_points, coords, point_ids, trustworthiness) "
                "VALUES (:k, CAST(:p AS jsonb), :n, :c, CAST(:ids AS jsonb), :t) "
                "ON CONFLICT (key) DO UPDATE SET params = excluded.params, n_points = excluded.n_points, "
                "coords = excluded.coords, point_ids = excluded.point_ids, "
                "trustworthiness = excluded.trustworthiness, created_at = now()"
            ),
            {
                "k": key,
                "p": json.dumps(params, ensure_ascii=False),
                "n": len(point_ids),
                "c": np.ascontiguousarray(coords, dtype=np.float32).tobytes(),
                "ids": json.dumps(point_ids, ensure_ascii=False),
                "t": trust,
            },
        )


@dataclass
class Request:
    """A projection request made concrete: the checked ids, the (centred) vectors, the parameters that are
    part of the cache key, the key (empty when not asked for) and the projected rows (the subsample)."""

    ids: list[str]
    X: np.ndarray
    params: dict[str, Any]
    key: str
    rows: np.ndarray


def prepare(X: np.ndarray, point_ids: Sequence[str], *, model: str, n_components: int = 2, n_neighbors: int = 15,
            min_dist: float = 0.1, seed: int = 42, limit: int = DEFAULT_LIMIT, metric: str = "cosine",
            centre_groups: Sequence[Any] | None = None, method: str = "umap", with_key: bool = True) -> Request:
    """Check a projection request and centre its groups once (shared by the cache read, PCA and the UMAP fit)."""
    if n_components not in (2, 3):
        raise ValueError(f"n_components must be 2 or 3, got {n_components}")
    ids = [str(p) for p in point_ids]
    if len(ids) != X.shape[0]:
        raise ValueError(f"{len(ids)} point ids for {X.shape[0]} vectors")
    params: dict[str, Any] = {"method": method, "n_components": int(n_components)}
    if method == "umap":
        params.update(n_neighbors=int(n_neighbors), min_dist=float(min_dist))
    params.update(seed=int(seed), metric=metric, limit=int(limit))
    if centre_groups is not None:
        groups = [str(g) for g in centre_groups]
        if len(groups) != len(ids):
            raise ValueError(f"{len(groups)} group labels for {len(ids)} points")
        params["centred_groups"] = sorted(set(groups))
        X = centre_by_group(X, groups)
    key = projection_key(ids, model, params, fingerprint(X)) if with_key else ""
    return Request(ids, X, params, key, subsample_rows(len(ids), int(limit), int(seed)))


def from_cache(engine: Engine | None, req: Request) -> Projection | None:
    """The stored projection of a prepared request, or None (one row read, no fit)."""
    if engine is None or not req.key:
        return None
    t0 = time.perf_counter()
    cached = _read_cache(engine, req.key)
    if cached is None:
        return None
    coords = np.frombuffer(bytes(cached["coords"]), dtype=np.float32).reshape(int(cached["n_points"]), -1)
    p = dict(cached["params"])
    seconds = time.perf_counter() - t0
    return Projection(req.key, coords.copy(), list(cached["point_ids"]), req.rows, p, cached["trustworthiness"],
                      p.get("trust_n"), len(req.ids), True, seconds, {"cache_read": seconds})


def cached_projection(engine: Engine | None, X: np.ndarray, point_ids: Sequence[str], *, model: str,
                      **kwargs: Any) -> Projection | None:
    """The stored UMAP projection of exactly this request (:func:`project`'s arguments), or None — no fit.
    The first picture shows it at once when it exists."""
    if engine is None:
        return None
    return from_cache(engine, prepare(X, point_ids, model=model, **kwargs))


PCA_OVERSAMPLE = 10
PCA_POWER_ITERATIONS = 2


def _orthonormal(Y: np.ndarray) -> np.ndarray:
    """Orthonormal columns spanning ``Y`` (a tall, thin matrix) from the eigenvectors of its small Gram matrix
    ``YᵀY = U Λ Uᵀ``: ``Y U Λ^(-1/2)``, dropping directions with ``λ < 1e-10 λ_max`` (numpy's Householder QR
    costs ~0.5 s on a 20,000 × 12 matrix; this is one thin product)."""
    w, U = np.linalg.eigh(Y.T.astype(np.float64) @ Y.astype(np.float64))
    keep = w > max(float(w.max()), 1e-300) * 1e-10
    return (Y @ (U[:, keep] / np.sqrt(w[keep])).astype(np.float32)).astype(np.float32)


def pca_coords(X: np.ndarray, *, n_components: int = 2, metric: str = "cosine", seed: int = 0) -> np.ndarray:
    """The first ``n_components`` principal components of ``X`` (rows unit-normalised first for ``cosine``,
    as UMAP's cosine metric sees them), float32.

    ``Y = (X − μ) · V_k`` with ``V_k`` the top-``k`` right singular vectors of the centred matrix, found by
    randomized subspace iteration (Halko, Martinsson & Tropp, 2011, alg. 4.4: a Gaussian start of
    ``k + PCA_OVERSAMPLE`` columns, ``PCA_POWER_ITERATIONS`` orthonormalised power iterations, then the SVD of the
    small ``(k + p) × D`` projection) — only thin ``N × D · D × (k + p)`` products, no ``D × D`` or ``N × N``
    matrix (:func:`_orthonormal` between the products); each component's sign is fixed so that its largest-magnitude loading is positive (deterministic for
    a ``seed``, like scikit-learn's ``svd_flip``). A linear picture in about a second where UMAP takes 10-40 s:
    the first map picture while UMAP refines in the background. Fewer rows than components: a trivial layout."""
    A = np.asarray(X, dtype=np.float32)
    n, d = A.shape
    if n <= n_components or d == 0:
        out = np.zeros((n, n_components), np.float32)
        out[:, 0] = np.arange(n, dtype=np.float32)
        return out
    if metric == "cosine":
        A = A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), 1e-12)
    Ac = A - A.mean(axis=0, dtype=np.float64).astype(np.float32)
    k = min(n_components, d)
    width = min(k + PCA_OVERSAMPLE, d, n)
    Q = _orthonormal(Ac @ np.random.default_rng(seed).standard_normal((d, width)).astype(np.float32))
    for _ in range(PCA_POWER_ITERATIONS):
        Q = _orthonormal(Ac @ _orthonormal(Ac.T @ Q))
    _, _, Vt = np.linalg.svd((Q.T @ Ac).astype(np.float64), full_matrices=False)
    V = Vt[:k].T
    V *= np.sign(V[np.abs(V).argmax(axis=0), np.arange(k)])
    Y = np.zeros((n, n_components), dtype=np.float32)
    Y[:, :k] = Ac @ V.astype(np.float32)
    return Y


def project_pca(X: np.ndarray, point_ids: Sequence[str], *, n_components: int = 2, seed: int = 42,
                limit: int = DEFAULT_LIMIT, metric: str = "cosine", centre_groups: Sequence[Any] | None = None,
                model: str = "", request: Request | None = None) -> Projection:
    """The first picture: a PCA projection of the rows :func:`project` would map with UMAP (the same subsample
    for the same ``seed``/``limit``, the same group centring), never cached, no trustworthiness (computed on
    request). ``params["method"] == "pca"`` says which projection it is. ``request``: a prepared UMAP request
    of the same points (its centred vectors and rows are reused)."""
    t0 = time.perf_counter()
    req = request or prepare(X, point_ids, model=model, n_components=n_components, seed=seed, limit=limit,
                             metric=metric, centre_groups=centre_groups, with_key=False)
    params = {"method": "pca", "n_components": int(n_components), "seed": int(seed), "metric": metric,
              "limit": int(limit), **({"centred_groups": req.params["centred_groups"]}
                                      if "centred_groups" in req.params else {})}
    coords = pca_coords(req.X[req.rows], n_components=n_components, metric=metric, seed=seed)
    seconds = time.perf_counter() - t0
    return Projection("", coords, [req.ids[i] for i in req.rows], req.rows,
                      {**params, "model": model, "n_total": len(req.ids)}, None, None, len(req.ids), False, seconds,
                      {"pca": seconds})


def project(
    engine: Engine | None,
    X: np.ndarray,
    point_ids: Sequence[str],
    *,
    model: str,
    n_components: int = 2,
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    seed: int = 42,
    limit: int = DEFAULT_LIMIT,
    metric: str = "cosine",
    use_cache: bool = True,
    centre_groups: Sequence[Any] | None = None,
    progress: Progress | None = None,
    steps: StepProgress | None = None,
    on_picture: Callable[[Projection], None] | None = None,
    request: Request | None = None,
) -> Projection:
    """Project ``X`` (rows = ``point_ids``) with UMAP, through the ``eval.projections`` cache (``engine`` may be None).

    ``centre_groups`` (one label per row, e.g. ``chunk`` / ``question``): centre every group before the fit
    (:func:`centre_by_group`, removes the query/passage modality gap; part of the cache key).
    ``progress`` receives the step messages (:class:`voproshalych_eval.bilingual.Text`); ``steps`` the same steps
    with their counts — step of steps, UMAP epoch of epochs — for a progress bar. ``on_picture`` receives the
    fitted projection as soon as its coordinates exist, before trustworthiness is scored (15-25% of a fit), so
    a caller can show the picture while the score is computed. ``request``: the same arguments already
    prepared (:func:`prepare`)."""
    say = progress or (lambda m: log.info(m))
    t0 = time.perf_counter()
    req = request or prepare(X, point_ids, model=model, n_components=n_components, n_neighbors=n_neighbors,
                             min_dist=min_dist, seed=seed, limit=limit, metric=metric, centre_groups=centre_groups)
    if use_cache:
        hit = from_cache(engine, req)
        if hit is not None:
            return hit
    ids, X, params, key, rows = req.ids, req.X, req.params, req.key, req.rows
    n_total = len(ids)
    timings: dict[str, float] = {}
    Xs = np.asarray(X[rows], dtype=np.float32)
    with_trust = len(rows) > 2 * TRUST_K
    n_steps = 1 + int(with_trust) + int(engine is not None and use_cache)
    step = steps or (lambda *_: None)
    if len(rows) < n_total:
        say(say_text(f"Подвыборка {len(rows)} из {n_total} точек (лимит {limit})…",
                     f"Subsampling {len(rows)} of {n_total} points (limit {limit})…"))
    fit_ru = f"UMAP {n_components}D по {len(rows)} точкам (точный kNN, n_neighbors={n_neighbors})"
    fit_en = f"UMAP {n_components}D of {len(rows)} points (exact kNN, n_neighbors={n_neighbors})"
    fit_msg = say_text(fit_ru, fit_en)
    epochs_msg = say_text(fit_ru + ": эпохи раскладки", fit_en + ": layout epochs")
    say(say_text(fit_ru + "…", fit_en + "…"))
    step(1, n_steps, fit_msg, 0, 0)
    t1 = time.perf_counter()
    coords = fit_umap(Xs, n_components=n_components, n_neighbors=n_neighbors, min_dist=min_dist, seed=seed,
                      metric=metric, on_epoch=None if steps is None else
                      (lambda done, total: step(1, n_steps, epochs_msg, done, total)))
    timings["umap"] = time.perf_counter() - t1
    sub_ids = [ids[i] for i in rows]
    stored_params = {**params, "model": model, "n_total": n_total, "trust_n": None,
                     "trust_k": TRUST_K, "fit_seconds": round(timings["umap"], 3)}
    if on_picture is not None:
        on_picture(Projection(key, coords, sub_ids, rows, dict(stored_params), None, None, n_total, False,
                              time.perf_counter() - t0, dict(timings)))
    trust: float | None = None
    trust_n: int | None = None
    if with_trust:
        say("Trustworthiness@10…")
        step(2, n_steps, say_text("Trustworthiness@10", "Trustworthiness@10"), 0, 0)
        t2 = time.perf_counter()
        trust, trust_n = geometry.trustworthiness_sample(Xs, coords, k=TRUST_K, metric=metric,  # type: ignore[arg-type]
                                                         max_n=TRUST_MAX_N, seed=seed)
        timings["trustworthiness"] = time.perf_counter() - t2
    stored_params["trust_n"] = trust_n
    if engine is not None and use_cache:
        step(n_steps, n_steps, say_text("Сохранение в кэш проекций", "Saving to the projection cache"), 0, 0)
        _write_cache(engine, key, stored_params, coords, sub_ids, trust)
    return Projection(key, coords, sub_ids, rows, stored_params, trust, trust_n, n_total, False,
                      time.perf_counter() - t0, timings)


def project_vector_set(engine: Engine | None, vs: Any, **kwargs: Any) -> Projection:
    """:func:`project` for a :class:`voproshalych_eval.tiers.tier0.VectorSet`."""
    return project(engine, vs.X, vs.point_ids, model=vs.model, **kwargs)


def rows_of(projection: Projection, all_point_ids: Sequence[str]) -> np.ndarray:
    """Rows in the vector set of the projected points (by id, robust to a cache built from the same set)."""
    pos = {p: i for i, p in enumerate(all_point_ids)}
    return np.asarray([pos[p] for p in projection.point_ids if p in pos], dtype=np.int64)
