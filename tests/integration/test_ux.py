"""UX tier: sessions from the log, the dialog dataset, cache threshold, and the distinct definitions."""

from __future__ import annotations

from datetime import datetime, timedelta

from tests.support.sources import make_bot_source
from voproshalych_eval.engine import runs
from voproshalych_eval.engine.executor import run_plan
from voproshalych_eval.tiers.ux import split_sessions


def test_split_sessions_at_stop_point_and_pause() -> None:
    t = datetime(2025, 1, 1, 10, 0)
    rows = [
        {"id": 1, "user_id": 1, "created_at": t, "stop_point": False},
        {"id": 2, "user_id": 1, "created_at": t + timedelta(minutes=2), "stop_point": True},
        {"id": 3, "user_id": 1, "created_at": t + timedelta(minutes=3), "stop_point": False},
        {"id": 4, "user_id": 1, "created_at": t + timedelta(hours=2), "stop_point": False},
        {"id": 5, "user_id": 2, "created_at": None, "stop_point": False},
        {"id": 6, "user_id": 2, "created_at": None, "stop_point": False},
    ]
    sessions = split_sessions(rows, pause_minutes=30)
    # one session rule for the app (analytics.domain.sessions): an unknown pause starts a new session
    assert [[r["id"] for r in s] for s in sessions] == [[1, 2], [3], [4], [5], [6]]


def test_ux_dialogs_offline(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.tiers.ux import build_plan

    run_id, prog = run_plan(demo_engine, build_plan(demo_engine, {"source": "dialogs", "offline": True}))
    m = runs.get_run(demo_engine, run_id).metrics
    assert prog.status == "done" and prog.done == 48
    for k in ("cache_hit_rate", "context_preservation", "multi_turn_consistency"):
        assert m[k]["n"] > 0, k
    # context preservation counts follow-up turns, multi-turn consistency paraphrase pairs: different n
    assert m["context_preservation"]["n"] != m["multi_turn_consistency"]["n"]
    assert m["n_cache_pairs"] == 18 and m["cache_recall"] is not None
    # a stricter cache threshold can only lower the hit rate
    run2, _ = run_plan(demo_engine, build_plan(demo_engine, {"source": "dialogs", "offline": True, "cache_distance": 0.1}))
    assert runs.get_run(demo_engine, run2).metrics["cache_hit_rate"]["value"] <= m["cache_hit_rate"]["value"]


def test_ux_log_sessions(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.tiers.ux import build_plan

    run_id, prog = run_plan(demo_engine, build_plan(demo_engine, {"source": "log", "limit": 40}))
    m = runs.get_run(demo_engine, run_id).metrics
    assert prog.status == "done" and m["n_sessions"] == 40
    assert m["cache_hit_rate"]["n"] > 40 and 0.0 <= m["cache_hit_rate"]["value"] <= 1.0


def test_ux_runs_are_pinned_to_a_snapshot_and_resumes_read_it(fresh_db_url, fresh_engine) -> None:  # type: ignore[no-untyped-def]
    """A UX run records the snapshot of the knowledge base and log it read; after the source changes, a
    resume rebuilds the plan on that snapshot (same log), while a new run reads the new one."""
    import psycopg

    from voproshalych_eval.db import snapshots
    from voproshalych_eval.engine import executor
    from voproshalych_eval.tiers.ux import build_plan

    make_bot_source(fresh_db_url)
    run_id, prog = run_plan(fresh_engine, build_plan(fresh_engine, {"source": "log"}))
    run = runs.get_run(fresh_engine, run_id)
    first = snapshots.current(fresh_engine)
    assert prog.status == "done" and run.params["n_log_rows"] == 3
    assert run.snapshot_id == run.params["snapshot"] == run.config["snapshot_id"] == first.id

    with psycopg.connect(fresh_db_url, autocommit=True) as conn:  # the bot keeps logging
        conn.execute("INSERT INTO question_answer(id, question, user_id, created_at) VALUES "
                     "(4, 'а если я пропустил?', 2, '2026-01-11 12:03+05')")
    plan, mixed = executor.prepare_resume(fresh_engine, run_id)
    assert mixed is None and plan.snapshot_id == first.id and plan.params["n_log_rows"] == 3

    new = build_plan(fresh_engine, {"source": "log"})
    assert new.snapshot_id != first.id and new.params["n_log_rows"] == 4
    again = build_plan(fresh_engine, {"source": "log", "snapshot": first.id})  # `ux --snapshot ID`
    assert again.snapshot_id == first.id and again.params["n_log_rows"] == 3


def test_ux_cli_snapshot_flag(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from voproshalych_eval.cli import main
    from voproshalych_eval.db import snapshots

    snap = snapshots.current(demo_engine)
    assert main(["ux", "--source", "dialogs", "--offline", "--limit", "2", "--snapshot", str(snap.id), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    run = runs.get_run(demo_engine, out["run_id"])
    assert run.snapshot_id == run.params["snapshot"] == snap.id
