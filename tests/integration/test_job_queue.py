"""Runs on the job queue (procrastinate in the store): ``--queue`` enqueues and returns the run id, workers
(threads of this process here; separate processes with their own homes in ``test_queue_workers.py``) work
its batches, ``runs wait`` follows it and exits with its exit code; the item records stay the truth."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from voproshalych_eval.engine import executor, job_queue, runs


@pytest.fixture(autouse=True)
def _no_app_worker() -> None:
    """No worker thread left by the page tests in this process: these tests decide who works the queue."""
    job_queue.stop_thread_worker()


@pytest.fixture
def thread_worker(demo_engine: Any) -> Iterator[job_queue.ThreadWorker]:
    worker = job_queue.ThreadWorker(concurrency=2).start()
    yield worker
    worker.stop()
    job_queue.forget_plans()


def _cli(args: list[str], capsys: Any) -> tuple[int, str, str]:
    from voproshalych_eval.cli import main

    code = main(["-v", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _key_counts(engine: Any, run_id: int) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT item_key, count(*) FROM eval.run_items WHERE run_id = :r GROUP BY item_key"),
                            {"r": run_id}).all()
    return {r[0]: int(r[1]) for r in rows}


def test_queue_schema_is_in_the_store(engine: Any) -> None:
    with engine.connect() as conn:
        assert conn.execute(text("SELECT to_regclass('public.procrastinate_jobs') IS NOT NULL")).scalar()
        assert conn.execute(text("SELECT to_regclass('eval.schedules') IS NOT NULL")).scalar()


def test_queued_tier1_run_matches_the_foreground_one(demo_engine: Any, thread_worker: Any, capsys: Any) -> None:
    """``tier1 --queue`` prints the run id at once (exit 0); the workers split it into batch jobs; ``runs wait``
    exits with the run's exit code; the metrics equal a foreground run's, every item recorded once."""
    args = ["tier1", "--retriever", "fts", "--batch-size", "8", "--json"]
    code, out, err = _cli([*args, "--queue", "--batch-items", "16"], capsys)
    assert code == 0, err
    queued = json.loads(out)
    assert queued["status"] == "queued" and queued["n_jobs"] == -(-queued["n_items"] // 16) >= 2
    run_id = queued["run_id"]
    code, out, err = _cli(["runs", "wait", str(run_id), "--json", "--timeout", "240"], capsys)
    assert code == 0, err
    assert json.loads(out)["status"] == "done"
    run = runs.get_run(demo_engine, run_id)
    counts = _key_counts(demo_engine, run_id)
    assert len(counts) == run.n_items_total and set(counts.values()) == {1}
    assert runs.queue_jobs(demo_engine, run_id) == {"succeeded": queued["n_jobs"]}

    code, out, err = _cli(args, capsys)  # the same run in the foreground
    assert code == 0, err
    fg = runs.get_run(demo_engine, json.loads(out)["run_id"])
    assert fg.config == run.config
    assert fg.metrics["chunk"]["mrr"] == run.metrics["chunk"]["mrr"]


def test_cancelled_queued_run_stops_and_wait_exits_4(demo_engine: Any, capsys: Any) -> None:
    """A queued run cancelled before a worker takes it: its batches skip, ``runs wait`` exits 4."""
    code, out, err = _cli(["tier1", "--retriever", "fts", "--queue", "--json"], capsys)
    run_id = json.loads(out)["run_id"]
    assert job_queue.queue_label(demo_engine, run_id) == "queued"
    assert executor.cancel_run(demo_engine, run_id)
    worker = job_queue.ThreadWorker(concurrency=1).start()
    try:
        code, out, err = _cli(["runs", "wait", str(run_id), "--json", "--timeout", "120"], capsys)
        assert code == 4 and json.loads(out)["status"] == "cancelled"
        assert runs.count_items(demo_engine, run_id) == {"done": 0, "failed": 0}
        # resumed through the queue: the workers finish it, every item once
        code, out, err = _cli(["resume", str(run_id), "--queue", "--json"], capsys)
        assert code == 0 and json.loads(out)["n_jobs"] >= 1, err
        code, out, err = _cli(["runs", "wait", str(run_id), "--json", "--timeout", "240"], capsys)
        assert code == 0 and json.loads(out)["status"] == "done", err
    finally:
        worker.stop()
        job_queue.forget_plans()
    counts = _key_counts(demo_engine, run_id)
    assert len(counts) == runs.get_run(demo_engine, run_id).n_items_total and set(counts.values()) == {1}


def test_the_workers_periodic_tasks_are_registered() -> None:
    """The stalled-job recovery and the schedules' tick are procrastinate periodic tasks of the workers."""
    import voproshalych_eval.commands.schedule  # noqa: F401 - the worker imports it (App.import_paths)

    periodic = {t.task.name: t.cron for t in job_queue.app.periodic_registry.periodic_tasks.values()}
    assert periodic == {"voproshalych_eval.retry_stalled_jobs": "* * * * * */5",
                        "voproshalych_eval.schedules_tick": "* * * * *"}
    assert "voproshalych_eval.commands.schedule" in job_queue.app.import_paths
