"""AppTest: the Real questions page picks by topic from a recorded topic-analysis run it starts in the background."""

from __future__ import annotations

import uuid
from typing import Any

from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.analytics import question_log
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import runs
from voproshalych_eval.generation import realq


def test_coverage_gap_pick_runs_the_topic_analysis_through_the_engine(demo_engine: Any) -> None:
    name = "rq_" + uuid.uuid4().hex[:6]
    # a log source of its own (the demo log under a new name), so that no topic analysis of another test
    # is reused and the page has to start one
    source = "rq_topics_" + uuid.uuid4().hex[:6]
    question_log.import_file(demo_engine, PROJECT_ROOT / "data" / "question_log.csv", source=source)
    try:
        _pick_through_the_engine(demo_engine, name, source)
    finally:
        question_log.delete_source(demo_engine, source)


def _pick_through_the_engine(demo_engine: Any, name: str, source: str) -> None:
    at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=300)
    at.session_state["ui_language"] = "en"
    at.session_state["rq_name"] = name
    at.session_state["rq_source"] = source
    at.run()
    at.switch_page("pages/realq.py").run()
    assert not at.exception, [e.value for e in at.exception]

    def pick() -> None:
        form_select = next(s for s in at.selectbox if s.label == "How to pick")
        form_select.set_value("coverage_gap")
        next(b for b in at.button if b.label == "Add to the queue").click().run()
        assert not at.exception, [e.value for e in at.exception]

    pick()
    job = started_job(at, "rq_topics_run")  # a background job of the engine, not the script thread
    assert job.wait(300).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    run = runs.get_run(demo_engine, job.run_id)
    assert run is not None and run.tier == "real_users" and run.params["analyses"] == ["topics"]
    assert at.session_state["rq_topics_run"] == run.id
    assert any(f"from run #{run.id}" in c.value for c in at.caption)
    pick()  # now the topics exist: the questions of the top coverage gaps join the queue
    pool = realq.pool(demo_engine, name)
    assert len(pool) == 10 and (pool["state"] == "pending").all()
    assert any("Questions added: 10" in s.value for s in at.success)
