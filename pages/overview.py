"""Overview: the state of the bot at a glance."""

from __future__ import annotations

import streamlit as st

from voproshalych_eval.engine import describe
from voproshalych_eval.engine.baselines import RULE_EN, RULE_RU, STATUS_ICONS
from voproshalych_eval.overview import overview_snapshot
from voproshalych_eval.plots.runs import sparkline
from voproshalych_eval.ui import state
from voproshalych_eval.ui.charts import plotly_chart
from voproshalych_eval.ui.i18n import fmt, fmt_count, lang, metric_label, tr
from voproshalych_eval.ui.verdicts import badge_markdown
from voproshalych_eval.ui.widgets import TIER_COLORS, empty_state, page_header


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Обзор", "Overview"),
        tr(
            "Состояние бота одним взглядом: данные, последние запуски каждого уровня, что ещё не настроено.",
            "The bot at a glance: data sizes, the latest run of every tier, what is not configured yet.",
        ),
        tr(
            "Карточка уровня показывает ключевые метрики последнего завершённого запуска, их базовые уровни "
            "(страница «Базовые уровни») и общий статус запуска 🟢/🟡/🔴/⚪, а ниже — тренд по последним запускам. "
            "Шкалы: доли — 0–1, больше — лучше; оценки судьи — 1–5; BLEU — 0–100. Подробности и доверительные "
            "интервалы — на страницах уровней, история и сравнение — на странице «Запуски».",
            "Each tier card shows the key metrics of its latest finished run, their baselines (Baselines page) and "
            "the run's overall status 🟢/🟡/🔴/⚪, with a trend over the latest runs below. Scales: shares are 0–1, "
            "higher is better; judge scores 1–5; BLEU 0–100. Details and confidence intervals are on the tier "
            "pages, history and comparisons on the Runs page.",
        ),
    )


def _render_counts(snap: dict) -> None:
    c = snap["counts"]
    cols = st.columns(5)
    cols[0].metric(tr("Чанков в базе знаний", "Knowledge-base chunks"), fmt_count(c.get("chunks")))
    cols[1].metric(tr("Страниц", "Pages"), fmt_count(c.get("pages")))
    cols[2].metric(tr("Вопросов в журнале", "Logged questions"), fmt_count(c.get("questions")))
    cols[3].metric(tr("Пользователей", "Users"), fmt_count(c.get("users")))
    cols[4].metric(tr("Наборов данных", "Datasets"), fmt_count(snap["n_datasets"]))


def _render_todo(c: dict, snap: dict) -> None:
    st.subheader(tr("Что не настроено", "Not configured yet"))
    if not c.get("chunks"):
        empty_state("База знаний пуста: загрузите демо-данные или укажите DATABASE_URL production-базы в настройках.",
                    "The knowledge base is empty: load the demo data or set DATABASE_URL of the production database in Settings.",
                    demo=True, page="pages/settings.py", page_label=("Открыть настройки", "Open Settings"))
    if not snap.get("has_llm"):
        empty_state("LLM не настроен: судьи и генератор работают как офлайн-эвристики — их числа помечены «офлайн» "
                    "и не сравниваются с базовыми уровнями.",
                    "No LLM is configured: judges and the generator run as offline heuristics — their numbers are "
                    "marked offline and never compared to the baselines.",
                    page="pages/settings.py", page_label=("Открыть настройки", "Open Settings"))


def _render_tier_card(tier: dict) -> None:
    """A tier's card: its latest run's verdict, key metrics against their baselines, and the trend."""
    if tier.get("page"):
        st.page_link(tier["page"], label=f"**{tr(*tier['title'])}**", icon=":material/arrow_forward:")
    else:
        st.markdown(f"**{tr(*tier['title'])}**")
    if tier["run"] is None:
        st.caption(tr("Запусков ещё нет — откройте страницу уровня и нажмите «Запустить».",
                      "No runs yet — open the tier's page and press Run."))
        return
    run = tier["run"]
    rs = tier.get("run_status")
    if rs:  # the verdict leads the card
        st.markdown(badge_markdown(rs) + (" " + ":orange-badge[⚠️ " + tr("смешанный запуск", "mixed run") + "]"
                                          if run.get("mixed") else ""))
    st.caption(f"{describe.config_words(run, lang())} · {run['finished_at']:%Y-%m-%d %H:%M} · #{run['id']}")
    for key, value in tier["values"].items():
        status = tier["status"].get(key)
        mark = STATUS_ICONS.get(status or "", "")
        base = tier.get("baselines", {}).get(key)
        target = f" ({tr('база', 'baseline')} {fmt(key, base)})" if base is not None and not run["offline"] else ""
        st.markdown(f"{metric_label(key)}: **{fmt(key, value)}** {mark}{target}")
    trend = tier.get("trend") or {}
    if len(trend.get("values") or []) >= 2:
        plotly_chart(
            sparkline(trend["values"], baseline=None if run["offline"] else trend.get("baseline"),
                      color=TIER_COLORS.get(tier["key"], "#00A67E"), metric_key=trend["metric"]),
            key=f"overview_trend_{tier['key']}", config={"staticPlot": True},
        )
        st.caption(tr(f"{metric_label(trend['metric'])}: последние запуски этой конфигурации",
                      f"{metric_label(trend['metric'])}: latest runs of this configuration"))


def _render_page() -> None:
    with state.user_errors("Не удалось открыть базу данных", "Could not open the database"):
        snap = overview_snapshot(state.engine(), state.settings())
        _render_counts(snap)
        if snap["todo"]:
            _render_todo(snap["counts"], snap)
        st.subheader(tr("Последние запуски", "Latest runs"))
        tiers = snap["tiers"]
        for start in range(0, len(tiers), 4):
            row = st.columns(4)
            for col, tier in zip(row, tiers[start : start + 4], strict=False):
                with col.container(border=True):
                    _render_tier_card(tier)
        with st.expander(tr("Как считается статус", "How the status is derived")):
            st.markdown(tr(RULE_RU, RULE_EN))


init_page_state()
_render_page()
