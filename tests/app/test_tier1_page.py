"""AppTest: the Tier 1 page runs the benchmark on the demo and shows the summary."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from voproshalych_eval import executor
from voproshalych_eval.config import PROJECT_ROOT

APP = str(PROJECT_ROOT / "app.py")


def test_run_from_the_page_shows_summary(demo_engine) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page("pages/tier1_retrieval.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.button(key="t1_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the run executes in a background job (off the script thread); wait for it, then rerun the page
    job = executor.get_job(at.session_state["t1_run_id"])
    assert job is not None and job.wait(180).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    labels = {m.label for m in at.metric}
    assert {"MRR", "Hit Rate@5", "NDCG@10"} <= labels
    assert any("Run #" in s.value for s in at.subheader)
    # the failures filter and the threshold tab render too
    at.radio(key="t1_filter").set_value("failk").run()
    assert not at.exception, [e.value for e in at.exception]
