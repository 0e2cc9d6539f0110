"""Bilingual UI text: Russian by default, English on the sidebar switch.

Pages write both languages inline — ``tr("Запустить", "Run")`` — so no central dictionary has to be
kept in sync. Metric keys never change: :func:`metric_label` gives their translated labels and
:func:`fmt` their values written by kind (count, share, 1–5, seconds…), both from the metric catalog
(:mod:`voproshalych_eval.metrics.catalog`, :mod:`voproshalych_eval.metrics.formatting`). Messages the
core produces in both languages (:class:`voproshalych_eval.bilingual.Text`, e.g. progress lines) are
shown with :func:`show`.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from voproshalych_eval.bilingual import render
from voproshalych_eval.config import get_settings

LANG_KEY = "ui_language"
LANGUAGES = {"ru": "Русский", "en": "English"}


def lang() -> str:
    """The active UI language (``ru`` or ``en``): the session's; a new session starts from the URL's
    ``?lang=`` (a link or a reload keeps its language), else the configured language."""
    value = st.session_state.get(LANG_KEY)
    if value not in LANGUAGES and st.query_params.get("lang") in LANGUAGES:
        value = st.session_state[LANG_KEY] = st.query_params["lang"]
    if value not in LANGUAGES:
        value = get_settings().language if get_settings().language in LANGUAGES else "ru"
        st.session_state[LANG_KEY] = value
    return value


#: the keys of choice widgets drawn with translated labels (a selectbox or radio with a ``format_func``)
CHOICES_KEY = "_translated_choices"


def remember_choice(key: str) -> None:
    """Mark widget ``key`` as a choice whose option labels are translated. The browser sends a choice back as
    its label: after a language switch the old language's label matches no option, and Streamlit returns the
    label itself as the value. :func:`reassert_choices` (the switch's callback) prevents that."""
    st.session_state.setdefault(CHOICES_KEY, set()).add(key)


def reassert_choices() -> None:
    """The language switch's ``on_change``: set every remembered choice to the value it holds (read with the
    labels it was drawn with), so that the next run draws it from that value in the new language."""
    for key in sorted(st.session_state.get(CHOICES_KEY, ())):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def tr(ru: str, en: str) -> str:
    """Pick the Russian or English text for the active language."""
    return en if lang() == "en" else ru


def tr_pair(pair: tuple[str, str] | list[str]) -> str:
    """:func:`tr` of a ``(ru, en)`` pair (the registries store titles so)."""
    return tr(pair[0], pair[1])


def metric_label(key: str) -> str:
    """Translated label of a metric key, from the metric catalog (``chunk.mrr`` -> "MRR · чанки")."""
    from voproshalych_eval.metrics import catalog  # heavy: keeps metrics.catalog out of app start (+15 ms)

    text = catalog.label(key, lang())
    if text == key and (spec := catalog.for_item_field(key)) is not None:  # a per-item field (``faithfulness``)
        return spec.label(lang())
    if text == key:  # a per-item column that is not a metric (``first_relevant_rank``): its table header
        from voproshalych_eval.ui.tables import COLUMN_LABELS  # heavy: defers pandas (via ui.tables)

        if key in COLUMN_LABELS:
            return tr(*COLUMN_LABELS[key])
    return text


def fmt(key: str | None, value: Any, *, percent: bool = False) -> str:
    """``value`` of metric ``key`` written by its kind and scale (``224``, ``0.581``, ``4.25``, ``1.2 с``)."""
    # heavy: keeps metrics.formatting out of app start (+15 ms)
    from voproshalych_eval.metrics.formatting import format_value

    return format_value(key, value, lang(), percent=percent)


def fmt_count(n: Any) -> str:
    """A whole number with the language's thousands separator (``—`` for none)."""
    # heavy: keeps metrics.formatting out of app start (+15 ms)
    from voproshalych_eval.metrics.formatting import format_count

    return "—" if n is None else format_count(n, lang())


def fmt_seconds(s: Any) -> str:
    # heavy: keeps metrics.formatting out of app start (+15 ms)
    from voproshalych_eval.metrics.formatting import format_seconds

    return "—" if s is None else format_seconds(s, lang())


def show(value: Any) -> str:
    """A core message (:class:`voproshalych_eval.bilingual.Text` or plain text) in the active language."""
    return render(value, lang())
