"""Words for the values the code stores as identifiers: question types, review statuses, item states, bot
outcomes, answer classes, review checks.

The store, the downloads and ``--json`` keep the identifiers (``factual``, ``not_found``, ``is_question_ok``);
a person reads the words. :func:`value_word` gives the word of a value in a column (``question_type`` /
``factual`` -> "фактический"), :func:`words_of` a whole column; tables (``ui.tables.show``) and reports
(``reports``) call them, so no page writes a value as it is stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["CHECK_WORDS", "COLUMN_VALUES", "QUESTION_TYPE_WORDS", "REVIEW_STATUS_WORDS", "value_word", "words_of"]

#: synthetic question types (``generation.sampling.QUESTION_TYPES``)
QUESTION_TYPE_WORDS: dict[str, tuple[str, str]] = {
    "factual": ("фактический", "factual"),
    "paraphrase": ("студенческий стиль", "student register"),
    "multi_chunk": ("из нескольких чанков", "multi-chunk"),
    "conditional": ("условие / сравнение", "conditional"),
    "unanswerable": ("нет ответа в базе", "unanswerable"),
    "follow_up": ("уточняющий вопрос", "follow-up"),
}
#: a dataset item's review status (``annotations.REVIEW_STATUSES``)
REVIEW_STATUS_WORDS: dict[str, tuple[str, str]] = {
    "pending": ("на проверке", "pending"), "accepted": ("принят", "accepted"), "rejected": ("отклонён", "rejected"),
}
#: the earlier benchmark's per-item checks (``annotations.CHECKS``)
CHECK_WORDS: dict[str, tuple[str, str]] = {
    "is_question_ok": ("Вопрос корректен", "The question is sound"),
    "is_answer_ok": ("Эталонный ответ верен", "The reference answer is right"),
    "is_chunk_ok": ("Чанк подходит к вопросу", "The chunk fits the question"),
}
#: a run item's state
ITEM_STATUS_WORDS: dict[str, tuple[str, str]] = {
    "done": ("готов", "done"), "failed": ("сбой", "failed"), "running": ("выполняется", "running"),
    "pending": ("ждёт", "pending"), "skipped": ("пропущен", "skipped"),
}
#: a bot reply's outcome (``bot_api.spec.OUTCOMES``)
OUTCOME_WORDS: dict[str, tuple[str, str]] = {
    "answered": ("ответ", "answered"), "not_found": ("«не найдено»", "not found"), "banned": ("запрет", "banned"),
    "error": ("ошибка", "error"),
}


def _answer_classes() -> dict[str, tuple[str, str]]:
    from voproshalych_eval.analytics.answers import CLASS_NAMES

    return dict(CLASS_NAMES)


#: column name -> the words of its values (a callable is read when first needed)
COLUMN_VALUES: dict[str, Any] = {
    "question_type": QUESTION_TYPE_WORDS, "review_status": REVIEW_STATUS_WORDS, "outcome": OUTCOME_WORDS,
    "outcome_a": OUTCOME_WORDS, "outcome_b": OUTCOME_WORDS, "answer_class": _answer_classes,
    "predicted_class": _answer_classes, "status": {**ITEM_STATUS_WORDS, **REVIEW_STATUS_WORDS},
}


def _table(column: str) -> Mapping[str, tuple[str, str]] | None:
    words = COLUMN_VALUES.get(column)
    return words() if callable(words) else words


def value_word(column: str, value: Any, lang: str = "ru") -> Any:
    """The word of ``value`` in ``column`` in ``lang`` (the value itself when it has none)."""
    words = _table(column)
    if words is None or not isinstance(value, str) or value not in words:
        return value
    ru, en = words[value]
    return en if lang == "en" else ru


def words_of(column: str, values: Any, lang: str = "ru") -> Any:
    """``values`` (a pandas Series) with every known value of ``column`` written as a word."""
    if _table(column) is None:
        return values
    return values.map(lambda v: value_word(column, v, lang))
