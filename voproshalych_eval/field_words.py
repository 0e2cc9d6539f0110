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

from voproshalych_eval.metrics import catalog
from voproshalych_eval.metrics.catalog import QUESTION_TYPE_LABELS

__all__ = ["CHECK_WORDS", "COLUMN_LABELS", "COLUMN_VALUES", "TOPIC_COLUMN_LABELS", "column_header", "QUESTION_TYPE_WORDS", "REVIEW_STATUS_WORDS", "value_word", "words_of"]

#: column name -> (ru, en) header, for the columns that are not metrics
COLUMN_LABELS: dict[str, tuple[str, str]] = {
    "labelled_by": ("Кто разметил", "Labelled by"), "labelled_at": ("Когда", "Labelled at"),
    "answer_classifier": ("Классификатор ответов", "Answer classifier"), "answer_labels": ("Метки ответов", "Answer labels"),
    "item_key": ("Элемент", "Item"), "status": ("Статус", "Status"), "error": ("Ошибка", "Error"),
    "question": ("Вопрос", "Question"), "answer": ("Ответ", "Answer"), "reference": ("Эталон", "Reference"),
    "question_type": ("Тип вопроса", "Question type"), "section": ("Раздел", "Section"), "url": ("URL", "URL"),
    "text": ("Текст", "Text"), "kind": ("Вид", "Kind"), "point_id": ("Точка", "Point"), "rank": ("Место", "Rank"),
    "score": ("Оценка", "Score"), "passed": ("PASS", "PASS"), "label": ("Разметка", "Label"),
    "verdict": ("Вердикт", "Verdict"), "correct": ("Верно", "Correct"), "reason": ("Причина", "Reason"),
    "benchmark_verdict": ("Вердикт эталонного судьи", "Benchmark judge verdict"), "model": ("Модель", "Model"),
    "scores": ("Оценки повторов", "Repeat scores"), "std": ("СКО повторов", "Std of repeats"),
    "n_failed_calls": ("Сбойных вызовов", "Failed calls"), "turn": ("Ход", "Turn"),
    "cache_hit": ("Попадание в кэш", "Cache hit"), "cache_distance": ("Расстояние до кэша", "Cache distance"),
    "expected_url": ("Ожидаемая страница", "Expected page"), "retrieved_url": ("Найденная страница", "Retrieved page"),
    "error_message": ("Сообщение об ошибке", "Error message"), "retrieval_hit": ("Чанк найден", "Chunk retrieved"),
    "context_truncated": ("Контекст обрезан", "Context cut"), "response_exact_match": ("Повторы совпали", "Repeats equal"),
    "relevant_chunk_ids": ("Релевантные чанки", "Relevant chunks"), "retrieved": ("Найдено", "Retrieved"),
    "first_relevant_rank": ("Ранг первого релевантного", "First relevant rank"),
    "top_distance": ("Расстояние лучшего", "Top-hit distance"), "answerable": ("Есть ответ", "Answerable"),
    "failed": ("Провал", "Failure"), "failures": ("Провалов", "Failures"), "questions": ("Вопросов", "Questions"),
    "config": ("Конфигурация", "Configuration"), "metric": ("Метрика", "Metric"), "value": ("Значение", "Value"),
    "run_id": ("Запуск", "Run"), "started_at": ("Начат", "Started"), "finished_at": ("Завершён", "Finished"),
    "dataset_name": ("Набор данных", "Dataset"), "models": ("Модели", "Models"), "n": ("n", "n"),
    "ci_low": ("ДИ, нижняя", "CI low"), "ci_high": ("ДИ, верхняя", "CI high"), "baseline": ("Базовый уровень", "Baseline"),
    "scale": ("Шкала", "Scale"), "direction": ("Лучше, когда", "Better when"), "tier": ("Уровень", "Tier"),
    "id": ("№", "No."), "duration_s": ("Длительность, с", "Duration, s"), "quality": ("Вердикт", "Verdict"),
    "change": ("Изменение", "Change"), "a": ("A", "A"), "b": ("B", "B"), "diff": ("B − A", "B − A"),
    "topic": ("Тема", "Topic"), "name": ("Название", "Name"), "examples": ("Примеры", "Examples"),
    "terms": ("Ключевые слова", "Key words"), "gap": ("Оценка пробела", "Gap score"), "chunk_id": ("Чанк", "Chunk"),
    "retrievals": ("Попаданий в выдачу", "Retrievals"), "users": ("Пользователей", "Users"),
    "category": ("Категория", "Category"), "rule": ("Правило", "Rule"), "term": ("Слово", "Term"),
    "distance": ("Расстояние", "Distance"), "selection": ("Выделение", "Selection"), "all_points": ("Все точки", "All points"),
    "n_items": ("Элементов", "Items"), "n_valid": ("С вердиктом", "With a verdict"), "label_ru": ("Метрика", "Metric"),
    "label_en": ("Метрика", "Metric"), "attention_margin": ("Запас внимания", "Attention margin"),
    "note": ("Примечание", "Note"), "metrics_judged": ("Метрик оценено", "Metrics judged"), "run": ("Запуск", "Run"),
    "p_value": ("p", "p"), "n_pairs": ("Пар", "Pairs"), "paired_mean_diff": ("Ср. парная разность", "Mean paired diff"),
    "p_raw": ("p (без поправки)", "p (raw)"), "p_adjusted": ("p (Холм)", "p (Holm)"),
    "label_text": ("Метка", "Label"), "created_by": ("Запустил", "Started by"), "offline": ("Офлайн", "Offline"),
    "state": ("Состояние", "State"), "n_items_total": ("Элементов", "Items"), "n_items_done": ("Готово", "Done"),
    "n_items_failed": ("Сбоев", "Failed"),
    "dataset_hash": ("Хэш набора", "Dataset hash"), "code_version": ("Версия кода", "Code version"),
    "created_at": ("Записан", "Recorded"), "url_depth": ("Глубина поиска страниц", "Page search depth"),
    "metrics_url": ("Метрики · страницы", "Metrics · pages"), "metrics_chunk": ("Метрики · чанки", "Metrics · chunks"),
    "url_ranking": ("Ранжирование страниц", "Page ranking"), "relevant_urls": ("Релевантные страницы", "Relevant pages"),
    "retrieved_ids": ("Найденные чанки", "Retrieved chunks"), "retrieved_urls": ("Найденные страницы", "Retrieved pages"),
    "retrieved_distances": ("Расстояния найденных", "Retrieved distances"),
    "first_relevant_rank_url": ("Ранг первой релевантной страницы", "First relevant page rank"),
    "n_better": ("Лучше", "Better"), "n_worse": ("Хуже", "Worse"), "n_same": ("Без изменений", "Same"),
    "n_failed": ("Сбоев", "Failed"), "n_partial": ("Частичных", "Partial"),
    "n_not_applicable": ("Неприменимо", "Not applicable"), "effect_size": ("d_z", "d_z"),
    "status_a": ("Статус A", "Status A"), "status_b": ("Статус B", "Status B"), "level": ("Уровень", "Level"),
    "failure_rate": ("Доля провалов", "Failure rate"), "retrieved_instead": ("Найдено вместо", "Retrieved instead"),
    "contexts": ("Контексты", "Contexts"), "judges": ("Судьи", "Judges"), "outcome": ("Исход", "Outcome"),
    "preserved": ("Сохранён", "Preserved"), "answer_failures": ("Сбои ответа", "Answer failures"),
    "context_chunk_ids": ("Чанки контекста", "Context chunks"),
    "context_reconstructed": ("Контекст восстановлен", "Context reconstructed"),
    "context_source": ("Источник контекста", "Context source"), "error_kind": ("Вид ошибки", "Error kind"),
    "gate_pass": ("Ворота пройдены", "Gate passed"), "generation_model": ("Модель генерации", "Generation model"),
    "http_status": ("HTTP-статус", "HTTP status"), "latency_s": ("Задержка, с", "Latency, s"),
    "rate_limit_wait_s": ("Ожидание лимита, с", "Rate-limit wait, s"), "repeat_outcomes": ("Исходы повторов", "Repeat outcomes"),
    "retrieved_chunk_ids": ("Найденные чанки", "Retrieved chunks"), "retrieved_chunk_id": ("Найденный чанк", "Retrieved chunk"),
    "returned_url": ("Возвращённая страница", "Returned page"), "aggregate": ("Агрегат", "Aggregate"),
    "details": ("Подробности", "Details"), "explanation": ("Объяснение", "Explanation"), "partial": ("Частично", "Partial"),
    "threshold": ("Порог", "Threshold"), "empty_answer": ("Пустой ответ", "Empty answer"),
    "failure_kind": ("Вид сбоя", "Failure kind"), "n_asked": ("Спрошено моделей", "Models asked"),
    "n_answered": ("Ответило моделей", "Models answered"), "per_model": ("По моделям", "Per model"),
    "raw_replies": ("Сырые ответы", "Raw replies"), "score_norm": ("Оценка 0–1", "Score 0–1"),
    "score_range": ("Шкала оценки", "Score range"), "user_input": ("Вопрос", "Question"),
    "response": ("Ответ", "Answer"), "retrieved_contexts": ("Найденные контексты", "Retrieved contexts"), "transport_failures": ("Сбои транспорта", "Transport failures"),
    "dataset_id": ("ID набора", "Dataset ID"), "hash": ("Хеш", "Hash"), "action": ("Действие", "Action"),
    "parent_version": ("Из версии", "Parent version"), "added": ("Добавлено", "Added"), "removed": ("Удалено", "Removed"),
    "changed": ("Изменено", "Changed"), "field": ("Поле", "Field"), "old": ("Было", "Old"), "new": ("Стало", "New"),
    "page": ("Страница", "Page"), "vector_rank": ("Ранг векторного поиска", "Vector search rank"),
    "fts_rank": ("Ранг полнотекстового поиска", "Full-text search rank"), "dataset": ("Набор", "Dataset"),
    "stale": ("Устарел", "Stale"), "n_items_affected": ("Затронуто элементов", "Items affected"),
    "by_kind": ("По видам", "By kind"), "snapshot_id": ("Снимок", "Snapshot"), "row": ("Строка", "Row"),
    "message": ("Сообщение", "Message"), "sentences": ("Предложения ответа", "Answer sentences"),
    "sentence": ("Предложение", "Sentence"), "evidence": ("Опора в контексте", "Evidence"),
    "cosine": ("Косинус", "Cosine"), "containment": ("Вложенность", "Containment"),
    "supported": ("Подтверждено", "Supported"), "with_context": ("С контекстом", "With context"),
    "attempts": ("Попыток", "Attempts"), "kept": ("Оставлен", "Kept"), "dropped_by": ("Отброшен фильтром", "Dropped by"),
    "actor": ("Пользователь", "User"),
    "ground_truth_answer": ("Эталонный ответ", "Reference answer"), "is_question_ok": ("Вопрос корректен", "Question sound"),
    "is_answer_ok": ("Ответ верен", "Answer right"), "is_chunk_ok": ("Чанк подходит", "Chunk fits"),
    "notes": ("Заметки", "Notes"), "question_source": ("Источник вопроса", "Question source"),
    "chunk_text": ("Текст чанка", "Chunk text"), "confluence_url": ("Страница", "Page"),
    "cost_usd": ("Стоимость, $", "Cost, $"), "llm_label": ("Подпись LLM", "LLM label"),
    "review_status": ("Статус проверки", "Review status"), "item_index": ("Позиция", "Position"),
    "reask_pairs": ("Переспрошенные пары", "Re-asked pairs"), "followup_pairs": ("Уточняющие пары", "Follow-up pairs"),
    "paraphrase_of": ("Перефразирует", "Paraphrases"), "turns": ("Ходы диалога", "Dialog turns"),
    "rationale": ("Обоснование", "Rationale"),
    "name_source": ("Как названа", "Named by"), "need": ("Потребность", "Need"),
    "dist_norm": ("Удалённость от базы (0–1)", "Distance to the KB (0–1)"), "off_topic": ("Не по теме", "Off-topic"),
    "benchmark": ("Эталонный судья", "Benchmark judge"), "generation": ("Генерация", "Generation"),
    "retrieval": ("Поиск", "Retrieval"), "prompt": ("Промпт", "Prompt"), "judge": ("Судья", "Judge"),
}


