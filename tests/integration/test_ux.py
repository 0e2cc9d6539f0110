"""UX tier: sessions from the log, the dialog dataset, cache threshold, and the distinct definitions."""

from __future__ import annotations

from datetime import datetime, timedelta

from voproshalych_eval import runs
from voproshalych_eval.executor import run_plan
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
