"""Foundation against a real PostgreSQL + pgvector: store schema, source reading, cache, dimensions, demo, CLI."""

from __future__ import annotations

import json

import numpy as np
import psycopg
import pytest
from sqlalchemy import text

from voproshalych_eval.db.errors import DimensionMismatchError, ProductionWriteError
from voproshalych_eval.db.guard import source_statement_refusal
from voproshalych_eval.db.migrate import current_revisions
from voproshalych_eval.db.production import check_dimension, inspect_schema, inspect_source, read_chunks

EVAL_TABLES = {
    "meta", "embedding_cache", "chunk_vectors", "llm_cache", "llm_calls", "datasets", "dataset_items",
    "runs", "run_items", "projections", "baselines", "question_log", "snapshots", "snapshot_chunks", "snapshot_log",
}


def _raw(url: str) -> psycopg.Connection:
    """A plain psycopg connection that bypasses the app (plays the production bot writing its own tables)."""
    return psycopg.connect(url, autocommit=True)


def test_eval_schema_created_by_migrations(engine) -> None:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        tables = set(
            conn.execute(text("SELECT table_name FROM information_schema.tables WHERE table_schema = 'eval'")).scalars()
        )
    assert tables >= EVAL_TABLES
    from alembic.script import ScriptDirectory

    from voproshalych_eval.db.migrate import alembic_config

    # every head revision is applied (later revisions build on 0001_initial; some depend on another branch)
    script = ScriptDirectory.from_config(alembic_config())
    applied = {r.revision for head in current_revisions(engine) for r in script.iterate_revisions(head, "base")}
    assert set(script.get_heads()) <= applied
    assert "0002_snapshots" in applied


def test_migrations_are_idempotent(engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.db.migrate import upgrade

    before = current_revisions(engine)
    upgrade(engine)
    assert current_revisions(engine) == before


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("INSERT INTO chunk(id) VALUES (1)", True),
        ('insert into public."user" (id) values (1)', True),
        ("UPDATE question_answer SET score = 5", True),
        ("DELETE FROM public.chunk WHERE id = 1", True),
        ("TRUNCATE TABLE question_answer", True),
        ("ALTER TABLE chunk ADD COLUMN x int", True),
        ("DROP TABLE IF EXISTS chunk", True),
        ("SELECT * FROM chunk", False),
        ("INSERT INTO eval.chunk_vectors(model) VALUES ('m')", True),  # nothing is written to a source
    ],
)
def test_source_text_check_lets_only_reads_through(sql: str, refused: bool) -> None:
    assert (source_statement_refusal(sql) is not None) == refused


def _make_production_db(url: str, *, variant: str, dim: int = 8) -> None:
    with _raw(url) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        url_cols = "confluence_url text NOT NULL" if variant == "confluence_url" else "url text NOT NULL, source_type varchar(50)"
        conn.execute(
            f"""CREATE TABLE chunk (id integer PRIMARY KEY, {url_cols}, text text NOT NULL,
                embedding vector({dim}) NOT NULL, created_at timestamptz, updated_at timestamptz)"""
        )
        conn.execute('CREATE TABLE "user" (id integer PRIMARY KEY, vk_id bigint, telegram_id bigint, is_subscribed boolean, created_at timestamptz, updated_at timestamptz)')
        conn.execute(
            f"""CREATE TABLE question_answer (id integer PRIMARY KEY, question text NOT NULL, embedding vector({dim}),
                answer text, confluence_url text, score integer, user_id integer, stop_point boolean DEFAULT false,
                created_at timestamptz, updated_at timestamptz)"""
        )
        vec = "[" + ",".join(["0.5"] * dim) + "]"
        col = "confluence_url" if variant == "confluence_url" else "url, source_type"
        vals = "'https://wiki/p1'" if variant == "confluence_url" else "'https://wiki/p1', 'confluence'"
        conn.execute(f"INSERT INTO chunk(id, {col}, text, embedding) VALUES (1, {vals}, 'Текст чанка', '{vec}')")
        conn.execute("INSERT INTO question_answer(id, question) VALUES (1, 'когда стипендия')")


