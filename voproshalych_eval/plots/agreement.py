"""Charts of a judge's agreement with people: pure plotly builders, no Streamlit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from voproshalych_eval.plots.layout import polish


def confusion_heatmap(confusion: Mapping[str, Any], *, title: str = "", x_title: str = "judge",
                      y_title: str = "people") -> go.Figure:
    """A k×k confusion matrix (:func:`voproshalych_eval.metrics.agreement.confusion`): rows the people's values,
    columns the judge's."""
    labels = [str(v) for v in confusion.get("labels") or []]
    z = [list(r) for r in confusion.get("matrix") or []]
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels, colorscale="Blues", showscale=False, text=z,
                               texttemplate="%{text}"))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, yaxis={"autorange": "reversed",
                      "type": "category"}, xaxis={"type": "category"}, height=320, margin={"b": 40})
    return polish(fig, legend=False)


def statistic_intervals(rows: Sequence[Mapping[str, Any]], *, title: str = "", y_title: str = "") -> go.Figure:
    """One point per row (``label``, ``value``, ``ci``) with its CI as an error bar, on −1…1 (kappa, alpha)."""
    shown = [r for r in rows if r.get("value") is not None]
    x = [str(r["label"]) for r in shown]
    y = [float(r["value"]) for r in shown]
    hi = [float((r.get("ci") or [v, v])[1]) - v for r, v in zip(shown, y, strict=True)]
    lo = [v - float((r.get("ci") or [v, v])[0]) for r, v in zip(shown, y, strict=True)]
    fig = go.Figure(go.Scatter(x=x, y=y, mode="markers", marker={"size": 11},
                               error_y={"type": "data", "array": hi, "arrayminus": lo, "visible": True}))
    fig.update_yaxes(range=[-1.05, 1.05], title_text=y_title or None)
    fig.update_layout(title=title, height=320, margin={"b": 40})
    return polish(fig, legend=False)
