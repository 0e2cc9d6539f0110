"""AppTest: team mode (``VOPROSHALYCH_EVAL_TEAM=1``) — the sign-in screen, roles on the pages, the server-side
refusal of a direct call, the actor of a run, and the Audit page — in Russian and in English.

``st.user`` is AppTest's ``user`` (the claims Streamlit would read from the provider's ID token); the real
sign-in through an OpenID Connect provider is the browser journey's (tests/browser/test_team_journey.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.db import audit
from voproshalych_eval.engine import executor, runs

APP = str(PROJECT_ROOT / "app.py")
AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "a-test-cookie-secret-0123456789",
        "client_id": "eval-app", "client_secret": "a-test-client-secret",
        "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration"}
VIEWER = {"is_logged_in": True, "email": "vera.viewer@example.org", "name": "Вера Просмотрова", "roles": ["viewer"]}
ANALYST = {"is_logged_in": True, "email": "anna.analyst@example.org", "name": "Анна Аналитикова", "roles": ["analyst"]}
LANGS = ["ru", "en"]


@pytest.fixture
def team_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOPROSHALYCH_EVAL_TEAM", "1")
    for name in ("VOPROSHALYCH_EVAL_TEAM_ROLES", "VOPROSHALYCH_EVAL_TEAM_ROLE_CLAIM",
                 "VOPROSHALYCH_EVAL_TEAM_DEFAULT_ROLE", "VOPROSHALYCH_EVAL_MASK_PERSONAL_DATA"):
        monkeypatch.delenv(name, raising=False)


def _app(lang: str, user: dict[str, Any]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.secrets["auth"] = AUTH
    at.session_state["ui_language"] = lang
    at.user = dict(user)
    return at


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("lang", LANGS)
def test_signed_out_sees_only_the_sign_in_button(team_env: None, demo_engine: Any, lang: str) -> None:
    at = _app(lang, {"is_logged_in": False}).run()
    _ok(at)
    assert [b.key for b in at.button] == ["auth_login"]
    assert at.button(key="auth_login").label == ("Войти" if lang == "ru" else "Sign in")
    assert not any("Обзор" in t.value or "Overview" in t.value for t in at.title)  # no page drawn


def test_without_the_auth_section_team_mode_fails_closed(team_env: None, demo_engine: Any) -> None:
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = "en"
    at.run()
    _ok(at)
    assert any("[auth]" in e.value for e in at.error) and not at.button


def test_a_user_without_a_role_is_refused(team_env: None, monkeypatch: pytest.MonkeyPatch, demo_engine: Any) -> None:
    monkeypatch.setenv("VOPROSHALYCH_EVAL_TEAM_DEFAULT_ROLE", "none")
    at = _app("en", {"is_logged_in": True, "email": "stranger@example.org"}).run()
    _ok(at)
    assert any("no access" in e.value for e in at.error)
    assert [b.key for b in at.button] == ["auth_logout_norole"]


@pytest.mark.parametrize("lang", LANGS)
def test_viewer_sees_pages_without_run_buttons(team_env: None, demo_engine: Any, lang: str) -> None:
    at = _app(lang, VIEWER).run()
    _ok(at)
    assert any("Вера Просмотрова" in m.value for m in at.sidebar.markdown)
    assert "auth_logout" in {b.key for b in at.button}
    at.switch_page("pages/tier1_retrieval.py").run()
    _ok(at)
    assert at.title[0].value.startswith("Tier 1")  # the page itself is there
    assert "t1_run" not in {b.key for b in at.button}
    lock = "нужна роль «аналитик»" if lang == "ru" else "needs the analyst role"
    assert any(lock in c.value for c in at.caption)


@pytest.mark.parametrize("lang", LANGS)
def test_analyst_sees_the_run_button(team_env: None, demo_engine: Any, lang: str) -> None:
    at = _app(lang, ANALYST).run()
    at.switch_page("pages/tier1_retrieval.py").run()
    _ok(at)
    assert "t1_run" in {b.key for b in at.button}


def _direct_call(label: str) -> None:
    """A page script that starts a run without any button (what a forged request would make the server do)."""
    import streamlit as st

    from voproshalych_eval.plans import Plan
    from voproshalych_eval.ui import jobs

    jobs.start(lambda: Plan(tier="tier1", items=[("a", 1), ("b", 2)], work=lambda x: {"v": x},
                            finalize=lambda records: {}, label=label), "direct_job")
    st.write("the call went through")


def _direct_call_app(user: dict[str, Any], label: str) -> AppTest:
    at = AppTest.from_function(_direct_call, kwargs={"label": label}, default_timeout=180)
    at.secrets["auth"] = AUTH
    at.session_state["ui_language"] = "en"
    at.user = dict(user)
    return at


def test_a_direct_call_by_a_viewer_is_refused_and_audited(team_env: None, demo_engine: Any) -> None:
    label = f"direct-{uuid.uuid4().hex[:8]}"
    before = {e.id for e in audit.entries(demo_engine, actor=VIEWER["email"])}
    at = _direct_call_app(VIEWER, label).run()
    _ok(at)
    assert any("Not allowed (runs): it needs the analyst role; yours is viewer" in e.value for e in at.error)
    assert not any("went through" in m.value for m in at.markdown)  # nothing after the refusal ran
    assert "direct_job__building" not in at.session_state
    assert not [r for r in runs.list_runs(demo_engine, tier="tier1", limit=20) if r.label == label]
    new = [e for e in audit.entries(demo_engine, actor=VIEWER["email"]) if e.id not in before]
    assert [(e.action, e.outcome, e.role, e.target) for e in new] == [("run", "refused", "viewer", "direct_job")]


def test_a_run_started_by_an_analyst_records_the_analyst(team_env: None, demo_engine: Any) -> None:
    label = f"direct-{uuid.uuid4().hex[:8]}"
    at = _direct_call_app(ANALYST, label).run()
    _ok(at)
    job = executor.get_job(at.session_state["direct_job__building"])
    assert job is not None and job.wait(120).status == "done", job.progress if job else None
    run = runs.get_run(demo_engine, job.run_id)
    assert run is not None and run.label == label and run.actor == ANALYST["email"]
    entry = next(e for e in audit.entries(demo_engine, actor=ANALYST["email"], action="run")
                 if e.target == f"run #{run.id}")
    assert entry.role == "analyst" and entry.outcome == "done"


@pytest.mark.parametrize("lang", LANGS)
def test_audit_page_lists_who_did_what(team_env: None, demo_engine: Any, lang: str) -> None:
    audit.record(demo_engine, actor=VIEWER["email"], role="viewer", action="run", target="t1_run_id", outcome="refused")
    at = _app(lang, VIEWER).run()
    at.switch_page("pages/audit.py").run()
    _ok(at)
    assert at.title[0].value == ("Журнал действий" if lang == "ru" else "Audit")
    table = at.dataframe[0].value
    assert VIEWER["email"] in set(table["actor"])
    assert ("отказано" if lang == "ru" else "refused") in set(table["outcome"])
    at.radio(key="audit_outcome").set_value("refused").run()
    _ok(at)
    assert set(at.dataframe[0].value["outcome"]) == {"отказано" if lang == "ru" else "refused"}
    assert at.get("download_button"), "no download button"


def test_single_user_mode_is_unchanged(monkeypatch: pytest.MonkeyPatch, demo_engine: Any) -> None:
    monkeypatch.delenv("VOPROSHALYCH_EVAL_TEAM", raising=False)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page("pages/tier1_retrieval.py").run()
    _ok(at)
    assert "t1_run" in {b.key for b in at.button} and "auth_logout" not in {b.key for b in at.button}


@pytest.mark.parametrize("lang", LANGS)
def test_analyst_cannot_add_a_schedule_or_an_alert_channel(team_env: None, demo_engine: Any, lang: str) -> None:
    """Schedules and alert channels are the admin's (team.ACTIONS): an analyst's submit buttons are disabled
    with the refusal sentence in their place."""
    at = _app(lang, ANALYST).run()
    _ok(at)
    for page, label in (("pages/schedules.py", ("Добавить", "Add")),
                        ("pages/alerts.py", ("Сохранить канал", "Save the channel"))):
        at.switch_page(page).run()
        _ok(at)
        want = label[0] if lang == "ru" else label[1]
        button = next(b for b in at.button if b.label == want)
        assert button.disabled, page
        assert any("🔒" in c.value for c in at.caption), page