@pytest.mark.parametrize("variant", ["confluence_url", "url"])
def test_production_tables_are_read_into_a_snapshot_never_written(fresh_db_url: str, fresh_engine, variant: str) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.db import snapshots
    from voproshalych_eval.db.engine import source_for

    _make_production_db(fresh_db_url, variant=variant)
    source = source_for(fresh_engine)
    assert inspect_source(source).chunk_variant == variant
    snap = snapshots.take(fresh_engine)
    assert snap.chunk_variant == variant and snap.chunk_dim == 8 and snap.n_chunks == 1 and snap.n_questions == 1
    schema = inspect_schema(fresh_engine)
    assert schema.source_variant == variant and schema.chunk_variant == "url" and schema.chunk_dim == 8
    df = read_chunks(fresh_engine, with_embeddings=True)
    assert list(df.columns[:4]) == ["id", "url", "source_type", "text"]
    assert df.loc[0, "url"] == "https://wiki/p1"
    assert df.loc[0, "embedding"].shape == (8,)
    assert df.attrs["snapshot_id"] == snap.id
    for stmt in (
        "INSERT INTO chunk(id, text, embedding) VALUES (2, 'x', NULL)",
        "UPDATE question_answer SET score = 5",
        "DELETE FROM question_answer",
        'INSERT INTO "user"(id) VALUES (5)',
    ):
        with pytest.raises(ProductionWriteError), source.begin() as conn:
            conn.execute(text(stmt))
    with _raw(fresh_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM question_answer WHERE score IS NULL").fetchone()[0] == 1
        # the app created nothing in the source: no eval schema, no extra table
        assert conn.execute("SELECT to_regnamespace('eval') IS NULL").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 3
    # the app's own store stays writable
    with fresh_engine.begin() as conn:
        conn.execute(text("INSERT INTO eval.meta(key, value) VALUES ('probe', '1'::jsonb)"))


def test_demo_is_never_loaded_into_a_configured_source(fresh_db_url: str, fresh_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.demo import DemoNotAvailableError, load_demo

    _make_production_db(fresh_db_url, variant="confluence_url")
    with pytest.raises(DemoNotAvailableError, match="DATABASE_URL"):
        load_demo(fresh_engine)
    with _raw(fresh_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM chunk").fetchone()[0] == 1


def test_embedding_cache_hit_makes_no_model_call(engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.embeddings import cached_embedder

    emb = cached_embedder("use-multilingual", engine)
    texts = ["тест кэша эмбеддингов 1", "тест кэша эмбеддингов 2", "тест кэша эмбеддингов 1"]
    first = emb.encode_queries(texts)
    assert emb.stats.model_calls == 1 and emb.stats.misses == 2
    again = cached_embedder("use-multilingual", engine)
    second = again.encode_queries(texts)
    assert again.stats.model_calls == 0 and again.stats.hits == 3
    np.testing.assert_allclose(first, second, atol=1e-6)
    np.testing.assert_allclose(first[0], first[2])


def test_asymmetric_models_cache_queries_and_passages_apart(engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.embeddings import cached_embedder

    emb = cached_embedder("e5-small", engine)
    q = emb.encode_queries(["общежитие оплата"])
    p = emb.encode_passages(["общежитие оплата"])
    assert emb.stats.model_calls == 2
    assert not np.allclose(q, p)


def test_dimension_mismatch_is_a_clear_error(demo_engine) -> None:  # type: ignore[no-untyped-def]
    schema = inspect_schema(demo_engine)
    assert schema.chunk_dim == 512
    check_dimension(expected=512, stored=schema.chunk_dim, embedder="use-multilingual")
    with pytest.raises(DimensionMismatchError, match=r"384-d vectors, but 'chunk.embedding' stores 512-d"):
        check_dimension(expected=384, stored=schema.chunk_dim, embedder="e5-small")


def test_demo_load_is_idempotent(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.db import snapshots
    from voproshalych_eval.db.production import table_counts
    from voproshalych_eval.demo import load_demo

    before = table_counts(demo_engine)
    n_snapshots = len(snapshots.list_snapshots(demo_engine))
    result = load_demo(demo_engine, embedder_name="use-multilingual")
    assert result["already_loaded"] is True
    assert result["snapshot_id"] == snapshots.current_id(demo_engine)
    assert len(snapshots.list_snapshots(demo_engine)) == n_snapshots  # same content, same snapshot
    assert table_counts(demo_engine) == before
    assert result["chunks"] == before["chunks"] >= 150
    assert result["golden_questions"] >= 120 and result["log_questions"] >= 3000 and result["judge_labels"] >= 80
    with demo_engine.connect() as conn:
        # the demo's own datasets (judge-metric runs on the demo store their samples as a 'samples' dataset)
        n = conn.execute(text("SELECT count(*) FROM eval.datasets WHERE name LIKE 'demo_%' AND kind <> 'samples'")).scalar()
    assert n == 3


def test_demo_source_is_read_through_the_read_only_path(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.db.engine import source_for

    source = source_for(demo_engine)
    assert source.url.database == "voproshalych_demo"
    with source.connect() as conn:
        assert conn.execute(text("SELECT current_setting('default_transaction_read_only')")).scalar() == "on"
        assert conn.execute(text("SELECT count(*) FROM chunk")).scalar() >= 150
    with pytest.raises(ProductionWriteError), source.begin() as conn:
        conn.execute(text("UPDATE question_answer SET updated_at = updated_at WHERE id = -1"))


def test_cli_demo_and_status_json(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    assert main(["demo", "--json"]) == 0
    demo = json.loads(capsys.readouterr().out)
    for key in ("chunks", "golden_questions", "log_questions", "judge_labels"):
        assert demo[key] > 0
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["embedder"] == {"name": "use-multilingual", "dimension": 512, "builtin": True}
    assert status["counts"]["chunks"] == demo["chunks"]
    assert status["source"]["kind"] == "demo" and status["source"]["changed_since_snapshot"] is False
    assert status["snapshot"]["id"] == demo["snapshot_id"] and len(status["snapshot"]["content_hash"]) == 64
    assert status["snapshot"]["n_chunks"] == demo["chunks"] and status["snapshot"]["taken_at"]
    assert "password" not in json.dumps(status) and "postgres:@" not in json.dumps(status)


def test_embedded_server_in_home() -> None:
    import shutil
    import tempfile
    from pathlib import Path

    from voproshalych_eval.config import Settings
    from voproshalych_eval.db import engine as engine_mod
    from voproshalych_eval.db import server

    # not pytest's tmp_path: pytest resets its base folder to 0700, locking out the server's system user
    tmp_path = Path(tempfile.mkdtemp(prefix="voproshalych-eval-home-"))
    settings = Settings(home=tmp_path / "home", database_url=None)
    eng = engine_mod.get_engine(settings)
    with eng.connect() as conn:
        assert conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar()
    assert (tmp_path / "home" / "pgdata" / "PG_VERSION").is_file()
    assert (tmp_path / "home" / "logs" / "embedded-postgres.log").is_file()
    eng.dispose()
    engine_mod._engines.pop(engine_mod.store_url(settings), None)
    server.stop(settings.pgdata)
    assert server.running_servers(settings.pgdata) == []
    shutil.rmtree(tmp_path, ignore_errors=True)
