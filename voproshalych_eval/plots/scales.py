"""Chart axes from the metric catalog: one scale per axis.

Charts never put metrics of different scales on one axis (a rank or a count beside 0–1 rates, a 1–5
score beside shares): :func:`facets` groups the keys by their catalog scale and :func:`faceted` builds
one subplot per scale, each with the scale's range and name on its value axis.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from voproshalych_eval.metrics import catalog


def facets(keys: Sequence[str], *, item_fields: bool = False) -> list[tuple[catalog.Scale | None, list[str]]]:
    """``(scale, keys)`` groups in first-seen order; ``item_fields`` looks keys up as per-item fields
    (``answer_correctness`` -> the scale of ``avg_answer_correctness``). Unknown keys share a ``None`` group."""
    groups: dict[str, tuple[catalog.Scale | None, list[str]]] = {}
    for k in keys:
        s = catalog.scale_of_item_field(k) if item_fields else catalog.scale_of(k)
        groups.setdefault(s.key if s else "?", (s, []))[1].append(k)
    return list(groups.values())


def faceted(n: int, *, horizontal: bool = False, titles: Sequence[str] = ()) -> go.Figure:
    """An empty figure with ``n`` subplots side by side (values vertical) or stacked (``horizontal``: values
    along x), axes not shared."""
    if horizontal:
        return make_subplots(rows=max(1, n), cols=1, shared_xaxes=False, subplot_titles=list(titles) or None,
                             vertical_spacing=0.12 if n > 1 else 0.0)
    return make_subplots(rows=1, cols=max(1, n), shared_yaxes=False, subplot_titles=list(titles) or None,
                         horizontal_spacing=0.08)


def style_axis(fig: go.Figure, scale: catalog.Scale | None, index: int, *, horizontal: bool = False,
               lang: str = "en", title: str | None = None) -> None:
    """Range and title of the value axis of facet ``index`` (0-based) from ``scale``."""
    kw: dict[str, object] = {"title_text": title if title is not None else (scale.label(lang) if scale else "")}
    if scale is not None:
        ax = catalog.axis(scale, lang)
        if ax.range is not None:
            kw["range"] = list(ax.range)
    if horizontal:
        fig.update_xaxes(row=index + 1, col=1, **kw)
    else:
        fig.update_yaxes(row=1, col=index + 1, **kw)


def scale_title(scale: catalog.Scale | None, lang: str = "en") -> str:
    return scale.label(lang) if scale else "?"
