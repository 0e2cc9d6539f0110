"""Bilingual UI text: Russian by default, English on the sidebar switch.

Pages write both languages inline — ``tr("Запустить", "Run")`` — so no central dictionary has to be
kept in sync. Metric keys never change; :func:`metric_label` gives their translated labels from the
metric catalog (:mod:`voproshalych_eval.metrics.catalog`).
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


def metric_label(key: str) -> str:
    """Translated label of a metric key, from the metric catalog (``chunk.mrr`` -> "MRR · чанки")."""
    from voproshalych_eval.metrics import catalog

    return catalog.label(key, lang())
