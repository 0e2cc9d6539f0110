"""AppTests of the Annotation queue (label a run's judged items one by one; two annotators give their agreement)
and of the Judge agreement page (measure, see bias and confusion, versions), in both languages."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from tests.support.plans import run as run_plan
from tests.support.ui_text import data_corpus, page_texts, violations
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.db import labels as store

APP = str(PROJECT_ROOT / "app.py")


@pytest.fixture(scope="module")
def pipeline_run(demo_engine: Any) -> Any:
    """An offline show/no-show run of six items of the demo judge set."""
    return run_plan(demo_engine, "judge_pipeline", {"offline": True, "limit": 6, "calibrate": False}).run


@pytest.fixture
def annotators(demo_engine: Any) -> Any:
    names = [f"ann_{uuid.uuid4().hex[:6]}", f"ann_{uuid.uuid4().hex[:6]}"]
    yield names
    for lab in store.list_labels(demo_engine, "show_no_show"):
        if lab["annotator"] in names:
            store.delete_label(demo_engine, lab["metric"], lab["item_key"], lab["annotator"])


def _open(lang: str, annotator: str, run_id: int) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = lang
    at.session_state["aq_annotator"] = annotator
    at.session_state["aq_run"] = run_id
    at.run()
    at.switch_page("pages/annotation_queue.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize(("lang", "show", "labelled"), [("ru", "показать [1]", "Размечено"),
                                                         ("en", "show [1]", "Labelled")])
def test_queue_labels_by_keys_and_two_annotators_agree(demo_engine: Any, demo_source: Any, pipeline_run: Any,
                                                        annotators: Any, lang: str, show: str, labelled: str) -> None:
    a, b = annotators
    at = _open(lang, a, pipeline_run.id)
    # one picker (ui/judge_picker.py): the preset run chose its metric, named in the interface language
    picker = at.selectbox(key="aq_metric")
    assert picker.value == "show_no_show" and ("Показ/непоказ" if lang == "ru" else "Show / no-show") in picker.options
    assert at.selectbox(key="aq_run").value == pipeline_run.id
    buttons = {btn.key: btn for btn in at.button}
    assert buttons["aq_v_1"].label == show and {"aq_v_0", "aq_prev", "aq_next", "aq_skip"} <= set(buttons)
    first = at.session_state["aq_queue"][0]["key"]
    at.button(key="aq_v_1").click().run()  # value key: stored, and on to the next item
    _ok(at)
    assert at.session_state["aq_pos"] == 1
    mine = {lab["item_key"]: lab for lab in store.list_labels(demo_engine, "show_no_show", annotator=a)}
    assert set(mine) == {first} and mine[first]["value"] == 1.0 and mine[first]["run_id"] == pipeline_run.id
    at.button(key="aq_skip").click().run()  # skip: no label, next item
    assert at.session_state["aq_pos"] == 2 and len(store.list_labels(demo_engine, "show_no_show", annotator=a)) == 1
    at.button(key="aq_prev").click().run()
    at.button(key="aq_prev").click().run()
    assert at.session_state["aq_pos"] == 0
    at.button(key="aq_next").click().run()
    second = at.session_state["aq_queue"][1]["key"]
    at.text_input(key=f"aq_note_{second}").set_value("не по фрагменту").run()
    at.button(key="aq_v_0").click().run()
    _ok(at)
    mine = {lab["item_key"]: lab for lab in store.list_labels(demo_engine, "show_no_show", annotator=a)}
    assert mine[second]["value"] == 0.0 and mine[second]["note"] == "не по фрагменту"
    assert any(labelled in str(p.proto) for p in at.get("progress"))
    # a second annotator labels the same two items: the page shows the inter-annotator agreement
    at2 = _open(lang, b, pipeline_run.id)
    at2.button(key="aq_v_1").click().run()
    at2.button(key="aq_v_0").click().run()
    _ok(at2)
    table = next(d.value for d in at2.dataframe if list(d.value.columns)[:2] == [("С кем" if lang == "ru" else "With"), "n"])
    with_a = table[table.iloc[:, 0] == a]  # b's agreement with a: the same two values on the same two items
    assert len(with_a) == 1 and with_a.iloc[0]["n"] == 2 and with_a.iloc[0].iloc[2] == 1.0
    problems = violations(page_texts(at2), lang, data_corpus(demo_engine, demo_source))  # one language
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("lang", "button", "bias"), [("ru", "Измерить согласие", "Смещение (судья − человек)"),
                                                       ("en", "Measure agreement", "Bias (judge − human)")])
def test_agreement_page_measures_offline(demo_engine: Any, demo_source: Any, lang: str, button: str, bias: str) -> None:
    from voproshalych_eval.judges.labels import import_demo_judge_set

    import_demo_judge_set(demo_engine)
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page("pages/judge_agreement.py").run()
    _ok(at)
    at.selectbox(key="ja_metric").set_value("show_no_show").run()
    at.number_input(key="ja_limit").set_value(12)  # form widgets: submitted together with the button
    at.checkbox(key="ja_offline").check()
    next(b for b in at.button if b.label == button).click().run()
    _ok(at)
    # the judge works in a background run (the page's script returned at once): follow it to the end
    job = started_job(at, "ja_run_id")
    job.wait(300)
    assert job.error is None and job.run_id is not None, job.error
    from voproshalych_eval.engine import runs

    run = runs.get_run(demo_engine, job.run_id)
    assert run.tier == "judge_agreement" and run.status == "done" and run.n_items_total == 12 and run.offline
    assert run.metrics["n"] + run.metrics["n_failed"] == 12 and "judge_kappa" in run.metrics
    at.run()
    _ok(at)
    last = store.list_agreements(demo_engine, "show_no_show")[0]  # the run stored its measurement
    rep = last["report"]
    assert rep["n"] == run.metrics["n"] and rep["offline"] is True and rep["n_labelled"] == 12
    assert any(m.label == bias for m in at.metric)
    assert any(m.value == f"{rep['kappa']['value']:.2f}" for m in at.metric if rep["kappa"]["value"] is not None)
    problems = violations(page_texts(at), lang, data_corpus(demo_engine, demo_source))  # one language
    assert not problems, "\n".join(problems)
