"""The common figure finish: legends outside the plot, toolbar off the title, sane time ticks, bounded axes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import plotly.graph_objects as go

from voproshalych_eval.plots import generation
from voproshalych_eval.plots import runs as run_plots
from voproshalych_eval.plots.layout import label_ticks, polish, time_axis, value_range


def _hist(times: list[datetime]) -> pd.DataFrame:
    return pd.DataFrame([{"run_id": i, "started_at": t, "value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "config": "a"}
                         for i, t in enumerate(times, 1)])


def test_one_run_history_gets_a_day_wide_date_axis() -> None:
    t = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    fig = run_plots.history_figure(_hist([t]), metric_label="MRR", metric_key="mrr")
    ax = fig.layout.xaxis
    assert ax.type == "date"
    lo, hi = (pd.Timestamp(v).tz_convert(None) if pd.Timestamp(v).tzinfo else pd.Timestamp(v) for v in ax.range)
    assert hi - lo >= pd.Timedelta(days=1)  # never sub-millisecond ticks around one point
    assert lo <= pd.Timestamp(t).tz_convert(None) <= hi
    assert "%{y:.3f}" in fig.data[0].hovertemplate  # a share: three decimals


def test_time_axis_pads_a_long_history() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    fig = go.Figure()
    time_axis(fig, [t0, t0 + timedelta(days=30)])
    lo, hi = (pd.Timestamp(v) for v in fig.layout.xaxis.range)
    assert lo < pd.Timestamp(t0) and hi > pd.Timestamp(t0 + timedelta(days=30))
    assert fig.layout.xaxis.tickformat == "%d.%m<br>%Y"


def test_polish_puts_the_legend_above_the_plot_and_the_toolbar_aside() -> None:
    fig = go.Figure([go.Scatter(x=[1, 2], y=[1, 2], name="a"), go.Scatter(x=[1, 2], y=[2, 1], name="b")])
    fig.update_layout(title="Title", xaxis_title="x")
    polish(fig)
    assert fig.layout.showlegend is True
    assert fig.layout.legend.orientation == "h" and fig.layout.legend.y >= 1.0  # outside the plot area
    assert fig.layout.modebar.orientation == "v"
    assert fig.layout.margin.t >= 36 + 28  # room for the title and the legend row
    single = polish(go.Figure(go.Bar(x=[1], y=[1])))
    assert single.layout.showlegend is False


def test_value_ranges_from_the_catalog() -> None:
    assert value_range("hit_rate@5") == [0.0, 1.05]
    assert value_range("avg_answer_correctness") == [0.8, 5.2]
    assert value_range("consistency_score", std=True) == [0.0, 0.5 * 1.05]  # std of 0–1 scores: at most 0.5
    assert value_range("n_items", values=[3, 10]) == [0.0, 11.0]


def test_judge_std_chart_is_not_symmetric() -> None:
    fig = generation.std_distribution([0.0, 0.0, 0.1], scale_key="consistency_score", name="std")
    lo, hi = fig.layout.yaxis.range
    assert lo == 0.0 and 0.5 <= hi <= 0.55


def test_label_ticks_translate_metric_keys() -> None:
    fig = go.Figure(go.Bar(x=["hit_rate@5", "mrr"], y=[0.5, 0.6]))
    label_ticks(fig, ["hit_rate@5", "mrr"], "ru")
    assert list(fig.layout.xaxis.ticktext) == ["Hit Rate@5", "MRR"]
    diff = pd.DataFrame([{"metric": "chunk.mrr", "paired_mean_diff": 0.1, "ci_low": 0.0, "ci_high": 0.2, "p_value": 0.01,
                          "n_pairs": 10, "verdict": "better"}])
    fig2 = run_plots.diff_figure(diff, lang="ru")
    assert "MRR · чанки" in list(fig2.layout.yaxis.ticktext)
