"""A log with empty / whitespace questions (issue 28: bench_real_users crashed on the real log, 5,183 rows of which
5,180 with text): per-row inputs of either length are aligned to the rows with text, others are a clear error."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from voproshalych_eval.analytics.domain import domain_analysis
from voproshalych_eval.analytics.question_log import text_rows
from voproshalych_eval.analytics.text_ru import classify_many
from voproshalych_eval.analytics.topics import topic_coverage

QUESTIONS = ["как получить стипендию", "", "где общежитие", "   ", "когда сессия", "\t\n", "как получить стипендию?",
             "общежитие где находится", "сессия когда начинается", "привет"]


def _log() -> pd.DataFrame:
    n = len(QUESTIONS)
    return pd.DataFrame({
        "id": range(1, n + 1), "question": QUESTIONS, "answer": ["ответ"] * n, "url": [None] * n,
        "answered": [True] * n, "score": pd.array([None] * n, dtype="Int64"),
        "user_id": pd.array(range(n), dtype="Int64"), "stop_point": [False] * n,
        "created_at": pd.date_range("2025-01-01", periods=n, freq="h", tz="UTC"),
    })


def _vectors(texts: list[str]) -> np.ndarray:
    """A direction per distinct first word: near-duplicates of one question share it exactly."""
    out = np.zeros((len(texts), 8))
    for i, t in enumerate(texts):
        out[i, sum(map(ord, t.split()[0])) % 7 if t.strip() else 0] = 1.0
        out[i, 7] = 0.01 * len(t)
    return out


def test_domain_aligns_whole_log_inputs_to_the_rows_with_text() -> None:
    log = _log()
    tdf, n_empty = text_rows(log)
    assert n_empty == 3 and len(tdf) == 7
    cats_text = classify_many(tdf["question"].tolist())
    vec_text = _vectors(tdf["question"].tolist())
    ref = domain_analysis(log, vec_text, categories=cats_text)
    # one entry per log row (what bench_real_users passed): the rows with text are taken, same tables
    cats_all = classify_many(log["question"].tolist())
    got = domain_analysis(log, _vectors(log["question"].tolist()), categories=cats_all)
    pd.testing.assert_frame_equal(got.tables["categories"], ref.tables["categories"])
    pd.testing.assert_frame_equal(got.tables["near_duplicate_clusters"], ref.tables["near_duplicate_clusters"])
    assert got.metrics["n_empty_questions"] == 3
    with pytest.raises(ValueError, match=r"categories: 5 entries, but the log has 10 rows, 7 of them with question"):
        domain_analysis(log, None, categories=cats_text[:5])
    with pytest.raises(ValueError, match=r"vectors: 9 entries"):
        domain_analysis(log, vec_text.repeat(2, axis=0)[:9])


def test_topics_refuse_rows_without_text_and_name_them() -> None:
    log = _log()
    with pytest.raises(ValueError, match=r"3 of 10 rows have none \(rows 1, 3, 5\).*text_rows"):
        topic_coverage(log, _vectors(QUESTIONS), None, k_topics=2, stability_seeds=())
    tdf, _ = text_rows(log)
    res = topic_coverage(tdf, _vectors(tdf["question"].tolist()), None, k_topics=2, stability_seeds=())
    assert res.metrics["n_questions_used"] == 7
