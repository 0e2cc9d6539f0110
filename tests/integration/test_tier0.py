"""Tier 0 end to end: vector sets from the demo, run registry, projection cache, 1024-d production vectors, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sqlalchemy import text

from tests.support.plans import tier0 as run_tier0
from voproshalych_eval.engine import runs
from voproshalych_eval.metrics import geometry
from voproshalych_eval.tiers import projection, tier0


def test_chunks_metrics_and_run(demo_engine, demo_source) -> None:  # type: ignore[no-untyped-def]
    res = run_tier0(demo_engine, source="chunks", k=5, n_clusters=4, top_outliers=5)
    with demo_source.connect() as conn:
        n_chunks = conn.execute(text("SELECT count(*) FROM public.chunk")).scalar()
    assert res["n"] == n_chunks
    assert set(tier0.SEED_METRICS) <= set(res["metrics"])
    assert res["metrics"]["total_samples"] == n_chunks
    assert res["model"] == "use-multilingual"  # stored vectors from the demo's model
    # same numbers as the pure function on the stored vectors
    vs = res["vector_set"]
    ref = geometry.embedding_space_metrics(vs.X, k=5)
    assert res["metrics"]["avg_nn_distance"] == pytest.approx(ref["avg_nn_distance"], abs=1e-9)
    assert res["metrics"]["effective_dimensionality"] == ref["effective_dimensionality"]
    # outliers carry texts and neighbours; clusters and outlier scores are attached for colouring
    assert len(res["outliers"]) == 5 and res["outliers"][0]["text"]
    assert len(res["outliers"][0]["neighbors"]) == 5
    assert {"cluster", "outlier_score", "section", "source_type"} <= set(vs.meta.columns)
    assert vs.meta["cluster"].nunique() == 4
    assert len(res["per_section"]) >= 10
    run = runs.get_run(demo_engine, res["run_id"])
    assert run is not None and run.tier == "tier0" and run.status == "done"
    assert run.metrics["avg_nn_distance"] == pytest.approx(res["metrics"]["avg_nn_distance"])
    # the steps are the run's items, recorded one by one
    assert run.n_items_total == len(runs.item_records(demo_engine, run.id)) == 4
    assert run.metrics["n_by_kind"] == {"chunk": n_chunks}


def test_questions_use_the_whole_log(demo_engine, demo_source) -> None:  # type: ignore[no-untyped-def]
    with demo_source.connect() as conn:
        n_log = conn.execute(text("SELECT count(*) FROM public.question_answer")).scalar()
        n_stored = conn.execute(text("SELECT count(*) FROM public.question_answer WHERE embedding IS NOT NULL")).scalar()
    assert 0 < n_stored < n_log
    vs = tier0.load_vector_set(demo_engine, "questions")
    res = tier0.analyse(vs, n_clusters=None)
    assert res["n"] == n_log and res["metrics"]["total_samples"] == n_log
    assert res["run_id"] is None
    assert f"{n_log} logged questions" in res["notes"][0] and f"{n_stored} stored" in res["notes"][0]
    vs = res["vector_set"]
    assert int(vs.meta["stored_vector"].sum()) == n_stored
    assert vs.meta["answered"].dtype == bool and vs.meta["period"].notna().any()
    np.testing.assert_allclose(np.linalg.norm(vs.X, axis=1), 1.0, atol=1e-3)


def test_both_in_one_space_and_filters(demo_engine) -> None:  # type: ignore[no-untyped-def]
    vs = tier0.load_vector_set(demo_engine, "both", filters={"url_contains": "Stipendii"})
    assert set(vs.meta["kind"]) == {"chunk", "question"}
    assert vs.meta["url"].str.contains("Stipendii").all()
    res = tier0.analyse(vs, n_clusters=None)
    assert len(res["per_kind"]) == 2


def test_projection_is_cached(demo_engine) -> None:  # type: ignore[no-untyped-def]
    vs = tier0.load_vector_set(demo_engine, "chunks")
    before = projection.umap_fit_count()
    calls: list[tuple] = []
    p1 = projection.project_vector_set(demo_engine, vs, n_neighbors=5, seed=7, limit=150,
                                       steps=lambda *a: calls.append(a))
    assert projection.umap_fit_count() == before + 1 and not p1.from_cache
    # the steps for a progress bar: UMAP (with its layout epochs counted), trustworthiness, the cache write
    assert [c[:2] for c in calls][0] == (1, 3) and [c[:2] for c in calls][-2:] == [(2, 3), (3, 3)]
    epochs = [(c[3], c[4]) for c in calls if c[0] == 1 and c[4]]
    assert epochs and epochs[-1][0] == epochs[-1][1] > 0  # umap-learn's own epoch count, to the last one
    assert [d for d, _ in epochs] == sorted(d for d, _ in epochs)
    assert calls[0][2].ru.startswith("UMAP 2D по 150 точкам") and str(calls[0][2]).startswith("UMAP 2D of 150 points")
    assert p1.coords.shape == (150, 2) and p1.coords.dtype == np.float32
    assert p1.subsampled and p1.n_total == len(vs)
    assert p1.trustworthiness is not None and 0.5 < p1.trustworthiness <= 1.0
    calls.clear()
    p2 = projection.project_vector_set(demo_engine, vs, n_neighbors=5, seed=7, limit=150,
                                       steps=lambda *a: calls.append(a))
    assert p2.from_cache and not calls and projection.umap_fit_count() == before + 1  # no second fit
    np.testing.assert_array_equal(p1.coords, p2.coords)
    assert p2.point_ids == p1.point_ids and p2.trustworthiness == pytest.approx(p1.trustworthiness)
    assert p2.key == p1.key
    # other parameters -> another key
    assert projection.projection_key(vs.point_ids, vs.model, {"n_neighbors": 6}) != projection.projection_key(
        vs.point_ids, vs.model, {"n_neighbors": 5})


def test_knn_with_self_matches_umap_convention() -> None:
    X = np.random.default_rng(0).normal(size=(30, 8))
    idx, dist = projection.knn_with_self(X, 5)
    assert idx.shape == (30, 5) and (idx[:, 0] == np.arange(30)).all() and (dist[:, 0] == 0).all()
    assert (np.diff(dist, axis=1) >= -1e-7).all()


PROD_DIM = 1024


def test_production_style_1024d(fresh_db_url, fresh_engine) -> None:  # type: ignore[no-untyped-def]
    """A source shaped like production: chunk(confluence_url, embedding vector(1024)), no app metadata."""
    import psycopg

    from voproshalych_eval.db import snapshots

    rng = np.random.default_rng(3)
    centres = rng.normal(size=(6, PROD_DIM))
    rows = []
    for i in range(120):
        v = centres[i % 6] + 0.6 * rng.normal(size=PROD_DIM)
        v /= np.linalg.norm(v)
        rows.append((i + 1, f"https://confluence.example/pages/{i % 6}", f"текст чанка {i}", "[" + ",".join(f"{x:.6f}" for x in v) + "]"))
    with psycopg.connect(fresh_db_url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(
            f"CREATE TABLE public.chunk (id integer PRIMARY KEY, confluence_url text NOT NULL, text text NOT NULL, "
            f"embedding vector({PROD_DIM}) NOT NULL, created_at timestamptz DEFAULT now(), updated_at timestamptz DEFAULT now())"
        )
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO public.chunk(id, confluence_url, text, embedding) VALUES (%s, %s, %s, %s::vector)", rows)
    eng = fresh_engine
    snapshots.take(eng)
    res = run_tier0(eng, source="chunks", n_clusters=3, top_outliers=3)
    assert res["dim"] == PROD_DIM and res["n"] == 120
    assert res["model"].startswith("stored:chunk.embedding") and "1024" in res["model"]
    assert res["metrics"]["effective_dimensionality"] > 6
    vs = res["vector_set"]
    assert vs.meta["url"].str.startswith("https://confluence.example").all()
    assert set(res["per_section"]["section"]) == {str(i) for i in range(6)}
    assert runs.get_run(eng, res["run_id"]).status == "done"
    p = projection.project_vector_set(eng, vs, n_neighbors=5, n_components=3)
    assert p.coords.shape == (120, 3)
    # chunks + questions need a named model; the stored one is unknown here
    with pytest.raises(tier0.Tier0Error):
        tier0.load_vector_set(eng, "both")


def test_cli_vectors_json(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    X = np.random.default_rng(1).normal(size=(60, 16))
    path = tmp_path / "x.npy"
    np.save(path, X)
    assert main(["tier0", "--vectors", str(path), "--json", "--metric", "euclidean", "--k", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref = geometry.embedding_space_metrics(X, k=3, metric="euclidean")
    assert set(tier0.SEED_METRICS) <= set(out["metrics"])
    for key in tier0.SEED_METRICS:
        assert out["metrics"][key] == pytest.approx(ref[key], rel=1e-9, abs=1e-12)
    assert out["distance_metric"] == "euclidean" and out["n"] == 60 and out["run_id"] is None


def test_cli_source_records_run(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    assert main(["tier0", "--source", "chunks", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["run_id"] and out["metrics"]["total_samples"] == out["n"]
    assert runs.get_run(demo_engine, out["run_id"]).tier == "tier0"
