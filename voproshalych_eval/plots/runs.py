"""Charts of the run registry: a metric's history against its baseline, paired differences, sparklines.

Pure functions returning ``plotly.graph_objects.Figure`` (no Streamlit); texts are parameters so pages
and reports pass them in the user's language.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from voproshalych_eval.metrics import catalog
from voproshalych_eval.metrics.formatting import d3_format
from voproshalych_eval.metrics.statistics import correction_label
from voproshalych_eval.plots.layout import label_ticks, polish, time_axis
from voproshalych_eval.plots.scales import faceted, facets, scale_title, style_axis

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
    scale: catalog.Scale | None = None,
    lang: str = "en",
    metric_key: str | None = None,
    offline_label: str = "offline — not compared",
    online_only_label: str = "online runs only",
) -> go.Figure:
    """A metric over runs (x = run start, y = value with its 95% CI as error bars), ONE LINE PER CONFIGURATION
    (``history["config"]``; two configurations are never joined), the baseline as a dashed line and the
    attention band shaded; the y axis is the metric's catalog ``scale``. ``history`` has ``run_id, started_at,
    value, ci_low, ci_high`` (and ``config``, ``offline``). ``metric_key`` picks the number format of the hover
    labels; the time axis never gets sub-second ticks (one run is shown in a day-wide window).

    Offline runs (``history["offline"]``: numbers from offline substitutes, never compared to the baselines)
    are drawn grey with open markers and a dotted line, named and hovered ``offline_label``; the baseline line
    and band are drawn only when an online run is shown (then labelled ``online_only_label`` if offline runs
    are shown too), so no offline point ever sits against a baseline as if it had a verdict."""
    fig = go.Figure()
    num = d3_format(metric_key)
    offline = history["offline"].fillna(False).astype(bool) if "offline" in history else pd.Series(False, index=history.index)
    if len(history):
        configs = history["config"] if "config" in history else pd.Series("", index=history.index)
        palette = [color, "#636EFA", "#EF553B", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880"]
        for i, ((cfg, off), part) in enumerate(history.groupby([configs, offline], sort=False)):
            hi = (part["ci_high"] - part["value"]).where(part["ci_high"].notna())
            lo = (part["value"] - part["ci_low"]).where(part["ci_low"].notna())
            name = str(cfg) or metric_label
            style = ({"line": {"color": NEUTRAL, "dash": "dot"}, "marker": {"symbol": "circle-open", "size": 10}}
                     if off else {"line": {"color": palette[i % len(palette)]}})
            fig.add_trace(go.Scatter(
                x=part["started_at"], y=part["value"], mode="lines+markers", name=f"📴 {name} · {offline_label}" if off else name,
                error_y={"type": "data", "array": hi.fillna(0), "arrayminus": lo.fillna(0), "visible": bool(hi.notna().any())},
                customdata=part[["run_id"]].to_numpy(),
                hovertemplate=(f"{run_label} #%{{customdata[0]}}<br>%{{x|%Y-%m-%d %H:%M}}<br>{metric_label} = %{{y:{num}}}"
                               + (f"<br>📴 {offline_label}" if off else "") + f"<extra>{cfg}</extra>"),
                **style,
            ))
    if offline.all() and len(history):  # nothing here has a verdict: no baseline to read one from
        baseline = None
        fig.add_annotation(text=f"📴 {offline_label}", xref="paper", yref="paper", x=0.01, y=0.99, xanchor="left",
                           yanchor="top", showarrow=False, font={"color": NEUTRAL})
    if baseline is not None:
        text = f"{baseline_label} {baseline:g}" + (f" ({online_only_label})" if offline.any() else "")
        fig.add_hline(y=baseline, line_dash="dash", line_color=NEUTRAL, annotation_text=text,
                      annotation_position="top left")
        if attention_margin:
            y0, y1 = (baseline - attention_margin, baseline) if direction == "higher" else (baseline, baseline + attention_margin)
            fig.add_hrect(y0=y0, y1=y1, fillcolor=ATTENTION, opacity=0.15, line_width=0)
    yaxis: dict[str, object] = {"title": metric_label + (f" ({scale.label(lang)})" if scale else "")}
    if scale is not None and (ax := catalog.axis(scale, lang)).range is not None:
        yaxis["range"] = list(ax.range)
    fig.update_layout(title=title or None, height=380, margin={"l": 50, "r": 20, "b": 40}, yaxis=yaxis)
    if len(history):
        time_axis(fig, history["started_at"])
    multi = len(fig.data) > 1 or bool(offline.any())
    return polish(fig, legend=multi)


def diff_figure(
    metrics: pd.DataFrame,
    *,
    title: str = "",
    x_title: str = "B − A",
    verdict_labels: dict[str, str] | None = None,
    lang: str = "en",
    correction: str = "holm",
) -> go.Figure:
    """Paired mean differences (B − A) with their 95% CIs, one row per metric that has per-item values, one
    panel per catalog scale of the metric (a difference in BLEU points never shares an axis with a difference
    in shares); coloured by verdict (better / worse / no significant difference). The hover gives the raw p,
    the p adjusted by ``correction`` (named) that the verdict uses, and the effect size d_z with its CI."""
    adj = correction_label(correction, lang)
    rows = metrics[metrics["paired_mean_diff"].notna()].iloc[::-1]
    groups = facets([k.removeprefix("item.") for k in rows["metric"]])
    labels = verdict_labels or {}
    fig = faceted(len(groups), horizontal=True, titles=[scale_title(sc, lang) for sc, _ in groups])
    seen: set[str] = set()
    for i, (_sc, ks) in enumerate(groups):
        part_all = rows[rows["metric"].str.removeprefix("item.").isin(ks)]
        for verdict in part_all["verdict"].unique():
            part = part_all[part_all["verdict"] == verdict]
            fig.add_trace(go.Scatter(
                x=part["paired_mean_diff"], y=part["metric"], mode="markers", name=labels.get(verdict, verdict),
                marker={"color": VERDICT_COLORS.get(verdict, NEUTRAL), "size": 10}, legendgroup=verdict,
                showlegend=verdict not in seen,
                error_x={"type": "data", "array": part["ci_high"] - part["paired_mean_diff"],
                         "arrayminus": part["paired_mean_diff"] - part["ci_low"]},
                customdata=part.reindex(columns=["p_value", "n_pairs", "p_adjusted", "effect_size", "effect_ci_low",
                                                 "effect_ci_high"]).to_numpy(),
                hovertemplate=("%{y}: %{x:.3f}<br>p = %{customdata[0]:.4f}, p (" + adj + ") = %{customdata[2]:.4f}, "
                               "n = %{customdata[1]}<br>d_z = %{customdata[3]:.2f} "
                               "[%{customdata[4]:.2f}; %{customdata[5]:.2f}]<extra></extra>"),
            ), row=i + 1, col=1)
            seen.add(verdict)
        fig.add_vline(x=0, line_color=NEUTRAL, row=i + 1, col=1)
        fig.update_xaxes(title_text=x_title, row=i + 1, col=1)
        label_ticks(fig, list(part_all["metric"]), lang, axis="y", row=i + 1, col=1)
    fig.update_layout(title=title or None, height=max(240, 80 * len(groups) + 28 * len(rows)),
                      margin={"l": 40, "r": 20, "b": 40})
    return polish(fig, legend=True)


def metrics_figure(
    metrics: pd.DataFrame,
    *,
    title: str = "",
    baseline_label: str = "baseline",
    lang: str = "en",
) -> go.Figure:
    """A run's aggregates with their 95% CIs (``metric, value, ci_low, ci_high``; optional ``baseline``,
    ``status``) as horizontal markers, the baselines as grey diamonds; one panel per catalog scale (counts,
    seconds, 1–5 scores and shares each on their own axis)."""
    rows = metrics[metrics["value"].notna()].iloc[::-1]
    groups = facets(list(rows["metric"]))
    fig = faceted(len(groups), horizontal=True, titles=[scale_title(sc, lang) for sc, _ in groups])
    for i, (sc, ks) in enumerate(groups):
        part = rows[rows["metric"].isin(ks)]
        status_col = part["status"] if "status" in part else pd.Series(None, index=part.index)
        colors = [{"good": GOOD, "attention": ATTENTION, "critical": CRITICAL}.get(s, "#1F77B4") for s in status_col]
        has_ci = part["ci_low"].notna() & part["ci_high"].notna()
        fig.add_trace(go.Scatter(
            x=part["value"], y=part["metric"], mode="markers", marker={"color": colors, "size": 10}, name="значение" if lang == "ru" else "value",
            error_x={"type": "data", "array": (part["ci_high"] - part["value"]).where(has_ci, 0),
                     "arrayminus": (part["value"] - part["ci_low"]).where(has_ci, 0)},
            text=[catalog.label(k, lang) for k in part["metric"]],
            hovertemplate="%{text}: %{x}<extra></extra>",
        ), row=i + 1, col=1)
        if "baseline" in part and part["baseline"].notna().any():
            b = part[part["baseline"].notna()]
            fig.add_trace(go.Scatter(x=b["baseline"], y=b["metric"], mode="markers", name=baseline_label,
                                     marker={"symbol": "diamond-open", "color": NEUTRAL, "size": 12}), row=i + 1, col=1)
        style_axis(fig, sc, i, horizontal=True, lang=lang)
        label_ticks(fig, ks, lang, axis="y", row=i + 1, col=1)
    fig.update_layout(title=title or None, height=max(240, 80 * len(groups) + 26 * len(rows)),
                      margin={"l": 40, "r": 20, "b": 40})
    return polish(fig, legend=False)


def item_diff_histogram(diffs: Sequence[float], *, title: str = "", x_title: str = "B − A",
                        y_title: str = "") -> go.Figure:
    """Distribution of the per-item differences of one metric."""
    fig = go.Figure(go.Histogram(x=list(diffs), nbinsx=30, marker_color="#1F77B4"))
    fig.add_vline(x=0, line_color=NEUTRAL)
    fig.update_layout(title=title or None, height=280, xaxis_title=x_title, yaxis_title=y_title or None, bargap=0.05,
                      margin={"l": 40, "r": 20, "b": 40})
    return polish(fig, legend=False)


def sparkline(values: Sequence[float], *, baseline: float | None = None, color: str = "#00A67E",
              metric_key: str | None = None) -> go.Figure:
    """A tiny trend line (last runs of ONE configuration of a metric) with the baseline dotted; no axes."""
    fig = go.Figure(go.Scatter(y=list(values), mode="lines+markers", line={"color": color, "width": 2},
                               marker={"size": 4}, hovertemplate=f"%{{y:{d3_format(metric_key)}}}<extra></extra>"))
    if baseline is not None:
        fig.add_hline(y=baseline, line_dash="dot", line_color=NEUTRAL, line_width=1)
    fig.update_layout(height=70, margin={"l": 0, "r": 0, "t": 0, "b": 0}, showlegend=False,
                      xaxis={"visible": False}, yaxis={"visible": False})
    return fig
