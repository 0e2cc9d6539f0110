"""AppTest: the dataset review page — one item at a time, accept, reject with a reason, edit, table view —
and the Datasets and Real questions pages' main flows."""

from __future__ import annotations

import html
import uuid

from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.datasets import annotations as A
from voproshalych_eval.datasets.store import Dataset, content_hash, get_dataset, store

APP = str(PROJECT_ROOT / "app.py")


def _page(path: str, lang: str = "en", **state: object) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = lang
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _copy(engine, n: int = 5) -> Dataset:  # type: ignore[no-untyped-def]
    recs = [dict(r) for r in get_dataset(engine, "demo_golden", "golden").records[:n]]
    return store(engine, Dataset("rv_" + uuid.uuid4().hex[:6], "golden", recs, content_hash(recs), source="test"))


def test_review_one_item_accept_reject_edit(demo_engine) -> None:  # type: ignore[no-untyped-def]
    ds = _copy(demo_engine)
    at = _page("pages/dataset_review.py", rv_name=ds.name)
    assert at.title[0].value == "Dataset review"
    assert any(html.escape(ds.records[0]["question"]) in h.value for h in at.html)
    # the answer span is highlighted in the chunk where it is found verbatim (or the page says it is not)
    assert any("<mark>" in h.value for h in at.html) or any("not found verbatim" in c.value for c in at.caption)
    # next
    at.button(key="rv_next").click().run()
    assert any(html.escape(ds.records[1]["question"]) in h.value for h in at.html)
    # accept: metadata only, no new version; the page moves on
    accept = next(b for b in at.button if b.label == "Accept")
    accept.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert A.reviews(demo_engine, ds.name)[ds.keys()[1]].status == "accepted"
    assert get_dataset(demo_engine, ds.name).version == 1
    # reject without a reason: refused with a message; with a reason: a new version without the item
    next(b for b in at.button if b.label == "Reject").click().run()
    assert any("reason" in e.value for e in at.error)
    at.text_input[0].set_value("дубликат")
    next(b for b in at.button if b.label == "Reject").click().run()
    assert not at.exception, [e.value for e in at.exception]
    head = get_dataset(demo_engine, ds.name)
    assert head.version == 2 and len(head) == len(ds) - 1
    assert A.reviews(demo_engine, ds.name)[ds.keys()[2]].reason == "дубликат"
    # edit the question: a new version
    at = _page("pages/dataset_review.py", rv_name=ds.name)
    qa = next(t for t in at.text_area if t.label == "Question")
    qa.set_value("Исправленный вопрос?")
    next(b for b in at.button if b.label == "Save (new version)").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert get_dataset(demo_engine, ds.name).records[0]["question"] == "Исправленный вопрос?"
    # the table view lists the rejected item with its reason
    at.radio(key="rv_view").set_value("table").run()
    assert not at.exception, [e.value for e in at.exception]
    df = at.dataframe[0].value
    assert set(df["status"]) >= {"accepted", "rejected"} and "дубликат" in set(df["reason"])


def test_review_page_shows_hostile_text_inert(demo_engine) -> None:  # type: ignore[no-untyped-def]
    """Data that looks like Markdown or HTML (a remote image, a link, a script) is shown escaped, never rendered."""
    rec = dict(get_dataset(demo_engine, "demo_golden", "golden").records[0])
    hostile = "Стипендия? ![pixel](http://tracker.example/p.png) [сюда](http://evil.example) <script>alert(1)</script>"
    rec.update(question=hostile, ground_truth_answer="**жирный** <img src=x onerror=alert(1)>",
               chunk_text=rec["chunk_text"] + "\n\n![p](http://tracker.example/q.png) <b>x</b>")
    ds = store(demo_engine, Dataset("rv_" + uuid.uuid4().hex[:6], "golden", [rec], content_hash([rec]), source="test"))
    at = _page("pages/dataset_review.py", rv_name=ds.name)
    bodies = [h.value for h in at.html]
    assert any(html.escape(hostile) in b for b in bodies)
    assert any("&lt;img src=x onerror=alert(1)&gt;" in b for b in bodies)
    assert any("&lt;b&gt;x&lt;/b&gt;" in b for b in bodies)
    # nothing of it reaches a Markdown element (where an image or a link would render) or raw HTML
    shown = [m.value for m in at.markdown] + [c.value for c in at.caption] + bodies
    assert not any("<script>" in v or "<img" in v or "<b>x" in v for v in shown)
    assert not any("](http://" in v for v in [m.value for m in at.markdown] + [c.value for c in at.caption])


