"""Tier 1 against a real PostgreSQL + pgvector: batched == per-query, both chunk variants, FTS, hybrid,
HNSW recall, recorded runs, levels kept apart, CLI, TREC export checked with pytrec_eval, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import psycopg
import pytest
from sqlalchemy import text

from tests.support.plans import tier1 as run_tier1
from voproshalych_eval.datasets.store import DatasetError, get_dataset
from voproshalych_eval.db import retrieval as R

STORED = "use-multilingual"


@pytest.fixture(scope="module")
def golden(demo_engine):  # type: ignore[no-untyped-def]
    return get_dataset(demo_engine, "demo_golden", "golden")


@pytest.fixture(scope="module")
def qvecs(demo_engine, golden):  # type: ignore[no-untyped-def]
    from voproshalych_eval.embeddings import cached_embedder

    return cached_embedder(STORED, demo_engine).encode_queries([r["question"] for r in golden.records])


# ---------------------------------------------------------------- retrieval on the demo


def test_batched_equals_per_query_loop_on_demo(demo_engine, qvecs) -> None:  # type: ignore[no-untyped-def]
    loop = [R.search_one(demo_engine, q, k=10) for q in qvecs]
    for strategy in ("sql", "prefilter", "auto"):
        batched = R.search_vectors(demo_engine, qvecs, k=10, strategy=strategy, batch_size=50)
        assert batched == loop, strategy
    assert all(len(h) == 10 and [x.rank for x in h] == list(range(1, 11)) for h in loop)
    assert all(h[i].distance <= h[i + 1].distance for h in loop for i in range(9))
    assert R.search_vectors(demo_engine, qvecs, k=10, model=STORED) == loop  # stored model -> stored vectors


def test_fts_finds_russian_matches_with_stemming(demo_engine) -> None:  # type: ignore[no-untyped-def]
    hits = R.search_fts(demo_engine, ["Как получить место в общежитии?", "стипендия отличникам", "и или но"], k=5)
    assert hits[0] and "Obshchezhitiya" in hits[0][0].url
    assert hits[1] and "Stipendii" in hits[1][0].url  # "стипендия" matches "стипендии" through the stemmer
    assert hits[2] == []  # only stop words: no lexeme, no match
    assert all(0 < h.distance <= 1 for row in hits for h in row)
    assert [h.rank for h in hits[0]] == list(range(1, len(hits[0]) + 1))


def test_hybrid_fuses_both_rankings(demo_engine, qvecs, golden) -> None:  # type: ignore[no-untyped-def]
    qs = [r["question"] for r in golden.records[:20]]
    vec = R.search_vectors(demo_engine, qvecs[:20], k=20)
    fts = R.search_fts(demo_engine, qs, k=20)
    fused = R.hybrid(vec, fts, k=10)
    for v, f, h in zip(vec, fts, fused, strict=True):
        assert len(h) == 10 and len({x.chunk_id for x in h}) == 10
        assert {x.chunk_id for x in h} <= {x.chunk_id for x in [*v, *f]}
        assert all(0 <= x.distance <= 1 for x in h)
        assert [x.distance for x in h] == sorted(x.distance for x in h)
        if v and f and v[0].chunk_id == f[0].chunk_id:
            assert h[0].chunk_id == v[0].chunk_id and h[0].distance == pytest.approx(0.0)


# ---------------------------------------------------------------- both chunk variants, re-embedding, HNSW


def _production_db(url: str, variant: str, vectors: np.ndarray) -> None:
    """Plays the production bot: creates its tables outside the app (so the app treats them as read-only)."""
    texts = [
        "Стипендия назначается по итогам сессии",
        "Общежитие предоставляется иногородним студентам",
        "Пересдача экзамена проводится по графику кафедры",
        "Зачёт по физкультуре ставится за посещения",
    ]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("DROP TABLE IF EXISTS chunk")
        cols = "confluence_url text NOT NULL" if variant == "confluence_url" else "url text NOT NULL, source_type varchar(50)"
        conn.execute(f"CREATE TABLE chunk (id integer PRIMARY KEY, {cols}, text text NOT NULL, embedding vector({vectors.shape[1]}) NOT NULL)")
        col = "confluence_url" if variant == "confluence_url" else "url"
        for i, v in enumerate(vectors):
            conn.execute(
                f"INSERT INTO chunk(id, {col}, text, embedding) VALUES (%s, %s, %s, %s::vector)",
                (i + 1, f"https://wiki/p{i // 3}", texts[i % len(texts)], "[" + ",".join(map(str, v.tolist())) + "]"),
            )


class _FakeEmbedder:
    name = "fake-hash-embedder"
    dim = 6
    asymmetric = False

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        rng = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(self.dim) for t in texts]
        x = np.asarray(rng, dtype=np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    encode_queries = encode_passages


@pytest.mark.parametrize("variant", ["confluence_url", "url"])
def test_both_chunk_variants_batched_fts_reembedding_hnsw(fresh_db_url, fresh_engine, variant: str) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.db import snapshots
    from voproshalych_eval.metrics.retrieval import recall_against_exact

    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((60, 8)).astype(np.float32)
    vectors[5] = vectors[4]  # a tie, broken by id
    _production_db(fresh_db_url, variant, vectors)
    eng = fresh_engine
    snapshots.take(eng)
    queries = np.vstack([vectors[4], rng.standard_normal((29, 8)).astype(np.float32)])
    loop = [R.search_one(eng, q, k=7) for q in queries]
    assert [h.chunk_id for h in loop[0][:2]] == [5, 6] and loop[0][0].distance == pytest.approx(0.0, abs=1e-6)
    for strategy in ("sql", "prefilter"):
        assert R.search_vectors(eng, queries, k=7, strategy=strategy, batch_size=8) == loop
    assert loop[0][0].url == "https://wiki/p1"

    fts = R.search_fts(eng, ["где жить иногородним", "пересдачи экзаменов"], k=3)
    assert fts[0] and fts[0][0].chunk_id % 4 == 2 and fts[1][0].chunk_id % 4 == 3

    # a non-stored embedder: the knowledge base is re-embedded into eval.chunk_vectors, each distinct text once
    fake = _FakeEmbedder()
    assert R.ensure_chunk_vectors(eng, fake) == 4  # 60 chunks over 4 distinct texts
    assert R.ensure_chunk_vectors(eng, fake) == 0
    fq = fake.encode_queries(["общежитие", "стипендия", "пересдача"])
    assert R.search_vectors(eng, fq, k=5, model=fake.name) == [R.search_one(eng, q, k=5, model=fake.name) for q in fq]

    # HNSW on a copy in the store; the source's chunk table gets no index and no write
    info = R.build_hnsw_index(eng, m=8, ef_construction=32)
    assert info["table"].startswith("eval.ann_s") and info["n"] == 60
    approx = R.search_vectors(eng, queries, k=7, use_index=True, ef_search=40)
    rec = recall_against_exact([[h.chunk_id for h in a] for a in approx], [[h.chunk_id for h in e] for e in loop], k=7)
    assert 0.0 <= rec <= 1.0
    with psycopg.connect(fresh_db_url) as conn:
        idx = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'chunk'")]
    assert not any("hnsw" in d for d in idx)
    with pytest.raises(Exception, match="dimension|-d"):
        R.search_vectors(eng, np.ones((1, 5), dtype=np.float32), k=3)


# ---------------------------------------------------------------- Tier 1 runs


def test_run_recorded_with_items_levels_and_unanswerable(demo_engine, golden) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.engine import runs
    res = run_tier1(demo_engine, golden, retriever="vector", embedder=STORED, k=10, n_resamples=300)
    unanswerable = [r for r in golden.records if not r["relevant_chunk_ids"] and not r["relevant_urls"]]
    assert res.n_unanswerable == len(unanswerable) > 0
    assert res.n_evaluated["questions"] == len(golden) - len(unanswerable)
    assert all(u["top_distance"] is not None for u in res.unanswerable)
    for level in ("chunk", "url"):
        for key in ("hit_rate@1", "hit_rate@5", "hit_rate@10", "mrr", "ndcg@5", "ndcg@10", "recall@5", "precision@5", "map"):
            v = res.metrics[level][key]
            assert 0.0 <= v <= 1.0
            ci = res.ci[level][key]
            assert ci["ci_low"] <= v <= ci["ci_high"] and ci["n"] == res.n_evaluated[level]
    # two levels, distinct values: the URL MRR never overwrites the chunk MRR
    assert res.metrics["url"]["mrr"] > res.metrics["chunk"]["mrr"]
    assert res.metrics["url"]["hit_rate@1"] >= res.metrics["chunk"]["hit_rate@1"]
    assert res.retrieval_consistency["applicable"] is False and "exact" in res.retrieval_consistency["reason"]

    run = runs.get_run(demo_engine, res.run_id)
    assert run.status == "done" and run.tier == "tier1" and run.dataset_hash == golden.content_hash
    # the run names the knowledge-base snapshot it searched, in its result and its record
    from voproshalych_eval.db import snapshots

    current = snapshots.current(demo_engine)
    assert res.snapshot["id"] == current.id and res.snapshot["content_hash"] == current.content_hash
    assert run.params["snapshot"] == run.snapshot_id == run.config["snapshot_id"] == current.id  # pinned for resume
    assert run.params["retriever"] == "vector" and run.models["embedder"] == STORED
    assert run.metrics["chunk"]["mrr"]["value"] == pytest.approx(res.metrics["chunk"]["mrr"])
    items = runs.run_items(demo_engine, res.run_id)
    assert len(items) == len(golden)
    row = items.set_index("item_key").loc[golden.keys()[0]]
    assert len(row["retrieved_ids"]) == 10 and len(row["retrieved_distances"]) == 10
    assert row["metrics_chunk"]["mrr"] == pytest.approx(0 if row["first_relevant_rank"] is None else 1 / row["first_relevant_rank"])
    una = items[~items["answerable"]]
    assert una["metrics_chunk"].isna().all() and una["top_distance"].notna().all()


def test_answer_depth_3_still_retrieves_to_the_largest_cut_off(demo_engine, golden) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.engine import runs

    res = run_tier1(demo_engine, golden, retriever="vector", embedder=STORED, k=3, n_resamples=100)
    assert res.params["retrieved_depth"] == 10 and res.params["cutoffs"] == [1, 3, 5, 10]
    items = runs.run_items(demo_engine, res.run_id)
    assert all(len(ids) == 10 for ids in items["retrieved_ids"])
    deep = items[items["first_relevant_rank"].fillna(0).between(4, 10)]
    assert len(deep), "the demo set has answers ranked 4–10"
    for _, row in deep.iterrows():  # found below the answer depth: still a hit at @5 / @10, never @3
        rank = int(row["first_relevant_rank"])
        assert row["metrics_chunk"]["hit_rate@3"] == 0.0 and row["metrics_chunk"]["hit_rate@10"] == 1.0
        assert row["metrics_chunk"]["hit_rate@5"] == (1.0 if rank <= 5 else 0.0)
    # URL level @K over the first K distinct pages: chunks retrieved deeper until 10 pages are there
    # (or the stated cap of 200 chunks / the whole collection is reached)
    from voproshalych_eval.db.production import read_chunks

    n_pages = read_chunks(demo_engine, snapshot=res.snapshot["id"])["url"].nunique()
    assert all(len(u) >= min(10, n_pages) for u in items["url_ranking"]) or res.params["url_retrieved_depth_max"] == 200
    assert res.params["url_retrieved_depth_max"] > 10


def test_hnsw_run_reports_recall_and_consistency(demo_engine, golden) -> None:  # type: ignore[no-untyped-def]
    res = run_tier1(demo_engine, golden, retriever="vector", embedder=STORED, k=10, use_index=True, repeats=2, n_resamples=200)
    assert 0.0 <= res.hnsw["recall@10_vs_exact"] <= 1.0
    assert res.retrieval_consistency["applicable"] is True
    assert 0.0 <= res.retrieval_consistency["value"] <= 1.0


def test_fts_and_hybrid_runs_and_paired_comparison(demo_engine, golden) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.engine import runs

    fts = run_tier1(demo_engine, golden, retriever="fts", k=10, n_resamples=200)
    hyb = run_tier1(demo_engine, golden, retriever="hybrid", embedder=STORED, k=10, n_resamples=200)
    for res in (fts, hyb):
        assert all(0 <= v <= 1 for lvl in res.metrics.values() for v in lvl.values())
    assert fts.metrics["url"]["hit_rate@10"] > 0.5  # Russian FTS finds the right page for most questions
    # the one comparison: the url-level MRR row pairs every evaluated question
    cmp = runs.compare_runs(demo_engine, fts.run_id, hyb.run_id, n_resamples=500)
    row = cmp.metrics.set_index("metric").loc["url.mrr"]
    assert row["item_field"] == "metrics_url.mrr" and row["n_pairs"] == fts.n_evaluated["url"]
    assert row["paired_mean_diff"] == pytest.approx(hyb.metrics["url"]["mrr"] - fts.metrics["url"]["mrr"])


def test_trec_export_agrees_with_pytrec_eval(demo_engine, golden, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytrec_eval

    from voproshalych_eval.engine import runs
    from voproshalych_eval.tiers.tier1 import export_trec

    res = run_tier1(demo_engine, golden, retriever="hybrid", embedder=STORED, k=10, n_resamples=100)
    items = runs.run_items(demo_engine, res.run_id).set_index("item_key")
    stored, records = runs.get_run(demo_engine, res.run_id), runs.item_records(demo_engine, res.run_id)
    for level in ("chunk", "url"):
        info = export_trec(stored, records, tmp_path / f"{level}.run", tmp_path / f"{level}.qrels", level=level)
        assert info["n_run_lines"] > 0
        run: dict[str, dict[str, float]] = {}
        for line in (tmp_path / f"{level}.run").read_text().splitlines():
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
        qrels: dict[str, dict[str, int]] = {}
        for line in (tmp_path / f"{level}.qrels").read_text().splitlines():
            q, _, d, r = line.split()
            qrels.setdefault(q, {})[d] = int(r)
        assert len(qrels) == res.n_evaluated[level]
        ev = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "ndcg_cut.10", "P.5"}).evaluate(run)
        for q, m in ev.items():
            mine = items.loc[q, f"metrics_{level}"]
            assert m["recip_rank"] == pytest.approx(mine["mrr"], abs=1e-9)
            assert m["ndcg_cut_10"] == pytest.approx(mine["ndcg@10"], abs=1e-9)
            assert m["P_5"] == pytest.approx(mine["precision@5"], abs=1e-9)


# ---------------------------------------------------------------- CLI and malformed files


def test_cli_tier1_json_and_export(demo_engine, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    out_file = tmp_path / "run.trec"
    assert main(["tier1", "--json", "--retriever", "fts", "--export-run", str(out_file), "--level", "url"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["metrics"]) == {"chunk", "url"}
    assert isinstance(data["metrics"]["chunk"]["hit_rate@5"], float)
    assert isinstance(data["metrics"]["url"]["ndcg@10"], float)
    assert data["metrics"]["chunk"]["mrr"] != data["metrics"]["url"]["mrr"]
    assert data["ci"]["chunk"]["mrr"]["ci_low"] <= data["metrics"]["chunk"]["mrr"]
    assert data["n_unanswerable"] > 0 and data["n_evaluated"] > 0 and data["run_id"] > 0
    assert out_file.is_file() and Path(str(out_file) + ".qrels").is_file()
    assert "https://" in out_file.read_text().splitlines()[0]


def test_malformed_dataset_names_file_row_field_and_stores_nothing(demo_engine, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    bad = tmp_path / "bad_golden.json"
    bad.write_text(json.dumps([
        {"question": "Где столовая?", "ground_truth_answer": "В корпусе 1", "relevant_chunk_ids": [1]},
        {"question": "Где библиотека?", "ground_truth_answer": "В корпусе 2", "relevant_chunk_ids": ["два"]},
    ], ensure_ascii=False), encoding="utf-8")
    with demo_engine.connect() as conn:
        before = conn.execute(text("SELECT (SELECT count(*) FROM eval.datasets), (SELECT count(*) FROM eval.runs)")).one()
    with pytest.raises(DatasetError) as err:
        run_tier1(demo_engine, str(bad), retriever="fts")
    assert err.value.file == str(bad) and err.value.row == 2 and err.value.field == "relevant_chunk_ids"
    assert main(["tier1", "--dataset", str(bad), "--retriever", "fts", "--json"]) == 2
    msg = capsys.readouterr().err
    assert "bad_golden.json" in msg and "row 2" in msg and "relevant_chunk_ids" in msg
    with demo_engine.connect() as conn:
        after = conn.execute(text("SELECT (SELECT count(*) FROM eval.datasets), (SELECT count(*) FROM eval.runs)")).one()
    assert tuple(after) == tuple(before)
