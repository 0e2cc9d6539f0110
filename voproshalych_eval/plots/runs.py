"""Charts of the run registry: a metric's history against its baseline, paired differences, sparklines.

Pure functions returning ``plotly.graph_objects.Figure`` (no Streamlit); texts are parameters so pages
and reports pass them in the user's language.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

GOOD, ATTENTION, CRITICAL, NEUTRAL = "#2CA02C", "#FFB000", "#D62728", "#7F7F7F"
VERDICT_COLORS = {"better": GOOD, "worse": CRITICAL}


def history_figure(
    history: pd.DataFrame,
    *,
    metric_label: str,
    baseline: float | None = None,
    attention_margin: float | None = None,
    direction: str = "higher",
    color: str = "#00A67E",
    title: str = "",
    baseline_label: str = "baseline",
    run_label: str = "run",
) -> go.Figure:
    """A metric over runs (x = run start, y = value with its 95% CI as error bars), the baseline as a
    dashed line and the attention band shaded. ``history`` has ``run_id, started_at, value, ci_low, ci_high``."""
    fig = go.Figure()
    if len(history):
        hi = (history["ci_high"] - history["value"]).where(history["ci_high"].notna())
        lo = (history["value"] - history["ci_low"]).where(history["ci_low"].notna())
        fig.add_trace(go.Scatter(
            x=history["started_at"], y=history["value"], mode="lines+markers", name=metric_label,
            line={"color": color},
            error_y={"type": "data", "array": hi.fillna(0), "arrayminus": lo.fillna(0), "visible": bool(hi.notna().any())},
            customdata=history[["run_id"]].to_numpy(),
            hovertemplate=f"{run_label} #%{{customdata[0]}}<br>%{{x}}<br>{metric_label} = %{{y:.4f}}<extra></extra>",
        ))
    if baseline is not None:
        fig.add_hline(y=baseline, line_dash="dash", line_color=NEUTRAL,
                      annotation_text=f"{baseline_label} {baseline:g}", annotation_position="top left")
        if attention_margin:
            y0, y1 = (baseline - attention_margin, baseline) if direction == "higher" else (baseline, baseline + attention_margin)
            fig.add_hrect(y0=y0, y1=y1, fillcolor=ATTENTION, opacity=0.15, line_width=0)
    fig.update_layout(title=title or None, height=380, margin={"l": 40, "r": 20, "t": 50 if title else 20, "b": 40},
                      yaxis_title=metric_label, showlegend=False)
    return fig


def diff_figure(
    metrics: pd.DataFrame,
    *,
    title: str = "",
    x_title: str = "B − A",
    verdict_labels: dict[str, str] | None = None,
) -> go.Figure:
    """Paired mean differences (B − A) with their 95% CIs, one row per metric that has per-item values;
    coloured by verdict (better / worse / no significant difference)."""
    rows = metrics[metrics["paired_mean_diff"].notna()].iloc[::-1]
    labels = verdict_labels or {}
    fig = go.Figure()
    for verdict in rows["verdict"].unique():
        part = rows[rows["verdict"] == verdict]
        fig.add_trace(go.Scatter(
            x=part["paired_mean_diff"], y=part["metric"], mode="markers", name=labels.get(verdict, verdict),
            marker={"color": VERDICT_COLORS.get(verdict, NEUTRAL), "size": 10},
            error_x={"type": "data", "array": part["ci_high"] - part["paired_mean_diff"],
                     "arrayminus": part["paired_mean_diff"] - part["ci_low"]},
            customdata=part[["p_value", "n_pairs"]].to_numpy(),
            hovertemplate="%{y}: %{x:.4f}<br>p = %{customdata[0]:.4f}, n = %{customdata[1]}<extra></extra>",
        ))
    fig.add_vline(x=0, line_color=NEUTRAL)
    fig.update_layout(title=title or None, height=max(240, 60 + 28 * len(rows)), xaxis_title=x_title,
                      margin={"l": 40, "r": 20, "t": 50 if title else 20, "b": 40}, legend={"orientation": "h"})
    return fig


def metrics_figure(
    metrics: pd.DataFrame,
    *,
    title: str = "",
    baseline_label: str = "baseline",
) -> go.Figure:
    """A run's aggregates with their 95% CIs (``metric, value, ci_low, ci_high``; optional ``baseline``,
    ``status``) as horizontal markers, the baselines as grey diamonds."""
    rows = metrics[metrics["value"].notna()].iloc[::-1]
    status_col = rows["status"] if "status" in rows else pd.Series(None, index=rows.index)
    colors = [{"good": GOOD, "attention": ATTENTION, "critical": CRITICAL}.get(s, "#1F77B4") for s in status_col]
    has_ci = rows["ci_low"].notna() & rows["ci_high"].notna()
    fig = go.Figure(go.Scatter(
        x=rows["value"], y=rows["metric"], mode="markers", marker={"color": colors, "size": 10}, name="value",
        error_x={"type": "data", "array": (rows["ci_high"] - rows["value"]).where(has_ci, 0),
                 "arrayminus": (rows["value"] - rows["ci_low"]).where(has_ci, 0)},
        hovertemplate="%{y}: %{x:.4f}<extra></extra>",
    ))
    if "baseline" in rows and rows["baseline"].notna().any():
        b = rows[rows["baseline"].notna()]
        fig.add_trace(go.Scatter(x=b["baseline"], y=b["metric"], mode="markers", name=baseline_label,
                                 marker={"symbol": "diamond-open", "color": NEUTRAL, "size": 12}))
    fig.update_layout(title=title or None, height=max(240, 60 + 26 * len(rows)), showlegend=False,
                      margin={"l": 40, "r": 20, "t": 50 if title else 20, "b": 40})
    return fig


def item_diff_histogram(diffs: Sequence[float], *, title: str = "", x_title: str = "B − A") -> go.Figure:
    """Distribution of the per-item differences of one metric."""
    fig = go.Figure(go.Histogram(x=list(diffs), nbinsx=30, marker_color="#1F77B4"))
    fig.add_vline(x=0, line_color=NEUTRAL)
    fig.update_layout(title=title or None, height=280, xaxis_title=x_title, bargap=0.05,
                      margin={"l": 40, "r": 20, "t": 50 if title else 20, "b": 40})
    return fig


def sparkline(values: Sequence[float], *, baseline: float | None = None, color: str = "#00A67E") -> go.Figure:
    """A tiny trend line (last runs of a metric) with the baseline dotted; no axes."""
    fig = go.Figure(go.Scatter(y=list(values), mode="lines+markers", line={"color": color, "width": 2},
                               marker={"size": 4}, hovertemplate="%{y:.3f}<extra></extra>"))
    if baseline is not None:
        fig.add_hline(y=baseline, line_dash="dot", line_color=NEUTRAL, line_width=1)
    fig.update_layout(height=70, margin={"l": 0, "r": 0, "t": 0, "b": 0}, showlegend=False,
                      xaxis={"visible": False}, yaxis={"visible": False})
    return fig
