"""The engine's contract against the real store: batches recorded item by item, truthful outcomes, one
process per run (advisory lock), frozen configuration, refused and forced (mixed) resumes."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import text

from voproshalych_eval.engine import executor, runs
from voproshalych_eval.plans import ItemResult, Plan


def _key_counts(engine: Any, run_id: int) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT item_key, count(*) FROM eval.run_items WHERE run_id = :r GROUP BY item_key"),
                            {"r": run_id}).all()
    return {r[0]: int(r[1]) for r in rows}


def _sum(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregates under catalogued keys: the number of items and of failed ones."""
    return {"n_items": len(records), "n_failed_items": sum(1 for r in records if r["status"] != "done")}


def test_batches_are_recorded_item_by_item_and_a_failing_batch_fails_only_its_items(engine: Any) -> None:
    calls: list[list[int]] = []

    def work_batch(payloads: list[int]) -> list[dict[str, Any]]:
        calls.append(list(payloads))
        if 6 in payloads:
            raise ConnectionError("database went away")
        return [{"v": p * 10} for p in payloads]

    plan = Plan(tier="tier1", items=[(f"q{i:02d}", i) for i in range(10)], work_batch=work_batch, batch_size=3,
                finalize=_sum, concurrency=1, max_failure_share=0.5)
    run_id, prog = executor.run_plan(engine, plan)
    assert calls == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]  # batched, in order
    assert prog.done == 7 and prog.failed == 3 and prog.status == "done"  # 30 % failed <= 50 % allowed
    recs = {r["item_key"]: r for r in runs.item_records(engine, run_id)}
    assert {k for k, r in recs.items() if r["status"] == "failed"} == {"q06", "q07", "q08"}
    assert "database went away" in recs["q07"]["error"]
    assert runs.get_run(engine, run_id).metrics == {"n_items": 10, "n_failed_items": 3}  # finalize saw every item
    assert sum(r["result"]["v"] for r in recs.values() if r["status"] == "done") == 10 * (0 + 1 + 2 + 3 + 4 + 5 + 9)

    # a generator batch records each item as it is yielded (progress moves inside a batch)
    seen: list[int] = []

    def streaming(payloads: list[int]):  # type: ignore[no-untyped-def]
        for p in payloads:
            yield ItemResult({"v": p}, tokens=2)

    snaps: list[executor.Progress] = []
    plan2 = Plan(tier="tier1", items=[(f"s{i}", i) for i in range(5)], work_batch=streaming, batch_size=5,
                 finalize=_sum, concurrency=1)
    _, prog2 = executor.run_plan(engine, plan2, on_progress=lambda p: (snaps.append(p), seen.append(p.finished)))
    assert prog2.status == "done" and prog2.tokens == 10
    assert [n for n in dict.fromkeys(seen) if n > 0] == [1, 2, 3, 4, 5]


def test_outcomes_every_item_failed_and_too_many_failures(engine: Any) -> None:
    def boom(_: int) -> dict[str, Any]:
        raise TimeoutError("upstream timeout")

    run_id, prog = executor.run_plan(engine, Plan(tier="tier2", items=[(f"k{i}", i) for i in range(4)], work=boom,
                                                 finalize=_sum))
    run = runs.get_run(engine, run_id)
    assert prog.status == run.status == "failed"
    assert "every item failed (4)" in run.error and "upstream timeout" in run.error

    def some(i: int) -> dict[str, Any]:
        if i < 2:
            raise TimeoutError("slow")
        return {"v": i}

    run_id, prog = executor.run_plan(engine, Plan(tier="tier2", items=[(f"k{i}", i) for i in range(10)], work=some,
                                                 finalize=_sum, max_failure_share=0.1))
    assert prog.status == runs.get_run(engine, run_id).status == "done_with_failures"
    assert "2 of 10 items failed" in runs.get_run(engine, run_id).error


