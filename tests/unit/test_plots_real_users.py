"""Real-users charts are finished like every chart: legend outside the plot, toolbar off the title, axes from 0
and shares on the catalog's 0–1 scale, hover words from the page."""

from __future__ import annotations

import pandas as pd

from voproshalych_eval.plots import real_users as charts


def _topics() -> pd.DataFrame:
    return pd.DataFrame({"topic": [0, 1, 2], "kind": "cluster", "name": ["стипендия", "общежитие", "сессия"],
                         "size": [40, 20, 10], "answered_share": [0.9, 0.5, 0.2],
                         "effective_answered_share": [0.8, 0.4, 0.1], "nearest_distance": [0.2, 0.4, 0.6],
                         "gap_score": [0.1, 0.5, 0.9]})


def test_gap_and_topic_charts_take_the_page_words_and_bounded_axes() -> None:
    words = {"gap": "оценка пробела", "answered": "с ответом", "non_empty": "непустой", "distance": "расстояние"}
    gap = charts.gaps_bar(_topics(), title="Оценка пробела", x_title="оценка пробела", texts=words)
    assert gap.layout.xaxis.title.text == "оценка пробела" and gap.layout.xaxis.range[0] == 0
    assert "оценка пробела" in gap.data[0].hovertemplate and "gap" not in gap.data[0].hovertemplate
    assert gap.layout.modebar.orientation == "v"
    bubbles = charts.topics_scatter(_topics(), texts=words)
    assert list(bubbles.layout.xaxis.range) == [0.0, 1.05]  # a share, from the catalog
    assert bubbles.data[0].marker.colorbar.title.text == "оценка пробела"


def test_legends_sit_outside_the_plot() -> None:
    per_chunk = pd.DataFrame({"chunk_id": [1, 2], "url": ["a", "b"], "retrieved_topk": [5, 1], "retrieved_top1": [2, 0]})
    tail = charts.long_tail(per_chunk, title="Хвост")
    assert tail.layout.legend.orientation == "h" and tail.layout.legend.y >= 1.0
    trend = pd.DataFrame({"period": ["2026-01", "2026-02"] * 2, "topic": [0, 0, 1, 1], "n": [3, 5, 2, 1],
                          "share": [0.6, 0.8, 0.4, 0.2]})
    fig = charts.topic_trend(trend, {0: "стипендия", 1: "общежитие"}, value="share", x_title="месяц")
    assert fig.layout.legend.x > 1 and fig.layout.legend.title.text == ""  # a column right of the plot, no raw key
    assert fig.layout.xaxis.title.text == "месяц" and fig.layout.yaxis.range[1] <= 1.05
    volume = pd.DataFrame({"period": ["2026-01"], "questions": [10], "answered_rate": [0.5],
                           "effective_answered_rate": [0.4]})
    v = charts.volume(volume)
    assert list(v.layout.yaxis2.range) == [0.0, 1.05] and v.layout.yaxis.range[0] == 0
