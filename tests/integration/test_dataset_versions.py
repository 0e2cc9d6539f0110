"""Dataset versions, review actions and annotation files against the embedded PostgreSQL."""

from __future__ import annotations

import csv
import io
import uuid

import pytest

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.datasets import annotations as A
from voproshalych_eval.datasets import versions as dv
from voproshalych_eval.datasets.store import (
    ConcurrentEditError,
    Dataset,
    content_hash,
    get_dataset,
    list_datasets,
    store,
)


def _copy_of_demo(engine, n: int = 12) -> Dataset:  # type: ignore[no-untyped-def]
    demo = get_dataset(engine, "demo_golden", "golden")
    recs = [dict(r) for r in demo.records[:n]]
    name = "t_" + uuid.uuid4().hex[:8]
    return store(engine, Dataset(name, "golden", recs, content_hash(recs), source="test"))


def test_versions_history_addressing_diff_revert(demo_engine) -> None:  # type: ignore[no-untyped-def]
    v1 = _copy_of_demo(demo_engine)
    assert v1.version == 1
    assert store(demo_engine, v1).version == 1  # storing the head again changes nothing
    key = v1.keys()[0]
    v2 = dv.edit_item(demo_engine, v1, key, {"question": "Изменённый вопрос?"}, note="typo")
    assert v2.version == 2 and v2.id != v1.id and v2.content_hash != v1.content_hash
    assert get_dataset(demo_engine, v1.name).version == 2
    assert get_dataset(demo_engine, f"{v1.name}@v1").content_hash == v1.content_hash
    assert get_dataset(demo_engine, f"{v1.name}@1").id == v1.id
    assert get_dataset(demo_engine, f"{v1.name}@{v2.content_hash[:10]}").id == v2.id
    assert get_dataset(demo_engine, v2.content_hash[:16]).id == v2.id
    with pytest.raises(LookupError):
        get_dataset(demo_engine, f"{v1.name}@v9")
    with pytest.raises(ConcurrentEditError):
        dv.edit_item(demo_engine, v1, key, {"question": "от старой версии"})  # v1 is no longer the head
    d = dv.diff_versions(demo_engine, v1.name, 1, 2)
    assert not d.added and not d.removed and [c.key for c in d.changed] == [key]
    assert d.changed[0].fields["question"][1] == "Изменённый вопрос?"
    v3 = dv.revert(demo_engine, v1.name, 1)
    assert v3.version == 3 and v3.id == v1.id and v3.content_hash == v1.content_hash
    hist = dv.history(demo_engine, v1.name)
    assert [h.version for h in hist] == [3, 2, 1]
    assert [h.action for h in hist] == ["revert", "edit", "import"]
    assert hist[1].note == "typo" and hist[1].changes["changed"] == [{"key": key, "fields": ["question"]}]
    assert hist[1].parent_version == 1
    heads = [r for r in list_datasets(demo_engine, "golden", heads_only=True) if r["name"] == v1.name]
    assert len(heads) == 1 and heads[0]["id"] == v1.id and heads[0]["version"] == 3
    assert dv.commit(demo_engine, v3, v3.records, action="edit") is v3  # no change, no version