def test_one_process_per_run_and_the_frozen_configuration(engine: Any) -> None:
    plan = Plan(tier="tier2", items=[("a", 1), ("b", 2)], work=lambda i: {"v": i}, finalize=_sum,
                models={"generator": "model-a"}, providers=[{"name": "default", "host": "h:1", "models": ["model-a"]}],
                snapshot_id=None, params={"limit": 2})
    run_id = executor.create_run(engine, plan)
    run = runs.get_run(engine, run_id)
    assert run.config == plan.config() and run.config["providers"][0]["host"] == "h:1" and run.snapshot_id is None
    with runs.execution_lock(engine, run_id):  # "another process" executes it
        runs.mark_running(engine, run_id)
        assert runs.is_locked(engine, run_id)
        with pytest.raises(runs.AlreadyRunning, match=r"already running \(pid \d+ on "):
            executor.execute(engine, run_id, plan)
        with pytest.raises(runs.AlreadyRunning, match="already running"):
            executor.prepare_resume(engine, run_id)
    assert not runs.is_locked(engine, run_id)
    assert runs.count_items(engine, run_id) == {"done": 0, "failed": 0}  # the refused execution did nothing
    assert executor.execute(engine, run_id, plan).status == "done"


def test_resume_refuses_another_configuration_and_force_marks_mixed(engine: Any, monkeypatch: Any) -> None:
    gate = threading.Event()

    def slow(i: int) -> dict[str, Any]:
        if i >= 2:
            gate.wait(5)
        return {"v": i}

    def make(generator: str) -> Plan:
        return Plan(tier="tier2", items=[(f"k{i}", i) for i in range(6)], work=slow, finalize=_sum, concurrency=1,
                    models={"generator": generator}, params={"limit": 6})

    job = executor.start_background(engine, make("model-a"))
    while runs.count_items(engine, job.run_id)["done"] < 2:
        job.wait(0.05)
    job.cancel()
    gate.set()
    job.wait(10)
    assert runs.get_run(engine, job.run_id).status == "cancelled"
    n_before = runs.count_items(engine, job.run_id)["done"]
    assert 2 <= n_before < 6

    monkeypatch.setattr(executor, "build_plan_for", lambda eng, run: make("model-b"))
    with pytest.raises(executor.ResumeRefused) as refused:
        executor.resume(engine, job.run_id)
    msg = str(refused.value)
    assert "models.generator: 'model-a' at start, 'model-b' now" in msg and "--force" in msg
    assert runs.count_items(engine, job.run_id)["done"] == n_before  # nothing ran

    prog = executor.resume(engine, job.run_id, force=True)
    run = runs.get_run(engine, job.run_id)
    assert prog.status == "done" and run.mixed and "model-b" in run.mixed_reason
    assert set(_key_counts(engine, job.run_id).values()) == {1} and len(_key_counts(engine, job.run_id)) == 6
    assert "mixed" in runs.export_data(engine, job.run_id)["run"] and runs.export_data(engine, job.run_id)["run"]["mixed"]


def test_resume_refuses_a_dataset_changed_in_the_store(demo_engine: Any, tmp_path: Any) -> None:
    """The run's dataset is read back by id (never by path); if the stored copy no longer hashes to the
    hash the run started with, resume refuses."""
    import json

    from voproshalych_eval.datasets import store as datasets

    path = tmp_path / "tiny_golden.json"
    records = [{"id": f"t{i}", "question": f"Вопрос {i}?", "ground_truth_answer": "Ответ.", "relevant_chunk_ids": [1]}
               for i in range(4)]
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    from tests.support.plans import run as run_plan

    ran = run_plan(demo_engine, "tier1", {"dataset": str(path), "retriever": "fts", "k": 3, "n_resamples": 50})
    run = ran.run
    assert ran.progress.status == "done" and run.dataset_id is not None
    # editing the file changes nothing for the run: a resume reads the stored copy
    path.write_text(json.dumps(records[:2], ensure_ascii=False), encoding="utf-8")
    plan, mixed = executor.prepare_resume(demo_engine, run.id)
    assert mixed is None and len(plan.items) == 4 and plan.dataset_hash == run.dataset_hash
    # the stored copy edited behind the registry's back: refused, naming the dataset and both hashes
    with demo_engine.begin() as conn:
        conn.execute(text("UPDATE eval.dataset_items SET payload = jsonb_set(payload, '{question}', '\"Другой?\"') "
                          "WHERE dataset_id = :d AND item_index = 0"), {"d": run.dataset_id})
    with pytest.raises(executor.ResumeRefused, match=r"dataset 'tiny_golden' \(id \d+\) changed since the run started"):
        executor.prepare_resume(demo_engine, run.id)
    assert datasets.content_hash(datasets.get_dataset(demo_engine, run.dataset_id).records) != run.dataset_hash


