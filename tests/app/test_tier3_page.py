"""AppTest of the End-to-end page: the run form at the top of the main area, never silently offline, the
gate's PASS / FAIL leading the results; API mode with the production preset against the stand-in and a saved
bot profile (backoff and the judge's context included)."""

from __future__ import annotations

import uuid

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from tests.support.production_qa import ProductionQA
from voproshalych_eval.config import PROJECT_ROOT

APP = str(PROJECT_ROOT / "app.py")
PAGE = "pages/tier3_end_to_end.py"


def _open(language: str = "en") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = language
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _run_and_wait(at: AppTest, run_label: str) -> None:
    """Press Run, wait for the background job, rerun the page."""
    next(b for b in at.button if b.label == run_label).click()
    at.run()
    job = started_job(at, "tier3_run_id")
    assert job is not None
    job.wait(120)
    assert job.progress.status == "done", job.error
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def test_api_mode_preset_run_and_profile(demo_engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.bot_api.profiles import get_profile
    from voproshalych_eval.datasets.store import get_dataset

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
        at.number_input(key=f"t3_bo|{fk}").set_value(0.25)
        at.selectbox(key=f"t3_ctx|{fk}").set_value("nearest")
        at.number_input(key=f"t3_ctxk|{fk}").set_value(2)
        at.text_input(key=f"t3_save|{fk}").set_value(name)
        # the form starts from the dataset of the latest Tier 3 run (an earlier test's): pick the golden set
        next(s for s in at.selectbox if s.label == "Dataset").set_value("demo_golden")
        next(n for n in at.number_input if n.label.startswith("First N questions")).set_value(3)
        next(c for c in at.checkbox if c.label.startswith("Offline")).check()
        next(b for b in at.button if b.label == "Save profile").click()
        at.run()
        assert not at.exception and not any("save" in str(e.value) for e in at.error), [e.value for e in at.error]
        assert any(name in str(s.value) for s in at.success)
        saved = get_profile(demo_engine, name)
        assert saved is not None and saved.spec.headers == {"Authorization": "Bearer ${BOT_TOKEN}"}
        assert saved.spec.url == srv.base_url + "/qa/" and saved.spec.rps == 50.0 and saved.spec.retry_backoff_s == 0.25
        assert (saved.judge_context.context_from, saved.judge_context.context_k) == ("nearest", 2)
        _run_and_wait(at, "Run")
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
    assert at.number_input(key=f"t3_bo|{name}|voproshalych").value == 0.25
    assert at.selectbox(key=f"t3_ctx|{name}|voproshalych").value == "nearest"
    assert at.number_input(key=f"t3_ctxk|{name}|voproshalych").value == 2


def _texts(block) -> list[str]:  # type: ignore[no-untyped-def]
    """Text of the main area's elements in page order (alerts, headings, markdown)."""
    out: list[str] = []
    for node in block.children.values():
        if getattr(node, "children", None) and not hasattr(node, "value"):
            out.extend(_texts(node))
        elif isinstance(getattr(node, "value", None), str):
            out.append(node.value)
    return out


@pytest.mark.parametrize(("language", "run_label", "failed", "passed", "outcomes"),
                         [("en", "Run", "gate failed", "gate passed", "Outcomes"),
                          ("ru", "Запустить", "ворота не пройдены", "ворота пройдены", "Исходы")])
def test_form_on_top_never_silently_offline_and_gate_leads(demo_engine, language: str, run_label: str, failed: str,
                                                          passed: str, outcomes: str) -> None:  # type: ignore[no-untyped-def]
    at = _open(language)
    assert any(b.label == run_label for b in at.main.button), "Run sits in the main area"
    assert not any(b.label == run_label for b in at.sidebar.button)
    warnings = " ".join(str(w.value) for w in at.warning)
    assert ("No LLM is configured" if language == "en" else "LLM не настроен") in warnings, "the notice before the run"
    offline = at.checkbox(key="t3_offline")
    assert offline.value is True, "no LLM: the form proposes offline"
    next(n for n in at.number_input if n.label.startswith(("First N", "Первые N"))).set_value(3)
    # unticked without an LLM: refused with a sentence, nothing started
    offline.uncheck()
    next(b for b in at.button if b.label == run_label).click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "tier3_run_id" not in at.session_state, "a run went offline silently"
    assert any(("Not started" if language == "en" else "Запуск не начат") in str(e.value) for e in at.error)
    # ticked, with a gate: its PASS / FAIL in colour is a line of the run's one verdict, which leads the results
    at.checkbox(key="t3_offline").check()
    next(s for s in at.slider if s.label.startswith(("Gate", "Ворота"))).set_value(0.8)
    _run_and_wait(at, run_label)
    alerts = [str(e.value) for e in [*at.error, *at.success, *at.warning, *at.info]]
    verdict = "Verdict against the baselines" if language == "en" else "Вердикт относительно базовых уровней"
    boxes = [a for a in alerts if verdict in a or "PASS**]" in a or "FAIL**]" in a]
    assert len(boxes) == 1, boxes  # one verdict box: never a red box above a green PASS
    banner = boxes[0]
    assert (":red[**FAIL**] — " + failed) in banner or (":green[**PASS**] — " + passed) in banner, banner
    texts = _texts(at.main)
    assert texts.index(next(t for t in texts if t == banner)) < texts.index(outcomes), "the gate leads the results"
    outcome_cells = " ".join(str(w.value) for w in at.multiselect)
    assert "not_found" not in outcome_cells
