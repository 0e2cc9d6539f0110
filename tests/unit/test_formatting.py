"""Numbers written by kind from the metric catalog; bilingual core messages."""

from __future__ import annotations

import copy
import pickle

import pytest

from voproshalych_eval.bilingual import Text, render, text
from voproshalych_eval.metrics.formatting import d3_format, format_seconds, format_value


@pytest.mark.parametrize(
    ("key", "value", "lang", "expected"),
    [
        ("hit_rate@5", 0.5805051922798157, "ru", "0.581"),  # a share: three decimals
        ("hit_rate@5", 0.5805051922798157, "en", "0.581"),
        ("n_items", 224.0, "ru", "224"),  # a count, never "224.000"
        ("n_items", 3795, "ru", "3\u00a0795"),
        ("n_items", 3795, "en", "3,795"),
        ("avg_answer_correctness", 4.2468, "en", "4.25"),  # 1–5 score: two decimals
        ("avg_bleu", 37.444, "en", "37.4"),  # 0–100: one decimal
        ("latency_p95", 0.8412, "ru", "0.84 с"),  # seconds with a unit
        ("latency_p95", 0.8412, "en", "0.84 s"),
        ("latency_p95", 125.0, "en", "2 min 05 s"),
        ("mrr", None, "ru", "—"),
        ("mrr", float("nan"), "ru", "—"),
        ("mrr", {"value": 0.25, "n": 10}, "en", "0.250"),  # a stored aggregate is unwrapped
        ("not_a_metric_key", 0.123456, "en", "0.123"),
        ("not_a_metric_key", 12, "en", "12"),
        ("mrr", True, "en", "True"),
    ],
)
def test_format_value(key: str, value: object, lang: str, expected: str) -> None:
    assert format_value(key, value, lang) == expected


def test_percent_only_for_shares() -> None:
    assert format_value("hit_rate@5", 0.5812, "en", percent=True) == "58.1%"
    assert format_value("avg_bleu", 37.4, "en", percent=True) == "37.4"
    assert d3_format("hit_rate@5", percent=True) == ".1%"


def test_d3_format_follows_the_same_rule() -> None:
    assert d3_format("n_items") == ",d"
    assert d3_format("mrr") == ".3f"
    assert d3_format("avg_answer_correctness") == ".2f"
    assert d3_format(None) == ".3f"


def test_seconds_ranges() -> None:
    assert format_seconds(12.34, "ru") == "12.3 с"
    assert format_seconds(3725, "ru") == "1 ч 02 мин"


def test_bilingual_text_is_english_str_with_russian() -> None:
    t = text("Поиск top-10 для 136 вопросов…", "Retrieving top-10 for 136 questions…")
    assert isinstance(t, str) and t == "Retrieving top-10 for 136 questions…"
    assert render(t, "ru") == "Поиск top-10 для 136 вопросов…"
    assert render(t, "en") == str(t)
    assert render("plain", "ru") == "plain" and render(None, "ru") == ""
    for clone in (copy.deepcopy(t), pickle.loads(pickle.dumps(t)), copy.copy(t)):
        assert isinstance(clone, Text) and clone.ru == t.ru and clone.en == t.en
    joined = t + text(" (кэш)", " (cache)")
    assert isinstance(joined, Text) and joined.ru.endswith("(кэш)")
