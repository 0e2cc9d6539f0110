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

from voproshalych_eval.plots.layout import polish

WEBGL_THRESHOLD = 2_000
MAX_POINTS = 50_000
MAX_CATEGORIES = 30
CLIP_QUANTILE = 0.01
# distinct colours for many classes: Plotly's Dark24 and Light24 (designed as 24 mutually distinct hues each)
# and Alphabet (26), de-duplicated; more classes than that become "other"
_PALETTE = list(dict.fromkeys(qualitative.Dark24 + qualitative.Light24 + qualitative.Alphabet))
_SYMBOLS = {"chunk": "circle", "question": "diamond", "golden": "star", "vector": "circle"}
_SYMBOLS_3D = {"chunk": "circle", "question": "diamond", "golden": "square", "vector": "circle"}
GREY = "#B0B0B0"
DEFAULT_TEXTS = {"other": "other", "outside": "outside the frame (clipped)", "matches": "matches",
                 "picked": "picked", "shown": "shown {shown} of {total} points (random sample)"}


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


def _category_labels(series: pd.Series, max_categories: int = MAX_CATEGORIES, other: str = "other") -> pd.Series:
    """Readable category labels; all but the ``max_categories`` largest become ``other``."""

    def fmt(v: Any) -> str:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return "—"
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    labels = series.map(fmt)
    top = labels.value_counts().index[:max_categories]
    return labels.where(labels.isin(top), other)


def palette(n: int) -> list[str]:
    """``n`` distinct colours (cycled beyond the palette's 70-odd colours; callers cap categories first)."""
    return [_PALETTE[i % len(_PALETTE)] for i in range(n)]


def robust_ranges(coords: np.ndarray, *, quantile: float = CLIP_QUANTILE, pad: float = 0.05) -> list[tuple[float, float]]:
    """Per axis ``[q, 1 − q]`` quantiles widened by ``pad`` of their span: a few far points do not squeeze the
    rest of the map into a blob."""
    out = []
    for j in range(coords.shape[1]):
        col = coords[:, j]
        col = col[np.isfinite(col)]
        if not len(col):
            out.append((-1.0, 1.0))
            continue
        lo, hi = (float(np.quantile(col, quantile)), float(np.quantile(col, 1 - quantile))) if quantile > 0 else (
            float(col.min()), float(col.max()))
        span = (hi - lo) or 1.0
        out.append((lo - pad * span, hi + pad * span))
    return out


