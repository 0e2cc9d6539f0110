"""kill -9 of a CLI run mid-way, then ``resume``: every tier (Tier 0, Tier 1, real users, Tier 3 against a
bot's API, an LLM tier, judge metrics) finishes with nothing lost or duplicated; resume refuses a configuration that cannot
reproduce the run (LLM missing, another model); two concurrent resumes execute once; an all-failed run
exits non-zero.

"Mid-way" is made deterministic without any hook in the product: once the run has recorded a few items,
the test locks the run's row (``SELECT … FOR UPDATE``), so the CLI freezes at its next write; then it is
killed with SIGKILL and the lock released. PostgreSQL rolls back the dead process's open transaction
and releases its advisory lock, exactly as after a real crash.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from tests.support.scripted_openai import Reply, ScriptedOpenAI
from voproshalych_eval.engine import runs

ROOT = Path(__file__).resolve().parents[2]
LLM_MODEL = "model-a"


def _newest_run(engine: Any, tier: str, after: int) -> int | None:
    with engine.connect() as conn:
        return conn.execute(text("SELECT max(id) FROM eval.runs WHERE id > :m AND tier = :t"),
                            {"m": after, "t": tier}).scalar_one()


def _max_run_id(engine: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT coalesce(max(id), 0) FROM eval.runs")).scalar_one())


def _created(engine: Any, run_id: int) -> dict[str, Any]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT item_key, created_at FROM eval.run_items WHERE run_id = :r"), {"r": run_id}).all()
    return {r[0]: r[1] for r in rows}


def _key_counts(engine: Any, run_id: int) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT item_key, count(*) FROM eval.run_items WHERE run_id = :r GROUP BY item_key"),
                            {"r": run_id}).all()
    return {r[0]: int(r[1]) for r in rows}


@contextmanager
def _row_locked(engine: Any, run_id: int) -> Iterator[None]:
    """Hold the run's row: the executing process blocks at its next record or heartbeat."""
    conn = engine.connect()
    try:
        conn.execute(text("SELECT 1 FROM eval.runs WHERE id = :r FOR UPDATE"), {"r": run_id})
        yield
    finally:
        conn.rollback()
        conn.close()


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "voproshalych_eval.cli", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def kill_mid_run(engine: Any, tier: str, args: list[str], *, env: dict[str, str] | None = None, after: int = 2,
                 settle: Any = None) -> tuple[int, dict[str, Any]]:
    """Start the CLI, freeze it once ``after`` items are recorded, kill -9 it; returns the run id and the
    creation times of the items recorded before the kill."""
    before = _max_run_id(engine)
    proc = _start(args, env or _env())
    run_id = None
    deadline = time.time() + 240
    try:
        while time.time() < deadline:
            run_id = _newest_run(engine, tier, before)
            if run_id and runs.count_items(engine, run_id)["done"] >= after:
                break
            if proc.poll() is not None:
                raise AssertionError(f"the CLI ended before the kill: {proc.stderr.read().decode()[-3000:]}")
            time.sleep(0.05)
        else:
            raise AssertionError("the run did not record enough items in time")
        with _row_locked(engine, run_id):
            if settle is not None:
                settle()
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    run = runs.get_run(engine, run_id)
    assert run.status == "running"  # nobody closed it: it died
    wait_unlocked(engine, run_id)
    recorded = _created(engine, run_id)
    assert after <= len(recorded) < run.n_items_total, (len(recorded), run.n_items_total)
    return run_id, recorded


def wait_unlocked(engine: Any, run_id: int, timeout: float = 30.0) -> None:
    """PostgreSQL releases a dead process's advisory lock once it notices the closed connection."""
    deadline = time.time() + timeout
    while runs.is_locked(engine, run_id):
        assert time.time() < deadline, f"run {run_id} still locked {timeout} s after its process died"
        time.sleep(0.05)


def assert_finished_once(engine: Any, run_id: int, recorded: dict[str, Any], expected_keys: list[str] | None = None) -> None:
    run = runs.get_run(engine, run_id)
    assert run.status == "done", (run.status, run.error)
    counts = _key_counts(engine, run_id)
    assert set(counts.values()) == {1} and len(counts) == run.n_items_total
    if expected_keys is not None:
        assert sorted(counts) == sorted(expected_keys)
    after = _created(engine, run_id)
    assert all(after[k] == t for k, t in recorded.items())  # nothing recorded before the kill was redone
    assert not run.mixed