#: headers of the topic, coverage-gap and answer tables (the Real users and Real questions pages)
TOPIC_COLUMN_LABELS: dict[str, tuple[str, str]] = {
    "topic_name": ("Название темы", "Topic name"),
    "retrieved_topk": ("Попаданий в top-k", "Retrieved in top-k"), "retrieved_top1": ("Попаданий первым", "Retrieved first"),
    "thumbs_up": ("Оценок 👍", "👍 ratings"), "thumbs_down": ("Оценок 👎", "👎 ratings"),
    "thumbs_up_top1": ("👍 на первом месте", "👍 when first"), "thumbs_down_top1": ("👎 на первом месте", "👎 when first"),
    "down_share": ("Доля 👎", "👎 share"), "down_share_top1": ("Доля 👎 на первом месте", "👎 share when first"),
    "text_preview": ("Начало текста", "Text preview"), "distinct_pages": ("Разных страниц", "Distinct pages"),
    "distinct_chunks": ("Разных чанков", "Distinct chunks"), "gap_rank": ("Место по пробелу", "Gap rank"),
    "gap_score": ("Оценка пробела", "Gap score"), "name_coverage": ("Покрытие названием", "Name coverage"),
    "nearest_distance": ("Расстояние до базы", "Distance to the KB"),
    "nearest_similarity": ("Сходство с базой", "Similarity to the KB"), "size": ("Вопросов", "Questions"),
    "answered_share": ("Доля с ответом", "Answered share"),
    "effective_answered_share": ("Доля с настоящим ответом", "Effective answered share"),
    "declined": ("Отказов", "Declines"), "off_topic_share": ("Доля не по теме", "Off-topic share"),
    "trend_slope": ("Наклон тренда", "Trend slope"), "user_named": ("Имя дано вручную", "Named by hand"),
    "merged_from": ("Объединена из", "Merged from"), "stored_ids": ("Сохранённые имена", "Stored names"),
    "llm_label": ("Подпись LLM", "LLM label"), "n_now": ("Вопросов сейчас", "Questions now"),
    "n_prev": ("Вопросов раньше", "Questions before"), "share_now": ("Доля сейчас", "Share now"),
    "share_prev": ("Доля раньше", "Share before"), "p_up": ("p роста", "p of growth"), "p_down": ("p спада", "p of decline"),
    "status_name": ("Статус", "Status"), "lift": ("Рост", "Lift"), "ratio": ("Отношение", "Ratio"),
    "effective_answered_now": ("С настоящим ответом сейчас", "Effectively answered now"),
    "effective_answered_prev": ("С настоящим ответом раньше", "Effectively answered before"),
    "peak_month": ("Месяц пика", "Peak month"), "peak_month_name": ("Месяц пика, название", "Peak month, name"),
    "n_peak": ("Вопросов в пике", "Questions at the peak"), "class": ("Класс", "Class"), "rows": ("Строк", "Rows"),
    "share": ("Доля", "Share"), "count": ("Раз", "Times"), "pages": ("Страниц", "Pages"), "pattern": ("Шаблон", "Pattern"),
    "max_chars": ("Не длиннее, символов", "At most, characters"), "variants": ("Варианты", "Variants"),
    "sample_seed": ("Зерно выборки", "Sampling random state"), "silhouette": ("Силуэт", "Silhouette"),
    "group": ("Группа", "Group"), "period": ("Период", "Period"), "month": ("Месяц", "Month"),
    "subset": ("Выборка", "Subset"), "example": ("Пример", "Example"), "cluster": ("Кластер", "Cluster"),
    "example_counts": ("Повторов примеров", "Example repeats"), "words": ("Слова", "Words"),
    "mixed": ("Смешанная тема", "Mixed topic"),
}


