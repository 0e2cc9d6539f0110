"""The translation checker itself catches what it must (and lets code and data through)."""

from __future__ import annotations

from tests.support.ui_text import strip_code, violations

CORPUS = "\n".join(["как получить справку об обучении?", "demo_golden", "e5-small", "стипендия"]).lower()


def test_metric_keys_are_caught_in_both_languages() -> None:
    for lang in ("ru", "en"):
        assert violations([("metric.label", "chunk_coverage")], lang, CORPUS)
        assert violations([("chart", "hit_rate@1")], lang, CORPUS)
        assert violations([("table header", "top10pct_chunk_share")], lang, CORPUS)
    assert not violations([("caption", strip_code("ключ `hit_rate@1` в выгрузке"))], "ru", CORPUS)
    assert violations([("table header", "item_key")], "ru", CORPUS)  # a raw column name is never a header
    assert not violations([("table header", "demo_golden")], "en", CORPUS)  # unless it is data


def test_english_in_the_russian_ui() -> None:
    assert violations([("progress", "Retrieving top-10 for 136 questions…")], "ru", CORPUS)
    assert violations([("caption", "Оценки получены offline heuristic")], "ru", CORPUS)
    assert violations([("button.label", "Choose options")], "ru", CORPUS)
    ok = ["Hit Rate@5 · чанки", "MRR", "Карта UMAP", "Набор demo_golden", "Модель e5-small", "k = 10", "PASS / FAIL",
          "Trustworthiness@10", "CSV", "Ворота: FAIL"]
    assert not violations([("x", t) for t in ok], "ru", CORPUS)


def test_russian_in_the_english_ui_unless_it_is_data() -> None:
    assert violations([("caption", "Оценки получены офлайн-эвристика")], "en", CORPUS)
    assert violations([("tab.label", "Сводка")], "en", CORPUS)
    assert not violations([("selectbox.option", "q1: Как получить справку об обучении?")], "en", CORPUS)
    assert not violations([("chart", "Topic: стипендия")], "en", CORPUS)


def test_raw_json_is_reported() -> None:
    assert violations([("json", "<st.json>")], "en", CORPUS)


def test_raw_values_none_and_decimals_are_reported() -> None:
    for lang in ("ru", "en"):
        assert violations([("table cell", "is_question_ok: True; is_answer_ok: None")], lang, CORPUS)
        assert violations([("caption", "Статус: None")], lang, CORPUS)
        assert violations([("table cell", "not_found")], lang, CORPUS + "\nnot_found")  # stored, still raw
        assert violations([("table number", "Оценка: 0.58123")], lang, CORPUS)
        assert violations([("caption", "доля 0.581234")], lang, CORPUS)
    assert violations([("table cell", "accepted")], "ru", CORPUS + "\naccepted")
    assert violations([("selectbox.option", "pending")], "ru", CORPUS + "\npending")
    assert not violations([("table cell", "demo_golden")], "ru", CORPUS)  # a name is data
    assert not violations([("table cell", "accepted")], "en", CORPUS)  # an English word in the English UI
    assert not violations([("caption", "MRR 0.581, хэш 3f2a9c0d1e, модель e5-small-v2")], "ru", CORPUS)


def test_the_word_seed_is_reported_in_both_languages() -> None:
    assert violations([("caption", "Базовый уровень из сида 003")], "ru", CORPUS)
    assert violations([("caption", "Baseline from seed 003")], "en", CORPUS)
    assert violations([("table header", "Seed's reading")], "en", CORPUS)
    assert not violations([("caption", "Базовый уровень из методики оценки (документ 003)")], "ru", CORPUS)
