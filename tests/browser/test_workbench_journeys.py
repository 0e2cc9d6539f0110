"""Real-browser journeys of issue 29's workbench, in Russian and in English (the session's app server and Chromium
of ``conftest.py``):

1. ``leaderboard``: two configurations of Tier 1 on one dataset (stored runs with metered cost, tokens and latency)
   ranked on the Runs page's leaderboard; its CSV download carries cost, tokens and latency p50/p95; "Diff per
   item" shows the two runs item by item;
2. ``trace``: a Tier 2 run's item detail ends with the item's trace — its steps as expanders, never a JSON dump.

Screenshots of every step go to ``artifacts/screenshots/<journey>-<lang>-<step>.png``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.app_driver import by, script_idle, wait, wait_rendered
from tests.browser.test_journeys import (
    LANGS,
    _clean,
    _click_key,
    _main_text,
    _open,
    _open_view,
    _select,
    _shot,
)
from voproshalych_eval.engine import runs
from voproshalych_eval.metrics.statistics import summarize

pytestmark = pytest.mark.browser

LEADERBOARD = {"ru": "Рейтинг конфигураций", "en": "Leaderboard"}
TIER1 = {"ru": "Tier 1 · Поиск", "en": "Tier 1 · Retrieval"}
WORSE = {"ru": "хуже", "en": "worse"}
TRACE = {"ru": "Трасса элемента", "en": "Item trace"}
#: the two configurations: (embedder, MRR shift, USD, p50 s)
CONFIGS = (("wb-emb-low", 0.0, 0.0021, 0.12), ("wb-emb-high", 0.3, 0.0105, 0.34))


@pytest.fixture(scope="module")
def two_configs(app_url: str, demo_engine: Any) -> Iterator[tuple[str, dict[str, int]]]:
    dataset = "wb_" + uuid.uuid4().hex[:6]
    made: dict[str, int] = {}
    for emb, shift, usd, p50 in CONFIGS:
        vals = [round(min(1.0, (i % 5) / 10 + shift * (i % 2)), 3) for i in range(12)]
        run = runs.create_run(demo_engine, "tier1", models={"embedder": emb}, dataset_name=dataset,
                              dataset_hash=(dataset * 64)[:64], n_items_total=12, label=emb)
        runs.record_items(demo_engine, run.id, [
            (f"q{i:02d}", {"question": f"Вопрос {i}?", "metrics_chunk": {"mrr": v}}, "done", None) for i, v in enumerate(vals)])
        runs.finish_run(demo_engine, run.id, {
            "chunk": {"mrr": summarize(vals, n_resamples=200).to_dict()},
            "cost_usd": {"total": {"value": usd, "prompt_tokens": 1000, "completion_tokens": 200}},
            "latency_p50": {"value": p50}, "latency_p95": {"value": p50 * 3}})
        made[emb] = run.id
    yield dataset, made
    from sqlalchemy import text as sql

    with demo_engine.begin() as conn:
        conn.execute(sql("DELETE FROM eval.runs WHERE id = ANY(:ids)"), {"ids": list(made.values())})


@pytest.mark.parametrize("lang", LANGS)
def test_the_leaderboard_with_cost_latency_and_a_diff(driver: Any, app_url: str, two_configs: tuple[str, dict[str, int]],
                                                      downloads: Path, lang: str) -> None:
    import pandas as pd

    dataset, made = two_configs
    j = "leaderboard"
    _open(driver, app_url, "runs", lang)
    _open_view(driver, LEADERBOARD[lang])
    _select(driver, "runs_lb_tier", TIER1[lang])
    _select(driver, "runs_lb_dataset", dataset)
    _shot(driver, j, lang, "1-board")
    name = f"leaderboard_tier1_{dataset}"
    for old in downloads.glob(f"{name}*"):
        old.unlink()
    _click_key(driver, "dl_runs_lb_table_csv")
    csv = wait(driver, lambda d: next(iter(downloads.glob(f"{name}*.csv")), False), 60, "the leaderboard's CSV")
    board = pd.read_csv(csv)
    assert board["run_id"].tolist() == [made["wb-emb-high"], made["wb-emb-low"]], board  # ranked by MRR
    high = board.iloc[0]
    assert (high["cost_usd"], high["tokens"], high["latency_p50"]) == (0.0105, 1200, 0.34), high.to_dict()
    assert abs(high["latency_p95"] - 1.02) < 1e-9
    _clean(driver, lang)

    _click_key(driver, "runs_lb_diff")  # A = rank 1, B = rank 2 by default
    try:
        wait(driver, lambda d: script_idle(d) and f"{WORSE[lang]}: 6" in _main_text(d), 120, "the per-item diff")
    finally:
        _shot(driver, j, lang, "2-diff")
    _clean(driver, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_a_tier2_item_shows_its_trace_tree(driver: Any, app_url: str, demo_engine: Any, lang: str) -> None:
    from tests.support.plans import run as run_plan

    j = "trace"
    done = runs.list_runs(demo_engine, tier="tier2", status="done", limit=1)
    run_id = done[0].id if done else run_plan(demo_engine, "tier2", {"dataset": "demo_golden", "limit": 2,
                                                                        "offline": True}).run.id
    driver.get(f"{app_url}/tier2_generation?lang={lang}&run={run_id}")
    wait_rendered(driver, "Tier 2")
    try:
        wait(driver, lambda d: script_idle(d) and TRACE[lang] in _main_text(d), 120, "the item's trace")
    finally:
        _shot(driver, j, lang, "1-trace")
    trace = driver.find_elements(*by('[data-testid="stMain"] [data-testid="stExpander"] summary'))
    assert len(trace) >= 2, [s.text for s in trace]  # the item's steps, each an expander
    assert not driver.find_elements(*by('[data-testid="stMain"] [data-testid="stJson"]')), "a JSON dump"
    _clean(driver, lang)
