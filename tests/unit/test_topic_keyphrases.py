"""Topic names a product owner reads (issue 29 item 6): an agreed adjective + noun keyphrase, else the central
question shortened — never a lemma list; mixed topics rank below clean ones in the coverage gaps."""

from __future__ import annotations

import pandas as pd

from voproshalych_eval.analytics import text_ru
from voproshalych_eval.analytics.topic_names import keyphrase
from voproshalych_eval.analytics.topics import rank_gaps


def test_agreement_in_gender_and_number() -> None:
    assert text_ru.agreed_phrase("социальный", "стипендия") == "социальная стипендия"
    assert text_ru.agreed_phrase("академический", "отпуск") == "академический отпуск"
    assert text_ru.agreed_phrase("зимний", "каникулы") == "зимние каникулы"  # plural-only noun
    assert text_ru.agreed_phrase("учебный", "расписание") == "учебное расписание"
    assert text_ru.agreed_phrase("быстро", "стипендия") is None  # not an adjective


def test_a_keyphrase_from_the_questions_not_a_lemma_list() -> None:
    qs = ["Какой размер социальной стипендии?", "Как получить социальную стипендию", "социальная стипендия сколько",
          "когда платят стипендию"]
    name, how = keyphrase(qs, ["стипендия", "социальный", "размер", "платить"])
    assert (name, how) == ("Социальная стипендия", "phrase")
    assert "," not in name


def test_without_a_repeated_pair_the_central_question_shortened() -> None:
    qs = ["привет бот как у тебя сегодня дела вообще скажи", "здравствуйте", "добрый вечер"]
    name, how = keyphrase(qs, ["привет", "здравствуйте", "вечер"])
    assert how == "question" and name == "Привет бот как у тебя сегодня…"
    assert keyphrase([], ["привет"]) is None


def test_mixed_topics_rank_below_clean_ones() -> None:
    topics = pd.DataFrame([
        {"topic": 0, "name": "Приветствие", "kind": "cluster", "mixed": True, "name_coverage": 0.1, "size": 100,
         "answered_share": 0.1, "effective_answered_share": 0.0, "declined": 90, "nearest_distance": 0.9,
         "nearest_similarity": 0.1, "thumbs_down": 0, "distinct_pages": 1, "off_topic_share": 0.0,
         "examples": ["привет"], "example_counts": [1]},
        {"topic": 1, "name": "Социальная стипендия", "kind": "cluster", "mixed": False, "name_coverage": 0.8,
         "size": 20, "answered_share": 0.5, "effective_answered_share": 0.5, "declined": 5, "nearest_distance": 0.5,
         "nearest_similarity": 0.5, "thumbs_down": 0, "distinct_pages": 2, "off_topic_share": 0.0,
         "examples": ["стипендия"], "example_counts": [1]},
    ])
    ranked = rank_gaps(topics)
    assert ranked["gap_score"].iloc[1] > ranked["gap_score"].iloc[0]  # the mixed one needs more by the score…
    assert ranked["name"].tolist() == ["Социальная стипендия", "Приветствие"]  # …and still ranks below
