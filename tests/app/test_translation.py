"""Every translated page in both languages: no metric key or raw column name, no English in the Russian UI
(and no Russian in the English UI) outside code and data, no raw JSON tree (``tests/support/ui_text``).

The pages are rendered with real runs in the store, seeded by the module's own fixture (so the check does not
depend on which test modules ran before): a Tier 0 run on the chunks, a Tier 1 run on the demo golden set,
offline Tier 2, UX, judge-stability and judge-pipeline runs, an offline End-to-end run with a deployment gate and
a real-users analysis — so cards, charts and tables have something to show. :data:`CHECKED` lists the pages whose every text comes from the string
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
           "pages/realq.py", "pages/real_users.py", "pages/settings.py", "pages/audit.py"]

#: offline runs the pages show, seeded when the store has no finished run of that plan: plan key -> parameters
SEEDS: dict[str, dict[str, Any]] = {
    "tier0": {"source": "chunks", "k": 5, "n_clusters": 4, "top_outliers": 5},
    "tier2": {"limit": 3, "offline": True},
    "tier3": {"limit": 3, "offline": True, "min_pass_rate": 0.5},  # End to end with its gate verdict
    "ux": {"source": "dialogs", "offline": True, "limit": 6},
    "judge": {"limit": 3, "repeats": 2, "offline": True},
    "judge_pipeline": {"limit": 6, "offline": True},
}


@pytest.fixture(scope="module")
def real_users_result(demo_engine: Any) -> Any:
    """A finished real-users analysis with its in-memory result (the page shows the result of the picked run)."""
    from tests.support.plans import real_users

    return real_users(demo_engine, k_topics=6, label="translation check")


@pytest.fixture(scope="module")
def corpus(demo_engine: Any, demo_source: Any, real_users_result: Any) -> str:
    from tests.support.plans import run, tier1
    from voproshalych_eval.engine import runs

    if not runs.list_runs(demo_engine, tier="tier1", status="done", limit=1):
        tier1(demo_engine, "demo_golden", retriever="fts", k=10, n_resamples=200, label="translation check")
    for key, params in SEEDS.items():
        if not runs.list_runs(demo_engine, tier=key, status="done", limit=1):
            ran = run(demo_engine, key, {**params, "label": "translation check"})
            assert ran.progress.status == "done", (key, ran.run.error)
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


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_real_users_results_speak_one_language(corpus: str, real_users_result: Any, lang: str) -> None:
    """The Real users page showing a finished analysis: the verdict lead, every tab's cards, tables and charts
    (axis titles, legends, hover words) are in one language."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.session_state["ui_language"] = lang
    at.session_state["pick_ru_run_id"] = real_users_result.run_id
    at.session_state["ru_result"] = real_users_result  # the analysis the picked run left in memory
    at.run()
    at.switch_page("pages/real_users.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.tabs) == 4
    # only the open tab is drawn: open each in turn (as a click on it does) and read them all
    texts: list[str] = []
    n_charts = 0
    for name, label in zip(("utilization", "topics", "answers", "domain"), [t.label for t in at.tabs], strict=True):
        at.session_state["ru_view"] = label
        at.session_state["ru_view__view"] = name
        at.run()
        assert not at.exception, (name, [e.value for e in at.exception])
        texts += page_texts(at)
        n_charts += len(at.get("plotly_chart"))
    assert n_charts > 5  # the results are on the page, not an empty state
    problems = violations(texts, lang, corpus)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lang", ["ru", "en"])
@pytest.mark.parametrize("fmt", ["md", "html"])
def test_reports_speak_one_language(corpus: str, demo_engine: Any, fmt: str, lang: str) -> None:
    """The Markdown and HTML report of every seeded plan's latest run: headers of the per-item table in words, no
    stored value, "None" or long decimal, no English in the Russian report (nor Russian in the English one)."""
    from tests.support.ui_text import report_texts
    from voproshalych_eval import reports
    from voproshalych_eval.engine import runs

    checked = 0
    for key in ("tier1", *SEEDS):
        latest = runs.list_runs(demo_engine, tier=key, status="done", limit=1)
        if not latest:
            continue
        text = reports.run_report(demo_engine, int(latest[0].id), fmt, lang=lang)
        texts = report_texts(text, fmt)
        assert len(texts) > 10, (key, texts)
        problems = violations(texts, lang, corpus)
        assert not problems, f"{key}:\n" + "\n".join(problems)
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_cli_speaks_the_configured_language(corpus: str, demo_engine: Any, lang: str, monkeypatch: Any,
                                            capsys: Any) -> None:
    """``runs show`` and ``runs export`` follow the configured language (VOPROSHALYCH_EVAL_LANG) without ``--lang``."""
    from tests.support.ui_text import cli_texts, report_texts
    from voproshalych_eval import cli, config
    from voproshalych_eval.engine import runs

    monkeypatch.setenv("VOPROSHALYCH_EVAL_LANG", lang)
    config.get_settings.cache_clear()
    try:
        run_id = int(runs.list_runs(demo_engine, tier="tier2", status="done", limit=1)[0].id)
        cli.main(["runs", "show", str(run_id)])
        shown = capsys.readouterr().out
        problems = violations(cli_texts(shown), lang, corpus)
        assert not problems, "\n".join(problems)
        cli.main(["runs", "export", str(run_id), "--format", "md"])
        exported = capsys.readouterr().out
        assert ("# Отчёт о запуске" in exported) == (lang == "ru")
        problems = violations(report_texts(exported, "md"), lang, corpus)
        assert not problems, "\n".join(problems)
        # the leaderboard of the dataset's configurations, with cost, tokens and latency columns
        cli.main(["runs", "leaderboard", "tier2", "--metric", "avg_faithfulness"])
        board = capsys.readouterr().out
        assert ("стоимость" if lang == "ru" else "cost") in board and "p95" in board and f"#{run_id:>5}" in board
        problems = violations(cli_texts(board), lang, corpus)
        assert not problems, "\n".join(problems)
        # a tier command's summary, the registry list and a comparison of two runs speak it too
        assert cli.main(["tier2", "--dataset", "demo_golden", "--limit", "2", "--offline"]) == 0
        summary = capsys.readouterr().out
        assert ("выполнено" in summary) == (lang == "ru") and ("done" in summary) == (lang == "en"), summary
        newest = int(runs.list_runs(demo_engine, tier="tier2", status="done", limit=1)[0].id)
        cli.main(["runs", "list", "--tier", "tier2", "--limit", "5"])
        listed = capsys.readouterr().out
        assert ("стоимость" if lang == "ru" else "cost") in listed and str(newest) in listed, listed
        cli.main(["runs", "compare", str(run_id), str(newest)])
        compared = capsys.readouterr().out
        assert ("против" in compared) == (lang == "ru"), compared
        for out in (summary, listed, compared):
            problems = violations(cli_texts(out), lang, corpus)
            assert not problems, "\n".join(problems)
    finally:
        config.get_settings.cache_clear()
