"""The run-history chart marks offline runs and never sets them against the baseline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from voproshalych_eval.plots import runs as run_plots


def _hist(offline: list[bool]) -> pd.DataFrame:
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    return pd.DataFrame([{"run_id": i, "started_at": t0 + timedelta(hours=i), "value": 0.5, "ci_low": 0.4,
                          "ci_high": 0.6, "config": "fts", "offline": off} for i, off in enumerate(offline, 1)])


def _shapes(fig: object) -> list[str]:
    return [s.type for s in fig.layout.shapes]  # type: ignore[attr-defined]


def test_only_offline_runs_get_no_baseline_and_a_visible_mark() -> None:
    fig = run_plots.history_figure(_hist([True, True]), metric_label="Hit rate", baseline=0.7, attention_margin=0.1,
                                   offline_label="офлайн — не сравнивается")
    assert _shapes(fig) == []  # no baseline line, no attention band
    assert any("офлайн — не сравнивается" in a.text for a in fig.layout.annotations)
    (trace,) = fig.data
    assert trace.name.startswith("📴") and trace.marker.symbol == "circle-open"
    assert "офлайн — не сравнивается" in trace.hovertemplate


def test_mixed_history_keeps_the_baseline_for_online_runs_only() -> None:
    fig = run_plots.history_figure(_hist([False, True, False]), metric_label="Hit rate", baseline=0.7,
                                   attention_margin=0.1, online_only_label="только онлайн-запуски")
    assert "line" in _shapes(fig) and "rect" in _shapes(fig)
    assert any("только онлайн-запуски" in a.text for a in fig.layout.annotations)
    online, offline = sorted(fig.data, key=lambda t: t.name.startswith("📴"))
    assert list(online.customdata[:, 0]) == [1, 3] and list(offline.customdata[:, 0]) == [2]  # never joined
    assert fig.layout.showlegend is True


def test_online_history_is_unchanged() -> None:
    fig = run_plots.history_figure(_hist([False, False]), metric_label="Hit rate", baseline=0.7)
    assert "line" in _shapes(fig) and len(fig.data) == 1 and not fig.data[0].name.startswith("📴")
    assert not any("online" in (a.text or "") for a in fig.layout.annotations)
