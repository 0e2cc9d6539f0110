"""AppTest of the Judge metrics page: the run picker (the run just made, any earlier one) led by the run's
verdict, and the quorum widgets passed into the plan's parameters."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import runs


def _run(at: AppTest, limit: int) -> int:
    at.number_input(key="jm_limit").set_value(limit).run()
    at.button(key="jm_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = started_job(at, "jm_run_id")
    assert job.wait(180).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["jm_run_id"] == job.run_id  # the page remembers the run once its plan is built
    return int(job.run_id)


@pytest.mark.parametrize(("lang", "verdict", "quorum_words"), [
    ("en", "Verdict against the baselines", "model quorum: all"),
    ("ru", "Вердикт относительно базовых уровней", "кворум моделей: все"),
])
def test_picker_verdict_and_quorum(demo_engine, lang: str, verdict: str, quorum_words: str) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=180)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page("pages/judge_metrics.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="jm_quorum").set_value("all")
    first = _run(at, 2)
    assert runs.get_run(demo_engine, first).params["quorum"] == "all"
    second = _run(at, 3)
    # the run just made is shown, led by its verdict, with the quorum in words
    picker = at.selectbox(key="pick_jm_run_id")
    assert picker.value == second and picker.options[0].endswith(f"#{second}")
    assert any(verdict in str(a.value) for a in [*at.warning, *at.info, *at.success, *at.error])
    assert any(quorum_words in c.value for c in at.caption), [c.value for c in at.caption]
    assert len(at.session_state["jm_result"]["results"]) == 3
    # an earlier run is one pick away
    picker.set_value(first).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["jm_result"]["run_id"] == first and len(at.session_state["jm_result"]["results"]) == 2
