"""Several workers, each a process with its own home, sharing one store: a 200-item Tier 2 run against the
scripted LLM (real HTTP) is split into batch jobs that both work; every item is recorded exactly once,
every LLM request is sent once, and the provider's request limit (2 in flight) holds across both workers.
Killed with -9 in the middle, a worker loses nothing: its batches go back to the queue (stalled-job
recovery) and the other worker finishes them; only the killed in-flight batches' requests are sent again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tests.support.golden_copies import golden_copies
from tests.support.scripted_openai import ScriptedOpenAI
from voproshalych_eval.engine import job_queue, runs

ROOT = Path(__file__).resolve().parents[2]
N_ITEMS = 200
BATCH = 10
LLM_LIMIT = 2
REQUESTS_PER_ITEM = 4  # the answer + three judge metrics


@pytest.fixture(autouse=True)
def _no_app_worker() -> None:
    """No worker thread left by the page tests in this process: these tests decide who works the queue."""
    job_queue.stop_thread_worker()


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAI]:
    from voproshalych_eval.config import get_settings

    with ScriptedOpenAI(delay=0.03) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-queue-test")
        monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_MODELS", "model-a")
        monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_CONCURRENCY", str(LLM_LIMIT))
        get_settings.cache_clear()
        yield srv
    get_settings.cache_clear()


def golden_200(engine: Any, path: Path) -> Path:
    return golden_copies(engine, path, N_ITEMS)


def start_worker(tmp: Path, name: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, VOPROSHALYCH_EVAL_HOME=str(tmp / f"home-{name}"))
    log = (tmp / f"{name}.log").open("wb")
    return subprocess.Popen([sys.executable, "-m", "voproshalych_eval.cli", "worker", "--concurrency", "2",
                             "--name", name], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def enqueue(dataset: Path, capsys: Any) -> dict[str, Any]:
    from voproshalych_eval.cli import main

    code = main(["tier2", "--dataset", str(dataset), "--queue", "--batch-items", str(BATCH), "--concurrency", "2",
                 "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def doing_workers(engine: Any, run_id: int) -> set[int]:
    with engine.connect() as conn:
        return {r[0] for r in conn.execute(text(
            "SELECT DISTINCT worker_id FROM procrastinate_jobs WHERE status = 'doing' AND worker_id IS NOT NULL "
            "AND (args->>'run_id')::int = :r"), {"r": run_id})}


def key_counts(engine: Any, run_id: int) -> Counter[str]:
    with engine.connect() as conn:
        return Counter(r[0] for r in conn.execute(text("SELECT item_key FROM eval.run_items WHERE run_id = :r"),
                                                  {"r": run_id}))


def wait_done(engine: Any, run_id: int, workers: list[subprocess.Popen[bytes]], tmp: Path, *, seen: set[int],
              timeout: float = 600, on_tick: Any = None) -> None:
    deadline = time.time() + timeout
    while runs.get_run(engine, run_id).status == "running":
        seen |= doing_workers(engine, run_id)
        if on_tick is not None:
            on_tick()
        alive = [w for w in workers if w.poll() is None]
        assert alive, "every worker ended: " + "".join(p.read_text()[-2000:] for p in tmp.glob("*.log"))
        assert time.time() < deadline, "the run did not finish in time"
        time.sleep(0.1)


def stop(workers: list[subprocess.Popen[bytes]]) -> None:
    for w in workers:
        if w.poll() is None:
            w.send_signal(signal.SIGTERM)
    for w in workers:
        try:
            w.wait(30)
        except subprocess.TimeoutExpired:
            w.kill()


def request_items(srv: ScriptedOpenAI) -> list[str]:
    """The bodies of the LLM requests the server received (one string per request)."""
    return [json.dumps(r["messages"], ensure_ascii=False, sort_keys=True) for r in srv.requests]


def test_two_workers_share_a_200_item_run(demo_engine: Any, llm: ScriptedOpenAI, tmp_path: Path, capsys: Any) -> None:
    queued = enqueue(golden_200(demo_engine, tmp_path / "golden200.json"), capsys)
    run_id = queued["run_id"]
    assert queued["n_items"] == N_ITEMS and queued["n_jobs"] == N_ITEMS // BATCH
    workers = [start_worker(tmp_path, "a"), start_worker(tmp_path, "b")]
    seen: set[int] = set()
    try:
        wait_done(demo_engine, run_id, workers, tmp_path, seen=seen)
    finally:
        stop(workers)
    run = runs.get_run(demo_engine, run_id)
    assert run.status == "done", run.error
    counts = key_counts(demo_engine, run_id)
    assert len(counts) == N_ITEMS and set(counts.values()) == {1}
    assert len(seen) == 2  # both workers worked batches of this run
    bodies = request_items(llm)
    assert len(bodies) == len(set(bodies)) == REQUESTS_PER_ITEM * N_ITEMS  # each request sent once
    assert 1 < llm.max_in_flight <= LLM_LIMIT  # the provider's limit held across both workers


def test_a_worker_killed_mid_run_loses_nothing(demo_engine: Any, llm: ScriptedOpenAI, tmp_path: Path,
                                               capsys: Any) -> None:
    queued = enqueue(golden_200(demo_engine, tmp_path / "golden200.json"), capsys)
    run_id = queued["run_id"]
    victim, survivor = start_worker(tmp_path, "victim"), start_worker(tmp_path, "survivor")
    seen: set[int] = set()
    killed: list[float] = []

    def kill_when_busy() -> None:
        if not killed and runs.count_items(demo_engine, run_id)["done"] >= 40 and len(doing_workers(demo_engine, run_id)) == 2:
            victim.send_signal(signal.SIGKILL)
            victim.wait(30)
            killed.append(time.time())

    try:
        wait_done(demo_engine, run_id, [victim, survivor], tmp_path, seen=seen, on_tick=kill_when_busy)
    finally:
        stop([victim, survivor])
    assert killed and victim.returncode == -signal.SIGKILL
    run = runs.get_run(demo_engine, run_id)
    assert run.status == "done", run.error
    counts = key_counts(demo_engine, run_id)
    assert len(counts) == N_ITEMS and set(counts.values()) == {1}  # every item exactly once
    with demo_engine.connect() as conn:
        retried = [json.loads(json.dumps(r[0])) for r in conn.execute(text(
            "SELECT args FROM procrastinate_jobs WHERE (args->>'run_id')::int = :r AND attempts > 1"), {"r": run_id})]
    assert 1 <= len(retried) <= 2  # the victim's in-flight batches (worker concurrency 2) went back to the queue
    retried_keys = {k for a in retried for k in a["keys"]}
    bodies = request_items(llm)
    again = [b for b, n in Counter(bodies).items() if n > 1]
    # only requests of the killed in-flight batches were sent twice, at most once more each
    assert len(again) <= REQUESTS_PER_ITEM * BATCH * len(retried) and max(Counter(bodies).values()) <= 2
    assert len(set(bodies)) == REQUESTS_PER_ITEM * N_ITEMS
    assert all(any(q in b for q in _questions(demo_engine, run_id, retried_keys)) for b in again)
    assert llm.max_in_flight <= LLM_LIMIT


def _questions(engine: Any, run_id: int, keys: set[str]) -> list[str]:
    items = runs.run_items(engine, run_id)
    return [json.dumps(q, ensure_ascii=False)[1:-1] for q in items[items["item_key"].isin(keys)]["question"]]
