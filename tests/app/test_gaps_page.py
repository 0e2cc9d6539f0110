"""AppTest: the Coverage gaps page on the demo — list, status, diagnosis counts, draft editor, "simulate this
draft" (a what-if run on the engine), and the knowledge-base side "what if I remove this page", in both languages."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from tests.support.plans import real_users as run_real_users
from voproshalych_eval.analytics import gaps
from voproshalych_eval.config import PROJECT_ROOT


@pytest.fixture(scope="module")
def analysed(demo_engine):  # type: ignore[no-untyped-def]
    return run_real_users(demo_engine, analyses=("utilization", "topics"), k_range=(8, 12))


def _open(lang: str) -> AppTest:
    at = AppTest.from_file(str(PROJECT_ROOT / "app.py"), default_timeout=300)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page("pages/gaps.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _whatif_metrics(at: AppTest) -> set[str]:
    """The what-if table's metric names; never a raw report key (``url_hit_rate@1``), always catalog words."""
    col = {"ru": "Метрика", "en": "Metric"}
    names = {m for d in at.dataframe for c in col.values() if c in d.value.columns for m in d.value[c]}
    raw = {m for m in names if "_" in m or m.startswith(("url", "chunk"))}
    assert not raw, f"raw metric keys on the page: {sorted(raw)}"
    return names


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_gaps_page_journey(demo_engine, analysed, lang) -> None:  # type: ignore[no-untyped-def]
    at = _open(lang)
    assert at.dataframe[0].value.shape[0] == len(gaps.list_gaps(demo_engine)) > 0
    tabs = [t.label for t in at.tabs]
    assert tabs == (["Статус", "Диагноз", "Черновик", "Что если"] if lang == "ru" else
                    ["Status", "Diagnosis", "Draft", "What if"])
    gid = at.selectbox(key="gaps_pick").value
    at.number_input(key="gaps_sample").set_value(8)
    at.button(key="gaps_diagnose").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert sum(int(m.value) for m in at.metric if m.value.isdigit()) == 8  # the counts cover the sample
    at.button(key="gaps_draft_make").click().run()  # offline: the labelled template
    assert not at.exception, [e.value for e in at.exception]
    body = next(a for a in at.text_area if a.key.startswith(f"gaps_draft_body_{gid}_"))
    assert "[ДАТА]" in body.value
    n_versions = len(gaps.drafts(demo_engine, gid))
    body.set_value(body.value + "\nЗаписаться можно у Петрова Ивана.\n").run()
    at.button(key="gaps_draft_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(gaps.drafts(demo_engine, gid)) == n_versions + 1
    flagged = " ".join(w.value for w in at.warning)
    assert "Петрова" in flagged
    at.button(key="gaps_simulate").click().run()
    job = started_job(at, "gaps_whatif_run_id")
    assert job.wait(300).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert ("Hit Rate@1 · страницы" if lang == "ru" else "Hit Rate@1 · pages") in _whatif_metrics(at)
    at.selectbox(key="gaps_status").set_value("закрыт статьёй" if lang == "ru" else "addressed")
    at.text_input(key="gaps_note").set_value("статья опубликована")
    at.button(key="gaps_status_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert gaps.get_gap(demo_engine, gid).status == "addressed"
    gaps.set_status(demo_engine, gid, "open")


def test_kb_side_what_if_remove_a_page(demo_engine, analysed) -> None:  # type: ignore[no-untyped-def]
    at = _open("en")
    at.radio(key="gaps_kb_action").set_value("remove").run()
    at.button(key="gaps_kb_run").click().run()
    job = started_job(at, "gaps_whatif_run_id")
    assert job.wait(300).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "MRR · pages" in _whatif_metrics(at)


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_create_a_gap_from_hand_picked_questions(demo_engine, analysed, lang) -> None:  # type: ignore[no-untyped-def]
    qs = gaps.gap_questions(demo_engine, gaps.list_gaps(demo_engine)[0].id)
    at = _open(lang)
    at.text_area(key="gaps_pick_questions").set_value(f"{qs[0]['log_id']}\n{qs[1]['question']}\n")
    at.text_input(key="gaps_pick_name").set_value(f"picked-{lang}")
    at.button(key="gaps_pick_create").click().run()
    assert not at.exception, [e.value for e in at.exception]
    made = [g for g in gaps.list_gaps(demo_engine) if g.name == f"picked-{lang}"]
    assert len(made) == 1 and made[0].kind == "questions"
    ids = {q["log_id"] for q in gaps.gap_questions(demo_engine, made[0].id)}
    assert {qs[0]["log_id"], qs[1]["log_id"]} <= ids
    assert any(f"#{made[0].id}" in s.value for s in at.success)
    at.text_area(key="gaps_pick_questions").set_value("такого вопроса нет в журнале\n")
    at.button(key="gaps_pick_create").click().run()
    assert not at.exception and at.error, "an unknown question is a clear error on the page"
    assert "not in the question log" in " ".join(e.value for e in at.error)