def sample_rows(n: int, max_points: int, *, keep: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
    """All rows when ``n <= max_points``; else a fixed random sample of ``max_points`` rows that always holds
    the rows in ``keep`` (highlighted or picked points), sorted."""
    if n <= max_points:
        return np.arange(n)
    must = np.flatnonzero(keep) if keep is not None else np.zeros(0, dtype=np.int64)
    rest = np.setdiff1d(np.arange(n), must)
    take = max(0, max_points - len(must))
    chosen = np.random.default_rng(seed).choice(rest, size=min(take, len(rest)), replace=False)
    return np.sort(np.r_[must, chosen]).astype(np.int64)


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
    max_points: int = MAX_POINTS,
    max_categories: int = MAX_CATEGORIES,
    clip_quantile: float = CLIP_QUANTILE,
    highlight: np.ndarray | None = None,
    picked: Sequence[int] = (),
    label_centres: bool = False,
    texts: dict[str, str] | None = None,
    seed: int = 0,
) -> go.Figure:
    """2D (``Scattergl`` above ``webgl_threshold`` points, else ``Scatter``) or 3D (``Scatter3d``) projection.

    ``meta`` rows are aligned with ``coords`` and need ``row, point_id, text, url`` columns (``row`` is the
    point's row in the vector set) plus ``color_by``. Hover: snippet, id, URL and the colour value.
    Categorical fields get one trace per value (legend click toggles it), the ``max_categories`` largest in
    distinct colours and the rest as ``other``; numeric fields with many levels a colour scale. Symbols
    distinguish kinds (chunk / question / golden).

    Scale: above ``max_points`` a fixed random sample is drawn (highlighted and picked points always kept);
    axis ranges are the ``[clip_quantile, 1 − clip_quantile]`` quantiles (:func:`robust_ranges`) and points
    outside are drawn on the frame's edge inside a ring (trace "outside the frame"); ``highlight`` (a boolean
    mask over the rows, e.g. a search) dims every other point and rings the matches; ``picked`` (positions)
    are marked with a large star and their id; ``label_centres`` writes each category's name at its median
    position. ``fig.layout.meta`` holds ``n_points``, ``n_shown``, ``n_clipped``, ``webgl``, ``sampled``.
    ``texts`` translates the added legend entries (:data:`DEFAULT_TEXTS`).
    """
    t = {**DEFAULT_TEXTS, **(texts or {})}
    n_total, dim = coords.shape if coords.ndim == 2 else (0, 2)
    three_d = dim == 3
    meta = meta.reset_index(drop=True)
    hl_all = np.asarray(highlight, dtype=bool) if highlight is not None else None
    keep = np.zeros(n_total, dtype=bool)
    if hl_all is not None:
        keep |= hl_all
    picked_all = [int(i) for i in picked if 0 <= int(i) < n_total]
    keep[picked_all] = True
    rows = sample_rows(n_total, max_points, keep=keep, seed=seed)
    sampled = len(rows) < n_total
    pos_of = {int(r): i for i, r in enumerate(rows)}
    coords = np.asarray(coords, dtype=np.float64)[rows]
    meta = meta.iloc[rows].reset_index(drop=True)
    hl = hl_all[rows] if hl_all is not None else None
    picked_pos = [pos_of[i] for i in picked_all if i in pos_of]
    n = len(rows)

    ranges = robust_ranges(coords, quantile=clip_quantile) if n else [(-1.0, 1.0)] * dim
    lo = np.asarray([r[0] for r in ranges])
    hi = np.asarray([r[1] for r in ranges])
    shown = np.clip(coords, lo, hi) if n else coords
    outside = (np.abs(shown - coords) > 0).any(axis=1) if n else np.zeros(0, dtype=bool)

    col = meta[color_by] if color_by in meta.columns else pd.Series(["—"] * n)
    custom = np.empty((n, 5), dtype=object)
    custom[:, 0] = meta["row"].to_numpy() if "row" in meta.columns else rows
    custom[:, 1] = meta["point_id"].astype(str).to_numpy()
    custom[:, 2] = meta["url"].fillna("—").astype(str).to_numpy() if "url" in meta.columns else "—"
    custom[:, 3] = [_snippet(x) for x in meta["text"]] if "text" in meta.columns else ""
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
    base_opacity = 0.85 if hl is None else 0.18

    def trace(mask: np.ndarray, name: str, color: Any, *, showscale: bool = False, colorscale: str | None = None,
              symbol: Any = None, msize: float | None = None, line: dict[str, Any] | None = None,
              opacity: float | None = None, legend: bool = True, text: Any = None) -> Any:
        sym = symbol if symbol is not None else (
            [symbols_map.get(k, "circle") for k in kinds[mask]] if multi_kind else "circle")
        sz = msize or size
        marker: dict[str, Any] = {"size": sz if not three_d else max(2, sz - 3), "color": color,
                                  "opacity": base_opacity if opacity is None else opacity, "symbol": sym}
        if line:
            marker["line"] = line
        if colorscale:
            marker.update(colorscale=colorscale, showscale=showscale,
                          colorbar={"title": {"text": color_title or color_by}})
        common: dict[str, Any] = {"name": name, "customdata": custom[mask], "hovertemplate": hover,
                                  "marker": marker, "mode": "markers+text" if text is not None else "markers",
                                  "showlegend": legend}
        if text is not None:
            common["text"] = text
            common["textposition"] = "top center"
        if three_d:
            return go.Scatter3d(x=shown[mask, 0], y=shown[mask, 1], z=shown[mask, 2], **common)
        cls = go.Scattergl if use_gl else go.Scatter
        return cls(x=shown[mask, 0], y=shown[mask, 1], **common)

    fig = go.Figure()
    labels: pd.Series | None = None
    if n and is_continuous(col):
        values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
        custom[:, 4] = [("—" if np.isnan(v) else f"{v:.4f}") for v in values]
        fig.add_trace(trace(np.ones(n, dtype=bool), color_title or color_by,
                            np.nan_to_num(values, nan=float(np.nanmin(values)) if np.isfinite(values).any() else 0.0),
                            showscale=True, colorscale="Viridis"))
        fig.update_layout(showlegend=False)
    elif n:
        labels = _category_labels(col, max_categories, t["other"])
        custom[:, 4] = labels.to_numpy()
        order = sorted(labels.unique(), key=lambda x: (x in ("—", t["other"]), -int((labels == x).sum()), x))
        colours = palette(len(order))
        for i, lab in enumerate(order):
            mask = (labels == lab).to_numpy()
            colour = GREY if lab in ("—", t["other"]) else colours[i]
            fig.add_trace(trace(mask, f"{lab} ({int(mask.sum())})", colour))
    if n and outside.any():
        fig.add_trace(trace(outside, f"{t['outside']} ({int(outside.sum())})", "rgba(0,0,0,0)", symbol="circle-open",
                            msize=size + 8, line={"width": 1.5, "color": "#444"}, opacity=0.9))
    if hl is not None and hl.any():
        fig.add_trace(trace(hl, f"{t['matches']} ({int(hl.sum())})", "rgba(0,0,0,0)", symbol="circle-open",
                            msize=size + 6, line={"width": 2, "color": "#D62728"}, opacity=1.0))
    if picked_pos:
        pm = np.zeros(n, dtype=bool)
        pm[picked_pos] = True
        fig.add_trace(trace(pm, t["picked"], "#D62728", symbol="star" if not three_d else "diamond",
                            msize=size + 14, line={"width": 1.5, "color": "#000"}, opacity=1.0,
                            text=[str(x) for x in custom[pm, 1]]))
    if label_centres and labels is not None:
        cats = [c for c in labels.unique() if c not in ("—", t["other"])]
        centres = [(c, np.median(shown[(labels == c).to_numpy()], axis=0)) for c in cats]
        if three_d:
            fig.add_trace(go.Scatter3d(x=[p[0] for _, p in centres], y=[p[1] for _, p in centres],
                                       z=[p[2] for _, p in centres], mode="text", text=[c[:30] for c, _ in centres],
                                       showlegend=False, hoverinfo="skip", textfont={"size": 11, "color": "#222"}))
        else:
            for c, pt in centres:
                fig.add_annotation(x=pt[0], y=pt[1], text=html.escape(c[:30]), showarrow=False,
                                   font={"size": 11, "color": "#222"}, bgcolor="rgba(255,255,255,0.7)")
    notes = []
    if sampled:
        notes.append(t["shown"].format(shown=f"{n:,}".replace(",", " "), total=f"{n_total:,}".replace(",", " ")))
    fig.update_layout(
        title={"text": title + (f"<br><sup>{'; '.join(notes)}</sup>" if notes else "")} if (title or notes) else None,
        height=height,
        margin={"l": 10, "r": 10, "t": 50 if (title or notes) else 10, "b": 10},
        legend={"itemsizing": "constant", "title": {"text": color_title or color_by}},
        dragmode="lasso" if not three_d else "orbit",
        hovermode="closest",
        meta={"n_points": int(n_total), "n_shown": int(n), "n_clipped": int(outside.sum()) if n else 0,
              "webgl": bool(use_gl and not three_d), "sampled": bool(sampled)},
        uirevision="keep",  # zoom and pan survive reruns (search, picks)
    )
    if three_d:
        fig.update_layout(scene={"xaxis": {"title": "UMAP-1", "range": list(ranges[0])},
                                 "yaxis": {"title": "UMAP-2", "range": list(ranges[1])},
                                 "zaxis": {"title": "UMAP-3", "range": list(ranges[2])}})
    else:
        fig.update_xaxes(title="UMAP-1", showticklabels=False, zeroline=False, range=list(ranges[0]))
        fig.update_yaxes(title="UMAP-2", showticklabels=False, zeroline=False, range=list(ranges[1]))
    # up to 30 categories with counts: a legend column right of the map, never over the points or the title
    return polish(fig, legend_side="right")


