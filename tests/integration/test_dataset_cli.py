"""The ``dataset`` CLI with ``--json``: staleness against the live source, and the review path of a generated set."""

from __future__ import annotations

import json

import pytest

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from voproshalych_eval.cli import main
from voproshalych_eval.datasets import Dataset, content_hash, store


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
    from voproshalych_eval.generation.staleness import dataset_warning

    warn = dataset_warning(fresh_engine, show["id"], check_source=True)  # what a run's caption shows
    assert warn is not None and warn["source_changed"] is True and not warn["stale"]
    out = _cli(capsys, "dataset", "stale", "--refresh")
    assert out["kb_source"]["refreshed"] is True and out["kb_source"]["current_snapshot_id"] != first.id
    assert out["n_stale"] == 1 and out["datasets"][0]["affected"][0]["problems"][0]["kind"] == "changed"
    assert _cli(capsys, "dataset", "stale")["kb_source"]["source_changed"] is False
