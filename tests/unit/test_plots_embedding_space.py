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
    fig = charts.scatter_figure(np.random.default_rng(0).normal(size=(30, 2)), _meta(30), "section")
    assert len(fig.data) == 3 and all(isinstance(t, go.Scatter) for t in fig.data)
    rows = sorted(int(c[0]) for t in fig.data for c in t.customdata)
    assert rows == list(range(100, 130))  # every point maps back to its vector-set row
    assert "&lt;b&gt;" in fig.data[0].customdata[0][3]  # texts are escaped in hovers


def test_continuous_webgl_and_3d() -> None:
    fig = charts.scatter_figure(np.zeros((1500, 2)), _meta(1500), "outlier_score")
    assert len(fig.data) == 1 and isinstance(fig.data[0], go.Scattergl)
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
