"""Alerts: channels (webhook, Telegram, e-mail) and the events each gets; a test button; what was sent."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from voproshalych_eval.engine import alerts
from voproshalych_eval.ui import auth, state
from voproshalych_eval.ui.i18n import tr
from voproshalych_eval.ui.widgets import page_header

EVENT_LABELS = {"verdict": ("вердикт запуска изменился", "a run's verdict changed"),
                "gate": ("гейт качества не пройден / снова пройден", "a quality gate failed / passes again"),
                "schedule": ("запуск по расписанию упал / снова прошёл", "a scheduled run failed / recovered")}


def init_page_state() -> None:
    """The page header."""
    page_header(
        tr("Оповещения", "Alerts"),
        tr("Одно сообщение на каждое изменение: вердикт против базовых уровней, гейт, запуск по расписанию.",
           "One message per change: a verdict against the baselines, a gate, a scheduled run."),
        tr("Каналы: webhook (JSON POST, совместим с Mattermost/Slack), Telegram (Bot API sendMessage, токен — в "
           "переменной окружения, имя которой хранит канал), e-mail (SMTP). Сообщение называет метрику, значение с "
           "95% ДИ, базовый уровень, запуск и ссылку на него (VOPROSHALYCH_EVAL_APP_URL). Секреты не хранятся и не "
           "показываются.",
           "Channels: webhook (JSON POST, Mattermost/Slack-compatible), Telegram (Bot API sendMessage; the token sits in "
           "an environment variable whose name the channel keeps), e-mail (SMTP). A message names the metric, its value "
           "with the 95% CI, the baseline, the run and a link to it (VOPROSHALYCH_EVAL_APP_URL). Secrets are never "
           "stored or shown."),
    )


def _render_add_form() -> None:
    with st.form("alert_add"):
        st.subheader(tr("Новый канал", "New channel"))
        name = st.text_input(tr("Имя", "Name"), key="alert_name")
        kind = st.selectbox(tr("Вид", "Kind"), alerts.KINDS, key="alert_kind")
        target = st.text_input(tr("Куда (URL / chat id / адрес)", "Target (URL / chat id / address)"), key="alert_target")
        event_labels = {e: tr(*EVENT_LABELS[e]) for e in alerts.EVENTS}  # resolved now: format_func runs later too
        events = st.multiselect(tr("События", "Events"), list(alerts.EVENTS), default=list(alerts.EVENTS),
                                format_func=event_labels.get, key="alert_events",
                                placeholder=tr("Выберите события", "Choose events"))
        options_text = st.text_area(tr("Параметры (КЛЮЧ=ЗНАЧЕНИЕ по строке)", "Options (KEY=VALUE per line)"),
                                    help="telegram: api_url, token_env · smtp: host, port, sender, user, password_env",
                                    key="alert_options")
        if auth.submit("alert", st, tr("Сохранить канал", "Save the channel")):
            with state.user_errors("Не удалось сохранить канал", "Could not save the channel"), \
                    auth.audited("alert", name.strip(), {"op": "save", "kind": kind}):
                options = alerts.parse_options(options_text.splitlines())
                alerts.save_channel(state.engine(), alerts.Channel(name.strip(), kind, target.strip(), options, events))
                st.success(tr("Канал сохранён.", "Channel saved."))


def _render_channels() -> None:
    with state.user_errors("Не удалось открыть оповещения", "Could not open the alerts"):
        engine = state.engine()
        channels = alerts.list_channels(engine)
        if not channels:
            st.info(tr("Каналов пока нет — добавьте первый ниже.", "No channels yet — add the first one below."))
            return
        st.dataframe(pd.DataFrame([{tr("имя", "name"): c.name, tr("вид", "kind"): c.kind,
                                    tr("куда", "target"): c.target, tr("события", "events"): ", ".join(c.events),
                                    tr("включён", "enabled"): c.enabled} for c in channels]), hide_index=True)
        pick = st.selectbox(tr("Канал", "Channel"), [c.name for c in channels], key="alert_pick")
        cols = st.columns(2)
        _render_channel_actions(engine, pick, cols)


def _render_channel_actions(engine: Any, pick: str, cols: list) -> None:
    if auth.button("alert", cols[0], tr("Отправить тестовое оповещение", "Send a test alert"), key="alert_test"):
        with auth.audited("alert", pick, {"op": "test"}):
            error = alerts.test_alert(engine, pick)
        if error is None:
            st.success(tr("Доставлено.", "Delivered."))
        else:
            st.error(tr("Не доставлено: ", "Not delivered: ") + error)
    if auth.button("alert", cols[1], tr("Удалить канал", "Delete the channel"), key="alert_delete"):
        with auth.audited("alert", pick, {"op": "delete"}):
            alerts.delete_channel(engine, pick)
            st.rerun()


def _render_sent() -> None:
    log_rows = alerts.sent(state.engine(), 30)
    if log_rows:
        st.subheader(tr("Отправленные оповещения", "Alerts sent"))
        st.dataframe(pd.DataFrame(log_rows), hide_index=True)


def _render_page() -> None:
    _render_add_form()
    _render_channels()
    _render_sent()


init_page_state()
_render_page()
