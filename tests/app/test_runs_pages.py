"""AppTest of the Runs and Baselines pages: table, filters, comparison with verdicts, report, baselines."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from voproshalych_eval.config import PROJECT_ROOT
from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.engine import runs
from voproshalych_eval.metrics.statistics import summarize

APP = str(PROJECT_ROOT / "app.py")


@pytest.fixture(scope="module", autouse=True)
def _forget_our_runs(engine: Any) -> Iterator[None]:
    """Delete the runs this module created: tier pages read the latest run of their tier, and these
    synthetic ones are not what those pages expect."""
    from sqlalchemy import text as sql

    with engine.connect() as conn:
        start = conn.execute(sql("SELECT coalesce(max(id), 0) FROM eval.runs")).scalar()
    yield
    with engine.begin() as conn:
        conn.execute(sql("DELETE FROM eval.runs WHERE id > :start"), {"start": start})


@pytest.fixture(scope="module")
def two_runs(engine: Any) -> tuple[int, int, str]:
    dataset = "apptest_" + uuid.uuid4().hex[:6]
    ids = []
    for shift in (0.0, 0.3):
        vals = [min(1.0, (i % 7) / 10 + shift) for i in range(30)]
        run = runs.create_run(engine, "tier1", models={"embedder": f"emb-{shift}"}, dataset_name=dataset,
                              dataset_hash=(dataset * 64)[:64], n_items_total=30, label=f"apptest {shift}")
        runs.record_items(engine, run.id, [
            (f"q{i:02d}", {"question": f"Как оформить справку {i}?", "metrics_chunk": {"mrr": v}}, "done", None)
            for i, v in enumerate(vals)
        ])
        runs.finish_run(engine, run.id, {"chunk": {"mrr": summarize(vals, n_resamples=200).to_dict()}})
        ids.append(run.id)
    return ids[0], ids[1], dataset


def _open(page: str, lang: str = "en") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["ui_language"] = lang
    at.run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("lang", ["ru", "en"])
def test_runs_page_compares_two_runs(engine: Any, two_runs: tuple[int, int, str], lang: str) -> None:
    a, b, dataset = two_runs
    at = _open("pages/runs.py", lang)
    at.multiselect(key="runs_f_dataset").set_value([dataset]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="runs_cmp_a").value == a and at.selectbox(key="runs_cmp_b").value == b
    at.button(key="runs_cmp_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    metrics = {m.label: m.value for m in at.metric}
    better = "Значимо лучше" if lang == "ru" else "Significantly better"
    assert metrics[better] == "1"
    tables = [d.value for d in at.dataframe]
    cmp_table = next(t for t in tables if "verdict" in t.columns)
    from voproshalych_eval.metrics import catalog

    row = cmp_table.set_index("metric").loc[catalog.label("chunk.mrr", lang)]  # metrics by their catalog label
    assert ("лучше" if lang == "ru" else "better") in row["verdict"] and row["p_value"] < 0.05
    diff = next(t for t in tables if "change" in t.columns)
    assert diff["text"].str.startswith("Как оформить справку").all() and len(diff) > 0


def test_runs_page_filters_and_report(engine: Any, two_runs: tuple[int, int, str]) -> None:
    a, b, dataset = two_runs
    at = _open("pages/runs.py")
    at.multiselect(key="runs_f_dataset").set_value([dataset]).run()
    at.multiselect(key="runs_f_status").set_value(["failed"]).run()
    assert not at.exception
    assert any("No run matches" in i.value for i in at.info)
    at.multiselect(key="runs_f_status").set_value(["done"]).run()
    at.selectbox(key="runs_rep_run").set_value(a).run()
    assert not at.exception, [e.value for e in at.exception]
    labels = {m.label: m.value for m in at.metric}
    assert labels["Items: done / failed"] == "30 / 0"
    assert any(s in labels["Verdict"] for s in ("good", "attention", "critical"))
    assert at.selectbox(key="runs_h_metric").value == "chunk.mrr"


def test_baselines_page_shows_rule_and_saves(engine: Any, two_runs: tuple[int, int, str]) -> None:
    at = _open("pages/baselines.py")
    assert any("Status rule" in m.value for m in at.markdown)
    at.button(key="baselines_save").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Saved" in s.value for s in at.success)
    bl.set_baseline(engine, bl.Baseline("tier1", "mrr", 0.95, 0.05, "test"))
    try:
        at = _open("pages/baselines.py")
        assert bl.get_baseline(engine, "tier1", "mrr").value == 0.95
        at.button(key="baselines_reset").click().run()
        assert not at.exception, [e.value for e in at.exception]
    finally:
        bl.reset_defaults(engine)
    assert bl.get_baseline(engine, "tier1", "mrr").value == 0.6


def test_runs_page_leaderboard_ranks_the_configurations(engine: Any, two_runs: tuple[int, int, str]) -> None:
    """The leaderboard view: one row per configuration of the dataset, ranked by the chosen metric, with the
    cost, tokens and latency columns beside the value."""
    a, b, dataset = two_runs
    at = _open("pages/runs.py")
    at.multiselect(key="runs_f_dataset").set_value([dataset]).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="runs_lb_metric").value == "chunk.mrr"
    board = next(d.value for d in at.dataframe if "rank" in d.value.columns)
    assert board["run_id"].tolist() == [b, a]  # the +0.3 run scores higher
    assert {"cost_usd", "tokens", "latency_p50", "latency_p95"} <= set(board.columns)


def test_runs_page_item_trace_is_a_tree_not_a_json_dump(engine: Any, two_runs: tuple[int, int, str]) -> None:
    a, b, dataset = two_runs
    at = _open("pages/runs.py")
    at.multiselect(key="runs_f_dataset").set_value([dataset]).run()
    at.selectbox(key="runs_rep_run").set_value(a).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="runs_trace_item").value == "q00"
    labels = [e.label for e in at.expander]
    assert any(lbl.startswith("Metrics · chunks") for lbl in labels), labels  # the nested step, in words
    assert not at.get("json"), "no raw JSON tree"
    assert any("Как оформить справку 0?" in m.value for m in at.markdown)  # the item's plain fields, as text