def resume(args: list[str], capsys: Any) -> tuple[int, str, str]:
    from voproshalych_eval.cli import main

    code = main(["resume", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------------------------------------- tiers


def test_tier1_kill_and_resume(demo_engine: Any, capsys: Any) -> None:
    from voproshalych_eval.datasets.store import get_dataset

    keys = get_dataset(demo_engine, "demo_golden", "golden").keys()
    run_id, recorded = kill_mid_run(demo_engine, "tier1", ["tier1", "--retriever", "fts", "--batch-size", "4", "--json"],
                                    after=4)
    code, out, err = resume([str(run_id), "--json"], capsys)
    assert code == 0 and json.loads(out)["status"] == "done", err
    assert_finished_once(demo_engine, run_id, recorded, keys)
    m = runs.get_run(demo_engine, run_id).metrics
    assert m["n_evaluated"]["questions"] + m["n_unanswerable"] == len(keys) and 0 < m["chunk"]["mrr"]["value"] <= 1


def test_tier0_kill_and_resume(demo_engine: Any, capsys: Any) -> None:
    run_id, recorded = kill_mid_run(demo_engine, "tier0", ["tier0", "--source", "chunks", "--json"], after=2)
    assert set(recorded) == {"vectors", "metrics"}
    code, _, _ = resume([str(run_id)], capsys)
    assert code == 0
    assert_finished_once(demo_engine, run_id, recorded, ["vectors", "metrics", "neighbours", "per_section"])
    assert runs.get_run(demo_engine, run_id).metrics["total_samples"] > 100


def test_real_users_kill_and_resume(demo_engine: Any, capsys: Any) -> None:
    args = ["real-users", "--analysis", "utilization", "--from", "2026-01-01", "--to", "2026-01-31", "--json"]
    run_id, recorded = kill_mid_run(demo_engine, "real_users", args, after=2)
    assert {"log", "embeddings"} <= set(recorded)
    code, _, _ = resume([str(run_id)], capsys)
    assert code == 0
    assert_finished_once(demo_engine, run_id, recorded, ["log", "embeddings", "retrieval", "utilization"])
    m = runs.get_run(demo_engine, run_id).metrics
    assert m["n_questions_used"] > 0 and 0 < m["chunk_coverage"] <= 1


def test_tier3_bot_api_kill_and_resume(demo_engine: Any, capsys: Any) -> None:
    """Tier 3 against a bot's API (the production stand-in): a resume asks the bot only the questions whose
    items were not recorded, with the settings the run stored."""
    from tests.support.production_qa import ProductionQA

    with ProductionQA() as srv:
        args = ["tier3", "--api", srv.base_url, "--api-preset", "voproshalych", "--api-rps", "5", "--limit", "12",
                "--concurrency", "2", "--offline", "--json"]
        run_id, recorded = kill_mid_run(demo_engine, "tier3", args, after=2)
        n_before = len(srv.posts())
        asked_recorded = set(runs.run_items(demo_engine, run_id)["question"])
        code, out, err = resume([str(run_id), "--json"], capsys)
        assert code == 0 and json.loads(out)["status"] == "done", err
        assert_finished_once(demo_engine, run_id, recorded)
        again = [r.body["question"] for r in srv.posts()[n_before:]]
    assert again and not set(again) & asked_recorded  # nothing recorded before the kill was asked again
    assert all(r.path == "/qa/" for r in srv.posts())
    m = runs.get_run(demo_engine, run_id).metrics
    assert m["n_not_found"] == m["n_items"] == 12  # the stand-in knows no answer: every item a decline


# ---------------------------------------------------------------------------------------------- LLM runs


@pytest.fixture
def llm_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAI]:
    """A scripted OpenAI-compatible endpoint (real HTTP) that answers after a short delay."""
    from voproshalych_eval.config import get_settings

    with ScriptedOpenAI(delay=0.15) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-kill-test")
        monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_MODELS", LLM_MODEL)
        get_settings.cache_clear()
        yield srv
    get_settings.cache_clear()


def _quiet(srv: ScriptedOpenAI) -> None:
    """Wait until no request is in flight and none arrives for a moment (the frozen CLI is idle)."""
    last, still = srv.count, 0
    while still < 10:
        time.sleep(0.05)
        still = still + 1 if srv.count == last and srv.in_flight == 0 else 0
        last = srv.count


def test_llm_tier_kill_refusals_and_concurrent_resumes(demo_engine: Any, llm_server: ScriptedOpenAI, capsys: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.datasets.store import get_dataset

    n_items = 10
    golden = get_dataset(demo_engine, "demo_golden", "golden")
    keys = [k for k, r in zip(golden.keys(), golden.records, strict=True) if r.get("question_type") != "unanswerable"]
    args = ["tier2", "--limit", str(n_items + 4), "--concurrency", "2", "--json"]
    run_id, recorded = kill_mid_run(demo_engine, "tier2", args, after=2, settle=lambda: _quiet(llm_server))
    run = runs.get_run(demo_engine, run_id)
    assert not run.offline and run.models["generator"] == LLM_MODEL
    assert run.config["providers"][0]["host"] == llm_server.base_url.split("//")[1].split("/")[0]
    calls_before = llm_server.count

    # the LLM is gone: finishing with the offline heuristics would mix settings -> refused, nothing runs
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    get_settings.cache_clear()
    code, _, err = resume([str(run_id)], capsys)
    assert code == 2 and "offline: False at start, True now" in err and "LLM" in err and "--force" in err
    # another model configured: refused, naming the model
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-kill-test")
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_MODELS", "model-b")
    get_settings.cache_clear()
    code, _, err = resume([str(run_id)], capsys)
    assert code == 2 and "models.generator: 'model-a' at start, 'model-b' now" in err
    assert llm_server.count == calls_before and _created(demo_engine, run_id) == recorded

    # two resumes at once: the first holds the run, the second is told who runs it; the work happens once
    monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_MODELS", LLM_MODEL)
    get_settings.cache_clear()
    first = _start(["resume", str(run_id), "--json"], _env())
    deadline = time.time() + 120
    while not (runs.is_locked(demo_engine, run_id) and runs.get_run(demo_engine, run_id).pid == first.pid):
        assert first.poll() is None, first.stderr.read().decode()[-3000:]
        assert time.time() < deadline
        time.sleep(0.05)
    with _row_locked(demo_engine, run_id):
        code, _, err = resume([str(run_id)], capsys)
    assert code == 2 and f"already running (pid {first.pid} on " in err
    out, err = first.communicate(timeout=240)
    assert first.returncode == 0, err.decode()[-3000:]
    assert json.loads(out)["status"] == "done"
    assert_finished_once(demo_engine, run_id, recorded)
    assert set(_key_counts(demo_engine, run_id)) <= set(keys)
    # every LLM request of the run was sent exactly once: generation + 3 judge metrics per item, the
    # items finished but unrecorded at the kill served from the LLM cache
    bodies = [json.dumps(r["messages"], ensure_ascii=False, sort_keys=True) for r in llm_server.requests]
    assert len(bodies) == len(set(bodies)) == 4 * runs.get_run(demo_engine, run_id).n_items_total


def test_judge_metrics_kill_and_resume(demo_engine: Any, llm_server: ScriptedOpenAI, tmp_path: Path,
                                       capsys: Any) -> None:
    path = tmp_path / "samples.jsonl"
    rows = [{"id": f"s{i}", "user_input": f"Когда выплачивают стипендию {i}?", "response": "25 числа.",
             "retrieved_contexts": ["Стипендия выплачивается 25 числа каждого месяца."]} for i in range(10)]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    args = ["judge", "--metric", "faithfulness", "--input", str(path), "--concurrency", "2", "--json"]
    run_id, recorded = kill_mid_run(demo_engine, "judge_metrics", args, after=2, settle=lambda: _quiet(llm_server))
    path.write_text("", encoding="utf-8")  # the file is gone: the run's samples are in the store
    code, out, _ = resume([str(run_id), "--json"], capsys)
    assert code == 0 and json.loads(out)["status"] == "done"
    assert_finished_once(demo_engine, run_id, recorded, [r["id"] for r in rows])
    bodies = [json.dumps(r["messages"], ensure_ascii=False, sort_keys=True) for r in llm_server.requests]
    assert len(bodies) == len(set(bodies)) == len(rows)
    assert runs.get_run(demo_engine, run_id).metrics["avg_faithfulness"]["n"] == len(rows)


def test_all_failed_run_exits_non_zero(demo_engine: Any, llm_server: ScriptedOpenAI, tmp_path: Path) -> None:
    llm_server.delay = 0.0
    llm_server.script(*[Reply.garbage() for _ in range(200)])  # no reply can be parsed
    path = tmp_path / "samples.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"g{i}", "user_input": "Вопрос?", "response": "Ответ.",
                                          "retrieved_contexts": ["Контекст."]}, ensure_ascii=False) for i in range(3)),
                    encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "voproshalych_eval.cli", "judge", "--metric", "faithfulness",
                           "--input", str(path), "--json"], cwd=ROOT, env=_env(), capture_output=True, timeout=240)
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    data = json.loads(proc.stdout)
    run = runs.get_run(demo_engine, data["run_id"])
    assert data["status"] == run.status == "failed" and "every item failed (3)" in run.error
