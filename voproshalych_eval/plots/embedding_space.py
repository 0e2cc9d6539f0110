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
#: plotly's numeric codes of the 2D symbols (a numeric array validates ~5× faster than a list of names)
_SYMBOL_CODES = {"circle": 0, "square": 1, "diamond": 2, "star": 17}
_SYMBOLS_3D = {"chunk": "circle", "question": "diamond", "golden": "square", "vector": "circle"}
GREY = "#B0B0B0"
#: search matches: a colour no category gets (the palettes hold no black), ringed in white so that it reads on
#: any category colour and in both themes
MATCH_COLOR = "#000000"
MATCH_LINE = "#FFFFFF"
PICK_COLOR = "#D62728"
#: a density layer under the points from this many points (2D)
DENSITY_THRESHOLD = 2_000
DENSITY_BINS = 90
#: the smallest plot area assumed when placing labels (pixels; the legend sits to the right of it): labels are
#: placed in data units, so in a larger plot (or zoomed in) they only move further apart
LABEL_AREA = (560, 480)
LABEL_FONT = 11
DEFAULT_TEXTS = {"other": "other", "outside": "outside the frame (clipped)", "matches": "matches",
                 "picked": "picked", "shown": "shown {shown} of {total} points (random sample)"}


def marker_style(n: int, *, three_d: bool = False) -> tuple[float, float]:
    """``(size, opacity)`` of the points of an ``n``-point map: smaller and more transparent as ``n`` grows, so
    that overlapping points add up to density instead of one solid blob.

    ``size = clip(12 − 2.2·log10 n, 2.5, 8)`` px (3D: 1.5 px less, at least 2); ``opacity = clip(√(800 / n), 0.2,
    0.85)`` — 100 points: 7.6 px, 0.85; 3,668: 4.1 px, 0.47; 20,000: 2.5 px, 0.2."""
    n = max(int(n), 1)
    size = float(np.clip(12 - 2.2 * np.log10(n), 2.5, 8))
    opacity = float(np.clip(np.sqrt(800 / n), 0.2, 0.85))
    return (max(2.0, size - 1.5) if three_d else size), opacity


def density_grid(xy: np.ndarray, ranges: Sequence[tuple[float, float]], *, bins: int = DENSITY_BINS,
                 sigma: float = 1.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(x_centres, y_centres, z)``: a 2-D histogram of the points over the frame, smoothed with a Gaussian of
    ``sigma`` bins and scaled by its square root to 0–1 (``z[j, i]`` for ``y_centres[j]``, ``x_centres[i]``) — the
    density layer under a large map (a few kilobytes whatever the number of points)."""
    (x0, x1), (y0, y1) = ranges[0], ranges[1]
    H, xe, ye = np.histogram2d(xy[:, 0], xy[:, 1], bins=bins, range=[[x0, x1], [y0, y1]])
    radius = max(1, int(3 * sigma))
    k = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    k /= k.sum()
    H = np.apply_along_axis(np.convolve, 0, H, k, mode="same")
    H = np.apply_along_axis(np.convolve, 1, H, k, mode="same")
    z = np.sqrt(H / H.max()) if H.max() > 0 else H
    return (xe[:-1] + xe[1:]) / 2, (ye[:-1] + ye[1:]) / 2, z.T


def label_box(text: str, font_size: int = LABEL_FONT) -> tuple[float, float]:
    """A generous estimate of a label's box in pixels (``width, height``): 0.64 em per character plus padding."""
    return 0.64 * font_size * len(text) + 8, font_size * 1.45 + 4


#: where a label may go around its anchor, in units of its own half-width / height (tried in this order)
_OFFSETS = [(0, 0)] + [(ux * r, uy * r) for r in (1, 2, 3, 4)
                       for ux, uy in ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))]


