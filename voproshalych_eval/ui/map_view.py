"""The map widgets' first picture at once: PCA (or the stored UMAP) now, UMAP swapped in when the background fit ends.

A page calls :func:`start` on its "build the map" button, then :func:`current` to get the projection to draw
(the refined UMAP replaces the PCA picture as soon as it exists), :func:`refine_status` where the map's status
line belongs (a self-refreshing fragment that reruns the page when the UMAP picture arrives) and
:func:`method_caption` under the map, which says which projection is shown.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from voproshalych_eval.tiers import projection as proj
from voproshalych_eval.tiers import projection_refine
from voproshalych_eval.ui.i18n import fmt_count, fmt_seconds, tr

POLL_SECONDS = 1.0


def _refine_key(state_key: str) -> str:
    return f"{state_key}__refine"


def start(state_key: str, engine: Any, X: np.ndarray, point_ids: list[str], *, model: str,
          **kwargs: Any) -> proj.Projection:
    """The first picture of a map into ``st.session_state[state_key]`` (the stored UMAP projection, else PCA of
    the same points) and, without a stored one, a background UMAP fit remembered for :func:`current`."""
    picture, ref = projection_refine.first_picture(engine, X, point_ids, model=model, **kwargs)
    st.session_state[state_key] = picture
    st.session_state[_refine_key(state_key)] = ref.key if ref is not None else None
    return picture


def refinement(state_key: str) -> projection_refine.Refinement | None:
    """The background UMAP fit of the map under ``state_key``, while the page still waits for it."""
    return projection_refine.get(st.session_state.get(_refine_key(state_key)))


def forget(state_key: str) -> None:
    """Drop the map (and stop waiting for its refinement; the fit still ends and fills the cache)."""
    st.session_state.pop(state_key, None)
    st.session_state.pop(_refine_key(state_key), None)


def current(state_key: str) -> proj.Projection | None:
    """The projection to draw: the refined UMAP one once it exists, else the first picture."""
    p: proj.Projection | None = st.session_state.get(state_key)
    ref = refinement(state_key)
    if ref is None:
        return p
    best = ref.current
    if best is not None and best is not p:
        st.session_state[state_key] = p = best
    if ref.done:
        st.session_state[_refine_key(state_key)] = None
        if ref.error:
            st.warning(tr("UMAP не построен, показана проекция PCA: ", "UMAP failed; the PCA picture stays: ")
                       + ref.error)
    return p


def is_pca(p: proj.Projection) -> bool:
    return p.params.get("method") == "pca"


def axis_name(p: proj.Projection) -> str:
    """The axis prefix of the picture: ``PCA`` or ``UMAP``."""
    return "PCA" if is_pca(p) else "UMAP"


def method_label(p: proj.Projection) -> str:
    """Which projection is shown, in a few words."""
    if is_pca(p):
        return tr("PCA (первая картинка)", "PCA (first picture)")
    return tr("UMAP (из кэша)", "UMAP (from cache)") if p.from_cache else "UMAP"


def method_caption(p: proj.Projection, state_key: str) -> str:
    """A sentence under the map naming the projection shown and what happens next."""
    ref = refinement(state_key)
    if is_pca(p):
        text = tr(f"Показана проекция PCA ({fmt_count(len(p.point_ids))} точек за {fmt_seconds(p.seconds)}): "
                  "линейная картинка, две главные оси разброса. ",
                  f"Showing the PCA projection ({fmt_count(len(p.point_ids))} points in {fmt_seconds(p.seconds)}): "
                  "a linear picture along the two main axes of spread. ")
        if ref is not None and not ref.done:
            text += tr("UMAP уточняет карту в фоне и заменит её, когда будет готов.",
                       "UMAP refines the map in the background and replaces it when ready.")
        return text
    text = tr("Показана проекция UMAP", "Showing the UMAP projection")
    text += tr(" из кэша." if p.from_cache else ".", " from the cache." if p.from_cache else ".")
    if p.trustworthiness is None and ref is not None and not ref.done:
        text += tr(" Trustworthiness считается в фоне.", " Trustworthiness is being computed in the background.")
    return text


def refine_status(state_key: str) -> None:
    """While UMAP refines the map: a progress line that refreshes itself and reruns the page when the UMAP
    coordinates (then their trustworthiness) arrive."""
    ref = refinement(state_key)
    if ref is None:
        return
    shown = st.session_state.get(state_key)

    @st.fragment(run_every=POLL_SECONDS)
    def _poll() -> None:
        r = refinement(state_key)
        if r is None:
            return
        if r.done or (r.current is not None and r.current is not shown):
            st.rerun()
        done, total = r.epoch
        if r.picture is not None:
            line = tr("UMAP готов, считается trustworthiness…", "UMAP ready, computing trustworthiness…")
            value = 1.0
        else:
            line = tr(f"UMAP {r.n_components}D по {fmt_count(r.n_points)} точкам в фоне",
                      f"UMAP {r.n_components}D of {fmt_count(r.n_points)} points in the background")
            if total:
                line += " — " + tr(f"эпоха {fmt_count(done)} из {fmt_count(total)}",
                                   f"epoch {fmt_count(done)} of {fmt_count(total)}")
            line += " · " + fmt_seconds(r.seconds())
            value = min(done / total, 1.0) if total else 0.0
        st.progress(value, text=line)

    _poll()