def test_review_page_in_russian(demo_engine) -> None:  # type: ignore[no-untyped-def]
    ds = _copy(demo_engine, 2)
    at = _page("pages/dataset_review.py", lang="ru", rv_name=ds.name)
    assert at.title[0].value == "Разметка наборов"
    assert any(b.label == "Принять" for b in at.button)


def test_datasets_page_generates_offline(demo_engine) -> None:  # type: ignore[no-untyped-def]
    at = _page("pages/datasets.py")
    assert at.title[0].value == "Datasets"
    assert any("offline template generator" in w.value for w in at.warning)  # no LLM configured in tests
    name = "page_" + uuid.uuid4().hex[:6]
    at.number_input[0].set_value(6)
    at.text_input[0].set_value(name)
    # a weighted type mix (not only equal) and Russian questions under an English interface (the default)
    for t, w in {"factual": 2, "paraphrase": 1, "multi_chunk": 0, "conditional": 0, "unanswerable": 0, "follow_up": 0}.items():
        at.number_input(key=f"gen_w_{t}").set_value(w)
    assert at.selectbox(key="gen_lang").value == "ru"
    next(b for b in at.button if b.label == "Generate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    from voproshalych_eval.engine import runs

    # the run is created by the job's thread once the plan is built (ui.jobs.start): follow the job, not the store
    job = started_job(at, "datasets_gen_run_id")
    job.wait(300)
    assert job.error is None and job.run_id is not None, job.error
    done = runs.get_run(demo_engine, job.run_id)
    assert done.tier == "dataset_generation" and done.dataset_name == name
    assert done.status == "done" and done.params["lang"] == "ru"
    assert (done.metrics or {})["requested_by_type"] == {"factual": 4, "paraphrase": 2}
    generated = get_dataset(demo_engine, name, "golden")
    assert generated.records[0]["generation"]["offline"] is True
    assert {r["question_type"] for r in generated.records} <= {"factual", "paraphrase"}
    assert {r["generation"]["lang"] for r in generated.records} == {"ru"}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("not a substitute" in w.value for w in at.warning)
    # the run's human review: nothing reviewed yet, then one of the kept items rejected and one accepted
    share = next(m for m in at.metric if m.label == "Share of kept items rejected")
    assert share.value == "0%"
    from voproshalych_eval.datasets import annotations

    keys = generated.keys()
    annotations.reject(demo_engine, name, keys[0], "не вопрос студента")
    annotations.accept(demo_engine, name, keys[1])
    at.run()
    assert next(m for m in at.metric if m.label == "Reviewed").value == f"2 / {len(keys)}"
    assert next(m for m in at.metric if m.label == "Share of kept items rejected").value == f"{100 / len(keys):.0f}%"
    at.toggle(key=f"gen_gate_review_{job.run_id}").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    gates = next(d.value for d in at.dataframe if "held-out kappa" in d.value.columns)
    assert "answer does not answer the question, or is garbled" in set(gates["gate"])  # the qa_fit gate
    assert set(gates["n"]) == {2} and list(gates["passed but rejected"]) == [1] * len(gates)


def test_realq_page_labels_a_question(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.generation import realq

    name = "rq_" + uuid.uuid4().hex[:6]
    cands = realq.candidates(demo_engine, strategy="thumbs_down", n=2)
    realq.add_to_pool(demo_engine, name, cands)
    at = _page("pages/realq.py", rq_name=name)
    assert at.title[0].value == "Real questions"
    assert not any(e.value for e in at.error)
    # the retriever's suggestions are shown but not checked as relevant
    editor = next(d.value for d in at.dataframe if "relevant" in d.value.columns)
    assert editor["suggested"].any() and not editor["relevant"].any()
    next(b for b in at.button if b.label == "Not in the knowledge base").click().run()
    assert not at.exception, [e.value for e in at.exception]
    ds = get_dataset(demo_engine, name, "golden")
    assert len(ds) == 1 and ds.records[0]["not_in_kb"] is True and ds.records[0]["relevant_chunk_ids"] == []


def test_review_picker_saves_chunks_and_notes(demo_engine) -> None:  # type: ignore[no-untyped-def]
    ds = _copy(demo_engine, 3)
    key = ds.keys()[0]
    at = _page("pages/dataset_review.py", rv_name=ds.name)
    picker = at.data_editor(key=f"rv_pick_{key}").value
    current = [int(i) for i in ds.records[0]["relevant_chunk_ids"]]
    assert sorted(picker.loc[picker["relevant"], "chunk_id"].astype(int)) == sorted(current)
    other = picker.index[~picker["relevant"]][0]  # a search hit nobody marked
    edits = {int(i): {"relevant": False} for i in picker.index[picker["relevant"]]}
    edits[int(other)] = {"relevant": True}
    at.session_state[f"rv_pick_{key}"] = {"edited_rows": edits, "added_rows": [], "deleted_rows": []}
    at.run()
    at.button(key=f"rv_save_chunks_{key}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    head = get_dataset(demo_engine, ds.name)
    assert head.version == 2 and head.records[0]["relevant_chunk_ids"] == [int(picker.loc[other, "chunk_id"])]
    # notes are review metadata: saved, no new version
    at = _page("pages/dataset_review.py", rv_name=ds.name)
    next(t for t in at.text_area if t.label == "Notes").set_value("проверить у деканата")
    next(b for b in at.button if b.label == "Save notes").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert A.reviews(demo_engine, ds.name)[key].notes == "проверить у деканата"
    assert get_dataset(demo_engine, ds.name).version == 2


def test_a_run_on_a_stale_dataset_shows_the_warning(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from tests.support.plans import tier1 as run_tier1

    recs = [dict(r) for r in get_dataset(demo_engine, "demo_golden", "golden").records[:3]]
    recs[1]["chunk_text"] = "Текст чанка, которого в базе знаний больше нет."  # the knowledge base changed since
    ds = store(demo_engine, Dataset("st_" + uuid.uuid4().hex[:6], "golden", recs, content_hash(recs), source="test"))
    res = run_tier1(demo_engine, ds.name, retriever="fts", k=5)
    at = _page("pages/tier1_retrieval.py", t1_run_id=res.run_id)
    assert any(f"Dataset '{ds.name}' v1 is stale" in w.value and "1 of 3 items" in w.value for w in at.warning)
    at = _page("pages/tier1_retrieval.py", lang="ru", t1_run_id=res.run_id)
    assert any(f"Набор «{ds.name}» v1 устарел" in w.value for w in at.warning)


def test_cut_chunk_texts_are_shown(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.integration.test_dataset_cli import cut_chunk_file
    from voproshalych_eval.datasets.store import store_file

    f = tmp_path / "earlier.json"
    ds = store_file(demo_engine, f, "golden", name=cut_chunk_file(demo_engine, f))
    at = _page("pages/dataset_review.py", rv_name=ds.name)
    assert any("1 of 2 items have a cut `chunk_text`" in i.value for i in at.info)
    assert any("chunk_text` is cut" in c.value for c in at.caption)  # the first item is the cut one
    at = _page("pages/datasets.py", lang="ru", io_name=ds.name)
    assert any("У 1 из 2 элементов `chunk_text` обрезан" in i.value for i in at.info)


def test_enter_in_the_rejection_field_decides_nothing_and_keys_decide(demo_engine) -> None:  # type: ignore[no-untyped-def]
    """No default submit: typing a reason and pressing Enter (a committed text input) accepts and rejects
    nothing; accept / reject / edit / next have keyboard keys; a decision opens the next item."""
    ds = _copy(demo_engine, n=3)
    at = _page("pages/dataset_review.py", rv_name=ds.name)
    first = ds.keys()[0]
    reason = next(t for t in at.text_input if t.label == "Reason for rejection")
    reason.set_value("дубликат").run()  # what Enter does in a text input outside a form
    assert not at.exception, [e.value for e in at.exception]
    assert first not in A.reviews(demo_engine, ds.name) or A.reviews(demo_engine, ds.name)[first].status == "pending"
    assert get_dataset(demo_engine, ds.name).version == 1 and len(get_dataset(demo_engine, ds.name)) == len(ds)
    assert not at.get("form"), "the review page has no form (a form submits on Enter)"
    shortcuts = {b.label: b.proto.shortcut.lower() for b in at.button}
    assert shortcuts["Accept"] == "alt+a" and shortcuts["Reject"] == "alt+x"
    assert shortcuts["Edit"] == "alt+e" and shortcuts["Next →"] == "alt+j"
    # the reason typed before is used by Reject; the page moves on to the next item
    next(b for b in at.button if b.label == "Reject").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert A.reviews(demo_engine, ds.name)[first].reason == "дубликат"
    assert any(html.escape(ds.records[1]["question"]) in h.value for h in at.html), [h.value for h in at.html]
    # the checks are labelled in words, not as stored keys
    labels = {c.label for c in at.checkbox}
    assert "is_question_ok" not in labels and "The question is sound" in labels
