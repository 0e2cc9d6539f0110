"""Charts of the Real users page: utilization long tail, coverage gaps, topic sizes and trends, domain charts
(the topic map is :func:`voproshalych_eval.plots.embedding_space.scatter_figure`, one map for every page).

Pure functions returning ``plotly.graph_objects.Figure``; texts are parameters (pages pass them in the
user's language). Every builder takes the DataFrame the page also offers as a CSV download and finishes the
figure with :func:`~voproshalych_eval.plots.layout.polish` (legend outside the plot, toolbar off the title);
share axes are bounded by the catalog's 0–1 scale, count and score axes start at 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from voproshalych_eval.plots.layout import from_zero, polish, value_range

COLOR = "#B6E880"  # real_users tier colour
ACCENT = "#EF553B"
MUTED = "#636EFA"


def long_tail(per_chunk: pd.DataFrame, *, title: str = "", x_title: str = "", y_title: str = "",
              topk_name: str = "top-k", top1_name: str = "top-1") -> go.Figure:
    """Retrieval count per chunk, chunks sorted by count (the long tail), top-k and top-1."""
    d = per_chunk.sort_values("retrieved_topk", ascending=False).reset_index(drop=True)
    fig = go.Figure()
    fig.add_bar(x=np.arange(1, len(d) + 1), y=d["retrieved_topk"], name=topk_name, marker_color=COLOR,
                customdata=np.c_[d["chunk_id"], d["url"]],
                hovertemplate="#%{customdata[0]}<br>%{customdata[1]}<br>%{y}<extra></extra>")
    fig.add_scatter(x=np.arange(1, len(d) + 1), y=d["retrieved_top1"], name=top1_name, mode="lines",
                    line={"color": ACCENT})
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=360)
    fig.update_yaxes(range=from_zero(d["retrieved_topk"]))
    return polish(fig, legend=True)


def pages_bar(per_page: pd.DataFrame, *, title: str = "", topk_name: str = "top-k", top1_name: str = "top-1") -> go.Figure:
    """Retrieval counts per page (URL), top-k and top-1."""
    d = per_page.sort_values("retrieved_topk")
    labels = d["url"].astype(str).str.rsplit("/", n=1).str[-1]
    fig = go.Figure()
    fig.add_bar(y=labels, x=d["retrieved_topk"], orientation="h", name=topk_name, marker_color=COLOR)
    fig.add_bar(y=labels, x=d["retrieved_top1"], orientation="h", name=top1_name, marker_color=ACCENT)
    fig.update_layout(title=title, barmode="group", height=max(320, 22 * len(d)))
    fig.update_xaxes(range=from_zero(d["retrieved_topk"]))
    return polish(fig, legend=True)


#: hover words of the gap and topic charts (pages pass them in the UI language)
HOVER_TEXTS = {"gap": "gap score", "answered": "effectively answered", "non_empty": "non-empty answer",
               "distance": "distance to the KB"}


def gaps_bar(gaps: pd.DataFrame, *, title: str = "", x_title: str = "", top_n: int = 15,
             texts: dict[str, str] | None = None) -> go.Figure:
    """Coverage-gap score of the top topics (hover: size, effective and raw answered share, distance)."""
    t = {**HOVER_TEXTS, **(texts or {})}
    d = gaps.head(top_n).iloc[::-1]
    eff = d["effective_answered_share"] if "effective_answered_share" in d else d["answered_share"]
    fig = go.Figure(go.Bar(
        y=d["name"], x=d["gap_score"], orientation="h", marker_color=ACCENT,
        customdata=np.c_[d["size"], eff.astype(float), d["answered_share"].astype(float),
                         d["nearest_distance"].astype(float)],
        hovertemplate=f"%{{y}}<br>{t['gap']} %{{x:.3f}}<br>n = %{{customdata[0]}}<br>{t['answered']} "
                      f"%{{customdata[1]:.0%}} ({t['non_empty']} %{{customdata[2]:.0%}})<br>{t['distance']} "
                      "%{customdata[3]:.3f}<extra></extra>",
    ))
    fig.update_layout(title=title, xaxis_title=x_title, height=max(320, 28 * len(d)), margin={"l": 10})
    fig.update_xaxes(range=from_zero(d["gap_score"]))
    return polish(fig, legend=False)


def topics_scatter(topics: pd.DataFrame, *, title: str = "", x_title: str = "", y_title: str = "",
                   texts: dict[str, str] | None = None) -> go.Figure:
    """Topics as bubbles: effective answered share (x; the raw one without answer classes, 0–1 from the
    catalog) vs nearest-chunk distance (y, from 0), size = questions, colour = gap score."""
    t = {**HOVER_TEXTS, **(texts or {})}
    d = topics[topics["kind"] == "cluster"]
    fig = go.Figure(go.Scatter(
        x=d["effective_answered_share"] if "effective_answered_share" in d else d["answered_share"],
        y=d["nearest_distance"], mode="markers", text=d["name"],
        marker={"size": np.sqrt(d["size"].astype(float)) * 3, "color": d.get("gap_score"), "colorscale": "Reds",
                "showscale": True, "line": {"width": 1, "color": "#444"}, "colorbar": {"title": {"text": t["gap"]}}},
        hovertemplate=f"%{{text}}<br>{t['answered']} %{{x:.0%}}<br>{t['distance']} %{{y:.3f}}<extra></extra>",
    ))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=420)
    fig.update_xaxes(range=value_range("effective_answered_rate"), tickformat=".0%")
    fig.update_yaxes(range=from_zero(d["nearest_distance"]))
    return polish(fig, legend=False)


def topic_trend(trend: pd.DataFrame, names: dict[int, str], *, title: str = "", top_n: int = 8,
                value: str = "n", y_title: str = "", x_title: str = "",
                highlight: list[int] | None = None) -> go.Figure:
    """Monthly questions (``value="n"``) or share of the month (``value="share"``) of the largest topics and
    of the ``highlight`` topics (emerging / growing ones, drawn thicker)."""
    if trend.empty:
        return polish(go.Figure().update_layout(title=title))
    top = list(trend.groupby("topic")["n"].sum().nlargest(top_n).index)
    top += [t for t in (highlight or []) if t not in top]
    d = trend[trend["topic"].isin(top)].copy()
    d["name"] = d["topic"].map(names).fillna(d["topic"].astype(str)).str.slice(0, 40)
    thick = {names.get(t, "")[:40] for t in (highlight or [])}
    fig = go.Figure([go.Scatter(x=g["period"], y=g[value], name=name, mode="lines+markers", legendgroup=name,
                                line={"width": 4} if name in thick else None)
                     for name, g in d.groupby("name", sort=False)])  # one line per topic, in order of appearance
    fig.update_layout(title=title, height=400, yaxis_title=y_title, xaxis_title=x_title, legend_title_text="")
    top = float(d[value].max()) if len(d) else 0.0
    if value == "share":  # a share of the month: from 0, never above the 0–1 scale of the catalog
        share_axis = value_range("answered_rate") or [0.0, 1.05]
        fig.update_yaxes(tickformat=".0%", range=[0.0, min(share_axis[1], top * 1.1 if top > 0 else share_axis[1])])
    else:
        fig.update_yaxes(range=from_zero([top]))
    return polish(fig, legend=True, legend_side="right")


def volume(df: pd.DataFrame, *, title: str = "", rate_name: str = "answered rate",
           effective_name: str = "effectively answered", n_name: str = "questions") -> go.Figure:
    """Questions per period (bars), the raw and (when given) the effective answered rate (lines, right axis)."""
    fig = go.Figure()
    fig.add_bar(x=df["period"], y=df["questions"], name=n_name, marker_color=COLOR)
    fig.add_scatter(x=df["period"], y=df["answered_rate"], name=rate_name, yaxis="y2", mode="lines+markers",
                    line={"color": ACCENT, "dash": "dot"})
    if "effective_answered_rate" in df:
        fig.add_scatter(x=df["period"], y=df["effective_answered_rate"], name=effective_name, yaxis="y2",
                        mode="lines+markers", line={"color": ACCENT})
    fig.update_layout(title=title, height=360,
                      yaxis2={"overlaying": "y", "side": "right", "range": value_range("answered_rate"),
                              "tickformat": ".0%"})
    fig.update_layout(yaxis={"range": from_zero(df["questions"])})
    return polish(fig, legend=True)


def bar(df: pd.DataFrame, x: str, y: str, *, title: str = "", horizontal: bool = False, color: str = COLOR) -> go.Figure:
    """A plain bar chart of two columns."""
    if horizontal:
        d = df.iloc[::-1]
        fig = go.Figure(go.Bar(y=d[x].astype(str), x=d[y], orientation="h", marker_color=color))
        fig.update_layout(height=max(300, 22 * len(d)))
        fig.update_xaxes(range=from_zero(d[y]))
    else:
        fig = go.Figure(go.Bar(x=df[x].astype(str), y=df[y], marker_color=color))
        fig.update_layout(height=340)
        fig.update_yaxes(range=from_zero(df[y]))
    fig.update_layout(title=title)
    return polish(fig, legend=False)


def length_hist(lengths: pd.DataFrame, *, title: str = "", x_title: str = "") -> go.Figure:
    """Distribution of question length in characters (clipped at the 99th percentile)."""
    cap = float(np.percentile(lengths["chars"], 99)) if len(lengths) else 0
    fig = go.Figure(go.Histogram(x=lengths["chars"].clip(upper=cap), nbinsx=40, marker_color=MUTED))
    fig.update_layout(title=title, xaxis_title=x_title, height=320)
    return polish(fig, legend=False)
