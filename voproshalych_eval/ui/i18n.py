"""Bilingual UI text: Russian by default, English on the sidebar switch.

Pages write both languages inline — ``tr("Запустить", "Run")`` — so no central dictionary has to be
kept in sync. Metric keys never change; :func:`metric_label` gives their translated labels.
"""

from __future__ import annotations

import streamlit as st

LANG_KEY = "ui_language"
LANGUAGES = {"ru": "Русский", "en": "English"}


def lang() -> str:
    """The active UI language (``ru`` or ``en``)."""
    value = st.session_state.get(LANG_KEY)
    if value not in LANGUAGES:
        from voproshalych_eval.config import get_settings

        value = get_settings().language if get_settings().language in LANGUAGES else "ru"
        st.session_state[LANG_KEY] = value
    return value


def tr(ru: str, en: str) -> str:
    """Pick the Russian or English text for the active language."""
    return en if lang() == "en" else ru


METRIC_LABELS: dict[str, tuple[str, str]] = {
    "total_samples": ("Число векторов", "Vectors"),
    "avg_nn_distance": ("Ср. расстояние до соседей", "Mean NN distance"),
    "std_nn_distance": ("СКО расстояния до соседей", "Std NN distance"),
    "density_score": ("Плотность", "Density"),
    "avg_spread": ("Ср. разброс", "Mean spread"),
    "max_spread": ("Макс. разброс", "Max spread"),
    "spread_std": ("СКО разброса", "Spread std"),
    "effective_dimensionality": ("Эффективная размерность", "Effective dimensionality"),
    "avg_pairwise_distance": ("Ср. попарное расстояние", "Mean pairwise distance"),
    "std_pairwise_distance": ("СКО попарного расстояния", "Std pairwise distance"),
    "min_pairwise_distance": ("Мин. попарное расстояние", "Min pairwise distance"),
    "max_pairwise_distance": ("Макс. попарное расстояние", "Max pairwise distance"),
    "mrr": ("MRR", "MRR"),
    "map": ("MAP", "MAP"),
    "avg_faithfulness": ("Фактичность", "Faithfulness"),
    "avg_answer_relevance": ("Релевантность ответа", "Answer relevance"),
    "avg_answer_correctness": ("Корректность ответа", "Answer correctness"),
    "avg_e2e_score": ("E2E-оценка", "E2E score"),
    "avg_semantic_similarity": ("Семантическое сходство", "Semantic similarity"),
    "avg_rouge1_f": ("ROUGE-1 F", "ROUGE-1 F"),
    "avg_rouge2_f": ("ROUGE-2 F", "ROUGE-2 F"),
    "avg_rougeL_f": ("ROUGE-L F", "ROUGE-L F"),
    "avg_bleu": ("BLEU", "BLEU"),
    "consistency_score": ("Согласованность судьи", "Judge consistency"),
    "f1_score": ("F1", "F1"),
    "cache_hit_rate": ("Доля попаданий в кэш", "Cache hit rate"),
    "answered_rate": ("Доля ответов", "Answered rate"),
    "not_found_rate": ("Доля «не найдено»", "Not-found rate"),
    "banned_rate": ("Доля запретов", "Banned rate"),
    "error_rate": ("Доля ошибок", "Error rate"),
    "pass_rate": ("Доля PASS", "Pass rate"),
    "url_hit_rate": ("Попадание в страницу", "Page hit rate"),
}


def metric_label(key: str) -> str:
    """Translated label of a metric key; ``hit_rate@5`` style keys are composed."""
    if key in METRIC_LABELS:
        ru, en = METRIC_LABELS[key]
        return tr(ru, en)
    if "@" in key:
        base, k = key.split("@", 1)
        names = {
            "hit_rate": ("Hit Rate", "Hit Rate"),
            "recall": ("Recall", "Recall"),
            "precision": ("Precision", "Precision"),
            "ndcg": ("NDCG", "NDCG"),
        }
        if base in names:
            return f"{tr(*names[base])}@{k}"
    return key
