"""Runs that survive: items recorded at once, cancel, retry of failed items, kill -9 and resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # ``tests`` importable

from tests.integration.test_kill_resume import wait_unlocked  # noqa: E402
from tests.integration.test_tier2_3 import FakeBot  # noqa: E402
from voproshalych_eval.engine import executor, runs  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _plan(n: int, work, finalize=None) -> executor.Plan:  # type: ignore[no-untyped-def]
    def fin(records):  # type: ignore[no-untyped-def]
        return {"n_items": len(records)}

    return executor.Plan(tier="tier2", items=[(f"k{i:03d}", i) for i in range(n)], work=work,
                         finalize=finalize or fin, concurrency=4, params={"test": True})


def _key_counts(engine, run_id: int) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT item_key, count(*) FROM eval.run_items WHERE run_id = :r GROUP BY item_key"),
                            {"r": run_id}).all()
    return {r[0]: int(r[1]) for r in rows}


def test_items_recorded_progress_and_failed_retry(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    attempts: dict[int, int] = {}

    def work(i: int) -> executor.ItemResult:
        attempts[i] = attempts.get(i, 0) + 1
        if i % 5 == 0 and attempts[i] == 1:
            raise ConnectionError("upstream 503")
        return executor.ItemResult({"value": i}, tokens=10)

    snaps: list[executor.Progress] = []
    plan = _plan(20, work)
    run_id, prog = executor.run_plan(engine, plan, on_progress=snaps.append)
    # 4 of 20 failed: above the default 10 % share -> done_with_failures (the outcome tells the truth)
    assert prog.status == "done_with_failures" and prog.done == 16 and prog.failed == 4 and prog.tokens == 160
    assert snaps[-1].finished == 20 and snaps[-1].eta_s == 0.0
    assert runs.get_run(engine, run_id).status == "done_with_failures"
    # resume retries exactly the failed items
    monkeypatch.setattr(executor, "build_plan_for", lambda eng, run: plan)
    prog2 = executor.resume(engine, run_id)
    assert prog2.status == "done" and prog2.done == 20 and prog2.failed == 0 and prog2.skipped == 16
    assert sorted(i for i, n in attempts.items() if n == 2) == [0, 5, 10, 15]
    assert set(_key_counts(engine, run_id).values()) == {1} and len(_key_counts(engine, run_id)) == 20


def test_cancel_and_background_registry(engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()

    def work(i: int) -> dict:
        if i >= 4:
            gate.wait(5)
        return {"value": i}

    plan = _plan(40, work)
    job = executor.start_background(engine, plan)
    assert executor.get_job(job.run_id) is job and job in executor.active_jobs()
    for _ in range(100):
        if runs.count_items(engine, job.run_id)["done"] >= 4:
            break
        time.sleep(0.05)
    assert executor.run_state(engine, job.run_id) == "running"
    assert executor.cancel_run(engine, job.run_id)
    gate.set()
    job.wait(10)
    assert not job.alive and job.progress.status == "cancelled"
    assert runs.get_run(engine, job.run_id).status == "cancelled"
    n = runs.count_items(engine, job.run_id)["done"]
    assert 4 <= n < 40
    # a cancelled run can be resumed to completion in the background, without duplicates
    gate.set()
    monkeypatch.setattr(executor, "build_plan_for", lambda eng, run: plan)
    job2 = executor.resume_background(engine, job.run_id)
    job2.wait(20)
    assert job2.progress.status == "done" and job2.progress.skipped == n
    assert len(_key_counts(engine, job.run_id)) == 40 and set(_key_counts(engine, job.run_id).values()) == {1}


def test_kill_dash_nine_then_resume(demo_engine) -> None:  # type: ignore[no-untyped-def]
    """The CLI is killed with SIGKILL mid-run; ``resume`` finishes the rest; every key exactly once."""
    from voproshalych_eval.datasets.store import get_dataset

    n_items = 16
    keys = get_dataset(demo_engine, "demo_golden", "golden").keys()[:n_items]
    with demo_engine.connect() as conn:
        max_before = conn.execute(text("SELECT coalesce(max(id), 0) FROM eval.runs")).scalar_one()
    with FakeBot(answer="Ответ бота.", chunks=["Текст чанка."], delay=0.25) as bot:
        cmd = [sys.executable, "-m", "voproshalych_eval.cli", "tier3", "--api", bot.url, "--offline",
               "--limit", str(n_items), "--concurrency", "2", "--answer-path", "data.answer",
               "--chunks-path", "data.chunks.*.text", "--json"]
        proc = subprocess.Popen(cmd, cwd=ROOT, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        run_id = None
        deadline = time.time() + 90
        while time.time() < deadline:
            with demo_engine.connect() as conn:
                run_id = conn.execute(text("SELECT max(id) FROM eval.runs WHERE id > :m AND tier = 'tier3'"),
                                      {"m": max_before}).scalar_one()
            if run_id and runs.count_items(demo_engine, run_id)["done"] >= 4:
                break
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.05)
        assert run_id is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        recorded = runs.count_items(demo_engine, run_id)["done"]
        assert 4 <= recorded < n_items, recorded
        run = runs.get_run(demo_engine, run_id)
        assert run.status == "running"  # nobody closed it: it died
        wait_unlocked(demo_engine, run_id)  # PostgreSQL released the dead process's lock
        asked_before = len(bot.questions)

        from voproshalych_eval.cli import main

        # the heartbeat is still fresh (killed a moment ago), but no process holds the run: resume at once
        assert main(["resume", str(run_id), "--json"]) == 0
        counts = _key_counts(demo_engine, run_id)
        assert sorted(counts) == sorted(keys)
        assert set(counts.values()) == {1}
        assert runs.get_run(demo_engine, run_id).status == "done"
        # only the missing items were asked again (at most the ones in flight at the kill were repeated)
        assert len(bot.questions) - asked_before == n_items - recorded
        assert runs.get_run(demo_engine, run_id).metrics["n_items"] == n_items
