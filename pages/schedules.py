"""Schedules: run commands started on a cron line by the job queue's workers (add, pause, resume, run now, delete)."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.engine import schedules
from voproshalych_eval.ui import auth, state
from voproshalych_eval.ui.i18n import tr
from voproshalych_eval.ui.widgets import page_header


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Расписания", "Schedules"),
        tr("Запуски по расписанию (cron): каждую ночь на свежем снимке, без наложений.",
           "Runs on a schedule (cron): every night on a fresh snapshot, never overlapping."),
        tr("Расписание — это команда запуска (как в CLI: `tier1 --dataset golden_v1`) и строка cron "
           "(минута час день месяц день-недели) в своём часовом поясе (по умолчанию Asia/Yekaterinburg — Тюмень). "
           "Обработчики очереди каждую минуту запускают наступившие расписания: сначала свежий снимок источника, "
           "затем запуск в очередь с именем расписания. Если прошлый запуск расписания ещё идёт, новый "
           "пропускается — причина видна в колонке «последнее событие». Нужен хотя бы один обработчик "
           "(`voproshalych-eval worker`).",
           "A schedule is a run command (as in the CLI: `tier1 --dataset golden_v1`) and a cron line (minute hour day "
           "month weekday) in its own timezone (default Asia/Yekaterinburg — Tyumen). The queue's workers start the "
           "due schedules every minute: first a fresh snapshot of the source, then the run on the queue under the "
           "schedule's name. While the schedule's previous run is still going a new one is skipped — the reason shows "
           "in the “last event” column. At least one worker (`voproshalych-eval worker`) must run."),
    )


def _render_add_form() -> None:
    with st.form("sched_add"):
        st.subheader(tr("Новое расписание", "New schedule"))
        name = st.text_input(tr("Имя", "Name"), key="sched_name")
        cron = st.text_input("cron", value="0 3 * * *", key="sched_cron")
        tz = st.text_input(tr("Часовой пояс", "Timezone"), value=schedules.default_timezone(), key="sched_tz")
        command = st.text_input(tr("Команда запуска", "Run command"), value="tier1 --dataset demo_golden", key="sched_cmd")
        if auth.submit("schedule", st, tr("Добавить", "Add")):
            with state.user_errors("Не удалось добавить расписание", "Could not add the schedule"), \
                    auth.audited("schedule", name.strip(), {"op": "add", "cron": cron.strip()}):
                s = schedules.add(state.engine(), name.strip(), cron.strip(), shlex.split(command), timezone=tz.strip())
                st.success(tr(f"Добавлено: {s.name}, следующий запуск {s.next_at():%Y-%m-%d %H:%M}.",
                              f"Added: {s.name}, next run {s.next_at():%Y-%m-%d %H:%M}."))


def _render_table(found: list) -> None:
    st.dataframe(pd.DataFrame([{
        tr("имя", "name"): s.name, "cron": s.cron, tr("пояс", "timezone"): s.timezone,
        tr("команда", "command"): " ".join(s.command),
        tr("следующий", "next"): tr("на паузе", "paused") if s.paused else f"{s.next_at():%Y-%m-%d %H:%M}",
        tr("последний запуск", "last run"): f"#{s.last_run_id}" if s.last_run_id else "—",
        tr("последнее событие", "last event"): s.last_note or "—",
    } for s in found]), hide_index=True)


def _render_actions(engine: Any, chosen: Any) -> None:
    """Pause or resume, run now, delete the picked schedule."""
    pick = chosen.name
    cols = st.columns(4)
    if chosen.paused:
        if auth.button("schedule", cols[0], tr("Возобновить", "Resume"), key="sched_resume"):
            with auth.audited("schedule", pick, {"op": "resume"}):
                schedules.set_paused(engine, pick, False)
                st.rerun()
    elif auth.button("schedule", cols[0], tr("Пауза", "Pause"), key="sched_pause"):
        with auth.audited("schedule", pick, {"op": "pause"}):
            schedules.set_paused(engine, pick, True)
            st.rerun()
    if auth.button("schedule", cols[1], tr("Запустить сейчас", "Run now"), key="sched_run_now"):
        with auth.audited("schedule", pick, {"op": "run_now"}):
            job = schedules.defer_start(pick, datetime.now(UTC))
        st.success(tr(f"Запуск поставлен в очередь (задание {job}).", f"Start queued (job {job})."))
    if auth.button("schedule", cols[2], tr("Удалить", "Delete"), key="sched_delete"):
        with auth.audited("schedule", pick, {"op": "delete"}):
            schedules.delete(engine, pick)
            st.rerun()


def _render_schedules() -> None:
    with state.user_errors("Не удалось открыть расписания", "Could not open the schedules"):
        engine = state.engine()
        found = schedules.list_schedules(engine)
        if not found:
            st.info(tr("Расписаний пока нет — добавьте первое ниже.", "No schedules yet — add the first one below."))
            return
        _render_table(found)
        names = [s.name for s in found]
        pick = st.selectbox(tr("Расписание", "Schedule"), names, key="sched_pick")
        chosen = next(s for s in found if s.name == pick)
        _render_actions(engine, chosen)
        hist = schedules.history(engine, pick)
        if hist:
            st.caption(tr("Запуски расписания", "The schedule's runs"))
            st.dataframe(pd.DataFrame(hist), hide_index=True)


def _render_page() -> None:
    _render_add_form()
    _render_schedules()


init_page_state()
_render_page()
