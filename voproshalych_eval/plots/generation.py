"""Charts of the LLM tiers (generation, end to end, judges, UX): pure plotly builders, no Streamlit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from voproshalych_eval.metrics import catalog
from voproshalych_eval.plots.layout import metric_text, polish, value_range
from voproshalych_eval.plots.scales import faceted, facets, scale_title, style_axis

DEFAULT_COLOR = "#EF553B"


def _value(a: Any) -> float | None:
    v = a.get("value") if isinstance(a, Mapping) else a
    return None if v is None or isinstance(v, bool) else float(v)


def metric_intervals(metrics: Mapping[str, Any], keys: Sequence[str], *, color: str = DEFAULT_COLOR, title: str = "",
                     labels: Mapping[str, str] | None = None, lang: str = "en") -> go.Figure:
    """Mean of each metric with its 95% bootstrap CI as an error bar, one panel per catalog scale (a 1–5 score
    or BLEU on 0–100 never shares an axis with 0–1 shares)."""
    shown = [k for k in keys if _value(metrics.get(k)) is not None]
    groups = facets(shown)
    fig = faceted(len(groups), titles=[scale_title(sc, lang) for sc, _ in groups])
    for i, (sc, ks) in enumerate(groups):
        names, values, lo, hi = [], [], [], []
        for k in ks:
            a = metrics[k] if isinstance(metrics[k], Mapping) else {"value": metrics[k]}
            names.append((labels or {}).get(k) or metric_text(k, lang))
            values.append(a["value"])
            lo.append(a["value"] - (a.get("ci_low") if a.get("ci_low") is not None else a["value"]))
            hi.append((a.get("ci_high") if a.get("ci_high") is not None else a["value"]) - a["value"])
        fig.add_trace(go.Bar(x=names, y=values, marker_color=color, showlegend=False,
                             error_y={"type": "data", "symmetric": False, "array": hi, "arrayminus": lo}), row=1, col=i + 1)
        style_axis(fig, sc, i, lang=lang)
    fig.update_layout(title=title, margin={"b": 40}, height=340)
    return polish(fig, legend=False)


def score_distributions(df: pd.DataFrame, columns: Sequence[str], *, color: str = DEFAULT_COLOR, title: str = "",
                        labels: Mapping[str, str] | None = None, lang: str = "en") -> go.Figure:
    """Per-item score distributions (box + points) of several metrics, one panel per catalog scale of the
    per-item field (answer correctness on 1–5 apart from 0–1 scores)."""
    present = [c for c in columns if c in df.columns]
    groups = facets(present, item_fields=True)
    fig = faceted(len(groups), titles=[scale_title(sc, lang) for sc, _ in groups])
    for i, (sc, cols) in enumerate(groups):
        for c in cols:
            vals = pd.to_numeric(df[c], errors="coerce").dropna()
            fig.add_trace(go.Box(y=vals, name=(labels or {}).get(c) or metric_text(c, lang, item_field=True),
                                 boxpoints="all", jitter=0.4, marker_color=color, line_color=color, showlegend=False),
                          row=1, col=i + 1)
        style_axis(fig, sc, i, lang=lang)
    fig.update_layout(title=title, showlegend=False, margin={"b": 40}, height=360)
    return polish(fig, legend=False)


def std_distribution(values: Sequence[float], *, scale_key: str | None = None, name: str = "", color: str = DEFAULT_COLOR,
                     title: str = "", y_title: str = "") -> go.Figure:
    """Per-item standard deviations of repeated scores (box + points) on ``[0, half the scale's width]`` — the
    largest a standard deviation of scores on that scale can be — never a −1…1 autorange."""
    vals = [float(v) for v in values if v is not None and pd.notna(v)]
    fig = go.Figure(go.Box(y=vals, name=name, boxpoints="all", jitter=0.4, marker_color=color, line_color=color,
                           showlegend=False))
    sc = catalog.scale_of(scale_key) if scale_key else None
    rng = value_range(scale=sc, std=True, values=vals) if sc is not None else [0.0, max([*vals, 0.0]) * 1.1 or 1.0]
    fig.update_yaxes(range=rng, title_text=y_title or None, rangemode="nonnegative")
    fig.update_layout(title=title, height=340, margin={"b": 40})
    return polish(fig, legend=False)


def confusion_matrix(cm: Mapping[str, int], *, labels: tuple[str, str] = ("show", "no-show"), title: str = "",
                     x_title: str = "judge", y_title: str = "label") -> go.Figure:
    """2×2 confusion matrix: rows = human label, columns = judge verdict (positive = show)."""
    z = [[cm.get("tp", 0), cm.get("fn", 0)], [cm.get("fp", 0), cm.get("tn", 0)]]
    fig = go.Figure(go.Heatmap(z=z, x=list(labels), y=list(labels), colorscale="Blues", showscale=False,
                               text=z, texttemplate="%{text}"))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, yaxis={"autorange": "reversed"},
                      height=320, margin={"b": 40})
    return polish(fig, legend=False)


def per_model_bars(per_model: Mapping[str, Mapping[str, Any]], key: str, *, color: str = DEFAULT_COLOR, title: str = "",
                   lang: str = "en") -> go.Figure:
    """One bar per judge model for a stability metric (numbers or aggregates), on the metric's catalog scale."""
    names, vals = [], []
    for m, d in per_model.items():
        v = _value(d.get(key))
        if v is not None:
            names.append(m)
            vals.append(v)
    fig = go.Figure(go.Bar(x=names, y=vals, marker_color=color))
    fig.update_layout(title=title or metric_text(key, lang), height=300, margin={"b": 40})
    sc = catalog.scale_of(key)
    if sc is not None:
        ax = catalog.axis(sc, lang)
        fig.update_yaxes(title_text=sc.label(lang), **({"range": list(ax.range)} if ax.range else {}))
    return polish(fig, legend=False)


def rate_bars(metrics: Mapping[str, Any], keys: Sequence[str], *, color: str = DEFAULT_COLOR, title: str = "",
              labels: Mapping[str, str] | None = None, lang: str = "en") -> go.Figure:
    """Metrics (numbers or aggregates) side by side, one panel per catalog scale (rates apart from counts)."""
    shown = [k for k in keys if _value(metrics.get(k)) is not None]
    groups = facets(shown)
    fig = faceted(len(groups), titles=[scale_title(sc, lang) for sc, _ in groups])
    for i, (sc, ks) in enumerate(groups):
        fig.add_trace(go.Bar(x=[(labels or {}).get(k) or metric_text(k, lang) for k in ks], y=[_value(metrics[k]) for k in ks],
                             marker_color=color, showlegend=False), row=1, col=i + 1)
        style_axis(fig, sc, i, lang=lang)
    fig.update_layout(title=title, height=320, margin={"b": 40})
    return polish(fig, legend=False)


#: a bot's reply outcomes (Tier 3): labels (ru, en) and colours, in the order they stack
OUTCOME_STYLE: dict[str, tuple[str, str, str]] = {
    "answered": ("ответ", "answered", "#00A67E"),
    "not_found": ("«не найдено»", "not found", "#FFA15A"),
    "banned": ("запрет", "banned", "#AB63FA"),
    "error": ("ошибка", "error", "#EF553B"),
}
_GROUPS = {"answerable": ("есть ответ в базе", "answerable"), "unanswerable": ("нет ответа в базе", "unanswerable"),
           "unknown": ("неизвестно", "unknown")}


def outcome_bars(by_group: Mapping[str, Mapping[str, int]], *, title: str = "", lang: str = "en") -> go.Figure:
    """Stacked counts of the reply outcomes per question group (answerable / unanswerable): the deployment gate
    reads a decline as a failure in the first group and as the right reply in the second."""
    groups = [g for g in ("answerable", "unanswerable", "unknown") if by_group.get(g)] + sorted(
        g for g in by_group if g not in _GROUPS and by_group.get(g))
    x = [(_GROUPS.get(g, (g, g))[1 if lang == "en" else 0]) for g in groups]
    fig = go.Figure()
    for outcome, (ru, en, color) in OUTCOME_STYLE.items():
        y = [int((by_group.get(g) or {}).get(outcome, 0)) for g in groups]
        if any(y):
            fig.add_trace(go.Bar(name=en if lang == "en" else ru, x=x, y=y, marker_color=color, text=y,
                                 textposition="inside"))
    fig.update_layout(barmode="stack", title=title, height=320, margin={"t": 60, "b": 40},
                      yaxis_title="questions" if lang == "en" else "вопросов")
    return polish(fig, legend=True)