@pytest.mark.parametrize(("tier", "params", "prompt"), [
    ("tier2", {"limit": 2}, "faithfulness"),
    ("tier3", {"limit": 2}, "rag_judge"),
    ("judge", {"limit": 2, "repeats": 2, "metric": "answer_relevance"}, "answer_relevance"),
    ("ux", {"source": "dialogs"}, "generation_user"),
])
def test_resume_after_a_prompt_edit_is_refused_naming_the_prompt(demo_engine: Any, monkeypatch: Any, tier: str,
                                                                 params: dict[str, Any], prompt: str) -> None:
    """Tier 2, Tier 3 and judge stability freeze the judge prompts they send (name and version), UX the
    generator's; a resume after one of them was edited is refused and names it."""
    import importlib

    from tests.support.scripted_openai import ScriptedOpenAI
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.llm import prompts
    from voproshalych_eval.plans import spec

    with ScriptedOpenAI() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-prompt-test")
        monkeypatch.setenv("VOPROSHALYCH_EVAL_LLM_MODELS", "model-a")
        get_settings.cache_clear()
        try:
            plan = importlib.import_module(spec(tier).module).build_plan(demo_engine, params)
            before = prompts.prompt_hash(prompt)
            assert plan.prompts[prompt] == before and not plan.offline
            run_id = executor.create_run(demo_engine, plan)
            assert executor.prepare_resume(demo_engine, run_id)[1] is None  # unchanged: resumable
            edited = prompts.PROMPTS[prompt]
            monkeypatch.setitem(prompts.PROMPTS, prompt, type(edited)(
                edited.name, edited.description, {k: v + "\nEdited." for k, v in edited.text.items()}))
            after = prompts.prompt_hash(prompt)
            with pytest.raises(executor.ResumeRefused, match=rf"prompts\.{prompt}: '{before}' at start, '{after}' now"):
                executor.prepare_resume(demo_engine, run_id)
        finally:
            get_settings.cache_clear()
    assert srv.count == 0  # building and checking a plan calls no LLM


def test_a_plan_factory_is_built_in_the_background_job(engine: Any) -> None:
    """``start_background`` with a factory returns before ``build_plan`` finishes (it runs in the job's
    thread); a factory error, or a plan without items, ends the job with the error and no run."""
    entered, release = threading.Event(), threading.Event()

    def factory() -> Plan:
        entered.set()
        assert release.wait(120)
        return Plan(tier="tier1", items=[("a", 1), ("b", 2)], work=lambda p: {"v": p}, finalize=_sum)

    before = runs.list_runs(engine, limit=1)
    job = executor.start_background(engine, factory)
    assert job.building and job.run_id is None and executor.get_job(job.key) is job  # the factory still waits
    assert entered.wait(120)
    assert job in executor.active_jobs() and runs.list_runs(engine, limit=1) == before  # no run before the plan
    release.set()
    prog = job.wait(120)
    assert prog.status == "done" and not job.building and job.error is None
    assert job.run_id is not None and executor.get_job(job.run_id) is job and executor.get_job(job.key) is job
    run = runs.get_run(engine, job.run_id)
    assert run is not None and run.status == "done" and run.metrics == {"n_items": 2, "n_failed_items": 0}

    def broken() -> Plan:
        raise FileNotFoundError("golden.json not found")

    bad = executor.start_background(engine, broken)
    bad.wait(120)
    assert bad.run_id is None and not bad.building and bad.progress.status == "failed"
    assert bad.error is not None and "golden.json not found" in bad.error
    empty = executor.start_background(engine, lambda: Plan(tier="tier1", items=[], work=lambda p: {}, finalize=_sum))
    empty.wait(120)
    assert empty.nothing_to_run and empty.run_id is None and "Nothing to evaluate" in (empty.error or "")
    assert runs.list_runs(engine, limit=1)[0].id == job.run_id  # neither created a run


