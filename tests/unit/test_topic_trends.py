"""Topics over time: shares of the month, emerging / growing / shrinking topics, seasonal peaks, summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from voproshalych_eval.analytics.topic_trends import summary_lines, topic_trends, trends_of_period


def _log(counts: dict[str, dict[int, int]]) -> tuple[np.ndarray, list[str]]:
    labels, months = [], []
    for month, per_topic in counts.items():
        for t, n in per_topic.items():
            labels += [t] * n
            months += [month] * n
    return np.asarray(labels), months


NAMES = {0: "стипендия", 1: "общежитие", 2: "пересдача", 3: "парковка"}


def test_changes_statuses_and_the_binomial_test() -> None:
    labels, months = _log({
        "2025-01": {0: 40, 1: 40, 2: 60},
        "2025-02": {0: 40, 1: 40, 2: 20},
        "2025-03": {0: 40, 1: 90, 2: 5, 3: 12},
    })
    tr = topic_trends(np.r_[labels, 0], months + [None], NAMES)  # one row without a time is left out
    assert tr.period == ["2025-03"] and tr.previous == ["2025-02"]
    assert tr.params["n_without_time"] == 1
    ch = tr.changes.set_index("topic")
    assert ch.loc[3, "status"] == "emerging" and ch.loc[1, "status"] == "growing"
    assert ch.loc[2, "status"] == "shrinking" and ch.loc[0, "status"] == "stable"
    N, M = 147, 100
    assert ch.loc[1, "share_now"] == pytest.approx(90 / N) and ch.loc[1, "share_prev"] == pytest.approx(40 / M)
    assert ch.loc[1, "ratio"] == pytest.approx((90 / N) / (40 / M))
    assert ch.loc[1, "p_up"] == pytest.approx(binomtest(90, 130, N / (N + M), alternative="greater").pvalue)
    m = tr.monthly
    jan = m[m["period"] == "2025-01"].set_index("topic")
    assert jan.loc[2, "share"] == pytest.approx(60 / 140) and m.groupby("period")["share"].sum().round(9).eq(1).all()
    assert tr.totals["n_now"] == N and tr.totals["n_prev"] == M


def test_window_and_end_choose_the_period() -> None:
    labels, months = _log({"2025-01": {0: 10}, "2025-02": {0: 10}, "2025-03": {0: 10}, "2025-04": {0: 10}})
    tr = topic_trends(labels, months, NAMES, end="2025-04", window=2)
    assert tr.period == ["2025-03", "2025-04"] and tr.previous == ["2025-01", "2025-02"]
    assert tr.totals["n_now"] == 20 and tr.totals["change"] == 0


def test_seasonal_peaks() -> None:
    counts = {}
    for year in (2024, 2025):
        for mo in range(1, 13):
            counts[f"{year}-{mo:02d}"] = {0: 30, 2: (40 if mo in (1, 6) else 5)}
    labels, months = _log(counts)
    tr = topic_trends(labels, months, NAMES)
    peaks = tr.peaks.set_index("topic")
    assert 2 in peaks.index and peaks.loc[2, "peak_month"] in (1, 6)
    share_jan = 80 / (80 + 60)
    overall = (4 * 40 + 20 * 5) / (24 * 30 + 4 * 40 + 20 * 5)
    assert peaks.loc[2, "lift"] == pytest.approx(share_jan / overall)
    assert 0 not in peaks.index  # a flat topic has no peak


def test_summary_mentions_the_numbers() -> None:
    labels, months = _log({"2025-02": {0: 60, 1: 20}, "2025-03": {0: 60, 1: 60, 3: 12}})
    eff = np.r_[np.ones(40), np.zeros(40), np.ones(132)].astype(bool)
    tr = topic_trends(labels, months, NAMES, effective=eff)
    gaps = pd.DataFrame([{"name": "парковка", "size": 12, "effective_answered_share": 0.1}])
    text = "\n".join(summary_lines(tr, gaps=gaps, lang="ru"))
    assert "2025-03: 132 вопросов против 80" in text and "+65%" in text
    assert "Новые темы: «парковка» (0 → 12)" in text and "Растут: «общежитие» (20 → 60)" in text
    assert "Главный пробел" in text and "«парковка»" in text
    assert "100%" in text and "(было 50%)" in text
    en = "\n".join(summary_lines(tr, lang="en"))
    assert "New topics" in en and "questions vs 80" in en


def test_emerging_words_catch_a_subject_inside_an_existing_topic() -> None:
    labels, months = _log({"2025-02": {0: 50}, "2025-03": {0: 60}})
    texts = ["когда стипендия"] * 50 + ["когда стипендия"] * 52 + ["как войти в приложение СевГУ"] * 8
    tr = topic_trends(labels, months, NAMES, texts=texts)
    assert tr.changes.set_index("topic").loc[0, "status"] == "stable"  # the topic itself barely moved
    terms = tr.terms.set_index("term")
    assert set(terms.index) == {"войти", "приложение"} and terms.loc["приложение", "n_now"] == 8
    assert terms.loc["приложение", "n_prev"] == 0 and terms.loc["приложение", "example"].startswith("как войти")
    text = "\n".join(summary_lines(tr))
    assert "Новые слова в вопросах: «войти» (0 → 8" in text and "«приложение» (0 → 8" in text


def test_trends_of_the_stored_period_are_reused_and_another_period_is_computed() -> None:
    labels, months = _log({"2025-01": {0: 10, 1: 2}, "2025-02": {0: 10, 1: 8}, "2025-03": {0: 3, 1: 20}})
    stored = topic_trends(labels, months, NAMES)  # what the analysis computed for its default period
    assert trends_of_period(stored, labels, months, NAMES, end="2025-03") is stored  # nothing recomputed
    other = trends_of_period(stored, labels, months, NAMES, end="2025-02")
    fresh = topic_trends(labels, months, NAMES, end="2025-02")
    assert other is not stored and other.period == ["2025-02"]
    pd.testing.assert_frame_equal(other.changes, fresh.changes)
    wider = trends_of_period(stored, labels, months, NAMES, end="2025-03", window=2)
    assert wider is not stored and wider.period == ["2025-02", "2025-03"]
    # a different test setting is not the stored result either
    assert trends_of_period(stored, labels, months, NAMES, end="2025-03", min_count=3) is not stored
