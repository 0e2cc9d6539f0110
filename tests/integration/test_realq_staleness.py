"""Real questions labelled into a golden set (Tier 1 on it, confirmed gaps in the report) and stale datasets."""

from __future__ import annotations

import uuid

import pandas as pd
import pytest
from sqlalchemy import text

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.datasets import Dataset, content_hash, get_dataset, store
from voproshalych_eval.generation import realq
from voproshalych_eval.generation.staleness import check_dataset, dataset_warning


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


def test_label_real_questions_tier1_and_gap_report(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval import annotations as A
    from voproshalych_eval.analytics.report import coverage_gap_html, coverage_gap_markdown
    from voproshalych_eval.tiers.tier1 import run_tier1

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
    from voproshalych_eval.analytics.pipeline import run_real_users

    ru = run_real_users(demo_engine, analyses=("topics",), record=False, k_topics=6)
    assert ru.confirmed_gaps is not None and q in set(ru.confirmed_gaps["question"])
    md = coverage_gap_markdown(ru)
    assert "Подтверждённые пробелы" in md and q.replace("|", "/") in md
    assert "Подтверждённые пробелы" in coverage_gap_html(ru)


def test_editing_a_chunk_flags_the_datasets_that_use_it(demo_engine) -> None:  # type: ignore[no-untyped-def]
    demo = get_dataset(demo_engine, "demo_golden", "golden")
    recs = [dict(r) for r in demo.records[:6]]
    recs[5] = {**recs[5], "id": "gone", "chunk_id": 987654, "relevant_chunk_ids": [987654]}
    ds = store(demo_engine, Dataset("st_" + uuid.uuid4().hex[:6], "golden", recs, content_hash(recs), source="test"))
    first = check_dataset(demo_engine, ds, suggest=False)
    assert [a.item_key for a in first.affected] == ["gone"] and first.by_kind()["missing"] == 1
    target = int(recs[0]["chunk_id"])
    with demo_engine.connect() as conn:
        old = conn.execute(text("SELECT text FROM public.chunk WHERE id = :i"), {"i": target}).scalar_one()
    users = {r["id"] for r in recs if target in (r.get("relevant_chunk_ids") or []) or r.get("chunk_id") == target}
    try:
        with demo_engine.begin() as conn:
            conn.execute(text("UPDATE public.chunk SET text = :t WHERE id = :i"), {"t": old + " Дополнено.", "i": target})
        rep = check_dataset(demo_engine, ds.name)
        changed = {a.item_key for a in rep.affected if any(p["kind"] == "changed" for p in a.problems)}
        assert changed == users
        item = next(a for a in rep.affected if a.item_key in users)
        # the likely new chunk: same page, most similar to the old text — the edited chunk itself here
        assert item.suggestion is not None and item.suggestion["chunk_id"] == target
        assert item.suggestion["url"] == recs[0]["confluence_url"]
        warn = dataset_warning(demo_engine, ds.id)
        assert warn is not None and warn["stale"] and warn["n_items_affected"] == len(users) + 1
        # other datasets that do not use the chunk are not flagged for it
        other = [dict(r) for r in demo.records if target not in (r.get("relevant_chunk_ids") or [])][:3]
        ok = store(demo_engine, Dataset("st_" + uuid.uuid4().hex[:6], "golden", other, content_hash(other), source="t"))
        assert not check_dataset(demo_engine, ok, suggest=False).stale
    finally:
        with demo_engine.begin() as conn:
            conn.execute(text("UPDATE public.chunk SET text = :t WHERE id = :i"), {"t": old, "i": target})
    assert not any(a.item_key in users for a in check_dataset(demo_engine, ds, suggest=False).affected)
