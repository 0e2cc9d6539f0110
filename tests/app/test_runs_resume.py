"""AppTest: the Runs page resumes an interrupted or cancelled run itself, through the engine."""

from __future__ import annotations

import threading
from typing import Any

from streamlit.testing.v1 import AppTest

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import executor, runs


def test_runs_page_resumes_a_cancelled_run(demo_engine: Any) -> None:
    from sqlalchemy import text as sql

    from voproshalych_eval.tiers import tier1

    plan = tier1.build_plan(demo_engine, {"dataset": "demo_golden", "retriever": "fts", "k": 5, "n_resamples": 100})
    run_id = executor.create_run(demo_engine, plan)
    stopped = threading.Event()
    stopped.set()  # cancelled before any item ran
    assert executor.execute(demo_engine, run_id, plan, cancel=stopped).status == "cancelled"
    try:
        at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=180)
        at.session_state["ui_language"] = "en"
        at.session_state["runs_view__view"] = "report"
        at.run()
        at.switch_page("pages/runs.py").run()
        assert not at.exception, [e.value for e in at.exception]
        at.selectbox(key="runs_rep_run").set_value(run_id).run()
        assert not at.exception, [e.value for e in at.exception]
        at.button(key=f"resume_{run_id}").click().run()
        assert not at.exception, [e.value for e in at.exception]
        job = executor.get_job(run_id)
        assert job is not None and job.wait(180).status == "done", job.progress
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        run = runs.get_run(demo_engine, run_id)
        assert run is not None and run.status == "done" and not run.mixed
        assert runs.count_items(demo_engine, run_id)["done"] == run.n_items_total
        assert not any(b.key == f"resume_{run_id}" for b in at.button)  # a finished run offers no resume
    finally:
        with demo_engine.begin() as conn:  # tier pages read the latest run of their tier
            conn.execute(sql("DELETE FROM eval.runs WHERE id = :r"), {"r": run_id})
