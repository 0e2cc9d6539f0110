"""Real questions labelled into a golden set (Tier 1 on it, confirmed gaps in the report) and stale datasets."""

from __future__ import annotations

import uuid

import pandas as pd
import pytest

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.datasets.staleness import check_dataset, dataset_warning
from voproshalych_eval.datasets.store import Dataset, content_hash, get_dataset, store
from voproshalych_eval.generation import realq


def test_candidates_strategies_and_dedup(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.analytics.question_log import read_log

    log = read_log(demo_engine)
    qs = realq.log_questions(demo_engine)
    assert qs["key"].is_unique and (qs["n_asked"] >= 1).all()
    assert qs["n_asked"].sum() <= len(log) and len(qs) < len(log)  # greetings dropped, repeats merged
    down = realq.candidates(demo_engine, strategy="thumbs_down", n=500)
    assert len(down) and set(down["score"].astype(int)) == {1}
    un = realq.candidates(demo_engine, strategy="unanswered", n=500)
    by_id = log.set_index("id")
    assert len(un) and not by_id.loc[un["log_id"], "answered"].any()
    st = realq.candidates(demo_engine, strategy="random_stratified", n=12, seed=3)
    assert len(st) == 12 and st["stratum"].nunique() >= 3
    assert st.equals(realq.candidates(demo_engine, strategy="random_stratified", n=12, seed=3))  # seeded
    again = realq.candidates(demo_engine, strategy="random_stratified", n=12, seed=3, exclude=st["question"].tolist())
    assert not set(again["question"]) & set(st["question"])
    # topics: given assignments (computed once by the real-user analysis), by topic and by coverage gap
    topics = pd.DataFrame({"log_id": qs["log_id"], "topic": [i % 3 for i in range(len(qs))],
                           "topic_name": "t", "gap_rank": [(i % 3) + 1 for i in range(len(qs))]})
    t1 = realq.candidates(demo_engine, strategy="topic", topic=1, n=5, topics=topics)
    assert len(t1) == 5 and set(t1["topic"]) == {1}
    gaps = realq.candidates(demo_engine, strategy="coverage_gap", top_gaps=2, n=6, topics=topics)
    assert list(gaps["topic"]) == [0, 1, 0, 1, 0, 1]  # the top gaps taken in turn
    with pytest.raises(ValueError, match="unknown strategy"):
        realq.candidates(demo_engine, strategy="best")


def test_topic_strategies_take_the_topics_of_a_recorded_run(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    """``realq-pick --strategy coverage_gap`` runs the topic analysis through the engine (a recorded real_users
    run) and picks from the topics stored in it; ``--topics-run`` reuses them without a new run."""
    import json

    from voproshalych_eval.cli import main
    from voproshalych_eval.engine import runs

    with pytest.raises(ValueError, match="needs the log's topics"):
        realq.candidates(demo_engine, strategy="coverage_gap")  # never computed behind the engine's back
    name = "realq_" + uuid.uuid4().hex[:6]
    assert main(["dataset", "realq-pick", name, "--strategy", "coverage_gap", "--n", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    run = runs.get_run(demo_engine, out["topics_run"])
    assert run is not None and run.tier == "real_users" and run.status == "done" and run.params["analyses"] == ["topics"]
    records = runs.item_records(demo_engine, run.id)
    assert [r["item_key"] for r in records] == ["embeddings", "log", "retrieval", "topics"]
    topics = realq.topic_assignments(records)
    questions = realq.log_questions(demo_engine)
    assert set(questions["log_id"]) <= set(topics["log_id"])  # every question has its topic
    top_gaps = topics[topics["gap_rank"].notna() & (topics["gap_rank"] <= 3)]
    assert len(out["added"]) == 3 and top_gaps["topic_name"].str.len().gt(0).all()
    gap_keys = {realq.item_key_for(run.params["source"], i) for i in top_gaps["log_id"]}
    assert set(out["added"]) <= gap_keys  # picked from the top-ranked coverage gaps
    n_runs = len(runs.list_runs(demo_engine, tier="real_users"))
    one = int(topics.set_index("log_id").loc[questions["log_id"], "topic"].mode()[0])  # the largest topic
    assert main(["dataset", "realq-pick", name, "--strategy", "topic", "--topic", str(one), "--n", "2",
                 "--topics-run", str(run.id), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["topics_run"] == run.id and len(runs.list_runs(demo_engine, tier="real_users")) == n_runs
    in_topic = {realq.item_key_for(run.params["source"], i) for i in topics.loc[topics["topic"] == one, "log_id"]}
    assert again["added"] and set(again["added"]) <= in_topic
    with pytest.raises(LookupError, match="no finished 'topics' step"):
        realq.topic_assignments([r for r in records if r["item_key"] != "topics"])


def test_label_real_questions_tier1_and_gap_report(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from tests.support.plans import tier1 as run_tier1
    from voproshalych_eval.analytics.report import coverage_gap_html, coverage_gap_markdown
    from voproshalych_eval.datasets import annotations as A

    name = "realq_" + uuid.uuid4().hex[:6]
    cands = realq.candidates(demo_engine, strategy="random_stratified", n=4, seed=1)
    keys = realq.add_to_pool(demo_engine, name, cands)
    assert len(keys) == 4 and realq.add_to_pool(demo_engine, name, cands) == []  # pooled once
    rev = A.reviews(demo_engine, name)[keys[0]]
    assert rev.suggestions and rev.status == "pending"
    with pytest.raises(LookupError):
        get_dataset(demo_engine, name)  # suggestions alone never make a labelled dataset
    with pytest.raises(ValueError, match="one of the two"):
        realq.label(demo_engine, name, keys[0])
    sugg = int(rev.suggestions[1]["chunk_id"])
    v1 = realq.label(demo_engine, name, keys[0], relevant_chunk_ids=[sugg], answer="Ответ аналитика.")
    assert v1.version == 1 and v1.records[0]["relevant_chunk_ids"] == [sugg]  # what the person confirmed, only
    assert v1.records[0]["question_source"] == "real" and v1.records[0]["ground_truth_answer"] == "Ответ аналитика."
    v2 = realq.label(demo_engine, name, keys[1], not_in_kb=True)
    assert v2.version == 2 and v2.records[1]["not_in_kb"] is True and v2.records[1]["relevant_urls"] == []
    realq.skip(demo_engine, name, keys[2], "не вопрос")
    pool = realq.pool(demo_engine, name).set_index("item_key")
    assert pool.loc[keys[0], "state"] == "labelled" and pool.loc[keys[2], "state"] == "skipped"
    assert pool.loc[keys[3], "state"] == "pending"
    # Tier 1 evaluates the realq set (the not-in-KB question is reported as unanswerable)
    res = run_tier1(demo_engine, name, retriever="fts", k=5)
    assert res.n_questions == 2 and res.n_unanswerable == 1
    # the "not in KB" label reaches the coverage-gap report as a confirmed gap
    gaps = A.confirmed_gaps(demo_engine)
    q = v2.records[1]["question"]
    assert q in set(gaps["question"])
    from tests.support.plans import real_users as run_real_users

    ru = run_real_users(demo_engine, analyses=("topics",), k_topics=6)
    assert ru.confirmed_gaps is not None and q in set(ru.confirmed_gaps["question"])
    import html

    from voproshalych_eval.markdown import cell

    report_md = coverage_gap_markdown(ru)
    assert "Подтверждённые пробелы" in report_md and f"| {cell(q)} |" in report_md
    report_html = coverage_gap_html(ru)
    assert "Подтверждённые пробелы" in report_html and html.escape(q) in report_html


def _source(url: str) -> None:
    """A small production-like source: three pages, one of them with a single chunk."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE chunk (id integer PRIMARY KEY, confluence_url text NOT NULL, text text NOT NULL, "
                     "embedding vector(4) NOT NULL, created_at timestamptz, updated_at timestamptz)")
        rows = [(1, "https://wiki/stip", "Академическая стипендия выплачивается до 25 числа каждого месяца.", "[1,0,0,0]"),
                (2, "https://wiki/stip", "Повышенная стипендия назначается за достижения в учёбе и науке.", "[0.9,0.1,0,0]"),
                (3, "https://wiki/dorm", "Общежитие предоставляется иногородним студентам очной формы.", "[0,1,0,0]"),
                (4, "https://wiki/exam", "Пересдача проходит по графику кафедры после сессии.", "[0,0,1,0]")]
        for r in rows:
            conn.execute("INSERT INTO chunk(id, confluence_url, text, embedding) VALUES (%s, %s, %s, %s::vector)", r)


def test_editing_a_chunk_flags_the_datasets_that_use_it(fresh_db_url, fresh_engine) -> None:  # type: ignore[no-untyped-def]
    import psycopg

    from voproshalych_eval.datasets.staleness import check_all
    from voproshalych_eval.db import snapshots

    _source(fresh_db_url)
    first = snapshots.take(fresh_engine)
    from voproshalych_eval.db.production import read_chunks

    kb = read_chunks(fresh_engine).set_index("id")

    def item(i: str, cid: int) -> dict:
        return {"id": i, "question": f"Вопрос {i}?", "ground_truth_answer": kb.loc[cid, "text"], "chunk_id": cid,
                "chunk_text": kb.loc[cid, "text"], "confluence_url": kb.loc[cid, "url"]}

    recs = [item("a", 1), item("b", 3), item("c", 4)]
    ds = store(fresh_engine, Dataset("uses_1_3", "golden", recs, content_hash(recs)))
    other = [item("x", 4)]
    untouched = store(fresh_engine, Dataset("uses_4", "golden", other, content_hash(other)))
    assert not check_dataset(fresh_engine, ds, suggest=False).stale
    with psycopg.connect(fresh_db_url, autocommit=True) as conn:  # the knowledge base is edited in production
        conn.execute("UPDATE chunk SET text = 'Академическая стипендия выплачивается до 20 числа.' WHERE id = 1")
        conn.execute("DELETE FROM chunk WHERE id = 3")
    second = snapshots.take(fresh_engine)
    assert second.id != first.id and snapshots.current(fresh_engine).id == second.id
    rep = check_dataset(fresh_engine, ds.name)
    by = {a.item_key: a for a in rep.affected}
    assert set(by) == {"a", "b"} and rep.stale and rep.snapshot_id == second.id
    assert [p["kind"] for p in by["a"].problems] == ["changed"]
    assert {p["kind"] for p in by["b"].problems} == {"missing", "url_gone"}
    # the likely new chunk: the same page, most similar to the old text — the edited chunk 1, not chunk 2
    assert by["a"].suggestion is not None and by["a"].suggestion["chunk_id"] == 1
    assert by["a"].suggestion["url"] == "https://wiki/stip"
    # the page of b is gone: the nearest chunk of the whole knowledge base is suggested
    assert by["b"].suggestion is not None and by["b"].suggestion["chunk_id"] in {1, 2, 4}
    assert rep.by_kind() == {"missing": 1, "changed": 1, "url_changed": 0, "url_gone": 1}
    # a run on the old snapshot used the dataset as it was: no warning; on the new one, a warning
    assert dataset_warning(fresh_engine, ds.id, snapshot=first.id) is None
    warn = dataset_warning(fresh_engine, ds.id)
    assert warn is not None and warn["n_items_affected"] == 2 and warn["snapshot_id"] == second.id
    assert dataset_warning(fresh_engine, untouched.id) is None
    assert {r.dataset: r.stale for r in check_all(fresh_engine)} == {"uses_1_3": True, "uses_4": False}
    # fixing the item (the suggested chunk) makes a new version that is up to date
    from voproshalych_eval.datasets import annotations as A

    fixed = A.edit(fresh_engine, ds.name, "a", relevant_chunk_ids=[by["a"].suggestion["chunk_id"]])
    assert "a" not in {x.item_key for x in check_dataset(fresh_engine, fixed, suggest=False).affected}


def test_a_run_on_a_stale_dataset_carries_a_visible_warning(fresh_db_url, fresh_engine, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    import psycopg

    from voproshalych_eval.datasets.staleness import run_warning
    from voproshalych_eval.db import snapshots
    from voproshalych_eval.engine.runs import get_run

    _source(fresh_db_url)
    snapshots.take(fresh_engine)
    from voproshalych_eval.db.production import read_chunks

    kb = read_chunks(fresh_engine).set_index("id")
    recs = [{"id": "a", "question": "Когда выплачивают стипендию?", "ground_truth_answer": "До 25 числа.", "chunk_id": 1,
             "chunk_text": kb.loc[1, "text"], "confluence_url": kb.loc[1, "url"], "relevant_chunk_ids": [1],
             "relevant_urls": [kb.loc[1, "url"]]}]
    store(fresh_engine, Dataset("stale_run", "golden", recs, content_hash(recs)))
    with psycopg.connect(fresh_db_url, autocommit=True) as conn:
        conn.execute("UPDATE chunk SET text = 'Стипендия выплачивается до 20 числа.' WHERE id = 1")
    import voproshalych_eval.commands.resume as resume_command
    import voproshalych_eval.commands.tier1 as tier1_command
    from voproshalych_eval.cli import main

    for command in (tier1_command, resume_command):  # the CLI (and its shared runner) on this test's store
        monkeypatch.setattr(command, "engine", lambda: fresh_engine)
    assert main(["tier1", "--dataset", "stale_run", "--retriever", "fts", "--k", "3", "--json"]) == 0
    out = capsys.readouterr()
    res = json.loads(out.out)
    assert res["dataset_warning"]["stale"] and res["dataset_warning"]["n_items_affected"] == 1
    assert "is stale" in out.err
    assert run_warning(fresh_engine, get_run(fresh_engine, res["run_id"])) is not None
