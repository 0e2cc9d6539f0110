"""Every translated page in both languages: no metric key or raw column name, no English in the Russian UI
(and no Russian in the English UI) outside code and data, no raw JSON tree (``tests/support/ui_text``).

The pages are rendered with real runs in the store (a Tier 1 run on the demo golden set, an offline End-to-end
run with a deployment gate), so cards, charts
and tables have something to show. :data:`CHECKED` lists the pages whose every text comes from the string
tables and the metric catalog; a page joins it when it has been translated completely.
"""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.app_jobs import started_job
from tests.support.ui_text import data_corpus, page_texts, violations
from voproshalych_eval.config import PROJECT_ROOT

APP = str(PROJECT_ROOT / "app.py")

#: pages translated completely (checked in both languages)
CHECKED = ["pages/overview.py", "pages/runs.py", "pages/baselines.py", "pages/tier1_retrieval.py", "pages/tier2_generation.py",
           "pages/ux.py", "pages/judges.py", "pages/tier0_embeddings.py",
           "pages/judge_metrics.py", "pages/tier3_end_to_end.py", "pages/datasets.py", "pages/dataset_review.py",
           "pages/realq.py"]


@pytest.fixture(scope="module")
def corpus(demo_engine: Any, demo_source: Any) -> str:
    from tests.support.plans import run, tier1
    from voproshalych_eval import runs

    if not runs.list_runs(demo_engine, tier="tier1", status="done", limit=1):
        tier1(demo_engine, "demo_golden", retriever="fts", k=10, n_resamples=200, label="translation check")
    if not runs.list_runs(demo_engine, tier="tier3", status="done", limit=1):  # End to end with its gate verdict
        run(demo_engine, "tier3", {"limit": 3, "offline": True, "min_pass_rate": 0.5, "label": "translation check"})
    return data_corpus(demo_engine, demo_source)


@pytest.mark.parametrize("lang", ["ru", "en"])
@pytest.mark.parametrize("page", CHECKED)
def test_page_speaks_one_language(corpus: str, page: str, lang: str) -> None:
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    texts = page_texts(at)
    assert len(texts) > 10, texts  # the page rendered its words (a blank page would pass any check)
    problems = violations(texts, lang, corpus)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_judge_metric_results_speak_one_language(demo_engine: Any, demo_source: Any, lang: str) -> None:
    """The judge-metrics page after a finished run (offline heuristic on the demo samples): cards, the per-sample
    table, the drill-down and the run caption are in one language too."""

    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page("pages/judge_metrics.py").run()
    at.number_input(key="jm_limit").set_value(3).run()
    at.button(key="jm_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    job = started_job(at, "jm_run_id")
    assert job is not None and job.wait(180).status == "done", job.progress
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.session_state["jm_result"]["results"]) == 3
    problems = violations(page_texts(at), lang, data_corpus(demo_engine, demo_source))  # the samples are data now
    assert not problems, "\n".join(problems)
