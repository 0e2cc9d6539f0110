"""The ``dataset`` CLI with ``--json``: staleness against the live source, and the review path of a generated set."""

from __future__ import annotations

import json

import pytest

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.cli import main
from voproshalych_eval.datasets.store import Dataset, content_hash, store


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    rc = main([*args, "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def test_stale_sees_source_edits_not_yet_snapshotted(fresh_db_url, fresh_engine, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import psycopg

    import voproshalych_eval.commands.dataset as dataset_command
    from tests.integration import test_realq_staleness as rs
    from voproshalych_eval.db import snapshots
    from voproshalych_eval.db.production import read_chunks

    rs._source(fresh_db_url)
    first = snapshots.take(fresh_engine)
    kb = read_chunks(fresh_engine).set_index("id")
    recs = [{"id": "a", "question": "Когда выплачивают стипендию?", "ground_truth_answer": "До 25 числа.", "chunk_id": 1,
             "chunk_text": kb.loc[1, "text"], "confluence_url": kb.loc[1, "url"], "relevant_chunk_ids": [1],
             "relevant_urls": [kb.loc[1, "url"]]}]
    store(fresh_engine, Dataset("live_src", "golden", recs, content_hash(recs)))
    monkeypatch.setattr(dataset_command, "engine", lambda: fresh_engine)
    out = _cli(capsys, "dataset", "stale")
    assert out["kb_source"]["source_changed"] is False and out["n_stale"] == 0
    with psycopg.connect(fresh_db_url, autocommit=True) as conn:  # edited in production, no snapshot taken
        conn.execute("UPDATE chunk SET text = 'Стипендия выплачивается до 20 числа.' WHERE id = 1")
    out = _cli(capsys, "dataset", "stale")
    assert out["kb_source"]["source_changed"] is True and out["kb_source"]["current_snapshot_id"] == first.id
    assert f"changed since snapshot #{first.id}" in out["kb_source"]["warning"]
    assert out["n_stale"] == 0  # the snapshot still has the old text: the warning is what tells
    show = _cli(capsys, "dataset", "show", "live_src")
    assert show["kb_source"]["source_changed"] is True and show["stale"] is None
    from voproshalych_eval.datasets.staleness import dataset_warning

    warn = dataset_warning(fresh_engine, show["id"], check_source=True)  # what a run's caption shows
    assert warn is not None and warn["source_changed"] is True and not warn["stale"]
    out = _cli(capsys, "dataset", "stale", "--refresh")
    assert out["kb_source"]["refreshed"] is True and out["kb_source"]["current_snapshot_id"] != first.id
    assert out["n_stale"] == 1 and out["datasets"][0]["affected"][0]["problems"][0]["kind"] == "changed"
    assert _cli(capsys, "dataset", "stale")["kb_source"]["source_changed"] is False


def _csv_rows(text: str) -> list[dict[str, str]]:
    import csv
    import io

    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_generated_set_reviewed_annotated_and_evaluated_through_the_cli(demo_engine, capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Done-when #2 and #3 through the CLI: generate → annotation round trip → versions → Tier 1 on each → export →
    realq labelling; generated items keep their ``generation`` and ``dialog_context`` through every step."""
    import csv
    import io
    import uuid

    from voproshalych_eval.datasets import annotations as A
    from voproshalych_eval.datasets import versions as dv
    from voproshalych_eval.datasets.store import get_dataset

    name = "cli_" + uuid.uuid4().hex[:6]
    pages = "https://wiki.sevgu-demo.ru/display/STUD/Stipendii,https://wiki.sevgu-demo.ru/display/STUD/Sport"
    gen = _cli(capsys, "dataset", "generate", "--size", "8", "--types", "factual,follow_up", "--offline", "--pages", pages,
               "--name", name, "--no-compare-existing", "--seed", "5")
    assert gen["dataset"] == name and gen["version"] == 1 and gen["n_items"] >= 4
    v1 = get_dataset(demo_engine, name, "golden")
    extras = {k: {f: r[f] for f in ("generation", "dialog_context") if f in r} for k, r in zip(v1.keys(), v1.records, strict=True)}
    assert all("generation" in e for e in extras.values()) and any("dialog_context" in e for e in extras.values())

    # annotation file: edit a follow-up question, reject one item, accept another
    ann = tmp_path / "review.csv"
    assert main(["dataset", "annotate-export", name, "-o", str(ann)]) == 0
    rows = _csv_rows(ann.read_text(encoding="utf-8"))
    assert [r["id"] for r in rows] == v1.keys() and {r["version"] for r in rows} == {"1"}
    fu = next(i for i, k in enumerate(v1.keys()) if "dialog_context" in extras[k])
    other = [i for i in range(len(rows)) if i != fu]
    rows[fu]["question"] = "А если подробнее, что нужно сделать?"
    rows[other[0]].update(is_answer_ok="0", notes="ответ не из чанка")
    rows[other[1]].update(is_question_ok="1", is_answer_ok="1", is_chunk_ok="1")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    ann.write_text(buf.getvalue(), encoding="utf-8")
    imp = _cli(capsys, "dataset", "annotate-import", str(ann))
    k_fu, k_rej, k_acc = v1.keys()[fu], v1.keys()[other[0]], v1.keys()[other[1]]
    assert (imp["version_before"], imp["version_after"]) == (1, 2) and imp["n_errors"] == 0
    assert imp["edited"] == [k_fu] and imp["rejected"] == [k_rej] and imp["accepted"] == [k_acc]
    # the same file again is now stale (exported from v1): refused, the head unchanged
    assert main(["dataset", "annotate-import", str(ann), "--json"]) != 0
    assert "v1, but the head is v2" in capsys.readouterr().err

    show = _cli(capsys, "dataset", "show", name, "--items", "100")
    assert show["version"] == 2 and show["n_items"] == len(v1) - 1 and show["offline_items"] == len(v1) - 1
    assert show["stale"] is None and show["kb_source"]["source_changed"] is False
    by = {r["id"]: r for r in show["items"]}
    assert by[k_fu]["question"] == "А если подробнее, что нужно сделать?" and k_rej not in by
    for k, r in by.items():  # the generator's blocks survive the import
        assert {f: r.get(f) for f in extras[k]} == extras[k]
    hist = _cli(capsys, "dataset", "history", name)
    assert [h["version"] for h in hist["versions"]] == [2, 1] and hist["versions"][0]["action"] == "annotate-import"
    diff = _cli(capsys, "dataset", "diff", name, "1", "2")
    assert diff["removed"] == [k_rej] and [c["key"] for c in diff["changed"]] == [k_fu]
    assert list(diff["changed"][0]["fields"]) == ["question"]

    # Tier 1 on each version
    r1 = _cli(capsys, "tier1", "--dataset", f"{name}@v1", "--retriever", "fts", "--k", "5")
    r2 = _cli(capsys, "tier1", "--dataset", name, "--retriever", "fts", "--k", "5")
    assert r1["dataset"]["id"] == v1.id and r1["n_questions"] == len(v1)
    assert r2["dataset"]["hash"] == show["content_hash"] and r2["n_questions"] == len(v1) - 1

    # exports in the seed format keep every item
    assert main(["dataset", "export", name, "--format", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in exported] == list(by) and all("generation" in r for r in exported)
    assert main(["dataset", "export", name, "--format", "csv"]) == 0
    csv_rows = _csv_rows(capsys.readouterr().out)
    assert [r["question"] for r in csv_rows] == [by[k]["question"] for k in by]

    # a review-page edit and a revert keep the blocks too
    v3 = A.edit(demo_engine, name, k_fu, answer="Новый эталонный ответ.")
    rec = dict(zip(v3.keys(), v3.records, strict=True))[k_fu]
    assert rec["dialog_context"] == extras[k_fu]["dialog_context"] and rec["generation"] == extras[k_fu]["generation"]
    v4 = dv.revert(demo_engine, name, 1)
    assert v4.content_hash == v1.content_hash
    assert [{f: r[f] for f in extras[k]} for k, r in zip(v4.keys(), v4.records, strict=True)] == list(extras.values())

    # realq: pick real questions, label one "not in the knowledge base"; Tier 1 evaluates the set
    rq = "rq_" + uuid.uuid4().hex[:6]
    pick = _cli(capsys, "dataset", "realq-pick", rq, "--n", "3", "--seed", "2")
    assert len(pick["added"]) == 3 and pick["n_pool"] == 3
    lab = _cli(capsys, "dataset", "label", rq, pick["added"][0], "--not-in-kb")
    assert lab["version"] == 1 and lab["n_items"] == 1
    kb_chunk = str(v1.records[0]["chunk_id"])
    lab = _cli(capsys, "dataset", "label", rq, pick["added"][1], "--chunks", kb_chunk, "--answer", "Ответ аналитика.")
    assert lab["version"] == 2 and lab["n_items"] == 2
    rshow = _cli(capsys, "dataset", "show", rq, "--items", "10")
    assert rshow["by_source"] == {"real": 2}
    assert [r.get("not_in_kb", False) for r in rshow["items"]] == [True, False]
    assert rshow["items"][1]["relevant_chunk_ids"] == [int(kb_chunk)]
    rt = _cli(capsys, "tier1", "--dataset", rq, "--retriever", "fts", "--k", "5")
    assert rt["n_questions"] == 2 and rt["n_unanswerable"] == 1


def cut_chunk_file(engine, path) -> str:  # type: ignore[no-untyped-def]
    """An earlier-benchmark-like golden file of two demo items, the first one's chunk_text cut short
    (a prefix of the knowledge-base text); returns a new dataset name."""
    import uuid

    from voproshalych_eval.datasets.store import get_dataset

    recs = [dict(r) for r in get_dataset(engine, "demo_golden", "golden").records
            if len(r.get("chunk_text") or "") > 200][:2]
    recs[0]["chunk_text"] = recs[0]["chunk_text"][:150]
    path.write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")
    return "cut_" + uuid.uuid4().hex[:6]


def test_import_and_show_count_cut_chunk_texts(demo_engine, capsys, tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "earlier.json"
    name = cut_chunk_file(demo_engine, f)
    imp = _cli(capsys, "dataset", "import", str(f), "--name", name)
    assert imp["n_items"] == 2 and imp["chunk_text_truncated"] == 1
    show = _cli(capsys, "dataset", "show", name)
    assert show["chunk_text_truncated"] == 1 and show["items"][0]["chunk_text_truncated"] is True
    assert main(["dataset", "show", name]) == 0
    assert "1 of 2 items have a cut `chunk_text`" in capsys.readouterr().out
