"""AppTest: the Real users page runs the analyses on the demo log and renders its three tabs."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from voproshalych_eval import executor
from voproshalych_eval.config import PROJECT_ROOT


def test_real_users_page_runs(demo_engine) -> None:  # type: ignore[no-untyped-def]
    at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=300)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page("pages/real_users.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.number_input(key="ru_ktopics").set_value(8)
    at.button(key="ru_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    # the analyses run as a background job of the engine; wait for it, then rerun the page
    job = executor.get_job(at.session_state["ru_run_id"])
    assert job is not None and job.wait(300).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.label for t in at.tabs] == ["Chunk utilization", "Topics & coverage gaps", "Bot answers", "Domain"]
    captions = " ".join(c.value for c in at.caption)
    assert "n = " in captions
    labels = {m.label for m in at.metric}
    assert "Chunk coverage" in labels and "Topics" in labels  # labels from the metric catalog
    assert {"Effective answered share", "Answered share", "Declines in disguise", "Topic stability (ARI)"} <= labels
    assert "×" in " ".join(str(d.value.to_csv()) for d in at.dataframe)  # examples carry repeat counts
    assert not at.error, [e.value for e in at.error]
    # the bot-answer rules are shown and editable; applying them reclassifies without a new run
    res = at.session_state["ru_result"]
    before = res.answers.metrics()["effective_answered_rate"]
    at.button(key="ru_rules_apply").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["ru_result"].answers.metrics()["effective_answered_rate"] == before
    assert at.session_state["ru_answer_rules"].to_dict()["patterns"]
