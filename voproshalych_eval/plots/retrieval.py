"""Charts of the Tier 1 retrieval page: metrics with CIs, comparison of configurations, first-relevant
rank distribution, failures by section and the "no answer" threshold chart.

Pure functions returning ``plotly.graph_objects.Figure``; every text is a parameter (pages pass them
in the user's language).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from voproshalych_eval.metrics import catalog
from voproshalych_eval.plots.layout import metric_text, polish, value_range
from voproshalych_eval.plots.scales import faceted, facets, scale_title, style_axis

LEVEL_COLORS = {"chunk": "#00A67E", "url": "#636EFA"}


def _err(values: Sequence[float | None], lows: Sequence[float | None], highs: Sequence[float | None]) -> dict[str, Any]:
    plus = [(h - v) if h is not None and v is not None else 0.0 for v, h in zip(values, highs, strict=True)]
    minus = [(v - lo) if lo is not None and v is not None else 0.0 for v, lo in zip(values, lows, strict=True)]
    return {"type": "data", "array": plus, "arrayminus": minus, "visible": True}


def metrics_by_level(
    aggregates: Mapping[str, Mapping[str, Mapping[str, Any]]],
    keys: Sequence[str],
    *,
    level_names: Mapping[str, str] | None = None,
    title: str = "",
    lang: str = "en",
) -> go.Figure:
    """Grouped bars: one group per metric key, one bar per level, 95% CI as error bars; one panel per catalog
    scale (every ranking metric is on 0–1; anything else gets its own panel)."""
    groups = facets(list(keys))
    fig = faceted(len(groups), titles=[scale_title(sc, lang) for sc, _ in groups] if len(groups) > 1 else ())
    for i, (sc, ks) in enumerate(groups):
        for level, raw_block in aggregates.items():
            # a stored metric is an Aggregate dict or a plain number
            block = {k: v if isinstance(v, Mapping) else {"value": v} for k, v in raw_block.items()}
            vals = [block.get(k, {}).get("value") for k in ks]
            fig.add_trace(go.Bar(
                name=(level_names or {}).get(level, level), x=[metric_text(k, lang) for k in ks], y=vals,
                legendgroup=level, showlegend=i == 0,
                error_y=_err(vals, [block.get(k, {}).get("ci_low") for k in ks], [block.get(k, {}).get("ci_high") for k in ks]),
                marker_color=LEVEL_COLORS.get(level),
            ), row=1, col=i + 1)
        style_axis(fig, sc, i, lang=lang)
    fig.update_layout(barmode="group", title=title, height=380)
    return polish(fig, legend=True)


def comparison_bars(df: pd.DataFrame, *, metric_col: str = "metric", title: str = "", lang: str = "en") -> go.Figure:
    """Grouped bars comparing configurations: ``df`` has ``config, metric, value, ci_low, ci_high``; one panel per
    catalog scale of the metrics."""
    metrics = list(dict.fromkeys(df[metric_col])) if not df.empty else []
    groups = facets(metrics)
    fig = faceted(len(groups), titles=[scale_title(sc, lang) for sc, _ in groups] if len(groups) > 1 else ())
    for i, (sc, ms) in enumerate(groups):
        for config, part in df.groupby("config", sort=False):
            part = part.set_index(metric_col).reindex(ms)
            vals = [None if pd.isna(v) else float(v) for v in part["value"]]
            lows = [None if pd.isna(v) else float(v) for v in part["ci_low"]]
            highs = [None if pd.isna(v) else float(v) for v in part["ci_high"]]
            fig.add_trace(go.Bar(name=str(config), x=[metric_text(m, lang) for m in ms], y=vals,
                                 error_y=_err(vals, lows, highs), legendgroup=str(config), showlegend=i == 0),
                          row=1, col=i + 1)
        style_axis(fig, sc, i, lang=lang)
    fig.update_layout(barmode="group", title=title, height=400 + 20 * max(0, df["config"].nunique() - 3 if not df.empty else 0))
    return polish(fig, legend=True)


def first_rank_histogram(ranks: Sequence[int | None], *, k: int, not_found_label: str, title: str = "",
                         x_title: str = "", y_title: str = "") -> go.Figure:
    """Counts of the rank of the first relevant hit (1..k) plus a "not found" bar."""
    counts = [sum(1 for r in ranks if r == i) for i in range(1, k + 1)]
    missing = sum(1 for r in ranks if r is None)
    x = [str(i) for i in range(1, k + 1)] + [not_found_label]
    colors = ["#00A67E"] * k + ["#EF553B"]
    fig = go.Figure(go.Bar(x=x, y=counts + [missing], marker_color=colors))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=320, xaxis={"type": "category"},
                      yaxis={"rangemode": "nonnegative", "tickformat": ",d"})
    return polish(fig, legend=False)


def failures_by_section(df: pd.DataFrame, *, title: str = "", x_title: str = "") -> go.Figure:
    """Horizontal bars: failures per section (``df`` has ``section, failures, questions``)."""
    d = df.sort_values("failures") if not df.empty else df
    fig = go.Figure(
        go.Bar(
            x=d["failures"] if not d.empty else [],
            y=d["section"] if not d.empty else [],
            orientation="h",
            marker_color="#EF553B",
            customdata=d[["questions"]].to_numpy() if not d.empty else None,
            hovertemplate="%{y}<br>%{x} / %{customdata[0]}<extra></extra>",
        )
    )
    fig.update_layout(title=title, xaxis_title=x_title, height=max(280, 26 * len(d) + 120), margin={"l": 10},
                      xaxis={"tickformat": ",d", "rangemode": "nonnegative"})
    return polish(fig, legend=False)


def threshold_chart(
    answerable: Sequence[float],
    unanswerable: Sequence[float],
    *,
    threshold: float | None = None,
    names: tuple[str, str] = ("answerable", "unanswerable"),
    title: str = "",
    x_title: str = "",
    nbins: int = 30,
) -> go.Figure:
    """Overlaid histograms of the top-hit distance for answerable and unanswerable questions.

    A "no answer" rule rejects a question when its top-hit distance is above ``threshold`` (drawn as a
    vertical line): good thresholds keep most answerable questions left of the line and move the
    unanswerable ones right of it.
    """
    fig = go.Figure()
    allv = [*answerable, *unanswerable]
    lo, hi = (min(allv), max(allv)) if allv else (0.0, 1.0)
    size = (hi - lo) / nbins if hi > lo else 0.01
    for vals, name, color in ((answerable, names[0], "#00A67E"), (unanswerable, names[1], "#EF553B")):
        fig.add_histogram(x=list(vals), name=f"{name} (n={len(vals)})", marker_color=color, opacity=0.65,
                          xbins={"start": lo, "end": hi + size, "size": size})
    if threshold is not None:
        fig.add_vline(x=threshold, line_dash="dash", line_color="#333")
    fig.update_layout(barmode="overlay", title=title, xaxis_title=x_title, height=360)
    return polish(fig, legend=True)


def threshold_tradeoff(answerable: Sequence[float], unanswerable: Sequence[float], *, names: tuple[str, str],
                       title: str = "", x_title: str = "") -> go.Figure:
    """Share of answerable questions kept and of unanswerable ones rejected, as the threshold moves."""
    allv = sorted({*answerable, *unanswerable})
    grid = np.linspace(allv[0], allv[-1], 101) if allv else np.linspace(0, 1, 101)
    a = np.asarray(answerable, dtype=float)
    u = np.asarray(unanswerable, dtype=float)
    kept = [float(np.mean(a <= t)) if a.size else None for t in grid]
    rejected = [float(np.mean(u > t)) if u.size else None for t in grid]
    fig = go.Figure()
    fig.add_scatter(x=grid, y=kept, name=names[0], line_color="#00A67E")
    fig.add_scatter(x=grid, y=rejected, name=names[1], line_color="#EF553B")
    fig.update_layout(title=title, xaxis_title=x_title, yaxis={"range": value_range(scale=catalog.SHARE)}, height=340)
    return polish(fig, legend=True)
