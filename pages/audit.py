"""Audit: who started which run, labelled which item, edited which dataset, changed which setting (and what was refused)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from voproshalych_eval.team import ACTION_LABELS, ROLE_LABELS
from voproshalych_eval.ui import auth, tables
from voproshalych_eval.ui.i18n import tr
from voproshalych_eval.ui.widgets import empty_state, page_header

OUTCOMES = {"done": ("выполнено", "done"), "refused": ("отказано", "refused")}
COLUMNS = {
    "at": ("Когда", "When"), "actor": ("Кто", "Who"), "role": ("Роль", "Role"), "action": ("Действие", "Action"),
    "target": ("Объект", "Target"), "outcome": ("Итог", "Outcome"), "details": ("Подробности", "Details"),
}


def init_page_state() -> None:
    """The page header and who you are."""
    page_header(
        tr("Журнал действий", "Audit"),
        tr("Кто запускал оценки, размечал, менял наборы данных и настройки — и какие действия были отклонены.",
           "Who started runs, labelled items, edited datasets and changed settings — and which actions were refused."),
        tr(
            "Каждая строка — одно действие: время, пользователь (e-mail при входе через организацию, иначе имя "
            "пользователя ОС), его роль, вид действия, объект и итог. «Отказано» — попытка действия, которое роль не "
            "позволяет (наблюдатель запускает оценку). Записи только добавляются; тексты вопросов и секреты сюда не "
            "попадают. То же из командной строки: `voproshalych-eval audit`.",
            "Each row is one action: when, who (the e-mail when signed in through the organisation, else the OS user), "
            "their role, the kind of action, its target and the outcome. \"Refused\" is an attempt the role does not "
            "allow (a viewer starting a run). Entries are only ever added; question texts and secrets never go here. "
            "The same from the command line: `voproshalych-eval audit`.",
        ),
    )
    ident = auth.identity()
    st.caption(tr(f"Вы: {ident.label} · {auth.role_label(ident.role)}", f"You: {ident.label} · {auth.role_label(ident.role)}")
               + ("" if auth.team_mode() else tr(" (однопользовательский режим)", " (single-user mode)")))


def _render_filters(df: pd.DataFrame) -> pd.DataFrame:
    """Who, which action, which outcome; returns the entries they keep."""
    c1, c2, c3 = st.columns(3)
    actors = c1.multiselect(tr("Кто", "Who"), sorted(df["actor"].unique()), key="audit_actor",
                            placeholder=tr("Все", "All"))
    kinds = c2.multiselect(tr("Действие", "Action"), sorted(df["action"].unique()), key="audit_action",
                           format_func={a: tr(*ACTION_LABELS.get(a, (a, a))) for a in df["action"].unique()}.get,
                           placeholder=tr("Все", "All"))
    outcome_labels = {"all": tr("все", "all"), **{o: tr(*label) for o, label in OUTCOMES.items()}}
    outcome = c3.radio(tr("Итог", "Outcome"), list(outcome_labels), key="audit_outcome", horizontal=True,
                       format_func=outcome_labels.get)
    view = df
    if actors:
        view = view[view["actor"].isin(actors)]
    if kinds:
        view = view[view["action"].isin(kinds)]
    if outcome != "all":
        view = view[view["outcome"] == outcome]
    return view


def _render_page() -> None:
    df = auth.audit_frame(limit=5000)
    if df.empty:
        empty_state("Журнал пуст: здесь появятся запуски, разметка и изменения настроек.",
                    "The log is empty: runs, labels and settings changes will appear here.")
        st.stop()
    view = _render_filters(df)
    st.caption(tr(f"Записей: {len(view)} из {len(df)}", f"Entries: {len(view)} of {len(df)}"))
    shown = view.assign(
        action=view["action"].map(lambda a: tr(*ACTION_LABELS.get(a, (a, a)))),
        role=view["role"].map(lambda r: tr(*ROLE_LABELS[r]) if r in ROLE_LABELS else "—"),
        outcome=view["outcome"].map(lambda o: tr(*OUTCOMES.get(o, (o, o)))),
    )
    tables.show(shown, "audit_log", key="audit_tbl", labels=COLUMNS)


init_page_state()
_render_page()
