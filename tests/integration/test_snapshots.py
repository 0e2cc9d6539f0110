"""Snapshots: content-hashed copies of the source in the store; runs name them; diffs; the demo's ownership."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import psycopg
import pytest
from sqlalchemy import text

from voproshalych_eval.db import retrieval as R
from voproshalych_eval.db import snapshots
from voproshalych_eval.db.errors import ProductionWriteError, SnapshotError


def _make_source(url: str, *, variant: str = "confluence_url") -> None:
    """Plays the production bot: its tables and rows, made outside the app."""
    url_col = "confluence_url text NOT NULL" if variant == "confluence_url" else "url text NOT NULL, source_type varchar(50)"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE TABLE chunk (id integer PRIMARY KEY, {url_col}, text text NOT NULL, "
                     "embedding vector(4) NOT NULL, created_at timestamptz, updated_at timestamptz)")
        conn.execute('CREATE TABLE "user" (id integer PRIMARY KEY, vk_id bigint)')
        conn.execute("CREATE TABLE question_answer (id integer PRIMARY KEY, question text NOT NULL, embedding vector(4), "
                     "answer text, confluence_url text, score integer, user_id integer, stop_point boolean DEFAULT false, "
                     "created_at timestamptz, updated_at timestamptz)")
        col = "confluence_url" if variant == "confluence_url" else "url"
        rows = [(1, "https://wiki/a", "Стипендия выплачивается до 25 числа", "[1,0,0,0]"),
                (2, "https://wiki/a", "Повышенная стипендия за достижения", "[0.9,0.1,0,0]"),
                (3, "https://wiki/b", "Общежитие для иногородних студентов", "[0,1,0,0]"),
                (4, "https://wiki/c", "Пересдача по графику кафедры", "[0,0,1,0]")]
        for r in rows:
            conn.execute(f"INSERT INTO chunk(id, {col}, text, embedding) VALUES (%s, %s, %s, %s::vector)", r)
        conn.execute('INSERT INTO "user" VALUES (1, 10), (2, 20)')
        conn.execute("INSERT INTO question_answer(id, question, embedding, answer, confluence_url, score, user_id, "
                     "created_at) VALUES (1, 'когда стипендия', '[1,0,0,0]', 'до 25 числа', 'https://wiki/a', 5, 1, "
                     "'2026-01-10 10:00+05'), (2, 'где жить', NULL, NULL, NULL, NULL, 2, NULL)")


def _raw(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


def test_unchanged_source_gives_the_same_snapshot(fresh_db_url: str, fresh_engine) -> None:  # type: ignore[no-untyped-def]
    _make_source(fresh_db_url)
    first = snapshots.take(fresh_engine)
    assert not first.reused and len(first.content_hash) == 64
    assert (first.n_chunks, first.n_pages, first.n_questions, first.n_questions_with_embedding, first.n_users) == (4, 3, 2, 1, 2)
    assert first.chunk_variant == "confluence_url" and first.chunk_dim == 4 and first.source_kind == "url"
    assert "@" not in first.source_label  # no credentials recorded
    again = snapshots.take(fresh_engine)
    assert again.reused and again.id == first.id
    assert len(snapshots.list_snapshots(fresh_engine)) == 1
    assert snapshots.current(fresh_engine).id == first.id
    assert snapshots.source_changed(fresh_engine) is False


def test_changes_make_a_new_snapshot_and_old_runs_stay_reproducible(fresh_db_url: str, fresh_engine) -> None:  # type: ignore[no-untyped-def]
    _make_source(fresh_db_url)
    a = snapshots.take(fresh_engine)
    q = np.asarray([[0, 0, 0.9, 0.1]], dtype=np.float32)
    before = R.search_vectors(fresh_engine, q, k=1)
    assert before[0][0].chunk_id == 4
    with _raw(fresh_db_url) as conn:  # the knowledge base is edited in production
        conn.execute("UPDATE chunk SET text = 'Пересдача: новый график' WHERE id = 4")
        conn.execute("UPDATE chunk SET confluence_url = 'https://wiki/z' WHERE id = 3")
        conn.execute("UPDATE chunk SET embedding = '[0,0,0.5,0.5]' WHERE id = 2")
        conn.execute("DELETE FROM chunk WHERE id = 1")
        conn.execute("INSERT INTO chunk(id, confluence_url, text, embedding) VALUES (5, 'https://wiki/d', 'Военный учёт', "
                     "'[0,0,0.9,0.1]')")
        conn.execute("INSERT INTO question_answer(id, question, user_id) VALUES (3, 'военкомат', 1)")
        conn.execute("UPDATE question_answer SET score = 1 WHERE id = 1")
    assert snapshots.source_changed(fresh_engine) is True
    b = snapshots.take(fresh_engine)
    assert not b.reused and b.id != a.id and b.content_hash != a.content_hash
    assert snapshots.current(fresh_engine).id == b.id

    d = snapshots.diff(fresh_engine, a.id, b.id)
    assert (d.added, d.removed, d.text_changed, d.url_changed, d.embedding_changed) == ([5], [1], [4], [3], [2])
    assert (d.log_added, d.log_removed, d.log_changed) == (1, 0, 1)
    assert d.changed_chunks == {1, 3, 4} and not d.unchanged
    assert snapshots.diff(fresh_engine, b, b).unchanged

    # a run pinned to the old snapshot searches what it searched then
    assert R.search_vectors(fresh_engine, q, k=1, snapshot=a.id) == before
    assert R.search_vectors(fresh_engine, q, k=1)[0][0].chunk_id == 5
    assert R.search_fts(fresh_engine, ["пересдача"], k=3, snapshot=a.id)[0][0].chunk_id == 4
    from voproshalych_eval.db.production import read_chunks

    assert read_chunks(fresh_engine, snapshot=a.id).set_index("id").loc[4, "text"] == "Пересдача по графику кафедры"
    assert read_chunks(fresh_engine).set_index("id").loc[4, "text"] == "Пересдача: новый график"

    # going back to the old content finds the old snapshot again
    with _raw(fresh_db_url) as conn:
        conn.execute("DELETE FROM question_answer WHERE id = 3")
    snapshots.set_current(fresh_engine, a.id)
    assert snapshots.current(fresh_engine).id == a.id
    with pytest.raises(SnapshotError, match="current"):
        snapshots.delete(fresh_engine, a.id, n_runs=0)
    from voproshalych_eval.engine import runs

    run = runs.create_run(fresh_engine, "tier1", params={"snapshot": {"id": b.id, "content_hash": b.content_hash}})
    n_runs = runs.count_runs_reading_snapshot(fresh_engine, b.id)
    assert n_runs == 1 and run.id
    with pytest.raises(SnapshotError, match="1 recorded run"):
        snapshots.delete(fresh_engine, b.id, n_runs=n_runs)
    snapshots.delete(fresh_engine, b.id, n_runs=n_runs, force=True)
    assert [s.id for s in snapshots.list_snapshots(fresh_engine)] == [a.id]
    with pytest.raises(SnapshotError, match="no snapshot"):
        snapshots.get(fresh_engine, b.id)


def test_both_variants_hash_the_same_content_alike(new_database) -> None:  # type: ignore[no-untyped-def]
    """The content hash covers the data, not the column name of the URL."""
    from voproshalych_eval.config import Settings
    from voproshalych_eval.db import get_engine

    hashes = {}
    for variant in ("confluence_url", "url"):
        src = new_database()
        _make_source(src, variant=variant)
        store = get_engine(Settings(home=Path("/nonexistent"), database_url=src, store_url=new_database()))
        snap = snapshots.take(store)
        hashes[variant] = snap.chunks_hash
        assert snap.chunk_variant == variant
    assert hashes["confluence_url"] == hashes["url"]


def test_unusual_source_shapes(fresh_db_url: str, fresh_engine) -> None:  # type: ignore[no-untyped-def]
    """pgvector in its own schema, an untyped vector column, a naive timestamp, missing columns, no user table."""
    with _raw(fresh_db_url) as conn:
        conn.execute("CREATE SCHEMA ext")
        conn.execute("CREATE EXTENSION vector SCHEMA ext")
        conn.execute("CREATE TABLE chunk (id integer PRIMARY KEY, url text NOT NULL, text text NOT NULL, embedding ext.vector)")
        conn.execute("INSERT INTO chunk VALUES (1, 'https://wiki/a', 'Стипендия', '[1,0,0]'), "
                     "(2, 'https://wiki/b', 'Общежитие', '[0,1,0]')")
        conn.execute("CREATE TABLE question_answer (id integer PRIMARY KEY, question text NOT NULL, answer text, "
                     "created_at timestamp)")
        conn.execute("INSERT INTO question_answer VALUES (1, 'где жить', NULL, '2026-02-01 12:30:00')")
    snap = snapshots.take(fresh_engine)  # the copy is verified against the source's hash, or this raises
    assert (snap.chunk_dim, snap.n_chunks, snap.n_questions, snap.n_users, snap.has_user) == (3, 2, 1, None, False)
    assert R.search_vectors(fresh_engine, np.asarray([[0, 1, 0]], dtype=np.float32), k=1)[0][0].chunk_id == 2
    from voproshalych_eval.analytics.question_log import read_log

    log = read_log(fresh_engine)
    assert log["question"].tolist() == ["где жить"] and not log["stop_point"].any()
    assert snapshots.take(fresh_engine).reused


def test_no_source_is_a_clear_error(new_database) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.config import Settings
    from voproshalych_eval.db import get_engine

    store = get_engine(Settings(home=Path("/nonexistent"), database_url=None, store_url=new_database()))
    with pytest.raises(SnapshotError, match="demo database is not loaded"):
        snapshots.take(store)
    empty = new_database()
    store2 = get_engine(Settings(home=Path("/nonexistent"), database_url=empty, store_url=new_database()))
    with pytest.raises(SnapshotError, match="nothing to snapshot"):
        snapshots.take(store2)


def test_an_unreachable_source_leaves_runs_on_the_current_snapshot(fresh_db_url: str, fresh_engine, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    from sqlalchemy import create_engine

    from voproshalych_eval.db.engine import database_name

    _make_source(fresh_db_url)
    snap = snapshots.take(fresh_engine)
    admin = create_engine("postgresql+psycopg://" + pg_url.split("://", 1)[1], isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:  # production goes away
        conn.execute(text(f'DROP DATABASE "{database_name(fresh_db_url)}" WITH (FORCE)'))
    admin.dispose()
    with pytest.raises(SnapshotError, match="could not be read"):
        snapshots.take(fresh_engine)
    assert snapshots.for_run(fresh_engine).id == snap.id
    assert snapshots.source_changed(fresh_engine) is None
    assert R.search_fts(fresh_engine, ["стипендия"], k=1)[0][0].chunk_id in (1, 2)


def test_store_must_not_be_the_source(fresh_db_url: str) -> None:
    from voproshalych_eval.config import Settings
    from voproshalych_eval.db import get_engine
    from voproshalych_eval.db.errors import StoreError

    _make_source(fresh_db_url)
    with pytest.raises(StoreError, match="separate"):
        get_engine(Settings(home=Path("/nonexistent"), database_url=fresh_db_url, store_url=fresh_db_url))
    with _raw(fresh_db_url) as conn:
        assert conn.execute("SELECT to_regnamespace('eval') IS NULL").fetchone()[0]


def test_cli_snapshot_commands(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    assert main(["snapshot", "take", "--json"]) == 0
    taken = json.loads(capsys.readouterr().out)
    assert taken["reused"] is True  # the demo did not change since it was loaded
    assert main(["snapshot", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["current"] == taken["id"] and taken["id"] in [s["id"] for s in listed["snapshots"]]
    assert main(["snapshot", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == taken["id"] and shown["current"] is True and shown["n_chunks"] >= 150
    assert main(["snapshot", "diff", str(taken["id"]), "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["added"] == diff["removed"] == diff["text_changed"] == [] and diff["a"] == diff["b"] == taken["id"]
    assert main(["snapshot", "show", "999999"]) == 2
    assert "no snapshot #999999" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- demo ownership


def _tiny_demo(tmp_path: Path) -> Path:
    """The shipped demo files cut to a few rows (fast to embed)."""
    from voproshalych_eval.demo import DATA_DIR, DEMO_FILES

    out = tmp_path / "demo"
    out.mkdir()
    for name in DEMO_FILES.values():
        src = DATA_DIR / name
        if name.endswith(".json"):
            (out / name).write_text(json.dumps(json.loads(src.read_text(encoding="utf-8"))[:6], ensure_ascii=False),
                                    encoding="utf-8")
        else:
            with src.open(encoding="utf-8", newline="") as fh:
                rows = list(csv.reader(fh))[:30]
            with (out / name).open("w", encoding="utf-8", newline="") as fh:
                csv.writer(fh).writerows(rows)
    return out


def test_demo_never_drops_tables_it_did_not_write(new_database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Load the demo, restore a 'production dump' over its tables, reload with --force: refused, untouched."""
    from voproshalych_eval.config import Settings
    from voproshalych_eval.db import get_engine
    from voproshalych_eval.db.engine import demo_url
    from voproshalych_eval.demo import load_demo

    settings = Settings(home=Path("/nonexistent"), database_url=None, store_url=new_database())
    store = get_engine(settings)
    data = _tiny_demo(tmp_path)
    first = load_demo(store, data_dir=data)
    assert first["chunks"] == 6 and first["snapshot_id"] == snapshots.current_id(store)
    assert load_demo(store, data_dir=data)["already_loaded"] is True
    assert load_demo(store, data_dir=data, force=True)["already_loaded"] is False  # its own tables: replaced

    demo = demo_url(settings)
    with _raw(demo) as conn:  # pg_dump --clean | psql of production over the demo's tables
        conn.execute("DROP TABLE question_answer, chunk, \"user\"")
        conn.execute("CREATE TABLE chunk (id integer PRIMARY KEY, confluence_url text NOT NULL, text text NOT NULL, "
                     "embedding vector(512) NOT NULL)")
        conn.execute("INSERT INTO chunk SELECT 1, 'https://prod/page', 'production text', "
                     "array_fill(0.1, ARRAY[512])::vector")
    with pytest.raises(ProductionWriteError, match="did not write"):
        load_demo(store, data_dir=data, force=True)
    with pytest.raises(ProductionWriteError, match="did not write"):
        load_demo(store, data_dir=data)
    with _raw(demo) as conn:
        assert conn.execute("SELECT text FROM chunk").fetchall() == [("production text",)]
        assert conn.execute("SELECT to_regclass('public.question_answer') IS NULL").fetchone()[0]
    # the snapshot the app reads never silently switched to the foreign content
    assert snapshots.current(store).n_chunks == 6


def test_concurrent_demo_loads_are_serialised(new_database, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Two loaders at once on a new store: both succeed, one snapshot, no duplicate-key error."""
    from concurrent.futures import ThreadPoolExecutor

    from voproshalych_eval.config import Settings
    from voproshalych_eval.db import get_engine
    from voproshalych_eval.demo import load_demo

    store = get_engine(Settings(home=Path("/nonexistent"), database_url=None, store_url=new_database()))
    data = _tiny_demo(tmp_path)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda _i: load_demo(store, data_dir=data), range(2)))
    assert sorted(r["already_loaded"] for r in results) == [False, True]
    assert results[0]["snapshot_id"] == results[1]["snapshot_id"]
    with store.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM eval.snapshots")).scalar() == 1
