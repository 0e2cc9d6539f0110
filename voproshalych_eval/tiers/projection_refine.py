"""The first map picture at once, UMAP refining in the background.

:func:`first_picture` answers a map request in about a second: the stored UMAP projection when this exact
request was fitted before (one row read), else a PCA projection of the same points
(:func:`~voproshalych_eval.tiers.projection.project_pca`) while a daemon thread fits UMAP
(:func:`~voproshalych_eval.tiers.projection.project`, through the projection cache). A page keeps the
refinement's key, polls :func:`get` and swaps the picture when :attr:`Refinement.picture` is there — the UMAP
coordinates arrive before their trustworthiness score, which the thread computes afterwards (on a sample of at
most ``TRUST_MAX_N`` points) and stores with the coordinates.

Refinements live in a process-wide registry keyed by the UMAP projection's cache key, so a rerun, a second tab or
a second request for the same map finds the running one instead of fitting again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import Engine

from voproshalych_eval.tiers import projection as proj

log = logging.getLogger(__name__)
_LOCK = threading.Lock()
_REFINEMENTS: dict[str, Refinement] = {}
_MAX_KEPT = 16


@dataclass
class Refinement:
    """A UMAP fit running in a daemon thread for a map whose first picture is a PCA projection."""

    key: str
    n_points: int
    n_components: int
    started: float = field(default_factory=time.monotonic)
    epoch: tuple[int, int] = (0, 0)  # layout epochs done, of
    picture: proj.Projection | None = None  # UMAP coordinates, before their trustworthiness is scored
    result: proj.Projection | None = None  # the finished projection (with trustworthiness), as stored
    error: str | None = None
    thread: threading.Thread | None = None
    _done: threading.Event = field(default_factory=threading.Event)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def current(self) -> proj.Projection | None:
        """The best UMAP projection so far: the finished one, else the picture whose score is being computed."""
        return self.result or self.picture

    def wait(self, timeout: float | None = None) -> Refinement:
        self._done.wait(timeout)
        return self

    def seconds(self) -> float:
        return time.monotonic() - self.started


def get(key: str | None) -> Refinement | None:
    """The refinement of the UMAP projection ``key`` in this process, or None."""
    if not key:
        return None
    with _LOCK:
        return _REFINEMENTS.get(key)


def _register(ref: Refinement) -> Refinement:
    with _LOCK:
        running = _REFINEMENTS.get(ref.key)
        # only a fit still running is joined: a finished one already stored its map, and a request that missed
        # the store (the map was deleted, or the store is another one) fits again
        if running is not None and running.error is None and not running.done:
            return running
        _REFINEMENTS[ref.key] = ref
        for old in [k for k, r in _REFINEMENTS.items() if r.done][: max(0, len(_REFINEMENTS) - _MAX_KEPT)]:
            del _REFINEMENTS[old]
        return ref


def refine(engine: Engine | None, request: proj.Request, *, model: str, **umap_kwargs: Any) -> Refinement:
    """Start (or find) the background UMAP fit of a prepared request (:func:`proj.prepare`; :func:`proj.project`'s
    other arguments in ``umap_kwargs``)."""
    req = request
    ref = Refinement(key=req.key, n_points=len(req.rows), n_components=int(umap_kwargs.get("n_components", 2)))
    found = _register(ref)
    if found is not ref:
        return found

    def on_epoch(step: int, n_steps: int, message: Any, done: int, total: int) -> None:
        if step == 1 and total:
            ref.epoch = (int(done), int(total))

    def work() -> None:
        try:
            ref.result = proj.project(engine, req.X, req.ids, model=model, steps=on_epoch, request=req,
                                      on_picture=lambda p: setattr(ref, "picture", p), **umap_kwargs)
        except Exception as exc:  # noqa: BLE001 - shown on the page; the PCA picture stays
            log.exception("background UMAP failed")
            ref.error = f"{type(exc).__name__}: {exc}"
        finally:
            ref._done.set()

    ref.thread = threading.Thread(target=work, name=f"umap-refine-{req.key[:8]}", daemon=True)
    ref.thread.start()
    return ref


def first_picture(engine: Engine | None, X: np.ndarray, point_ids: Sequence[str], *, model: str,
                  n_components: int = 2, n_neighbors: int = 15, min_dist: float = 0.1, seed: int = 42,
                  limit: int = proj.DEFAULT_LIMIT, metric: str = "cosine",
                  centre_groups: Sequence[Any] | None = None,
                  background: bool = True) -> tuple[proj.Projection, Refinement | None]:
    """``(picture, refinement)``: the stored UMAP projection and None when this request was fitted before;
    otherwise a PCA picture of the same points and the background UMAP fit that will replace it (None with
    ``background=False``, e.g. for a caller that only wants the quick picture)."""
    kwargs: dict[str, Any] = {"n_components": n_components, "n_neighbors": n_neighbors, "min_dist": min_dist,
                              "seed": seed, "limit": limit, "metric": metric}
    req = proj.prepare(X, point_ids, model=model, centre_groups=centre_groups, **kwargs)
    hit = proj.from_cache(engine, req)
    if hit is not None:
        return hit, None
    pca = proj.project_pca(X, point_ids, model=model, request=req, **{k: kwargs[k] for k in
                                                                       ("n_components", "seed", "limit", "metric")})
    if not background:
        return pca, None
    return pca, refine(engine, req, model=model, **kwargs)
