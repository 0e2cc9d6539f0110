"""AppTest of the LLM-tier pages: press Run offline on a small subset, the job finishes, results appear."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from voproshalych_eval.config import PROJECT_ROOT

APP = str(PROJECT_ROOT / "app.py")


def _open(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _wait_and_rerun(at: AppTest, state_key: str) -> None:
    job = started_job(at, state_key)
    job.wait(120)
    assert job.progress.status == "done", job.error
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def _set(at: AppTest, label: str, value: object) -> None:
    for w in at.number_input:
        if w.label.startswith(label):
            w.set_value(value)
            return
    raise AssertionError(f"no number input {label!r}")


@pytest.mark.parametrize(
    ("page", "state_key", "limit_label", "badge"),
    [
        ("pages/tier2_generation.py", "tier2_run_id", "First N questions", True),
        ("pages/tier3_end_to_end.py", "tier3_run_id", "First N questions", True),
        # the first dialogs need no generator (only embeddings and retrieval): nothing offline to badge
        ("pages/ux.py", "ux_run_id", "First N dialogs", False),
    ],
)
def test_sidebar_pages_run_offline(demo_engine, page: str, state_key: str, limit_label: str, badge: bool) -> None:  # type: ignore[no-untyped-def]
    at = _open(page)
    _set(at, limit_label, 3)
    next(c for c in at.checkbox if c.label.startswith("Offline")).check()
    next(b for b in at.button if b.label == "Run").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    _wait_and_rerun(at, state_key)
    assert at.metric, "no metric cards after the run"
    assert any("offline — not compared" in w.value.lower() for w in at.warning) == badge, "offline badge"
    assert at.dataframe


def test_judges_page_both_tabs(demo_engine) -> None:  # type: ignore[no-untyped-def]
    at = _open("pages/judges.py")
    at.number_input(key="js_lim").set_value(2)
    at.number_input(key="js_rep").set_value(2)
    at.checkbox(key="js_off").check()
    at.button[0].click()
    at.run()
    _wait_and_rerun(at, "judge_run_id")
    at.number_input(key="jp_lim").set_value(4)
    at.checkbox(key="jp_off").check()
    next(b for b in at.button if b.label == "Run" and b is not at.button[0]).click()
    at.run()
    _wait_and_rerun(at, "judge_pipeline_run_id")
    labels = {m.label for m in at.metric}
    assert "Judge consistency" in labels and "F1" in labels
