"""AppTest: a person labels the demo bot's frequent answers on the Real users page (issue 22): suggestions are
pre-filled, only ticked rows are saved (with who), the classifier's cross-validated accuracy and confusion matrix
appear, and the same log exported without its URL column gets the same effective answered rate."""

from __future__ import annotations

import csv
import importlib.util
import io
import sys
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.plans import real_users as run_real_users
from voproshalych_eval.analytics import answer_labels, build_plan, import_file
from voproshalych_eval.analytics.answer_classifier import CLASSIFIER_VERSION
from voproshalych_eval.analytics.answers import CLASS_NAMES
from voproshalych_eval.analytics.question_log import delete_source
from voproshalych_eval.config import PROJECT_ROOT

NO_URL_SOURCE = "t_demo_without_urls"


def _truth() -> dict[str, str]:
    """The demo generator's own fixed texts: what a person reading them would call them."""
    spec = importlib.util.spec_from_file_location("gen_log", PROJECT_ROOT / "scripts" / "generate_question_log.py")
    assert spec is not None and spec.loader is not None
    gen: Any = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = gen  # its dataclasses look their module up
    try:
        spec.loader.exec_module(gen)
    finally:
        sys.modules.pop(spec.name, None)
    out = {t: "template" for t in gen.GREETING_ANSWERS + gen.THANKS_ANSWERS}
    out |= {t: "refusal" for t in gen.OFFTOPIC_ANSWERS + gen.JAILBREAK_ANSWERS}
    out |= {t: ("refusal" if "смущает" in t else "not_found") for t, _ in gen.DISGUISED_DECLINES}
    return out


@pytest.fixture()
def clean_labels(demo_engine):  # type: ignore[no-untyped-def]
    answer_labels.delete_labels(demo_engine)
    yield demo_engine
    answer_labels.delete_labels(demo_engine)
    delete_source(demo_engine, NO_URL_SOURCE)


def _log_step(engine: Any, **params: Any) -> dict[str, Any]:
    """The pipeline's ``log`` step (read the log, classify every answer) as a run would record it."""
    plan = build_plan(engine, {"analyses": ["domain"], **params})
    return plan.work("log")  # type: ignore[misc]


def test_labelling_flow_trains_a_checked_classifier_and_urls_do_not_matter(clean_labels, tmp_path) -> None:  # type: ignore[no-untyped-def]
    engine = clean_labels
    res = run_real_users(engine, analyses=["domain"])
    assert res.answers.report is None  # nothing labelled yet: the patterns decide and no accuracy is claimed

    at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=300)
    at.session_state["ui_language"] = "en"
    at.session_state["ru_run_id"] = res.run_id
    at.session_state["ru_result"] = res
    at.session_state["ru_view"], at.session_state["ru_view__view"] = "Bot answers", "answers"  # the tab, opened
    at.run()
    at.switch_page("pages/real_users.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("No classifier is trained" in w.value or "no classifier is trained" in w.value for w in at.warning)

    # the person: reads every suggested class, fixes the wrong ones, ticks the row; says who they are
    truth = _truth()
    frequent = res.answers.frequent
    n_changed = 0
    for i, row in enumerate(frequent.to_dict(orient="records")):
        want = truth.get(row["answer"], "answer")
        box = at.selectbox(key=f"ru_lab_cls_0_{i}")
        assert box.value == CLASS_NAMES[row["class"]][1]  # pre-filled with the suggestion (English UI)
        if want != row["class"]:
            n_changed += 1
            box.set_value(CLASS_NAMES[want][1])
        if i < len(frequent) - 1:  # the last row stays unticked: it must not be saved
            at.checkbox(key=f"ru_lab_ok_0_{i}").check()
    at.text_input(key="ru_label_by_0").set_value("Ирина (методист)")
    at.button(key="ru_labels_save_0").click().run()
    assert not at.exception, [e.value for e in at.exception]

    stored = answer_labels.labels_frame(engine)
    assert len(stored) == len(frequent) - 1 and set(stored["labelled_by"]) == {"Ирина (методист)"}
    assert frequent["answer"].iloc[-1] not in set(stored["answer"])  # unconfirmed: not saved
    assert all(truth.get(a, "answer") == c for a, c in zip(stored["answer"], stored["class"], strict=True))
    # the page recomputed the classes: accuracy with its interval and the confusion matrix are shown
    after = at.session_state["ru_result"].answers
    assert after.report is not None and after.report.n_labels == len(stored)
    labels = {m.label for m in at.metric}
    assert {"Answer classifier accuracy", "Effective answered share (with CI)", "Labelled answer texts"} <= labels
    assert any("Confusion matrix" in m.value for m in at.markdown)
    acc = after.report.accuracy
    assert acc["n"] == len(stored) and acc["ci_low"] <= acc["value"] <= acc["ci_high"]

    # a new run freezes the labels, the classifier's version and thresholds; the report is stored with the run
    frozen = build_plan(engine, {"analyses": ["domain"]}).config()["params"]
    assert frozen["answer_labels"] == answer_labels.load_labels(engine) and len(frozen["answer_labels"]) == len(stored)
    assert frozen["answer_classifier"]["version"] == CLASSIFIER_VERSION
    assert {"uncertain_below", "min_labels", "cv_folds"} <= set(frozen["answer_classifier"])
    with_urls = _log_step(engine)
    assert with_urls["n_answer_labels"] == len(stored)
    assert with_urls["answer_classifier"]["confusion"]["labels"][0] == "answer"
    assert with_urls["answer_classifier_accuracy"]["value"] == pytest.approx(acc["value"])

    # the same log exported without its URL column: the same effective answered rate (within 0.02)
    src = list(csv.DictReader(io.StringIO((PROJECT_ROOT / "data" / "question_log.csv").read_text(encoding="utf-8"))))
    out = tmp_path / "no_urls.csv"
    cols = [c for c in src[0] if c != "confluence_url"]
    with out.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows({c: r[c] for c in cols} for r in src)
    import_file(engine, out, source=NO_URL_SOURCE)
    without = _log_step(engine, source=NO_URL_SOURCE)
    assert without["n_questions_used"] == with_urls["n_questions_used"]
    assert abs(without["effective_answered_rate"] - with_urls["effective_answered_rate"]) <= 0.02
    ci_w, ci_wo = with_urls["effective_answered_rate_ci"], without["effective_answered_rate_ci"]
    assert ci_w["ci_low"] <= with_urls["effective_answered_rate"] + 0.02 and ci_wo["ci_low"] <= ci_wo["ci_high"]
    print(f"\nMEASURE labels given={len(stored)} (changed {n_changed} suggestions) | "
          f"with URLs: eff={with_urls['effective_answered_rate']:.3f} CI [{ci_w['ci_low']:.3f}; {ci_w['ci_high']:.3f}] "
          f"acc={acc['value']:.3f} [{acc['ci_low']:.3f}; {acc['ci_high']:.3f}] | without URLs: "
          f"eff={without['effective_answered_rate']:.3f} CI [{ci_wo['ci_low']:.3f}; {ci_wo['ci_high']:.3f}] acc="
          f"{without['answer_classifier_accuracy']['value']:.3f} [{without['answer_classifier_accuracy']['ci_low']:.3f}; "
          f"{without['answer_classifier_accuracy']['ci_high']:.3f}]")