def test_review_reject_restore_accept_edit_chunks(demo_engine) -> None:  # type: ignore[no-untyped-def]
    ds = _copy_of_demo(demo_engine)
    k0, k1 = ds.keys()[0], ds.keys()[1]
    with pytest.raises(ValueError, match="reason"):
        A.reject(demo_engine, ds, k1, "  ")
    r = A.reject(demo_engine, ds, k1, "ответ неверный")
    assert r.version == 2 and k1 not in list(r.keys()) and len(r) == len(ds) - 1
    rev = A.reviews(demo_engine, ds.name)[k1]
    assert rev.status == "rejected" and rev.reason == "ответ неверный" and rev.item["question"] == ds.records[1]["question"]
    A.accept(demo_engine, r, k0, notes="ок")
    assert get_dataset(demo_engine, ds.name).version == 2  # accepting is not a content change
    assert A.reviews(demo_engine, ds.name)[k0].status == "accepted"
    back = A.restore(demo_engine, ds.name, k1)
    assert back.version == 3 and back.keys()[1] == k1 and back.content_hash == ds.content_hash
    assert A.reviews(demo_engine, ds.name)[k1].status == "pending"
    ed = A.edit(demo_engine, back, k0, relevant_chunk_ids=[5, 3], answer="Новый ответ.")
    rec = ed.records[0]
    from voproshalych_eval.db.production import read_chunks

    kb = read_chunks(demo_engine, ids=[5, 3]).set_index("id")
    assert rec["chunk_id"] == 5 and rec["relevant_chunk_ids"] == [5, 3] and rec["chunk_text"] == kb.loc[5, "text"]
    assert rec["relevant_urls"] == list(dict.fromkeys([kb.loc[5, "url"], kb.loc[3, "url"]]))
    assert rec["ground_truth_answer"] == "Новый ответ."
    with pytest.raises(LookupError, match="not in the knowledge base"):
        A.edit(demo_engine, ed, k0, relevant_chunk_ids=[999999])
    un = A.edit(demo_engine, ed, k0, relevant_chunk_ids=[])
    assert un.records[0]["relevant_chunk_ids"] == [] and un.records[0]["question_type"] == "unanswerable"


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def _write(rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def test_annotation_csv_round_trip_edit_and_reimport(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ds = _copy_of_demo(demo_engine, 6)
    A.reject(demo_engine, ds, ds.keys()[5], "дубликат")
    text = A.export_annotations(demo_engine, ds.name, "csv")
    rows = _rows(text)
    assert [r["id"] for r in rows] == [*ds.keys()[:5], ds.keys()[5]]
    assert rows[5]["status"] == "rejected" and rows[5]["reason"] == "дубликат"
    assert {c for c in A.CHECKS} <= set(rows[0]) and "notes" in rows[0]
    # chunk_text is FULL (with its newlines), read back by the csv module
    assert rows[0]["chunk_text"] == ds.records[0]["chunk_text"]
    # edit like a reviewer in a spreadsheet
    rows[0]["question"] = "Вопрос, исправленный в таблице?"
    rows[0].update(is_question_ok="1", is_answer_ok="1", is_chunk_ok="1")
    rows[1].update(is_answer_ok="0", notes="ответ не из чанка")
    rows[2]["relevant_chunk_ids"] = "[7]"
    rows[5].update(status="pending")  # restore the rejected one
    f = tmp_path / "ann.csv"
    f.write_text(_write(rows), encoding="utf-8")
    rep = A.import_annotations(demo_engine, f)
    assert rep.version_before == 2 and rep.version_after == 3 and rep.n_errors == 0
    assert rep.rejected == [ds.keys()[1]] and rep.restored == [ds.keys()[5]] and ds.keys()[0] in rep.accepted
    assert set(rep.edited) == {ds.keys()[0], ds.keys()[2]}
    head = get_dataset(demo_engine, ds.name)
    by = dict(zip(head.keys(), head.records, strict=True))
    assert by[ds.keys()[0]]["question"] == "Вопрос, исправленный в таблице?"
    assert by[ds.keys()[2]]["relevant_chunk_ids"] == [7]
    assert ds.keys()[1] not in by and ds.keys()[5] in by
    revs = A.reviews(demo_engine, ds.name)
    assert revs[ds.keys()[1]].status == "rejected" and "is_answer_ok=0" in revs[ds.keys()[1]].reason
    assert revs[ds.keys()[1]].notes == "ответ не из чанка"
    h = dv.history(demo_engine, ds.name)[0]
    assert h.action == "annotate-import" and "ann.csv" in (h.note or "")
    # JSON export has the same rows
    import json

    assert [r["id"] for r in json.loads(A.export_annotations(demo_engine, ds.name, "json"))] == [r["id"] for r in _rows(A.export_annotations(demo_engine, ds.name))]


def test_annotation_import_reports_bad_rows(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ds = _copy_of_demo(demo_engine, 4)
    rows = _rows(A.export_annotations(demo_engine, ds.name))
    rows[0]["is_question_ok"] = "может быть"
    rows[1]["id"] = "nope"
    rows[2]["relevant_chunk_ids"] = "[424242]"
    rows[3]["notes"] = "хороший"
    rows[3]["is_chunk_ok"] = "0"
    f = tmp_path / "bad.csv"
    f.write_text(_write(rows), encoding="utf-8")
    with pytest.raises(A.AnnotationImportError) as ei:
        A.import_annotations(demo_engine, f)
    errs = ei.value.errors
    assert [(e["row"], e["field"]) for e in errs] == [(2, "is_question_ok"), (3, "id"), (4, "relevant_chunk_ids")]
    assert "bad.csv" in str(ei.value) and "row 2" in str(ei.value)
    assert get_dataset(demo_engine, ds.name).version == 1  # nothing applied
    rep = A.import_annotations(demo_engine, f, skip_bad_rows=True)
    assert rep.n_applied == 1 and rep.n_errors == 3 and rep.rejected == [ds.keys()[3]]
    assert get_dataset(demo_engine, ds.name).version == 2
    g = tmp_path / "all_bad.csv"
    g.write_text(_write([{**rows[1], "version": "2"}]), encoding="utf-8")  # a file of the head
    with pytest.raises(A.AnnotationImportError, match="no usable row"):
        A.import_annotations(demo_engine, g, skip_bad_rows=True)
    assert get_dataset(demo_engine, ds.name).version == 2


def test_tier1_runs_on_each_version(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from tests.support.plans import tier1 as run_tier1

    ds = _copy_of_demo(demo_engine, 8)
    v2 = A.edit(demo_engine, ds, ds.keys()[0], relevant_chunk_ids=[ds.records[1]["chunk_id"]])
    r1 = run_tier1(demo_engine, f"{ds.name}@v1", retriever="fts", k=5)
    r2 = run_tier1(demo_engine, ds.name, retriever="fts", k=5)
    assert r1.dataset["id"] == ds.id and r1.dataset["hash"] == ds.content_hash
    assert r2.dataset["id"] == v2.id and r2.dataset["hash"] == v2.content_hash
    from voproshalych_eval.engine.runs import get_run

    assert get_run(demo_engine, r2.run_id).dataset_id == v2.id


def test_stale_annotation_file_is_refused_or_merged(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ds = _copy_of_demo(demo_engine, 5)
    k0, k1, k2, k3 = ds.keys()[:4]
    v1_rows = _rows(A.export_annotations(demo_engine, ds.name))
    assert {r["version"] for r in v1_rows} == {"1"}
    v2 = A.edit(demo_engine, ds, k0, question="Вопрос, исправленный на странице?")
    v3 = A.reject(demo_engine, v2, k3, "не по теме")
    stale = tmp_path / "v1.csv"
    stale.write_text(_write(v1_rows), encoding="utf-8")
    # the unchanged v1 file would revert k0's question and restore k3: refused, naming the file and versions
    with pytest.raises(A.StaleAnnotationFileError, match=r"v1\.csv.*v1, but the head is v3"):
        A.import_annotations(demo_engine, stale)
    assert get_dataset(demo_engine, ds.name).content_hash == v3.content_hash
    # merged, the unchanged file changes nothing
    A.import_annotations(demo_engine, stale, merge=True)
    head = get_dataset(demo_engine, ds.name)
    assert head.content_hash == v3.content_hash and A.reviews(demo_engine, ds.name)[k3].status == "rejected"
    # a reviewer's cell edit is applied without clobbering the later edits; a conflicting cell is refused
    edited = [dict(r) for r in v1_rows]
    edited[1]["ground_truth_answer"] = "Ответ из таблицы."
    edited[0]["question"] = "Другая правка того же вопроса?"
    edited[2].update(is_question_ok="1", is_answer_ok="1", is_chunk_ok="1")
    f = tmp_path / "v1_edited.csv"
    f.write_text(_write(edited), encoding="utf-8")
    with pytest.raises(A.AnnotationImportError) as ei:
        A.import_annotations(demo_engine, f, merge=True)
    assert [(e["row"], e["field"]) for e in ei.value.errors] == [(2, "question")]
    rep = A.import_annotations(demo_engine, f, merge=True, skip_bad_rows=True)
    assert rep.edited == [k1] and rep.accepted == [k2] and rep.version_after == 4
    by = dict(zip(*(lambda d: (d.keys(), d.records))(get_dataset(demo_engine, ds.name)), strict=True))
    assert by[k1]["ground_truth_answer"] == "Ответ из таблицы."
    assert by[k0]["question"] == "Вопрос, исправленный на странице?" and k3 not in by
    # a file that restores an item a later version rejected conflicts
    edited = [dict(r) for r in v1_rows]
    edited[3]["status"] = "accepted"
    f.write_text(_write(edited), encoding="utf-8")
    with pytest.raises(A.AnnotationImportError) as ei:
        A.import_annotations(demo_engine, f, merge=True)
    assert [(e["row"], e["field"]) for e in ei.value.errors] == [(5, "status")]


def test_reimporting_the_head_file_changes_nothing(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ds = _copy_of_demo(demo_engine, 4)
    v2 = A.reject(demo_engine, ds, ds.keys()[1], "дубликат")
    A.accept(demo_engine, v2, ds.keys()[0])
    f = tmp_path / "head.csv"
    f.write_text(A.export_annotations(demo_engine, ds.name), encoding="utf-8")
    before = A.reviews(demo_engine, ds.name)
    A.import_annotations(demo_engine, f)
    assert get_dataset(demo_engine, ds.name).content_hash == v2.content_hash
    assert A.reviews(demo_engine, ds.name)[ds.keys()[1]].status == "rejected" == before[ds.keys()[1]].status
