"""Tier 0 chart builders: traces, WebGL switch, selection mapping via customdata, standalone HTML."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from voproshalych_eval.plots import embedding_space as charts


def _meta(n: int) -> pd.DataFrame:
    return pd.DataFrame({
        "row": np.arange(n) + 100,
        "point_id": [f"chunk:{i}" for i in range(n)],
        "kind": ["chunk"] * (n - 3) + ["question"] * 3,
        "text": ["текст <b>" + str(i) for i in range(n)],
        "url": [None if i % 5 == 0 else f"https://x/{i % 3}" for i in range(n)],
        "section": [str(i % 3) for i in range(n)],
        "outlier_score": np.linspace(0, 1, n),
    })


def test_categorical_traces_and_customdata() -> None:
    fig = charts.scatter_figure(np.random.default_rng(0).normal(size=(30, 2)), _meta(30), "section", clip_quantile=0)
    assert len(fig.data) == 3 and all(isinstance(t, go.Scatter) for t in fig.data)
    rows = sorted(int(c[0]) for t in fig.data for c in t.customdata)
    assert rows == list(range(100, 130))  # every point maps back to its vector-set row
    assert "&lt;b&gt;" in fig.data[0].customdata[0][3]  # texts are escaped in hovers


def test_continuous_webgl_and_3d() -> None:
    fig = charts.scatter_figure(np.zeros((1500, 2)), _meta(1500), "outlier_score")
    assert len(fig.data) == 1 and isinstance(fig.data[0], go.Scatter)  # SVG up to 2,000 points
    fig = charts.scatter_figure(np.zeros((2500, 2)), _meta(2500), "outlier_score")
    points = [t for t in fig.data if t.name != "density"]
    assert len(points) == 1 and isinstance(points[0], go.Scattergl) and fig.layout.meta["webgl"]
    fig3 = charts.scatter_figure(np.zeros((20, 3)), _meta(20), "kind")
    assert all(isinstance(t, go.Scatter3d) for t in fig3.data)
    html = charts.standalone_html(fig3)
    assert "<html>" in html[:200] and "plotly" in html.lower() and len(html) > 1_000_000


def test_histogram_and_outliers() -> None:
    h = charts.nn_distance_histogram(np.array([[0.1, 0.2], [0.3, 0.4]]), metric="euclidean")
    assert "Euclidean" in h.layout.xaxis.title.text
    out = [{"point_id": "q:1", "score": 0.7, "text": "a", "url": None}, {"point_id": "q:2", "score": 0.9, "text": "b", "url": "u"}]
    b = charts.outlier_bar_chart(out)
    assert list(b.data[0].y) == ["q:1", "q:2"]  # largest on top (last bar)
    assert len(charts.outlier_bar_chart([]).data) == 0


def test_robust_frame_clips_far_points_to_the_edge_with_a_ring() -> None:
    rng = np.random.default_rng(0)
    coords = rng.normal(size=(1000, 2))
    coords[:5] *= 200  # a few far points
    fig = charts.scatter_figure(coords, _meta(1000), "section")
    (x0, x1), (y0, y1) = fig.layout.xaxis.range, fig.layout.yaxis.range
    assert x1 - x0 < 12 and y1 - y0 < 12  # the frame follows the bulk, not the five far points
    ring = [t for t in fig.data if t.name.startswith("outside the frame")]
    assert len(ring) == 1 and fig.layout.meta["n_clipped"] == len(ring[0].x) >= 5
    xs = np.concatenate([np.asarray(t.x) for t in fig.data])
    assert xs.min() >= x0 - 1e-9 and xs.max() <= x1 + 1e-9  # every point drawn inside the frame
    far_rows = {int(c[0]) for c in ring[0].customdata}
    assert {100, 101, 102, 103, 104} <= far_rows


def test_many_classes_get_distinct_colours_then_other() -> None:
    coords, meta = charts.synthetic_map(3000, n_classes=40)
    fig = charts.scatter_figure(coords, meta, "section", max_categories=30, label_centres=True)
    classes = [t for t in fig.data if not t.name.startswith(("other", "outside", "density"))]
    colours = [t.marker.color for t in classes]
    assert len(classes) == 30 and len(set(colours)) == 30
    other = [t for t in fig.data if t.name.startswith("other")]
    assert len(other) == 1 and other[0].marker.color == charts.GREY
    m = fig.layout.meta  # a label at each class centre unless it would overlap another
    assert len(fig.layout.annotations) == m["labels_shown"] and m["labels_shown"] + m["labels_hidden"] == 30
    assert len(set(charts.palette(60))) == 60


def test_search_highlight_pick_and_sampling_keep_marked_points() -> None:
    coords, meta = charts.synthetic_map(60_000, n_classes=5)
    hl = meta["text"].str.contains("вопрос 12345 ").to_numpy()
    fig = charts.scatter_figure(coords, meta, "section", max_points=50_000, highlight=hl, picked=[59_999])
    m = fig.layout.meta
    assert m["sampled"] and m["n_shown"] == 50_000 and m["n_points"] == 60_000 and m["webgl"]
    assert "50 000 of 60 000" in fig.layout.title.text
    matches = [t for t in fig.data if t.name.startswith("matches")]
    assert len(matches) == 1 and [int(c[0]) for c in matches[0].customdata] == [12345]
    picked = [t for t in fig.data if t.name == "picked"]
    assert [int(c[0]) for c in picked[0].customdata] == [59_999] and list(picked[0].text) == ["q:59999"]
    assert all(t.marker.opacity < 0.5 for t in fig.data if t.name.startswith("тема"))  # the rest is dimmed
    fig3 = charts.scatter_figure(np.c_[coords[:500], coords[:500, :1]], meta.iloc[:500], "section", picked=[3])
    assert any(t.name == "picked" for t in fig3.data) and fig3.layout.scene.xaxis.range is not None


def test_marker_size_and_opacity_shrink_as_points_grow() -> None:
    sizes, opacities = zip(*(charts.marker_style(n) for n in (100, 3_668, 20_000, 200_000)), strict=True)
    assert list(sizes) == sorted(sizes, reverse=True) and list(opacities) == sorted(opacities, reverse=True)
    assert sizes[-1] >= 2.5 and opacities[-1] >= 0.2 and opacities[0] <= 0.85
    coords, meta = charts.synthetic_map(20_000, n_classes=10)
    fig = charts.scatter_figure(coords, meta, "section")
    points = [t for t in fig.data if t.type == "scattergl" and t.name.startswith("тема")]
    assert {t.marker.size for t in points} == {charts.marker_style(20_000)[0]}
    assert {t.marker.opacity for t in points} == {charts.marker_style(20_000)[1]}


def test_large_map_has_a_density_layer_under_the_points() -> None:
    coords, meta = charts.synthetic_map(5_000, n_classes=6)
    fig = charts.scatter_figure(coords, meta, "section")
    assert fig.layout.meta["density"] and fig.data[0].type == "contour" and fig.data[0].name == "density"
    z = np.asarray(fig.data[0].z)
    assert z.shape == (charts.DENSITY_BINS, charts.DENSITY_BINS) and np.isclose(z.max(), 1.0) and z.min() >= 0
    # the densest cell lies where the points are: near one of the blob centres, not in an empty corner
    x, y = np.asarray(fig.data[0].x), np.asarray(fig.data[0].y)
    j, i = np.unravel_index(z.argmax(), z.shape)
    assert np.min(np.hypot(coords[:, 0] - x[i], coords[:, 1] - y[j])) < 1.0
    small = charts.scatter_figure(coords[:500], meta.iloc[:500], "section")
    assert not small.layout.meta["density"] and all(t.type != "contour" for t in small.data)
    three_d = charts.scatter_figure(np.c_[coords, coords[:, :1]], meta, "section")
    assert not three_d.layout.meta["density"]


def test_search_matches_in_a_contrast_colour_with_a_legend_entry() -> None:
    coords, meta = charts.synthetic_map(20_000, n_classes=30)
    hl = meta["text"].str.endswith(" 7").to_numpy()
    fig = charts.scatter_figure(coords, meta, "section", highlight=hl, texts={"matches": "найдено"})
    (matches,) = [t for t in fig.data if t.name.startswith("найдено")]
    assert matches.name == f"найдено ({int(hl.sum())})" and matches.showlegend is not False
    assert matches.marker.color == charts.MATCH_COLOR and matches.marker.opacity == 1.0
    category_colours = {t.marker.color for t in fig.data if t.name.startswith("тема")}
    assert charts.MATCH_COLOR not in category_colours  # no category shares the contrast colour
    assert fig.data[-1] is matches or fig.data[-1].name == "picked"  # drawn on top of the categories
    assert fig.layout.meta["n_matches"] == int(hl.sum())
    dim = [t.marker.opacity for t in fig.data if t.name.startswith("тема")]
    assert max(dim) < charts.marker_style(20_000)[1]  # everything else is dimmed


def test_labels_are_placed_without_overlap() -> None:
    anchors = np.array([[300.0, 300.0]] * 12 + [[10.0, 10.0], [610.0, 550.0]])
    boxes = [charts.label_box(f"тема номер {i}") for i in range(len(anchors))]
    placed = charts.place_labels(anchors, boxes, area=(620, 560))
    rects = []
    for (ax, ay), (w, h), off in zip(anchors, boxes, placed, strict=True):
        if off is None:
            continue
        cx, cy = ax + off[0], ay + off[1]
        assert cx - w / 2 >= 0 and cx + w / 2 <= 620 and cy - h / 2 >= 0 and cy + h / 2 <= 560
        rects.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    assert len(rects) >= 12  # twelve labels on one spot are spread around it, not stacked
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    assert placed[0] == (0, 0)  # the first (largest) label stays on its anchor


def test_topic_labels_on_a_crowded_map_do_not_overlap() -> None:
    coords, meta = charts.synthetic_map(3_668, n_classes=29, seed=3)
    coords = coords * 0.15  # the blob: 29 centres crowded together
    fig = charts.scatter_figure(coords, meta, "section", label_centres=True, clip_quantile=0)
    (x0, x1), (y0, y1) = fig.layout.xaxis.range, fig.layout.yaxis.range
    W, H = charts.LABEL_AREA
    rects = []
    for a in fig.layout.annotations:
        w, h = charts.label_box(a.text)
        lx, ly = (a.ax, a.ay) if a.showarrow else (a.x, a.y)  # a moved label sits at (ax, ay) in data units
        assert not a.showarrow or (a.axref == "x" and a.ayref == "y")
        cx, cy = (lx - x0) / (x1 - x0) * W, (ly - y0) / (y1 - y0) * H
        rects.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
    assert len(rects) >= 10
    for i, a in enumerate(rects):
        for b in rects[i + 1:]:
            assert not (a[0] < b[2] - 1e-6 and b[0] < a[2] - 1e-6 and a[1] < b[3] - 1e-6 and b[1] < a[3] - 1e-6)


def test_3d_pick_marker_is_small_and_axes_name_the_projection() -> None:
    coords, meta = charts.synthetic_map(2_000, n_classes=5, dim=3)
    fig = charts.scatter_figure(coords, meta, "section", picked=[3], axis_name="PCA")
    (picked,) = [t for t in fig.data if t.name == "picked"]
    point_size = max(t.marker.size for t in fig.data if t.name.startswith("тема"))
    assert picked.marker.size <= point_size + 3.5 + 1e-9 and picked.marker.size < 8  # marks the point, hides no cloud
    assert fig.layout.scene.xaxis.title.text == "PCA-1"
    fig2 = charts.scatter_figure(coords[:, :2], meta, "section", axis_name="PCA")
    assert fig2.layout.xaxis.title.text == "PCA-1"
