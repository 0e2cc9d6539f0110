"""Charts of the embedding-space explorer (Tier 0): projection scatter, nn-distance histogram, outliers.

Pure functions returning ``plotly.graph_objects.Figure``; texts (titles, axis labels) are parameters so
pages pass them in the user's language. Every point carries ``customdata[0]`` = its row in the vector
set, so a selection maps back to rows whatever trace it falls in.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

WEBGL_THRESHOLD = 1_000
MAX_CATEGORIES = 24
_PALETTE = qualitative.Plotly + qualitative.D3 + qualitative.Set2 + qualitative.Dark2
_SYMBOLS = {"chunk": "circle", "question": "diamond", "golden": "star", "vector": "circle"}
_SYMBOLS_3D = {"chunk": "circle", "question": "diamond", "golden": "square", "vector": "circle"}


def _snippet(value: Any, width: int = 140, line: int = 60) -> str:
    s = " ".join(str(value or "").split())
    if len(s) > width:
        s = s[: width - 1] + "…"
    s = html.escape(s)
    return "<br>".join(s[i : i + line] for i in range(0, len(s), line))


def is_continuous(series: pd.Series, max_levels: int = 12) -> bool:
    """Numeric with more than ``max_levels`` distinct values -> a colour scale; otherwise categories."""
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return False
    return int(series.dropna().nunique()) > max_levels


def _category_labels(series: pd.Series) -> pd.Series:
    def fmt(v: Any) -> str:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return "—"
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    labels = series.map(fmt)
    top = labels.value_counts().index[:MAX_CATEGORIES]
    return labels.where(labels.isin(top), "other")


def scatter_figure(
    coords: np.ndarray,
    meta: pd.DataFrame,
    color_by: str,
    *,
    title: str = "",
    color_title: str | None = None,
    webgl_threshold: int = WEBGL_THRESHOLD,
    height: int = 640,
    marker_size: float | None = None,
) -> go.Figure:
    """2D (``Scattergl`` above ``webgl_threshold`` points, else ``Scatter``) or 3D (``Scatter3d``) projection.

    ``meta`` rows are aligned with ``coords`` and need ``row, point_id, text, url`` columns (``row`` is the
    point's row in the vector set) plus ``color_by``. Hover: snippet, id, URL and the colour value.
    Categorical fields get one trace per value (legend click toggles it); numeric fields with many
    levels (``outlier_score``) a colour scale. Symbols distinguish kinds (chunk / question / golden).
    """
    n, dim = coords.shape if coords.ndim == 2 else (0, 2)
    three_d = dim == 3
    meta = meta.reset_index(drop=True)
    col = meta[color_by] if color_by in meta.columns else pd.Series(["—"] * n)
    custom = np.empty((n, 5), dtype=object)
    custom[:, 0] = meta["row"].to_numpy() if "row" in meta.columns else np.arange(n)
    custom[:, 1] = meta["point_id"].astype(str).to_numpy()
    custom[:, 2] = meta["url"].fillna("—").astype(str).to_numpy() if "url" in meta.columns else "—"
    custom[:, 3] = [_snippet(t) for t in meta["text"]] if "text" in meta.columns else ""
    size = marker_size or (3 if n > 20_000 else 5 if n > 3_000 else 7)
    kinds = meta["kind"].astype(str) if "kind" in meta.columns else pd.Series(["vector"] * n)
    symbols_map = _SYMBOLS_3D if three_d else _SYMBOLS
    multi_kind = kinds.nunique() > 1
    hover = (
        "<b>%{customdata[1]}</b><br>%{customdata[3]}<br><i>%{customdata[2]}</i><br>"
        + html.escape(color_title or color_by)
        + ": %{customdata[4]}<extra></extra>"
    )
    use_gl = n > webgl_threshold

    def trace(mask: np.ndarray, name: str, color: Any, showscale: bool = False, colorscale: str | None = None) -> Any:
        sym = [symbols_map.get(k, "circle") for k in kinds[mask]] if multi_kind else "circle"
        marker: dict[str, Any] = {"size": size if not three_d else max(2, size - 3), "color": color, "opacity": 0.85,
                                  "symbol": sym}
        if colorscale:
            marker.update(colorscale=colorscale, showscale=showscale,
                          colorbar={"title": {"text": color_title or color_by}})
        common = {"name": name, "customdata": custom[mask], "hovertemplate": hover, "marker": marker,
                  "mode": "markers"}
        if three_d:
            return go.Scatter3d(x=coords[mask, 0], y=coords[mask, 1], z=coords[mask, 2], **common)
        cls = go.Scattergl if use_gl else go.Scatter
        return cls(x=coords[mask, 0], y=coords[mask, 1], **common)

    fig = go.Figure()
    if n and is_continuous(col):
        values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        custom[:, 4] = [("—" if np.isnan(v) else f"{v:.4f}") for v in values]
        fig.add_trace(trace(np.ones(n, dtype=bool), color_title or color_by,
                            np.nan_to_num(values, nan=float(np.nanmin(values)) if np.isfinite(values).any() else 0.0),
                            showscale=True, colorscale="Viridis"))
        fig.update_layout(showlegend=False)
    elif n:
        labels = _category_labels(col)
        custom[:, 4] = labels.to_numpy()
        order = sorted(labels.unique(), key=lambda s: (s in ("—", "other"), -int((labels == s).sum()), s))
        for i, lab in enumerate(order):
            mask = (labels == lab).to_numpy()
            color = "#B0B0B0" if lab in ("—", "other") else _PALETTE[i % len(_PALETTE)]
            fig.add_trace(trace(mask, f"{lab} ({int(mask.sum())})", color))
    fig.update_layout(
        title={"text": title} if title else None,
        height=height,
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        legend={"itemsizing": "constant", "title": {"text": color_title or color_by}},
        dragmode="lasso" if not three_d else "orbit",
        hovermode="closest",
    )
    if three_d:
        fig.update_layout(scene={"xaxis": {"title": "UMAP-1"}, "yaxis": {"title": "UMAP-2"}, "zaxis": {"title": "UMAP-3"}})
    else:
        fig.update_xaxes(title="UMAP-1", showticklabels=False, zeroline=False)
        fig.update_yaxes(title="UMAP-2", showticklabels=False, zeroline=False)
    return fig


def nn_distance_histogram(
    distances: np.ndarray,
    *,
    metric: str = "cosine",
    title: str = "",
    x_title: str | None = None,
    y_title: str = "count",
    nbins: int = 50,
    color: str = "#636EFA",
) -> go.Figure:
    """Histogram of all ``N x k`` nearest-neighbour distances (the distribution behind avg/std_nn_distance)."""
    d = np.asarray(distances, dtype=float).ravel()
    fig = go.Figure(go.Histogram(x=d, nbinsx=nbins, marker_color=color, name="d"))
    if d.size:
        fig.add_vline(x=float(d.mean()), line_dash="dash", line_color="#EF553B",
                      annotation_text=f"mean {d.mean():.4f}", annotation_position="top right")
    fig.update_layout(
        title={"text": title} if title else None,
        xaxis_title=x_title or ("cosine distance 1 − cos" if metric == "cosine" else "Euclidean distance"),
        yaxis_title=y_title,
        bargap=0.05,
        height=340,
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
    )
    return fig


def outlier_bar_chart(
    outliers: Sequence[dict[str, Any]] | pd.DataFrame,
    *,
    metric: str = "cosine",
    title: str = "",
    x_title: str | None = None,
    color: str = "#636EFA",
) -> go.Figure:
    """Horizontal bars: the top outliers by mean distance to their k nearest neighbours (largest on top)."""
    df = pd.DataFrame(outliers)
    fig = go.Figure()
    if len(df):
        df = df.sort_values("score", ascending=True)
        fig.add_trace(
            go.Bar(
                x=df["score"],
                y=df["point_id"].astype(str),
                orientation="h",
                marker_color=color,
                customdata=np.stack([df["text"].map(_snippet), df["url"].fillna("—").astype(str)], axis=1),
                hovertemplate="<b>%{y}</b><br>%{customdata[0]}<br><i>%{customdata[1]}</i><br>score %{x:.4f}<extra></extra>",
            )
        )
    fig.update_layout(
        title={"text": title} if title else None,
        xaxis_title=x_title or ("mean cosine distance to k NN" if metric == "cosine" else "mean Euclidean distance to k NN"),
        height=max(260, 22 * len(df) + 80),
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
    )
    return fig


def standalone_html(fig: go.Figure) -> str:
    """The figure as a self-contained HTML page (plotly.js inlined; opens offline)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)
