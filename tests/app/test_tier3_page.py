"""AppTest of the End-to-end page in API mode: the production preset against the stand-in, a saved bot profile."""

from __future__ import annotations

import uuid

from streamlit.testing.v1 import AppTest

from tests.support.production_qa import ProductionQA
from voproshalych_eval import executor
from voproshalych_eval.config import PROJECT_ROOT

APP = str(PROJECT_ROOT / "app.py")
PAGE = "pages/tier3_end_to_end.py"


def _open() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = "en"
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_api_mode_preset_run_and_profile(demo_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.bot_api.profiles import get_profile
    from voproshalych_eval.datasets import get_dataset

    token = f"tok-{uuid.uuid4().hex}"
    monkeypatch.setenv("BOT_TOKEN", token)
    recs = get_dataset(demo_engine, "demo_golden", "golden").records[:3]
    name = f"prod-{uuid.uuid4().hex[:6]}"
    with ProductionQA() as srv:
        srv.answers[recs[0]["question"]] = (recs[0]["ground_truth_answer"], recs[0]["relevant_urls"][0])
        srv.declines[recs[1]["question"]] = "Answer banned"
        at = _open()
        at.radio(key="t3_mode").set_value("api").run()
        at.selectbox(key="t3_preset").set_value("voproshalych").run()
        fk = "—|voproshalych"
        assert at.text_input(key=f"t3_url|{fk}").value == "http://localhost:8080/qa/"
        at.text_input(key=f"t3_url|{fk}").set_value(srv.base_url + "/qa/")
        at.number_input(key=f"t3_rps|{fk}").set_value(50.0)
        at.text_area(key=f"t3_headers|{fk}").set_value("Authorization: Bearer ${BOT_TOKEN}")
        at.text_input(key=f"t3_save|{fk}").set_value(name)
        next(n for n in at.number_input if n.label.startswith("First N questions")).set_value(3)
        next(c for c in at.checkbox if c.label.startswith("Offline")).check()
        next(b for b in at.button if b.label == "Save profile").click()
        at.run()
        assert not at.exception and not any("save" in str(e.value) for e in at.error), [e.value for e in at.error]
        assert any(name in str(s.value) for s in at.success)
        saved = get_profile(demo_engine, name)
        assert saved is not None and saved.spec.headers == {"Authorization": "Bearer ${BOT_TOKEN}"}
        assert saved.spec.url == srv.base_url + "/qa/" and saved.spec.rps == 50.0
        next(b for b in at.button if b.label == "Run").click()
        at.run()
        job = executor.get_job(at.session_state["tier3_run_id"])
        assert job is not None
        job.wait(120)
        assert job.progress.status == "done", job.error
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert {r.headers.get("Authorization") for r in srv.posts()} == {f"Bearer {token}"} and len(srv.posts()) == 3
    labels = {m.label: m.value for m in at.metric}
    assert labels["Answered share"] == "0.333" and labels["Banned rate"] == "0.333" and labels["Not-found rate"] == "0.333"
    texts = " ".join(str(w.value) for w in [*at.caption, *at.info, *at.markdown])
    assert "a decline on an unanswerable question" in texts and "Context reconstructed" in texts
    assert token not in texts
    charts = [c.proto.spec for c in at.get("plotly_chart")]
    assert any("Outcomes of answerable and unanswerable questions" in c for c in charts)
    # the saved profile is offered and fills the form
    at.selectbox(key="t3_profile").set_value(name).run()
    assert at.text_input(key=f"t3_url|{name}|voproshalych").value == saved.spec.url
    assert "${BOT_TOKEN}" in at.text_area(key=f"t3_headers|{name}|voproshalych").value
