"""A run falls back only to a snapshot of the same source: an unreachable or mistyped ``DATABASE_URL`` never
makes a run read another source's current snapshot (the audit's "green results on the wrong data")."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from tests.integration.test_snapshots import _make_source
from voproshalych_eval.config import Settings
from voproshalych_eval.db import get_engine, reset_engines, snapshots
from voproshalych_eval.db.engine import settings_for
from voproshalych_eval.db.errors import SnapshotError

WRONG = "postgresql://reader@127.0.0.1:1/mistyped_db"


def test_wrong_source_never_falls_back_to_another_sources_snapshot(fresh_db_url: str, fresh_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _make_source(fresh_db_url)
    good = snapshots.take(fresh_engine)
    assert snapshots.current(fresh_engine).id == good.id
    store_url = settings_for(fresh_engine).store_url
    wrong = get_engine(Settings(home=tmp_path, database_url=WRONG, store_url=store_url))
    with pytest.raises(SnapshotError, match="another source"):
        snapshots.for_run(wrong)
    assert snapshots.current(fresh_engine).id == good.id


def test_same_source_unreachable_falls_back_to_its_own_snapshot(fresh_db_url: str, fresh_engine, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    _make_source(fresh_db_url)
    good = snapshots.take(fresh_engine)
    reset_engines()
    with psycopg.connect(pg_url, autocommit=True) as admin:  # the source goes away (a crashed database)
        admin.execute(f'DROP DATABASE "{conninfo_to_dict(fresh_db_url)["dbname"]}" WITH (FORCE)')
    assert snapshots.for_run(fresh_engine).id == good.id


def test_cli_run_with_a_mistyped_database_url_exits_non_zero(demo_engine, pg_url: str) -> None:  # type: ignore[no-untyped-def]
    assert snapshots.current(demo_engine) is not None  # the store's current snapshot is the demo's
    env = {**os.environ, "DATABASE_URL": WRONG, "VOPROSHALYCH_EVAL_STORE_URL": pg_url}
    res = subprocess.run([sys.executable, "-m", "voproshalych_eval.cli", "tier1", "--json"], capture_output=True,
                         text=True, env=env, timeout=600)
    assert res.returncode != 0, res.stdout
    assert "another source" in res.stderr
    assert res.stdout.strip() == ""
