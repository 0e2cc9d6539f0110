"""Tier 2 and Tier 3 end to end: offline on the demo, against the scripted LLM server, and the bot API gate."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))  # ``tests.support`` importable

from tests.support.scripted_openai import scripted_openai, scripted_openai_env  # noqa: F401 (fixtures)
from voproshalych_eval.engine import runs
from voproshalych_eval.engine.executor import run_plan


class FakeBot:
    """The bot's ``GET /llm/search-rag?questions=...`` answering from a fixed chunk (or failing)."""

    def __init__(self, *, answer: str, chunks: list[str], status: int = 200, delay: float = 0.0) -> None:
        self.answer, self.chunks, self.status, self.delay = answer, chunks, status, delay
        self.questions: list[str] = []
        bot = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                import time

                q = parse_qs(urlsplit(self.path).query).get("questions", [""])[0]
                bot.questions.append(q)
                if bot.delay:
                    time.sleep(bot.delay)
                body = json.dumps({"data": {"answer": bot.answer, "chunks": [{"text": c} for c in bot.chunks]}},
                                  ensure_ascii=False).encode()
                self.send_response(bot.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeBot:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def bot_chunk(demo_engine) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    from voproshalych_eval.datasets.store import get_dataset
    from voproshalych_eval.tiers.inputs import chunk_texts

    rec = get_dataset(demo_engine, "demo_golden", "golden").records[0]
    kb = chunk_texts(demo_engine, rec["relevant_chunk_ids"])
    return rec["ground_truth_answer"], kb[rec["relevant_chunk_ids"][0]]["text"]


def test_tier2_offline_full_context(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.tiers.tier2 import build_plan

    plan = build_plan(demo_engine, {"limit": 6, "repeats": 2, "offline": True})
    assert plan.offline
    run_id, prog = run_plan(demo_engine, plan)
    assert prog.status == "done" and prog.done == 6
    m = runs.get_run(demo_engine, run_id).metrics
    for key in ("avg_faithfulness", "avg_answer_relevance", "avg_answer_correctness", "avg_rouge1_f", "avg_rouge2_f",
                "avg_rougeL_f", "avg_bleu", "avg_chrf", "response_exact_match_rate", "response_semantic_consistency"):
        assert m[key]["n"] + m[key]["n_failed"] == 6, key
    # the extractive generator is deterministic: its repeats coincide
    assert m["response_exact_match_rate"]["value"] == pytest.approx(1.0)
    items = runs.run_items(demo_engine, run_id)
    row = items.iloc[0]
    # FULL context: every relevant chunk's whole text, nothing cut
    assert not row["context_truncated"] and row["context_chars_used"] == row["context_chars_full"]
    assert sum(len(c) for c in row["contexts"]) == row["context_chars_full"]
    # the reference contexts come from one knowledge-base snapshot, pinned in the run (a resume reads the same)
    run = runs.get_run(demo_engine, run_id)
    assert run.snapshot_id is not None and run.params["snapshot"] == run.snapshot_id


def test_tier2_truncation_is_explicit(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.tiers.tier2 import build_plan

    plan = build_plan(demo_engine, {"limit": 2, "offline": True, "max_context_chars": 100})
    run_id, _ = run_plan(demo_engine, plan)
    items = runs.run_items(demo_engine, run_id)
    assert items["context_truncated"].all() and (items["context_chars_used"] <= 100).all()
    assert runs.get_run(demo_engine, run_id).params["max_context_chars"] == 100


def test_tier2_with_scripted_llm(demo_engine, scripted_openai_env) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from voproshalych_eval.tiers.tier2 import build_plan

    plan = build_plan(demo_engine, {"limit": 3})
    assert not plan.offline
    run_id, prog = run_plan(demo_engine, plan)
    assert prog.status == "done" and prog.tokens > 0
    m = runs.get_run(demo_engine, run_id).metrics
    assert m["avg_faithfulness"]["n"] == 3
    assert scripted_openai_env.count >= 3 * 4  # one generation + three judge calls per item


def test_tier3_internal_offline(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.tiers.tier3 import build_plan

    plan = build_plan(demo_engine, {"limit": 5, "offline": True})
    run_id, prog = run_plan(demo_engine, plan)
    assert prog.status == "done"
    m = runs.get_run(demo_engine, run_id).metrics
    for key in ("pass_rate", "avg_e2e_score", "avg_semantic_similarity", "avg_euclidean_distance", "avg_rougeL_f"):
        assert m[key]["n"] + m[key]["n_failed"] == 5, key
    assert 0.0 <= m["avg_euclidean_distance"]["value"] <= 2.0
    items = runs.run_items(demo_engine, run_id)
    assert items["retrieved_chunk_ids"].map(len).eq(1).all()  # production top-1


def test_tier3_api_mode_and_gate(demo_engine, bot_chunk) -> None:  # type: ignore[no-untyped-def]
    from voproshalych_eval.cli import main

    answer, chunk = bot_chunk
    args = ["tier3", "--limit", "3", "--offline", "--answer-path", "data.answer", "--chunks-path", "data.chunks.*.text",
            "--json"]
    with FakeBot(answer=answer, chunks=[chunk]) as bot:
        assert main([*args, "--api", bot.url, "--min-pass-rate", "0.0"]) == 0
        assert len(bot.questions) == 3 and bot.questions[0]  # the question arrives URL-decoded
        # a bar above 1 can never be met: refused as a bad setting (exit 2) before any request is sent
        n_before = len(bot.questions)
        assert main([*args, "--api", bot.url, "--min-pass-rate", "1.01"]) == 2
        assert len(bot.questions) == n_before
    with FakeBot(answer=answer, chunks=[chunk], status=500) as bad:
        # the API fails on every item: the run is failed (not done), nothing passes
        assert main([*args, "--api", bad.url, "--min-pass-rate", "0.1", "--api-retries", "1", "--api-backoff", "0"]) == 1
        assert len(bad.questions) == 3 * 2  # each 500 retried once
    last = runs.latest_run(demo_engine, "tier3", status="failed")
    assert last is not None and last.metrics["gate_pass_rate"] == 0.0 and last.metrics["n_failed_items"] == 3
    assert last.metrics["errors_by_kind"] == {"http_5xx": 3} and last.metrics["error_rate"]["value"] == 1.0
    assert "every item failed" in last.error
