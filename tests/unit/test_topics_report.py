"""The coverage-gap report in either language: the snapshot read, silhouette with its meaning, seed ARI."""

from __future__ import annotations

import re
from datetime import datetime
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from voproshalych_eval.analytics.report import TEXTS, coverage_gap_html, coverage_gap_markdown, snapshot_label
from voproshalych_eval.analytics.topic_trends import topic_trends
from voproshalych_eval.analytics.topics import SILHOUETTE_GUIDE, silhouette_verdict

CYRILLIC = re.compile("[а-яёА-ЯЁ]")
SNAPSHOT = {"id": 7, "content_hash": "abcdef0123456789ffff", "taken_at": datetime(2026, 5, 31, 12, 0).isoformat()}


def _result(silhouette: float = 0.103) -> SimpleNamespace:
    """A small run result whose data is Latin only, so every Cyrillic letter in an English report is ours."""
    gaps = pd.DataFrame([{
        "gap_rank": 1, "name": "scholarship, deadline", "size": 40, "answered_share": 0.7,
        "effective_answered_share": 0.5, "nearest_distance": 0.71, "gap_score": 0.46,
        "examples": ["when is the scholarship paid", "scholarship deadline"], "example_counts": [14, 1],
        "off_topic": False, "mixed": True, "name_coverage": 0.2,
    }])
    topics = pd.DataFrame([{"kind": "category", "name": "greeting", "size": 3, "answered_share": 1.0,
                            "effective_answered_share": 0.0}])
    labels = [0] * 60 + [1] * 21
    months = ["2026-04"] * 30 + ["2026-05"] * 30 + ["2026-04"] + ["2026-05"] * 20
    texts = ["usual question"] * 60 + ["app"] + [f"mobile app number {i}" for i in range(20)]
    trends = topic_trends(np.array(labels), months, {0: "usual", 1: "mobile app"}, texts=texts)
    never = pd.DataFrame([{"chunk_id": 3, "url": "https://wiki/x", "text": "library hours"}])
    return SimpleNamespace(
        topics=SimpleNamespace(gaps=gaps, topics=topics, trends=trends), source="question_answer",
        filters=SimpleNamespace(describe=lambda: {}), snapshot=SNAPSHOT, n_used=81,
        embeddings=SimpleNamespace(info=lambda: {"model": "use-multilingual", "n_stored": 1, "n_embedded": 80}),
        metrics={"answered_rate": 0.6, "effective_answered_rate": 0.5, "n_declined": 8, "n_topics": 2,
                 "best_silhouette": silhouette, "seed_ari_mean": 0.712, "seed_ari_min": 0.655,
                 "chunk_coverage": 0.4, "chunk_coverage@1": 0.2},
        utilization=SimpleNamespace(never_retrieved=never), confirmed_gaps=None,
    )


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_report_names_the_snapshot_silhouette_meaning_and_seed_ari(lang: str) -> None:
    res = _result()
    for text in (coverage_gap_markdown(res, lang=lang), coverage_gap_html(res, lang=lang)):
        assert "#7 (abcdef012345, 2026-05-31 12:00)" in text  # the snapshot the run read
        assert silhouette_verdict(0.103, lang) in text and "0.10" in text
        assert "0.71" in text and "0.66" in text  # seed ARI mean and min
        assert TEXTS["title"][0 if lang == "ru" else 1] in text
        assert TEXTS["changes"][0 if lang == "ru" else 1] in text  # what changed
        assert "mobile app" in text  # the emerging topic
    assert snapshot_label(None, lang) == TEXTS["no_snapshot"][0 if lang == "ru" else 1]


def test_english_report_has_no_russian_text_and_russian_one_has_no_english_headings() -> None:
    res = _result()
    for text in (coverage_gap_markdown(res, lang="en"), coverage_gap_html(res, lang="en")):
        assert not CYRILLIC.search(text), CYRILLIC.search(text)
        assert "What to write first" in text and "mixed topic" in text
    md_ru = coverage_gap_markdown(res)  # Russian by default
    assert "Что дописать в первую очередь" in md_ru and "What to write first" not in md_ru
    assert 'lang="en"' in coverage_gap_html(res, lang="en") and 'lang="ru"' in coverage_gap_html(res)


@pytest.mark.parametrize("value", [0.6, 0.3, 0.1])
def test_every_silhouette_band_reaches_the_report(value: float) -> None:
    band = next(g for g in SILHOUETTE_GUIDE if value >= g[0])
    assert band[1] in coverage_gap_markdown(_result(value)) and band[2] in coverage_gap_markdown(_result(value), lang="en")
