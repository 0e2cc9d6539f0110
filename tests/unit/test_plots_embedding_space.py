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
    assert len(fig.data) == 1 and isinstance(fig.data[0], go.Scattergl) and fig.layout.meta["webgl"]
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
    classes = [t for t in fig.data if not t.name.startswith(("other", "outside"))]
    colours = [t.marker.color for t in classes]
    assert len(classes) == 30 and len(set(colours)) == 30
    other = [t for t in fig.data if t.name.startswith("other")]
    assert len(other) == 1 and other[0].marker.color == charts.GREY
    assert len(fig.layout.annotations) == 30  # a label at each class centre
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