def synthetic_map(n: int = 20_000, *, n_classes: int = 40, seed: int = 0, dim: int = 2) -> tuple[np.ndarray, pd.DataFrame]:
    """Coordinates and metadata of a synthetic map (Gaussian blobs, a few far outliers) for scale checks:
    ``scatter_figure(*synthetic_map(20_000), "section")`` is what a 20,000-point question map looks like."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=8.0, size=(n_classes, dim))
    cls = rng.integers(0, n_classes, size=n)
    coords = centres[cls] + rng.normal(size=(n, dim))
    far = rng.choice(n, size=max(1, n // 2000), replace=False)
    coords[far] *= 12  # a few far points that would squeeze a min–max frame
    meta = pd.DataFrame({
        "row": np.arange(n), "point_id": [f"q:{i}" for i in range(n)],
        "kind": np.where(rng.random(n) < 0.1, "chunk", "question"),
        "text": [f"вопрос {i} о теме {c}" for i, c in enumerate(cls)], "url": None,
        "section": [f"тема {c:02d}" for c in cls],
    })
    return coords.astype(np.float32), meta


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
    return polish(fig, legend=False)


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
    return polish(fig, legend=False)


def standalone_html(fig: go.Figure) -> str:
    """The figure as a self-contained HTML page (plotly.js inlined; opens offline)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)
