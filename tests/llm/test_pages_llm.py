"""AppTests of the Judge metrics and Settings pages (offline and against the scripted server)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from tests.support.scripted_openai import ScriptedOpenAI


def _page(page: str) -> AppTest:
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=180)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_judge_metrics_offline_run_on_demo(demo_engine) -> None:  # type: ignore[no-untyped-def]
    at = _page("pages/judge_metrics.py")
    at.number_input(key="jm_limit").set_value(3).run()
    at.button(key="jm_run").click().run()  # the form's Run button
    assert not at.exception, [e.value for e in at.exception]
    # the samples run as a background job of the engine; wait for it, then rerun the page
    job = started_job(at, "jm_run_id")
    assert job.wait(180).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    text = " ".join(w.value for w in at.warning)
    assert "офлайн-эвристик" in text  # the offline badge
    assert at.session_state["jm_result"]["offline"] and len(at.session_state["jm_result"]["results"]) == 3


def test_settings_lists_provider_without_secret(demo_engine, scripted_openai_env: ScriptedOpenAI) -> None:  # type: ignore[no-untyped-def]
    at = _page("pages/settings.py")
    page_text = " ".join(str(df.value.to_dict()) for df in at.dataframe) + " ".join(m.value for m in at.markdown)
    assert "default" in page_text and "OPENAI_API_KEY" in page_text
    assert "sk-test-secret-123" not in page_text
    at.button[0].click().run()
    assert not at.exception and at.success, [e.value for e in at.error]


def test_judge_metric_widgets_come_from_the_table(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.judges import JUDGE_METRICS

    at = _page("pages/judge_metrics.py")
    for key, spec in JUDGE_METRICS.items():
        at.selectbox(key="jm_metric").set_value(key).run()
        assert not at.exception, (key, [e.value for e in at.exception])
        shown = {w.key for w in [*at.slider, *at.text_input, *at.text_area, *at.number_input, *at.multiselect]
                 if w.key and w.key.startswith(f"jm_opt_{key}_")}
        assert shown == {f"jm_opt_{key}_{o.name}" for o in spec.options}, key
    # a free-form criterion on the offline judge: every sample "not applicable", never a failure of a sample —
    # but a run that scored nothing is failed (issue 23), not done
    at.selectbox(key="jm_metric").set_value("rubrics_score").run()
    at.number_input(key="jm_limit").set_value(2).run()
    at.button(key="jm_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = started_job(at, "jm_run_id")  # a background job of the engine: wait, then show its run
    assert job.wait(180).status == "failed", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["jm_run_id"] == job.run_id
    agg = at.session_state["jm_result"]["aggregate"]
    assert agg["n_not_applicable"] == 2 and agg["n_failed"] == 0
