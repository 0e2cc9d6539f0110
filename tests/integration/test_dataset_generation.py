"""Synthetic golden-set generation on the demo knowledge base with a scripted LLM over real HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

from tests.support.dataset_cleanup import drop_new_datasets  # noqa: F401 (autouse fixture)
from tests.support.scripted_generation import GenerationLLM
from voproshalych_eval.cli import main
from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.datasets.store import get_dataset

SEED_FIELDS = ("question", "ground_truth_answer", "chunk_id", "chunk_text", "confluence_url", "relevant_chunk_ids", "relevant_urls")


@pytest.fixture
def gen_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[GenerationLLM]:
    from voproshalych_eval.config import get_settings

    with GenerationLLM() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-123")
        get_settings.cache_clear()
        yield srv
    get_settings.cache_clear()


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    rc = main(["dataset", *args, "--json"])
    out = capsys.readouterr().out
    return {"rc": rc, **json.loads(out)}


def test_generate_with_scripted_llm(demo_engine, gen_llm, capsys) -> None:  # type: ignore[no-untyped-def]
    name = "gen_" + uuid.uuid4().hex[:6]
    model = "gen-" + uuid.uuid4().hex[:6]  # a fresh model name: no LLM-cache hits from other tests
    out = _cli(capsys, "generate", "--size", "30", "--name", name, "--model", model)
    assert out["rc"] == 0 and out["dataset"] == name and out["status"] == "done" and out["offline"] is False, json.dumps(out, ensure_ascii=False)[:3000]
    # the requested size and type mix (30 over six types = 5 each), every page of the demo covered
    assert out["n_items"] == 30
    assert out["by_type"] == dict.fromkeys(("factual", "paraphrase", "multi_chunk", "conditional", "unanswerable", "follow_up"), 5)
    assert out["pages_total"] == 20 and out["pages_covered"] == 20
    # the report counts every gate (this scripted model makes no mistakes: see the next test for drops)
    assert set(out["dropped"]) >= {"verbatim", "support", "answerable", "near_duplicate_new", "near_duplicate_existing"}
    assert out["tokens"] > 0 and out["n_failed_items"] == 0
    assert "cost_usd" in out and out["cost_usd"] is None  # the scripted model has no price: unknown, never 0
    ds = get_dataset(demo_engine, name, "golden")
    assert len(ds) == 30 and ds.version == 1
    from voproshalych_eval.db.production import read_chunks

    kb = read_chunks(demo_engine).set_index("id")
    for r in ds.records:
        assert all(f in r for f in SEED_FIELDS) and r["question_source"] == "synthetic"
        g = r["generation"]
        assert g["model"] == model and g["prompt"].startswith("gen_") and len(g["prompt_version"]) == 12
        assert g["temperature"] == 0.7 and g["offline"] is False and g["source_chunk_ids"]
        if r["question_type"] == "unanswerable":
            assert r["relevant_chunk_ids"] == [] and r["chunk_id"] is None
        else:
            assert r["chunk_text"] == kb.loc[r["chunk_id"], "text"]  # full text, never cut
            assert r["relevant_urls"] == list(dict.fromkeys(kb.loc[i, "url"] for i in r["relevant_chunk_ids"]))
        if r["question_type"] == "multi_chunk":
            assert len(r["relevant_chunk_ids"]) == 2
        if r["question_type"] == "follow_up":
            assert r["dialog_context"] and r["dialog_context"][0]
    # no near-duplicates left (cosine below the threshold for every pair)
    from voproshalych_eval.embeddings import cached_embedder
    from voproshalych_eval.generation.gates import max_pairwise_cosine

    emb = cached_embedder("use-multilingual", demo_engine)
    assert max_pairwise_cosine(np.asarray(emb.encode_queries([r["question"] for r in ds.records]))) < 0.92
    # the scripted model was asked once per slot with the type's prompt
    assert _n_generation_calls(gen_llm) == 36  # 30 + 20% spare slots
    # Tier 1 evaluates it (unanswerable items are reported apart)
    from tests.support.plans import tier1 as run_tier1

    t1 = run_tier1(demo_engine, name, retriever="fts", k=5)
    assert t1.n_questions == 30 and t1.n_unanswerable == 5 and t1.dataset["hash"] == ds.content_hash
    # exports: the seed's format as JSON and CSV
    rc = main(["dataset", "export", name, "--format", "csv"])
    csv_text = capsys.readouterr().out
    assert rc == 0 and csv_text.splitlines()[0].startswith("id,question,ground_truth_answer,chunk_id,chunk_text,confluence_url")
    # generating again with the same model and seed repeats the questions: the 30 of the first set are dropped as
    # near-duplicates of it; only the 6 spare slots, which the first set did not use, remain
    again = _cli(capsys, "generate", "--size", "30", "--name", name + "_b", "--model", model)
    assert again["dropped"]["near_duplicate_existing"] == 30 and again["n_items"] == 6


def test_gates_drop_what_the_model_got_wrong(demo_engine, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from tests.support.scripted_generation import DUPLICATE_QUESTION, UNSUPPORTED_ANSWER
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.generation.gates import verbatim_overlap

    pages = ["https://wiki.sevgu-demo.ru/display/STUD/Stipendii", "https://wiki.sevgu-demo.ru/display/STUD/Obshchezhitiya",
             "https://wiki.sevgu-demo.ru/display/STUD/Peresdachi"]
    with GenerationLLM(defect_every=2) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        get_settings.cache_clear()
        name = "gates_" + uuid.uuid4().hex[:6]
        out = _cli(capsys, "generate", "--size", "12", "--pages", ",".join(pages), "--oversample", "1.0", "--name", name,
                   "--model", "gen-" + uuid.uuid4().hex[:6], "--no-compare-existing")
        inj = dict(srv.injected)
    get_settings.cache_clear()
    d = out["dropped"]
    # the defects are chosen by a hash of the prompt: this plan always gets each kind at least once
    assert inj.get("verbatim", 0) >= 1 and inj.get("support", 0) >= 1 and inj.get("near_duplicate_new", 0) >= 2, inj
    assert inj.get("answerable", 0) >= 1, inj
    assert d["verbatim"] >= inj["verbatim"] and d["support"] >= inj["support"], (d, inj)
    assert d["near_duplicate_new"] >= inj["near_duplicate_new"] - 1, (d, inj)  # the first of the repeats is kept
    assert d["answerable"] >= 1, d
    ds = get_dataset(demo_engine, name, "golden")
    assert ds.records and out["n_items"] == len(ds)
    assert not [r for r in ds.records if r["ground_truth_answer"] == UNSUPPORTED_ANSWER]
    assert sum(r["question"] == DUPLICATE_QUESTION for r in ds.records) <= 1
    assert all(verbatim_overlap(r["question"], r["chunk_text"]) < 0.8 for r in ds.records if r["chunk_text"])
    assert {u for r in ds.records for u in r["relevant_urls"]} <= set(pages)


def test_offline_generation_is_labelled(demo_engine, capsys) -> None:  # type: ignore[no-untyped-def]
    name = "off_" + uuid.uuid4().hex[:6]
    pages = "https://wiki.sevgu-demo.ru/display/STUD/Stipendii,https://wiki.sevgu-demo.ru/display/STUD/Sport"
    out = _cli(capsys, "generate", "--size", "8", "--types", "factual,paraphrase,conditional,follow_up", "--offline",
               "--pages", pages, "--name", name, "--no-compare-existing", "--seed", "5")
    assert out["rc"] == 0 and out["offline"] is True and out["generator"] == "offline-templates"
    assert out["n_items"] >= 6 and out["tokens"] == 0 and out["pages_covered"] == 2
    ds = get_dataset(demo_engine, name, "golden")
    assert all(r["generation"]["offline"] is True and r["generation"]["template"] for r in ds.records)
    assert "offline templates" in (ds.source or "")
    from voproshalych_eval.engine.runs import get_run

    assert get_run(demo_engine, out["run_id"]).offline is True


def _n_generation_calls(srv: GenerationLLM) -> int:
    return sum(v for k, v in srv.kinds.items() if k.startswith("gen_") and k != "gen_answerability")


def _wait_for(pred, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.2)
    return False


def test_kill9_mid_run_then_resume_loses_and_duplicates_nothing(demo_engine, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.engine import executor, runs

    name = "kill_" + uuid.uuid4().hex[:6]
    model = "gen-" + uuid.uuid4().hex[:6]
    with GenerationLLM(delay=0.3) as srv:
        env = {**os.environ, "OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(PROJECT_ROOT)}
        cmd = [sys.executable, "-m", "voproshalych_eval.cli", "dataset", "generate", "--size", "24", "--types",
               "factual,paraphrase", "--name", name, "--model", model, "--concurrency", "2", "--json"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(PROJECT_ROOT))
        try:
            def run_id() -> int | None:
                r = [x for x in runs.list_runs(demo_engine, tier="dataset_generation", limit=20) if x.dataset_name == name]
                return r[0].id if r else None

            assert _wait_for(lambda: run_id() is not None and runs.count_items(demo_engine, run_id()).get("done", 0) >= 4, 180), \
                proc.stderr.read().decode() if proc.poll() is not None else "no items recorded"
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        rid = run_id()
        assert rid is not None
        before = runs.count_items(demo_engine, rid)
        assert runs.get_run(demo_engine, rid).status == "running"  # killed: no one closed it
        with pytest.raises(LookupError):
            get_dataset(demo_engine, name, "golden")  # nothing stored for an incomplete run
        recorded = runs.completed_keys(demo_engine, rid, include_failed=True)
        n_gen_before = _n_generation_calls(srv)
        srv.delay = 0.0
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = srv.base_url, "sk-test"
        get_settings.cache_clear()
        try:
            prog = executor.resume(demo_engine, rid)  # the same configuration: no force, not mixed
        finally:
            os.environ.pop("OPENAI_BASE_URL", None)
            os.environ.pop("OPENAI_API_KEY", None)
            get_settings.cache_clear()
        assert prog.status == "done"
        items = runs.run_items(demo_engine, rid)
        run = runs.get_run(demo_engine, rid)
        assert len(items) == run.n_items_total == len(set(items["item_key"]))  # every slot once
        assert not run.mixed  # resumed with the configuration it started with
        assert recorded <= set(items["item_key"])
        # the resumed execution asked the model only for the slots that had not been recorded
        n_gen_after = _n_generation_calls(srv)
        assert n_gen_after - n_gen_before <= run.n_items_total - len(recorded)
        assert before.get("done", 0) >= 4
    ds = get_dataset(demo_engine, name, "golden")
    assert ds.version == 1 and len({r["id"] for r in ds.records}) == len(ds) == run.metrics["n_items"]
    assert Counter(r["question_type"] for r in ds.records) == run.metrics["by_type"]


def test_resume_without_the_llm_is_refused(demo_engine, gen_llm, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An LLM generation run cannot be finished by the offline templates: resume names what differs."""
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.engine import executor
    from voproshalych_eval.generation.plan import build_plan

    plan = build_plan(demo_engine, {"size": 4, "types": "factual", "name": "refused_" + uuid.uuid4().hex[:6],
                                    "model": "gen-" + uuid.uuid4().hex[:6], "compare_existing": False})
    assert plan.offline is False
    run_id = executor.create_run(demo_engine, plan)  # started, never executed: every slot is missing
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    get_settings.cache_clear()
    with pytest.raises(executor.ResumeRefused, match="offline"):
        executor.resume(demo_engine, run_id)