#: synthetic question types (``generation.sampling.QUESTION_TYPES``; the catalog labels its groups with them)
QUESTION_TYPE_WORDS: dict[str, tuple[str, str]] = QUESTION_TYPE_LABELS
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
    # heavy: defers pandas (via analytics.answers)
    from voproshalych_eval.analytics.answers import CLASS_NAMES

    return dict(CLASS_NAMES)


#: how a topic got its name (``analytics.topics``: ``name_source``)
NAME_SOURCE_WORDS: dict[str, tuple[str, str]] = {
    "phrase": ("словосочетание из вопросов", "a phrase of its questions"),
    "question": ("центральный вопрос", "its central question"), "keywords": ("ключевые слова", "key words"),
    "category": ("категория", "category"), "user": ("вручную", "by hand"),
}
#: column name -> the words of its values (a callable is read when first needed)
COLUMN_VALUES: dict[str, Any] = {
    "question_type": QUESTION_TYPE_WORDS, "review_status": REVIEW_STATUS_WORDS, "outcome": OUTCOME_WORDS,
    "outcome_a": OUTCOME_WORDS, "outcome_b": OUTCOME_WORDS, "answer_class": _answer_classes,
    "predicted_class": _answer_classes, "status": {**ITEM_STATUS_WORDS, **REVIEW_STATUS_WORDS},
    "name_source": NAME_SOURCE_WORDS,
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


def column_header(column: str, lang: str = "ru") -> str:
    """The header of a stored column or field in ``lang``: :data:`COLUMN_LABELS`, :data:`TOPIC_COLUMN_LABELS`,
    then the metric catalog (a metric key or a per-item field); the name itself when none knows it."""
    pair = COLUMN_LABELS.get(column) or TOPIC_COLUMN_LABELS.get(column)
    if pair is not None:
        return pair[1] if lang == "en" else pair[0]
    spec = catalog.get(column) or catalog.for_item_field(column)
    return spec.label(lang) if spec is not None else column