def place_labels(anchors: np.ndarray, boxes: Sequence[tuple[float, float]], *,
                 area: tuple[float, float] = LABEL_AREA, pad: float = 2.0) -> list[tuple[float, float] | None]:
    """Greedy label placement without overlaps: for each label in the given order (put the most important
    first), the first offset from its anchor (pixels, y up) among :data:`_OFFSETS` whose box — ``boxes[i]`` =
    ``(width, height)`` centred at anchor + offset, widened by ``pad`` — overlaps no label placed before and
    stays inside the ``area``; None when every position is taken (the label is left out; its name stays in the
    legend)."""
    placed: list[tuple[float, float, float, float]] = []
    out: list[tuple[float, float] | None] = []
    W, H = area
    for (ax, ay), (w, h) in zip(np.asarray(anchors, dtype=float), boxes, strict=True):
        choice = None
        for ux, uy in _OFFSETS:
            dx, dy = ux * (w / 2 + pad), uy * (h + pad)
            cx, cy = ax + dx, ay + dy
            box = (cx - w / 2 - pad, cy - h / 2 - pad, cx + w / 2 + pad, cy + h / 2 + pad)
            if box[0] < 0 or box[1] < 0 or box[2] > W or box[3] > H:
                continue
            if any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                continue
            choice = (dx, dy)
            placed.append(box)
            break
        out.append(choice)
    return out


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
    axis_name: str = "UMAP",
    density: bool | None = None,
    label_area: tuple[float, float] = LABEL_AREA,
) -> go.Figure:
    """2D (``Scattergl`` above ``webgl_threshold`` points, else ``Scatter``) or 3D (``Scatter3d``) projection.

    ``meta`` rows are aligned with ``coords`` and need ``row, point_id, text, url`` columns (``row`` is the
    point's row in the vector set) plus ``color_by``. Hover: snippet, id, URL and the colour value.
    Categorical fields get one trace per value (legend click toggles it), the ``max_categories`` largest in
    distinct colours and the rest as ``other``; numeric fields with many levels a colour scale. Symbols
    distinguish kinds (chunk / question / golden).

    Scale: above ``max_points`` a fixed random sample is drawn (highlighted and picked points always kept);
    axis ranges are the ``[clip_quantile, 1 − clip_quantile]`` quantiles (:func:`robust_ranges`) and points
    outside are drawn on the frame's edge inside a ring (trace "outside the frame"). Marker size and opacity
    follow the number of points (:func:`marker_style`); from :data:`DENSITY_THRESHOLD` points a 2D map gets a
    density layer under the points (:func:`density_grid`; ``density`` forces it on or off). ``highlight`` (a
    boolean mask over the rows, e.g. a search) dims every other point and draws the matches on top in
    :data:`MATCH_COLOR` with their own legend entry "matches (n)"; ``picked`` (positions) are marked with a star
    (2D) or a small diamond (3D) and their id; ``label_centres`` writes each category's name at its median
    position, largest categories first, moved aside (with a leader line) or left out so that no two labels
    overlap in a plot area of at least ``label_area`` pixels (:func:`place_labels`; 3D: at the centres as they
    are).
    ``axis_name`` titles the axes (``UMAP-1`` …, ``PCA-1`` …). ``fig.layout.meta`` holds ``n_points``,
    ``n_shown``, ``n_clipped``, ``webgl``, ``sampled``, ``density``, ``n_matches``, ``labels_shown``,
    ``labels_hidden``. ``texts`` translates the added legend entries (:data:`DEFAULT_TEXTS`).
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
    auto_size, auto_opacity = marker_style(n)
    size = marker_size or auto_size
    kinds = meta["kind"].astype(str) if "kind" in meta.columns else pd.Series(["vector"] * n)
    symbols_map = _SYMBOLS_3D if three_d else _SYMBOLS
    multi_kind = kinds.nunique() > 1
    point_symbols = (np.asarray([symbols_map.get(k, "circle") for k in kinds], dtype=object) if three_d else
                     np.asarray([_SYMBOL_CODES[symbols_map.get(k, "circle")] for k in kinds], dtype=np.int16))
    hover = (
        "<b>%{customdata[1]}</b><br>%{customdata[3]}<br><i>%{customdata[2]}</i><br>"
        + html.escape(color_title or color_by)
        + ": %{customdata[4]}<extra></extra>"
    )
    use_gl = n > webgl_threshold
    has_hl = hl is not None and bool(hl.any())
    base_opacity = auto_opacity if not has_hl else max(0.06, auto_opacity * 0.35)

    def trace(mask: np.ndarray, name: str, color: Any, *, showscale: bool = False, colorscale: str | None = None,
              symbol: Any = None, msize: float | None = None, line: dict[str, Any] | None = None,
              opacity: float | None = None, legend: bool = True, text: Any = None) -> Any:
        sym = symbol if symbol is not None else (point_symbols[mask] if multi_kind else "circle")
        sz = msize or size
        marker: dict[str, Any] = {"size": sz if not three_d else max(2.0, sz - 1.5), "color": color,
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
        # built here from checked arrays: plotly's per-point validation (symbols, colours, customdata) cost
        # 4-8 s at 20,000 points and is skipped (``_validate=False``, plotly's own switch)
        if three_d:
            common["marker"] = go.scatter3d.Marker(**marker, _validate=False)
            return go.Scatter3d(x=shown[mask, 0], y=shown[mask, 1], z=shown[mask, 2], **common, _validate=False)
        common["marker"] = (go.scattergl.Marker if use_gl else go.scatter.Marker)(**marker, _validate=False)
        cls = go.Scattergl if use_gl else go.Scatter
        return cls(x=shown[mask, 0], y=shown[mask, 1], **common, _validate=False)

    fig = go.Figure()
    with_density = bool(n and not three_d and (density if density is not None else n >= DENSITY_THRESHOLD))
    if with_density:
        gx, gy, gz = density_grid(shown, ranges)
        fig.add_trace(go.Contour(x=gx, y=gy, z=gz, name="density", showscale=False, hoverinfo="skip",
                                 showlegend=False, ncontours=8, line={"width": 0.5, "color": "rgba(90,90,90,0.35)"},
                                 contours={"coloring": "fill", "start": 0.12, "end": 1.0, "size": 0.11},
                                 colorscale=[[0.0, "rgba(120,120,140,0.0)"], [1.0, "rgba(120,120,140,0.45)"]]))
    labels: pd.Series | None = None
    label_mask: dict[Any, np.ndarray] = {}
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
        codes, uniques = pd.factorize(labels.to_numpy(dtype=object))  # one pass; masks are integer compares
        label_mask = {lab: codes == i for i, lab in enumerate(uniques)}
        order = sorted(uniques, key=lambda x: (x in ("—", t["other"]), -int(label_mask[x].sum()), x))
        colours = palette(len(order))
        for i, lab in enumerate(order):
            mask = label_mask[lab]
            colour = GREY if lab in ("—", t["other"]) else colours[i]
            fig.add_trace(trace(mask, f"{lab} ({int(mask.sum())})", colour))
    if n and outside.any():
        fig.add_trace(trace(outside, f"{t['outside']} ({int(outside.sum())})", "rgba(0,0,0,0)", symbol="circle-open",
                            msize=size + 8, line={"width": 1.5, "color": "#444"}, opacity=0.9))
    if has_hl:
        assert hl is not None
        fig.add_trace(trace(hl, f"{t['matches']} ({int(hl.sum())})", MATCH_COLOR, symbol="circle",
                            msize=max(size + 3, 6.0), line={"width": 1, "color": MATCH_LINE}, opacity=1.0))
    if picked_pos:
        pm = np.zeros(n, dtype=bool)
        pm[picked_pos] = True
        fig.add_trace(trace(pm, t["picked"], PICK_COLOR, symbol="star" if not three_d else "diamond",
                            msize=size + 10 if not three_d else size + 3.5,
                            line={"width": 1.5 if not three_d else 1, "color": "#000"}, opacity=1.0,
                            text=[str(x) for x in custom[pm, 1]]))
    labels_shown = labels_hidden = 0
    if label_centres and labels is not None:
        cats = [c for c in labels.value_counts().index if c not in ("—", t["other"])]  # largest first
        centres = [(c[:30], np.median(shown[label_mask[c]], axis=0)) for c in cats]
        if three_d:
            fig.add_trace(go.Scatter3d(x=[p[0] for _, p in centres], y=[p[1] for _, p in centres],
                                       z=[p[2] for _, p in centres], mode="text", text=[c for c, _ in centres],
                                       showlegend=False, hoverinfo="skip", textfont={"size": LABEL_FONT, "color": "#222"}))
            labels_shown = len(centres)
        elif centres:
            span = np.asarray([hi[0] - lo[0], hi[1] - lo[1]], dtype=float)
            span[span <= 0] = 1.0
            pts = np.asarray([p for _, p in centres], dtype=float)
            anchors = (pts - lo[:2]) / span * np.asarray(label_area, dtype=float)
            offsets = place_labels(anchors, [label_box(c) for c, _ in centres], area=label_area)
            notes_ = []
            for (c, pt), off in zip(centres, offsets, strict=True):
                if off is None:
                    labels_hidden += 1
                    continue
                moved = off != (0, 0)
                # the label's place in data units (a leader line from the anchor): zooming in or a plot
                # larger than ``label_area`` only moves labels apart, never together
                lx = float(pt[0] + off[0] / label_area[0] * span[0])
                ly = float(pt[1] + off[1] / label_area[1] * span[1])
                notes_.append({"x": float(pt[0]), "y": float(pt[1]), "text": html.escape(c), "showarrow": moved,
                               **({"ax": lx, "ay": ly, "axref": "x", "ayref": "y", "arrowwidth": 1,
                                   "arrowcolor": "#666", "arrowhead": 0, "standoff": 2} if moved else {}),
                               "font": {"size": LABEL_FONT, "color": "#222"}, "bgcolor": "rgba(255,255,255,0.75)"})
            labels_shown = len(notes_)
            fig.update_layout(annotations=notes_)  # at once: one add_annotation each re-validates all before it
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
              "webgl": bool(use_gl and not three_d), "sampled": bool(sampled), "density": with_density,
              "n_matches": int(hl.sum()) if hl is not None else 0, "labels_shown": labels_shown,
              "labels_hidden": labels_hidden},
        uirevision="keep",  # zoom and pan survive reruns (search, picks)
    )
    if three_d:
        fig.update_layout(scene={"xaxis": {"title": f"{axis_name}-1", "range": list(ranges[0])},
                                 "yaxis": {"title": f"{axis_name}-2", "range": list(ranges[1])},
                                 "zaxis": {"title": f"{axis_name}-3", "range": list(ranges[2])}})
    else:
        fig.update_xaxes(title=f"{axis_name}-1", showticklabels=False, zeroline=False, range=list(ranges[0]),
                         showgrid=not with_density)
        fig.update_yaxes(title=f"{axis_name}-2", showticklabels=False, zeroline=False, range=list(ranges[1]),
                         showgrid=not with_density)
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
