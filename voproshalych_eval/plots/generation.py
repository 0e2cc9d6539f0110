"""Charts of the LLM tiers (generation, end to end, judges, UX): pure plotly builders, no Streamlit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

DEFAULT_COLOR = "#EF553B"


def metric_intervals(metrics: Mapping[str, Any], keys: Sequence[str], *, color: str = DEFAULT_COLOR, title: str = "") -> go.Figure:
    """Mean of each metric with its 95% bootstrap CI as an error bar (only metrics on a 0–1 scale)."""
    names, values, lo, hi = [], [], [], []
    for k in keys:
        a = metrics.get(k)
        if isinstance(a, Mapping) and a.get("value") is not None:
            names.append(k)
            values.append(a["value"])
            lo.append(a["value"] - (a.get("ci_low") if a.get("ci_low") is not None else a["value"]))
            hi.append((a.get("ci_high") if a.get("ci_high") is not None else a["value"]) - a["value"])
    fig = go.Figure(go.Bar(x=names, y=values, marker_color=color,
                           error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo}))
    fig.update_layout(title=title, yaxis={"range": [0, 1.05]}, margin={"t": 40, "b": 40}, height=340)
    return fig


def score_distributions(df: pd.DataFrame, columns: Sequence[str], *, color: str = DEFAULT_COLOR, title: str = "") -> go.Figure:
    """Per-item score distributions (box + points) of several metrics."""
    fig = go.Figure()
    for c in columns:
        if c in df.columns:
            vals = pd.to_numeric(df[c], errors="coerce").dropna()
            fig.add_trace(go.Box(y=vals, name=c, boxpoints="all", jitter=0.4, marker_color=color, line_color=color))
    fig.update_layout(title=title, showlegend=False, margin={"t": 40, "b": 40}, height=360)
    return fig


def confusion_matrix(cm: Mapping[str, int], *, labels: tuple[str, str] = ("show", "no-show"), title: str = "") -> go.Figure:
    """2×2 confusion matrix: rows = human label, columns = judge verdict (positive = show)."""
    z = [[cm.get("tp", 0), cm.get("fn", 0)], [cm.get("fp", 0), cm.get("tn", 0)]]
    fig = go.Figure(go.Heatmap(z=z, x=list(labels), y=list(labels), colorscale="Blues", showscale=False,
                               text=z, texttemplate="%{text}"))
    fig.update_layout(title=title, xaxis_title="judge", yaxis_title="label", yaxis={"autorange": "reversed"},
                      height=320, margin={"t": 40, "b": 40})
    return fig


def per_model_bars(per_model: Mapping[str, Mapping[str, Any]], key: str, *, color: str = DEFAULT_COLOR, title: str = "") -> go.Figure:
    """One bar per judge model for a stability metric (numbers or aggregates)."""
    names, vals = [], []
    for m, d in per_model.items():
        v = d.get(key)
        v = v.get("value") if isinstance(v, Mapping) else v
        if v is not None:
            names.append(m)
            vals.append(v)
    fig = go.Figure(go.Bar(x=names, y=vals, marker_color=color))
    fig.update_layout(title=title or key, height=300, margin={"t": 40, "b": 40})
    return fig


def rate_bars(metrics: Mapping[str, Any], keys: Sequence[str], *, color: str = DEFAULT_COLOR, title: str = "") -> go.Figure:
    """Rates (numbers or aggregates) side by side."""
    names, vals = [], []
    for k in keys:
        v = metrics.get(k)
        v = v.get("value") if isinstance(v, Mapping) else v
        if v is not None:
            names.append(k)
            vals.append(v)
    fig = go.Figure(go.Bar(x=names, y=vals, marker_color=color))
    fig.update_layout(title=title, yaxis={"range": [0, 1.05]}, height=320, margin={"t": 40, "b": 40})
    return fig
