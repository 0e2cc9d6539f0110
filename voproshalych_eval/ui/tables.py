"""Tables as a person reads them: translated headers, numbers by kind, a download button under each.

:func:`column_config` gives every column of a frame its header in the UI language and its number format:
a metric column (a catalogued key or a per-item field such as ``faithfulness``) gets the catalog's label and
decimals (counts as integers, shares 0.000, 1–5 scores to two decimals); other known columns
(:data:`COLUMN_LABELS`) their translated header. The data and the downloads keep the original column names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.ui.i18n import lang, tr

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


def _metric_spec(column: str) -> Any:
    from voproshalych_eval.metrics import catalog

    return catalog.get(column) or catalog.for_item_field(column)


def header(column: str, labels: Mapping[str, tuple[str, str]] | None = None) -> str:
    """The header of ``column`` in the UI language (``labels`` first, then :data:`COLUMN_LABELS`, then the catalog)."""
    if labels and column in labels:
        return tr(*labels[column])
    if column in COLUMN_LABELS:
        return tr(*COLUMN_LABELS[column])
    spec = _metric_spec(column)
    if spec is not None:
        return spec.label(lang())
    return column


def column_config(df: pd.DataFrame, labels: Mapping[str, tuple[str, str]] | None = None,
                  metrics: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``st.dataframe`` column configuration: translated headers, number formats by the metric catalog.

    ``metrics`` maps a column to the metric key whose number format it takes (when the column name is not
    itself a catalogued key or per-item field)."""
    from voproshalych_eval.metrics import catalog
    from voproshalych_eval.metrics.formatting import decimals

    config: dict[str, Any] = {}
    for col in df.columns:
        name = str(col)
        head = header(name, labels)
        spec = catalog.get(metrics[name]) if metrics and name in metrics else (
            None if name in COLUMN_LABELS else _metric_spec(name))
        numeric = pd.api.types.is_numeric_dtype(df[col]) and not pd.api.types.is_bool_dtype(df[col])
        if numeric:  # every number by the catalog's rule (an uncatalogued float: three decimals, whole numbers: none)
            d = decimals(spec) if spec is not None else (0 if _whole_numbers(df[col]) else 3)
            config[name] = st.column_config.NumberColumn(head, format="%d" if d == 0 else f"%.{d}f")
        elif pd.api.types.is_datetime64_any_dtype(df[col]):
            config[name] = st.column_config.DatetimeColumn(head, format="YYYY-MM-DD HH:mm")
        elif name in ("text", "question", "answer", "reference", "examples"):
            config[name] = st.column_config.TextColumn(head, width="large")
        else:
            config[name] = st.column_config.Column(head)
    return config


def _whole_numbers(col: pd.Series) -> bool:
    """Integers, or floats that are all whole numbers once the missing values are left out (counts, ranks)."""
    if pd.api.types.is_integer_dtype(col):
        return True
    vals = col.dropna()
    return len(vals) > 0 and bool((vals == vals.round()).all())


def show(df: pd.DataFrame, name: str, *, key: str | None = None, labels: Mapping[str, tuple[str, str]] | None = None,
         metrics: Mapping[str, str] | None = None, height: int | str | None = None, download: bool = True,
         **kwargs: Any) -> Any:
    """A table with translated headers and numbers by kind, then its download buttons (original column names)."""
    from voproshalych_eval.field_words import words_of
    from voproshalych_eval.ui.common import download_buttons

    shown = df.copy()
    for col in shown.columns:  # stored identifiers (``factual``, ``not_found``) read as words
        shown[col] = words_of(str(col), shown[col], lang())
    for col in shown.columns:  # nested values read as text, never as a JSON tree
        if any(isinstance(v, dict | list | tuple) for v in shown[col]):  # (an empty str column maps to str)
            shown[col] = shown[col].map(_flat)
    event = st.dataframe(shown, hide_index=True, height=height or "auto", column_config=column_config(shown, labels, metrics),
                         key=key and f"tbl_{key}", **kwargs)
    if download:
        download_buttons(df, name, key=key)
    return event


def nested_columns(df: pd.DataFrame) -> list[str]:
    """Columns whose every non-empty value is a dict or a list (whole results, not readable as a cell)."""
    out = []
    for col in df.columns:
        vals = [v for v in df[col] if v is not None and not (isinstance(v, float) and v != v)]
        if vals and all(isinstance(v, dict | list | tuple) for v in vals):
            out.append(col)
    return out


def _flat(v: Any) -> Any:
    if isinstance(v, Mapping):
        return "; ".join(f"{k}: {_flat(x)}" for k, x in v.items())
    if isinstance(v, list | tuple):
        return ", ".join(str(_flat(x)) for x in v)
    return v


def definition_list(rows: Mapping[str, Any] | list[tuple[str, Any]]) -> None:
    """A readable two-column list (term — value) instead of a JSON tree."""
    pairs = list(rows.items()) if isinstance(rows, Mapping) else list(rows)
    if not pairs:
        return
    st.markdown("\n".join(f"- **{term}:** {_dl_value(value)}" for term, value in pairs))


def _dl_value(value: Any) -> str:
    """A definition's value: ``("code", text)`` as a code span (technical text), nested values flattened."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "code":
        return "`" + str(value[1]).replace("`", "'") + "`"
    if isinstance(value, Mapping):
        return "`" + str(_flat(value)).replace("`", "'") + "`"
    return "—" if value in (None, "") else str(_flat(value))
