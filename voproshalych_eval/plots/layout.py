"""The common finish of every figure: legend outside the plot, a title clear of the toolbar, sensible
time ticks, value axes bounded by the metric's scale.

* :func:`polish` — legend in one row above the plot area (never over the data, never over the x-axis
  title; or a column right of it for many long names, ``legend_side="right"``), the toolbar turned
  vertical at the right edge so it never covers the title, margins that fit both;
* :func:`time_axis` — dates of runs on x: a single run (or runs minutes apart) gets a window of at least
  a day and date ticks, never sub-millisecond ones;
* :func:`value_range` — the axis range of a metric's scale from the catalog (a 0–1 share on 0–1.05, a
  standard deviation of 0–1 scores on 0–0.5), never a symmetric −1…1 autorange.

:data:`CHART_CONFIG` is the plotly ``config`` every chart of the app is drawn with
(:func:`voproshalych_eval.ui.charts.plotly_chart`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from voproshalych_eval.metrics import catalog

#: plotly config for every chart: no logo, no buttons that only confuse (spikes, autoscale)
CHART_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "modeBarButtonsToRemove": ["toggleSpikelines", "hoverCompareCartesian", "hoverClosestCartesian", "autoScale2d"],
}

_TITLE_H = 36  # px the title needs above the plot area
_TITLE_LINE_H = 18  # px of each further title line (a ``<br><sup>`` note)
_LEGEND_H = 28  # px of a one-row legend


def polish(fig: go.Figure, *, legend: bool | None = None, height: int | None = None,
           legend_side: str = "top") -> go.Figure:
    """Legend outside the plot area, vertical toolbar, margins for title and legend.

    ``legend``: force showing (True) or hiding (False) the legend; ``None`` keeps plotly's choice.
    ``legend_side``: ``"top"`` — one row above the plot; ``"right"`` — a column right of the plot (many or
    long names: a map's 30 topics, a trend's topic names), the plot narrows to make room."""
    layout = fig.layout
    title_text = str(layout.title.text) if layout.title and layout.title.text else ""
    has_title = bool(title_text)
    show_legend = legend if legend is not None else (layout.showlegend is not False and len(fig.data) > 1)
    top_row = show_legend and legend_side == "top"
    top = 12 + (_TITLE_H + _TITLE_LINE_H * title_text.count("<br>") if has_title else 0) + (_LEGEND_H if top_row else 0)
    margin = {k: getattr(layout.margin, k) for k in ("l", "r", "b") if getattr(layout.margin, k) is not None}
    fig.update_layout(
        showlegend=show_legend,
        margin={"l": margin.get("l", 50), "r": max(margin.get("r", 20), 40), "t": max(top, 20), "b": margin.get("b", 50)},
        modebar={"orientation": "v"},
        title={"x": 0, "xanchor": "left", "y": 1, "yanchor": "top", "yref": "container", "pad": {"t": 10, "l": 8}}
        if has_title else None,
    )
    if top_row:
        fig.update_layout(legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "left", "x": 0,
                                  "bgcolor": "rgba(0,0,0,0)"})
    elif show_legend:  # right of the plot area (plotly widens the right margin to fit it)
        fig.update_layout(legend={"orientation": "v", "yanchor": "top", "y": 1.0, "xanchor": "left", "x": 1.02,
                                  "bgcolor": "rgba(0,0,0,0)"})
    if height is not None:
        fig.update_layout(height=height)
    return fig


def time_axis(fig: go.Figure, times: Sequence[Any], *, axis: str = "x", min_span: timedelta = timedelta(days=1)) -> None:
    """Date ticks over ``times``; a window of at least ``min_span`` centred on the data (one run included)."""
    stamps = pd.to_datetime(pd.Series(list(times)), errors="coerce").dropna()
    if stamps.empty:
        return
    lo, hi = stamps.min().to_pydatetime(), stamps.max().to_pydatetime()
    span = hi - lo
    if span < min_span:
        mid = lo + span / 2
        lo, hi = mid - min_span / 2, mid + min_span / 2
    else:
        pad = span * 0.05
        lo, hi = lo - pad, hi + pad
    fmt = "%H:%M<br>%d.%m" if (hi - lo) <= timedelta(days=2) else "%d.%m<br>%Y"
    fig.update_layout({f"{axis}axis": {"type": "date", "range": [_iso(lo), _iso(hi)], "tickformat": fmt,
                                       "nticks": 8}})


def _iso(t: datetime) -> str:
    return t.isoformat()


def value_range(key: str | None = None, *, scale: catalog.Scale | None = None, std: bool = False,
                values: Sequence[float] = ()) -> list[float] | None:
    """Axis range for values of metric ``key`` (or of ``scale``): the scale's bounds, padded by 5%.

    ``std``: the values are standard deviations of scores on that scale — from 0 to half the scale's width
    (the largest possible standard deviation). An open scale (counts, seconds, distances) gets ``[0, max]``
    padded when ``values`` are given, else ``None`` (autorange)."""
    s = scale or (catalog.scale_of(key) if key else None)
    if s is None:
        return None
    if std:
        if not s.bounded:
            return from_zero(values)
        top = (s.high - s.low) / 2
        return [0.0, top * 1.05]
    if not s.bounded:
        return from_zero(values) if s.low == 0 else None
    ax = catalog.axis(s)
    return list(ax.range) if ax.range else None


def from_zero(values: Sequence[float]) -> list[float] | None:
    """An axis from 0 to just above the largest of ``values`` (counts, scores without an upper bound)."""
    vals = [float(v) for v in values if v is not None and pd.notna(v)]
    if not vals:
        return None
    top = max(vals)
    return [0.0, top * 1.1 if top > 0 else 1.0]


def metric_text(key: str, lang: str = "en", *, item_field: bool = False) -> str:
    """The catalog label of a metric key (or of a per-item field with ``item_field``); the key itself when
    the catalog does not know it."""
    k = str(key).removeprefix("item.")
    if item_field:
        spec = catalog.for_item_field(k)
        if spec is not None:
            return spec.label(lang)
    text = catalog.label(k, lang)
    if text == k:  # a per-item field compared item by item (``first_relevant_rank``): catalog.ITEM_FIELDS
        spec = catalog.for_item_field(k)
        if spec is not None:
            return spec.label(lang)
    return text


def label_ticks(fig: go.Figure, keys: Sequence[str], lang: str = "en", *, axis: str = "x", item_field: bool = False,
                **where: int) -> None:
    """Show metric keys on a categorical axis as their translated catalog labels (the data keep the keys).

    ``where`` selects a subplot (``row=…, col=…``)."""
    keys = list(dict.fromkeys(str(k) for k in keys))
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    update(tickmode="array", tickvals=keys, ticktext=[metric_text(k, lang, item_field=item_field) for k in keys],
           **where)
