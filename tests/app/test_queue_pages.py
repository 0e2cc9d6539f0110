"""AppTest: the Schedules page adds, pauses, resumes, starts and deletes a schedule; the Alerts page saves a
webhook channel and its test button delivers a message to a receiver served here over real HTTP."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from tests.integration.test_alerts import Receiver
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import alerts, schedules

APP = str(PROJECT_ROOT / "app.py")


def _page(page: str, lang: str = "en") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_schedules_page_manages_a_schedule(engine: Any) -> None:
    at = _page("pages/schedules.py")
    at.text_input(key="sched_name").set_value("page-nightly")
    at.text_input(key="sched_cron").set_value("30 2 * * *")
    at.text_input(key="sched_cmd").set_value("tier1 --dataset no_such_dataset_for_the_page_test")
    at.button(key="FormSubmitter:sched_add-Add").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    s = schedules.get(engine, "page-nightly")
    assert s.cron == "30 2 * * *" and s.timezone == "Asia/Yekaterinburg" and s.command[0] == "tier1"
    at.selectbox(key="sched_pick").set_value("page-nightly").run()
    at.button(key="sched_pause").click().run()
    assert schedules.get(engine, "page-nightly").paused
    at.button(key="sched_resume").click().run()
    assert not schedules.get(engine, "page-nightly").paused
    at.button(key="sched_run_now").click().run()
    assert any("job" in s.value for s in at.success)
    at.button(key="sched_delete").click().run()
    assert not at.exception
    assert "page-nightly" not in [x.name for x in schedules.list_schedules(engine)]
    # a bad cron line is a sentence on the page
    at.text_input(key="sched_name").set_value("page-bad")
    at.text_input(key="sched_cron").set_value("every night")
    at.button(key="FormSubmitter:sched_add-Add").click().run()
    assert any("not a valid cron line" in e.value for e in at.error)


def test_alerts_page_saves_a_channel_and_sends_a_test(engine: Any) -> None:
    receiver = Receiver()
    try:
        at = _page("pages/alerts.py", "ru")
        at.text_input(key="alert_name").set_value("page-hook")
        at.selectbox(key="alert_kind").set_value("webhook")
        at.text_input(key="alert_target").set_value(receiver.url + "/page")
        at.button(key="FormSubmitter:alert_add-Сохранить канал").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert alerts.get_channel(engine, "page-hook").target == receiver.url + "/page"
        at.run()
        at.selectbox(key="alert_pick").set_value("page-hook").run()
        at.button(key="alert_test").click().run()
        assert any("Доставлено" in s.value for s in at.success), [e.value for e in at.error]
        assert [p for p, _ in receiver.posts] == ["/page"] and "test alert" in receiver.posts[0][1]["text"]
        at.button(key="alert_delete").click().run()
        assert "page-hook" not in [c.name for c in alerts.list_channels(engine)]
    finally:
        receiver.close()
