"""Personal data in question texts: e-mail addresses, phone numbers, full names with patronymics (hand examples)."""

from __future__ import annotations

import pytest

from voproshalych_eval import masking
from voproshalych_eval.masking import mask_personal_data

CASES = [
    # e-mail addresses
    ("Пишите на ivanov.ii@study.utmn.ru, пожалуйста", "Пишите на [email], пожалуйста"),
    ("адрес: a_b+tag@почта.рф.", "адрес: [email]."),
    # phone numbers, Russian and international writing
    ("Позвоните +7 (912) 345-67-89 до пятницы", "Позвоните [phone] до пятницы"),
    ("тел. 8 912 345 67 89 или 89123456789", "тел. [phone] или [phone]"),
    ("деканат: +7 3452 59-74-00", "деканат: [phone]"),
    ("London +44 20 7946 0958", "London [phone]"),
    # full names with patronymics, in any order and case
    ("Иванов Иван Иванович не отвечает", "[name] не отвечает"),
    ("Анна Сергеевна Смирнова ведёт пары", "[name] ведёт пары"),
    ("Можно ли передать документы Ивану Петровичу Сидорову?", "Можно ли передать документы [name]?"),
    ("Спасибо, Мария Ивановна!", "Спасибо, [name]!"),
    ("Декан Иван Петрович сказал", "Декан [name] сказал"),  # a title is not a surname
    ("Подпись: Иванов И. И. и И.И. Петров", "Подпись: [name] и [name]"),
    # all at once
    ("Иванов Иван Иванович, ivanov@utmn.ru, +7 (912) 345-67-89", "[name], [email], [phone]"),
]

KEPT = [
    "Где найти расписание на 2024-2025 учебный год?",  # years are not phones
    "Аудитория 405, группа 21-09, корпус 3",  # short numbers stay
    "Как получить справку об обучении?",
    "Иванов — это фамилия декана?",  # a surname alone is not masked
    "Анна, где столовая?",  # a first name alone is not masked
    "Спасибо за ответ",
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_masks_personal_data(text: str, expected: str) -> None:
    assert mask_personal_data(text) == expected


@pytest.mark.parametrize("text", KEPT)
def test_keeps_what_is_not_personal(text: str) -> None:
    assert mask_personal_data(text) == text


def test_without_dictionaries_the_suffix_rules_still_mask_full_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(masking, "_morph", lambda: None)
    masking._tags.cache_clear()
    try:
        assert mask_personal_data("Здравствуйте, Иванов Иван Иванович!") == "Здравствуйте, [name]!"
        assert mask_personal_data("Спасибо, Мария Ивановна!") == "Спасибо, [name]!"
        assert mask_personal_data("Как получить справку?") == "Как получить справку?"
    finally:
        masking._tags.cache_clear()


def test_non_strings_and_lists() -> None:
    assert mask_personal_data("") == ""
    assert masking.mask_texts(["a@b.ru", None]) == ["[email]", None]
