"""The "already running" message names the process that holds the run now, never the pid stored with the run
(which may have died: the audit's case)."""

from __future__ import annotations

import os
import socket

import psycopg
import pytest

from voproshalych_eval.db.engine import settings_for, store_url
from voproshalych_eval.engine import runs

DEAD_PID = 4_000_000  # above any pid_max: no such process


def test_a_dead_pid_is_never_named(engine) -> None:  # type: ignore[no-untyped-def]
    run_id = runs.create_run(engine, "tier1", params={"t": "lock-holder"}).id
    with engine.begin() as conn:
        from sqlalchemy import text

        conn.execute(text("UPDATE eval.runs SET pid = :p, host = 'old-host' WHERE id = :r"), {"p": DEAD_PID, "r": run_id})
    # a session of some other process holds the lock (it has not named itself)
    with psycopg.connect(store_url(settings_for(engine)), autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s, %s)", (runs._LOCK_NAMESPACE, run_id))
        with pytest.raises(runs.AlreadyRunning) as exc, runs.execution_lock(engine, run_id):
            pass
    assert str(DEAD_PID) not in str(exc.value) and "another process" in str(exc.value)


def test_the_live_holder_is_named(engine) -> None:  # type: ignore[no-untyped-def]
    run_id = runs.create_run(engine, "tier1", params={"t": "lock-holder-2"}).id
    with runs.execution_lock(engine, run_id):
        assert runs.lock_holder(engine, run_id) == f"pid {os.getpid()} on {socket.gethostname()}"[:45]
    assert runs.lock_holder(engine, run_id) == "another process"