def _signal_mid_run(engine: Any, sig: int) -> tuple[int, int, str]:
    """A Tier 1 CLI run, frozen once it recorded items (its run row locked), gets ``sig``; returns
    ``(run id, exit code, stderr)``."""
    import subprocess
    import sys
    import time

    from tests.integration.test_kill_resume import ROOT, _max_run_id, _newest_run, _row_locked

    before = _max_run_id(engine)
    proc = subprocess.Popen([sys.executable, "-m", "voproshalych_eval.cli", "tier1", "--retriever", "fts",
                             "--batch-size", "4", "--json"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 240
        run_id = None
        while not (run_id and runs.count_items(engine, run_id)["done"] >= 4):
            assert time.time() < deadline and proc.poll() is None, "the CLI ended or stalled before the signal"
            time.sleep(0.05)
            run_id = _newest_run(engine, "tier1", before)
        with _row_locked(engine, run_id):  # the CLI blocks at its next write: the signal lands mid-run
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return int(run_id), proc.returncode, err.decode()


@pytest.mark.parametrize(("sig", "code", "error"), [(2, 130, "interrupted by the user"), (15, 4, None)],
                         ids=["ctrl-c-130", "sigterm-4"])
def test_cli_exit_codes_for_an_interrupted_and_a_cancelled_run(demo_engine: Any, sig: int, code: int,
                                                               error: str | None) -> None:
    """Ctrl-C (SIGINT) exits 130 and SIGTERM exits 4; either way the run is ``cancelled``, not locked, and a
    resume finishes it with every item recorded once."""
    from tests.integration.test_kill_resume import wait_unlocked
    from voproshalych_eval.cli import main

    run_id, returncode, err = _signal_mid_run(demo_engine, sig)
    assert returncode == code, err[-3000:]
    run = runs.get_run(demo_engine, run_id)
    assert run is not None and run.status == "cancelled" and run.error == error
    wait_unlocked(demo_engine, run_id)
    assert 4 <= sum(runs.count_items(demo_engine, run_id).values()) < run.n_items_total  # stopped mid-way
    assert main(["resume", str(run_id)]) == 0
    assert runs.get_run(demo_engine, run_id).status == "done"
    assert set(_key_counts(demo_engine, run_id).values()) == {1} and len(_key_counts(demo_engine, run_id)) == run.n_items_total


class _Batched(Plan):
    """A plan written as a class (``prepare`` / ``work_batch`` / ``finalize`` methods)."""

    def __init__(self, n: int) -> None:
        self.prepared = 0
        super().__init__(tier="tier1", items=[(f"c{i}", i) for i in range(n)], batch_size=2, concurrency=1,
                         params={"n": n})

    def prepare(self) -> None:
        self.prepared += 1

    def work_batch(self, payloads: list[int]) -> list[dict[str, Any]]:
        self.say(f"batch of {len(payloads)}")
        return [{"v": p + 100} for p in payloads]

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return _sum(records)


def test_a_plan_class_runs_through_the_executor_like_its_callables(engine: Any) -> None:
    plan = _Batched(5)
    notes: list[str] = []
    run_id, prog = executor.run_plan(engine, plan, on_progress=lambda p: notes.append(p.message or ""))
    assert prog.status == "done" and prog.done == 5 and plan.prepared == 1
    recs = {r["item_key"]: r["result"]["v"] for r in runs.item_records(engine, run_id)}
    assert recs == {f"c{i}": i + 100 for i in range(5)}
    assert runs.get_run(engine, run_id).metrics == {"n_items": 5, "n_failed_items": 0}
    assert runs.get_run(engine, run_id).config == plan.config()
