"""Overview: the state of the bot at a glance."""

from __future__ import annotations

import streamlit as st

from voproshalych_eval.baselines import RULE_EN, RULE_RU, STATUS_ICONS, STATUS_LABELS
from voproshalych_eval.overview import overview_snapshot
from voproshalych_eval.plots.runs import sparkline
from voproshalych_eval.ui import state
from voproshalych_eval.ui.common import TIER_COLORS, page_header
from voproshalych_eval.ui.i18n import metric_label, tr

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

with state.user_errors("Не удалось открыть базу данных", "Could not open the database"):
    snap = overview_snapshot(state.engine(), state.settings())

    c = snap["counts"]
    cols = st.columns(5)
    cols[0].metric(tr("Чанков в базе знаний", "Knowledge-base chunks"), c.get("chunks") if c.get("chunks") is not None else "—")
    cols[1].metric(tr("Страниц", "Pages"), c.get("pages") if c.get("pages") is not None else "—")
    cols[2].metric(tr("Вопросов в журнале", "Logged questions"), c.get("questions") if c.get("questions") is not None else "—")
    cols[3].metric(tr("Пользователей", "Users"), c.get("users") if c.get("users") is not None else "—")
    cols[4].metric(tr("Наборов данных", "Datasets"), snap["n_datasets"])

    if snap["todo"]:
        st.subheader(tr("Что не настроено", "Not configured yet"))
        for item in snap["todo"]:
            st.info(tr(item["ru"], item["en"]))

    st.subheader(tr("Последние запуски", "Latest runs"))
    tiers = snap["tiers"]
    for start in range(0, len(tiers), 4):
        row = st.columns(4)
        for col, tier in zip(row, tiers[start : start + 4], strict=False):
            with col.container(border=True):
                st.markdown(f"**{tr(*tier['title'])}**")
                if tier["run"] is None:
                    st.caption(tr("Запусков ещё нет", "No runs yet"))
                    continue
                run = tier["run"]
                st.caption(f"#{run['id']} · {run['finished_at']:%Y-%m-%d %H:%M}" + (" · " + tr("офлайн", "offline") if run["offline"] else "")
                           + (" · ⚠️ " + tr("смешанный запуск", "mixed run") if run.get("mixed") else ""))
                rs = tier.get("run_status")
                if rs:
                    st.markdown(f"{STATUS_ICONS.get(rs, '')} {tr(*STATUS_LABELS[rs])}")
                for key, value in tier["values"].items():
                    shown = "—" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))
                    status = tier["status"].get(key)
                    mark = STATUS_ICONS.get(status or "", "")
                    base = tier.get("baselines", {}).get(key)
                    target = f" <small>({tr('база', 'baseline')} {base:g})</small>" if base is not None else ""
                    st.markdown(f"{metric_label(key)}: **{shown}** {mark}{target}", unsafe_allow_html=True)
                trend = tier.get("trend") or {}
                if len(trend.get("values") or []) >= 2:
                    st.plotly_chart(
                        sparkline(trend["values"], baseline=trend.get("baseline"), color=TIER_COLORS.get(tier["key"], "#00A67E")),
                        key=f"overview_trend_{tier['key']}", config={"staticPlot": True},
                    )
                    st.caption(tr(f"Тренд {metric_label(trend['metric'])}, последние запуски", f"{metric_label(trend['metric'])} trend, latest runs"))

    with st.expander(tr("Как считается статус", "How the status is derived")):
        st.markdown(tr(RULE_RU, RULE_EN))
