"""Run registry: comparison with paired tests and per-item diff, stale runs, filters, exports, baselines, CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from voproshalych_eval import reports
from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.engine import runs
from voproshalych_eval.metrics import catalog
from voproshalych_eval.metrics.statistics import summarize


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


def _tier1_like(engine: Any, values: list[float | None], *, dataset: str, embedder: str, failed: set[int] = frozenset()) -> int:
    """A finished Tier 1-like run: per-query ``metrics_chunk.mrr`` items and ``chunk.mrr`` aggregates."""
    run = runs.create_run(engine, "tier1", models={"embedder": embedder}, params={"k": 10, "api_key": "sk-secret"},
                          dataset_name=dataset, dataset_hash=(dataset * 64)[:64], n_items_total=len(values))
    items = []
    for i, v in enumerate(values):
        if i in failed:
            items.append((f"q{i:03d}", {"question": f"Вопрос номер {i}?"}, "failed", "timeout"))
        else:
            items.append((f"q{i:03d}", {"question": f"Вопрос номер {i}?", "answerable": True,
                                        "metrics_chunk": {"mrr": v, "hit_rate@5": float(v > 0.3)}}, "done", None))
    runs.record_items(engine, run.id, items)
    ok = [v for i, v in enumerate(values) if i not in failed]
    runs.finish_run(engine, run.id, {
        "chunk": {"mrr": summarize(ok + [None] * len(failed), n_resamples=200).to_dict(),
                  "hit_rate@5": summarize([float(v > 0.3) for v in ok], n_resamples=200).to_dict()},
        "n_evaluated": {"chunk": len(ok)},
    })
    return run.id


@pytest.fixture(scope="module")
def pair(engine: Any) -> tuple[int, int, str]:
    rng = np.random.default_rng(7)
    dataset = "cmp_" + uuid.uuid4().hex[:6]
    base = rng.uniform(0.0, 0.6, size=40)
    a = _tier1_like(engine, [float(x) for x in base], dataset=dataset, embedder="model-a")
    better = np.clip(base + 0.3, 0, 1)
    better[0] = 0.0  # one item gets worse
    b = _tier1_like(engine, [float(x) for x in better], dataset=dataset, embedder="model-b", failed={5})
    return a, b, dataset


def test_compare_verdict_and_item_diff(engine: Any, pair: tuple[int, int, str]) -> None:
    a, b, _ = pair
    cmp = runs.compare_runs(engine, a, b)
    row = cmp.metrics.set_index("metric").loc["chunk.mrr"]
    assert row["item_field"] == "metrics_chunk.mrr"
    assert row["verdict"] == "better" and bool(row["significant"]) and row["p_value"] < 0.05
    assert row["p_adjusted"] < 0.05 and row["p_adjusted"] >= row["p_value"] and cmp.correction == "holm"
    assert row["effect_size"] > 0.8 and row["effect_ci_low"] <= row["effect_size"] <= row["effect_ci_high"]
    # Holm over every tested metric: m tests, the smallest raw p multiplied by m (then capped/monotone)
    tested = cmp.metrics[cmp.metrics["p_value"].notna()]
    from statsmodels.stats.multitest import multipletests

    assert np.allclose(tested["p_adjusted"], multipletests(tested["p_value"], method="holm")[1])
    assert row["n_pairs"] == 39 and row["n_unpaired"] == 1  # the failed item is left out of the test
    assert row["ci_low"] <= row["paired_mean_diff"] <= row["ci_high"] and row["ci_low"] > 0
    assert row["n_worse"] == 1 and row["n_better"] == 38
    assert cmp.warnings == []
    diff = cmp.item_diff("chunk.mrr")
    first = diff.iloc[0]
    assert first["item_key"] == "q000" and first["change"] == "worse" and first["text"] == "Вопрос номер 0?"
    assert diff.set_index("item_key").loc["q005", "change"] == "broken (failed in B)"
    assert (diff["change"] == "better").sum() == 38
    # the reverse comparison calls the same difference "worse"
    rev = runs.compare_runs(engine, b, a).metrics.set_index("metric").loc["chunk.mrr"]
    assert rev["verdict"] == "worse"
    # item-only properties identical in both runs are not listed as metrics
    assert "item.answerable" not in set(cmp.metrics["metric"])
    json.dumps(cmp.to_dict())


def test_compare_refuses_other_dataset_unless_forced(engine: Any, pair: tuple[int, int, str]) -> None:
    """One policy on runs that do not pair up: refuse and say why; ``force`` compares with the reason kept."""
    a, _, _ = pair
    other = _tier1_like(engine, [0.5] * 10, dataset="other_" + uuid.uuid4().hex[:6], embedder="model-c")
    with pytest.raises(runs.NotComparable, match="different datasets"):
        runs.compare_runs(engine, a, other)
    cmp = runs.compare_runs(engine, a, other, force=True)
    assert any("different datasets" in w for w in cmp.warnings)
    tier2 = runs.create_run(engine, "tier2", dataset_name="t2_" + uuid.uuid4().hex[:6])
    runs.finish_run(engine, tier2.id, {})
    with pytest.raises(runs.NotComparable, match="different tiers"):
        runs.compare_runs(engine, a, tier2.id)


def test_lower_is_better_direction(engine: Any) -> None:
    ds = "lat_" + uuid.uuid4().hex[:6]
    ids = []
    for shift in (0.0, -0.2):
        run = runs.create_run(engine, "tier3", dataset_name=ds, dataset_hash=(ds * 64)[:64])
        runs.record_items(engine, run.id, [(f"i{i}", {"euclidean_distance": 0.8 + shift + i / 100}, "done", None)
                                           for i in range(20)])
        runs.finish_run(engine, run.id, {"avg_euclidean_distance": 0.8 + shift})
        ids.append(run.id)
    row = runs.compare_runs(engine, *ids).metrics.set_index("metric").loc["avg_euclidean_distance"]
    assert row["direction"] == "lower" and row["verdict"] == "better"


def test_stale_runs_are_interrupted_and_filters(engine: Any, pair: tuple[int, int, str]) -> None:
    stale = runs.create_run(engine, "tier2", dataset_name="stale_ds", models={"generator": "gen-x"})
    fresh = runs.create_run(engine, "tier2", dataset_name="stale_ds", models={"generator": "gen-x"})
    with engine.begin() as conn:
        conn.execute(text("UPDATE eval.runs SET heartbeat_at = now() - make_interval(secs => :s) WHERE id = :r"),
                     {"r": stale.id, "s": runs.STALE_AFTER_SECONDS + 5})
    # one staleness rule: an old heartbeat is interrupted unless a job of this process executes the run
    assert runs.get_run(engine, stale.id).state() == "interrupted"
    assert runs.get_run(engine, fresh.id).state() == "running"
    assert runs.get_run(engine, stale.id).state(alive=lambda rid: rid == stale.id) == "running"
    assert stale.id in {r.id for r in runs.stale_runs(engine)}
    assert fresh.id not in {r.id for r in runs.stale_runs(engine)}
    assert stale.id not in {r.id for r in runs.stale_runs(engine, alive=lambda rid: rid == stale.id)}
    interrupted = {r.id for r in runs.list_runs(engine, status="interrupted")}
    running = {r.id for r in runs.list_runs(engine, status="running")}
    assert stale.id in interrupted and stale.id not in running and fresh.id in running
    assert {r.id for r in runs.list_runs(engine, model="GEN-X")} == {stale.id, fresh.id}
    a, b, dataset = pair
    assert {r.id for r in runs.list_runs(engine, dataset_name=dataset)} == {a, b}
    assert {r.id for r in runs.list_runs(engine, tier=["tier1"], dataset_name=[dataset], status=["done"])} == {a, b}
    today = pd.Timestamp.now(tz="UTC").date()
    assert a in {r.id for r in runs.list_runs(engine, since=today, until=today)}
    assert not runs.list_runs(engine, since=today + pd.Timedelta(days=1), dataset_name=dataset)
    runs.fail_run(engine, stale.id, "test")
    runs.fail_run(engine, fresh.id, "test")


def test_exports_are_complete_and_self_contained(engine: Any, pair: tuple[int, int, str]) -> None:
    _, b, dataset = pair
    data = runs.export_data(engine, b)
    assert data["run"]["dataset_hash"] == (dataset * 64)[:64] and data["run"]["models"] == {"embedder": "model-b"}
    assert "api_key" not in json.dumps(data["run"]["params"])  # secrets never stored
    assert data["run"]["code_version"] is not None or data["run"]["code_version"] is None  # recorded when git is there
    assert data["run"]["n_items_failed"] == 1 and data["failures"] == [{"item_key": "q005", "error": "timeout"}]
    mrr = next(m for m in data["metrics"] if m["metric"] == "chunk.mrr")
    assert mrr["n_failed"] == 1 and mrr["ci_low"] <= mrr["value"] <= mrr["ci_high"] and mrr["baseline"] == 0.6
    assert data["baseline_status"]["status"] in bl.STATUSES
    assert len(data["items"]) == 40

    html = reports.render(data, "html")
    assert html.startswith("<!DOCTYPE html>") and "<script src=" not in html
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=", html)  # nothing loaded from outside
    assert "Plotly" in html and "Вопрос номер 0?" in html and "model-b" in html
    md = reports.render(data, "md", lang="ru")
    assert md.startswith("# Отчёт о запуске #") and "`chunk.mrr`" in md and "Правило статуса" in md
    assert "| MRR · чанки |" in md  # the catalog label in the report language
    # a readable summary first (verdict, what, configuration), the hashes and parameters last
    head, _, tail = md.partition("## Технические подробности")
    assert "## Кратко" in head and "Вердикт относительно базовых уровней" in head and "Tier 1 · Поиск" in head
    assert data["run"]["dataset_hash"] not in head and data["run"]["dataset_hash"] in tail
    assert "Run report" not in md and "Aggregates" not in md  # no English headings in the Russian report
    en = reports.render(data, "md", lang="en")
    assert en.startswith("# Run report #") and "## Summary" in en and "Кратко" not in en
    assert json.loads(reports.render(data, "json"))["run"]["id"] == b
    items_csv = pd.read_csv(pd.io.common.StringIO(reports.render(data, "csv")))
    assert len(items_csv) == 40 and "metrics_chunk.mrr" in items_csv.columns and (items_csv["run_id"] == b).all()
    metrics_csv = pd.read_csv(pd.io.common.StringIO(reports.render(data, "csv", part="metrics")))
    assert {"metric", "value", "ci_low", "ci_high", "n_failed", "baseline", "status"} <= set(metrics_csv.columns)


def test_baselines_editable_and_statuses(engine: Any) -> None:
    bl.ensure_defaults(engine)
    frame = bl.baselines_frame(engine)
    assert {"tier1", "tier2", "tier3", "judge", "judge_pipeline", "ux", "real_users", "tier0"} <= set(frame["tier"])
    assert set(frame["direction"]) <= {"higher", "lower"} and set(frame["scale"]) <= set(catalog.SCALES)
    correctness = frame.set_index(["tier", "metric"]).loc[("tier2", "avg_answer_correctness")]
    assert correctness["scale"] == "1–5" and correctness["value"] > 1  # never a 0–1 baseline for a 1–5 metric

    assert bl.metric_status(engine, "tier1", "mrr", 0.7) == "good"
    assert bl.metric_status(engine, "tier1", "mrr", 0.57) == "attention"
    assert bl.metric_status(engine, "tier1", "chunk.mrr", 0.4) == "critical"
    assert bl.metric_status(engine, "tier1", "no_such_metric", 0.4) is None
    assert bl.metric_status(engine, "judge", "error_rate", 0.01) == "good"
    assert bl.metric_status(engine, "judge", "error_rate", 0.04) == "attention"
    assert bl.metric_status(engine, "judge", "error_rate", 0.2) == "critical"

    edited = frame.copy()
    edited.loc[(edited["tier"] == "tier1") & (edited["metric"] == "mrr"), "value"] = 0.9
    edited = pd.concat([edited, pd.DataFrame([{"tier": "tier1", "metric": "map", "value": 0.5,
                                               "attention_margin": 0.1, "note": None}])])
    edited = edited[~((edited["tier"] == "ux") & (edited["metric"] == "cache_false_hit_rate"))]
    try:
        bl.save_baselines(engine, edited)
        assert bl.metric_status(engine, "tier1", "mrr", 0.7) == "critical"
        assert bl.metric_status(engine, "tier1", "map", 0.45) == "attention"
        assert bl.get_baseline(engine, "ux", "cache_false_hit_rate") is None
        bl.ensure_defaults(engine)  # a deleted default stays deleted
        assert bl.get_baseline(engine, "ux", "cache_false_hit_rate") is None

        bad = edited.copy()
        bad.loc[bad["metric"] == "avg_answer_correctness", "value"] = 7.0
        with pytest.raises(bl.BaselineError, match="outside the scale 1–5"):
            bl.save_baselines(engine, bad)
        bad = edited.copy()
        bad.loc[bad["metric"] == "mrr", "direction"] = "lower"  # read only: the catalog's direction stays
        bl.save_baselines(engine, bad)
        assert bl.get_baseline(engine, "tier1", "mrr").direction == "higher"
        for metric, value, why in (("n_turns", 5.0, "informational"), ("no_such_metric", 0.5, "not in the metric catalog"),
                                   ("avg_bleu", 0.3 * 1000, "outside the scale 0–100")):
            bad = pd.concat([edited, pd.DataFrame([{"tier": "tier2", "metric": metric, "value": value,
                                                    "attention_margin": 0.1}])])
            with pytest.raises(bl.BaselineError, match=why):
                bl.save_baselines(engine, bad)
        assert bl.get_baseline(engine, "tier1", "mrr").value == 0.9  # a refused save changes nothing
    finally:
        bl.reset_defaults(engine)
    assert bl.get_baseline(engine, "tier1", "mrr").value == 0.6
    assert bl.get_baseline(engine, "ux", "cache_false_hit_rate") is not None


def test_overall_run_status_rule() -> None:
    table = list(bl.DEFAULT_BASELINES)

    def agg(v: float, n: int = 50) -> dict[str, Any]:
        return {"value": v, "n": n, "n_failed": 0, "ci_low": v, "ci_high": v}

    good = {"chunk": {"mrr": agg(0.7), "hit_rate@5": agg(0.9)}, "url": {"mrr": agg(0.8)}}
    assert bl.evaluate_run(table, "tier1", "done", good).status == "good"
    attention = {"chunk": {"mrr": agg(0.58), "hit_rate@5": agg(0.9)}}
    assert bl.evaluate_run(table, "tier1", "done", attention).status == "attention"
    critical = {"chunk": {"mrr": agg(0.7)}, "url": {"mrr": agg(0.2)}}  # URL level is judged too
    assert bl.evaluate_run(table, "tier1", "done", critical).status == "critical"
    assert bl.evaluate_run(table, "tier1", "running", good).status == "insufficient"
    assert bl.evaluate_run(table, "tier1", "done", {"chunk": {"mrr": agg(0.1, n=3)}}).status == "insufficient"
    assert bl.evaluate_run(table, "tier1", "done", {"something_else": 1.0}).status == "insufficient"
    assert bl.evaluate_run(table, "tier2", "done", {"avg_answer_correctness": agg(4.2)}).status == "good"


def test_cli_runs(engine: Any, pair: tuple[int, int, str], tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from voproshalych_eval.cli import main

    def _cli(*args: str) -> dict[str, Any]:
        capsys.readouterr()
        assert main(list(args)) == 0
        return json.loads(capsys.readouterr().out)

    a, b, dataset = pair
    # the real entry point once, in a subprocess
    out = subprocess.run([sys.executable, "-m", "voproshalych_eval.cli", "runs", "list", "--dataset", dataset, "--json"],
                         capture_output=True, text=True, timeout=180, check=False)
    assert out.returncode == 0, out.stderr
    assert {r["id"] for r in json.loads(out.stdout)["runs"]} == {a, b}
    listed = _cli("runs", "list", "--dataset", dataset, "--status", "done", "--tier", "tier1", "--json")
    assert {r["id"] for r in listed["runs"]} == {a, b}
    shown = _cli("runs", "show", str(b), "--json")
    assert shown["run"]["id"] == b and shown["baseline_status"]["status"] in bl.STATUSES and "items" not in shown
    cmp = _cli("runs", "compare", str(a), str(b), "--metric", "chunk.mrr", "--json")
    row = next(m for m in cmp["metrics"] if m["metric"] == "chunk.mrr")
    assert row["verdict"] == "better" and cmp["item_diff"][0]["change"] == "worse"
    out = tmp_path / "report.html"
    info = _cli("runs", "export", str(b), "--format", "html", "--out", str(out), "--json")
    assert info["bytes"] > 10_000 and "<script src=" not in out.read_text()
    md = _cli("runs", "export", str(b), "--format", "md", "--lang", "en", "--json")
    assert md["content"].startswith("# Run report #")
    md = _cli("runs", "export", str(b), "--format", "md", "--json")  # the configured language: Russian by default
    assert md["content"].startswith("# Отчёт о запуске #")
    exported = _cli("runs", "export", str(b), "--format", "json")
    assert exported["run"]["id"] == b and len(exported["items"]) == 40
    capsys.readouterr()
    assert main(["runs", "show", "99999999"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["runs", "show", str(b), "--lang", "en"]) == 0  # the human output: catalog labels, values by kind, partial column
    shown_text = capsys.readouterr().out
    mrr_line = next(line for line in shown_text.splitlines() if line.startswith("MRR · chunks"))
    value = runs.get_run(engine, b).metrics["chunk"]["mrr"]["value"]
    assert f"{value:.3f}" in mrr_line and "0–1 ↑" in mrr_line and " part " in shown_text
    count_line = next(line for line in shown_text.splitlines() if line.startswith("Chunk level · in the means"))
    assert count_line.split()[6] == "39"  # a count is a whole number, never 39.0000
    assert main(["runs", "compare", str(a), str(b), "--lang", "en"]) == 0  # the human output
    human = capsys.readouterr().out
    assert "MRR · chunks" in human and "better" in human and "Вопрос номер" in human
    # the effect size with its CI, and the correction named as used
    assert "Holm" in human and re.search(r"\d\.\d\d \[-?\d+\.\d\d; -?\d+\.\d\d\]", human)


@pytest.mark.slow
def test_two_real_tier1_runs_on_the_demo(demo_engine: Any) -> None:
    """The issue's "done when": two embedders on the demo golden set -> significance verdict + per-item diff."""
    from tests.support.plans import tier1 as run_tier1

    a = run_tier1(demo_engine, "demo_golden", retriever="vector", embedder="use-multilingual", k=10, n_resamples=200)
    b = run_tier1(demo_engine, "demo_golden", retriever="vector", embedder="e5-small", k=10, n_resamples=200)
    cmp = runs.compare_runs(demo_engine, a.run_id, b.run_id, n_resamples=2000)
    assert cmp.warnings == []
    rows = cmp.metrics.set_index("metric")
    mrr = rows.loc["chunk.mrr"]
    assert mrr["item_field"] == "metrics_chunk.mrr" and mrr["n_pairs"] > 100
    assert mrr["verdict"] in ("better", "worse", "no significant difference")
    assert mrr["ci_low"] <= mrr["paired_mean_diff"] <= mrr["ci_high"]
    assert (mrr["verdict"] != "no significant difference") == (mrr["p_adjusted"] < 0.05)  # Holm-adjusted
    assert mrr["p_adjusted"] >= mrr["p_value"]
    assert np.isclose(mrr["a"], a.metrics["chunk"]["mrr"]) and np.isclose(mrr["b"], b.metrics["chunk"]["mrr"])
    assert "url.mrr" in rows.index
    diff = cmp.item_diff("chunk.mrr")
    assert len(diff) == a.n_questions and diff["text"].notna().all()
    assert {"better", "worse"} & set(diff["change"])
    changed = diff[diff["change"].isin(["better", "worse"])]
    assert (changed["diff"] != 0).all()


def _finished(engine: Any, tier: str, ds: str, items: list[dict[str, Any]], metrics: dict[str, Any]) -> int:
    run = runs.create_run(engine, tier, dataset_name=ds, dataset_hash=(ds * 64)[:64], n_items_total=len(items))
    runs.record_items(engine, run.id, [(f"i{i:03d}", r, "done", None) for i, r in enumerate(items)])
    runs.finish_run(engine, run.id, metrics)
    return run.id


def test_compare_pairs_by_the_catalog_item_field_with_the_aggregate_direction(engine: Any) -> None:
    """Tier 3 ``pass_rate`` pairs with ``passed``, ``avg_rag_judge_score`` with ``rag_score``, the pipeline's
    ``accuracy`` with ``correct``, a judge metric's ``avg_*`` with ``score`` — and a drop is "worse"."""
    n = 30
    ds = "t3_" + uuid.uuid4().hex[:6]
    ids = []
    for good in (True, False):
        items = [{"passed": good or i % 3 == 0, "rag_score": (0.9 if good else 0.2) + i / 1000} for i in range(n)]
        passed = [float(r["passed"]) for r in items]
        ids.append(_finished(engine, "tier3", ds, items, {
            "pass_rate": summarize(passed, n_resamples=100).to_dict(),
            "avg_rag_judge_score": summarize([r["rag_score"] for r in items], n_resamples=100).to_dict()}))
    rows = runs.compare_runs(engine, *ids, n_resamples=500).metrics.set_index("metric")
    assert rows.loc["pass_rate", "item_field"] == "passed" and rows.loc["pass_rate", "direction"] == "higher"
    assert rows.loc["pass_rate", "verdict"] == "worse" and rows.loc["pass_rate", "n_worse"] == 20
    assert rows.loc["avg_rag_judge_score", "item_field"] == "rag_score"
    assert rows.loc["avg_rag_judge_score", "verdict"] == "worse"
    assert not {"item.passed", "item.rag_score"} & set(rows.index)  # paired under the aggregate, not on their own

    ds = "jp_" + uuid.uuid4().hex[:6]
    ids = []
    for good in (True, False):
        items = [{"correct": good or i % 4 == 0} for i in range(n)]
        ids.append(_finished(engine, "judge_pipeline", ds, items, {
            "accuracy": sum(r["correct"] for r in items) / n}))
    row = runs.compare_runs(engine, *ids, n_resamples=500).metrics.set_index("metric").loc["accuracy"]
    assert row["item_field"] == "correct" and row["verdict"] == "worse"

    ds = "jm_" + uuid.uuid4().hex[:6]
    ids = []
    for score in (5.0, 2.0):
        items = [{"score": score - (i % 2), "score_norm": (score - 1 - i % 2) / 4} for i in range(n)]
        ids.append(_finished(engine, "judge_metrics", ds, items, {
            "avg_rubrics_score": summarize([r["score"] for r in items], n_resamples=100).to_dict(),
            "avg_rubrics_score_norm": summarize([r["score_norm"] for r in items], n_resamples=100).to_dict()}))
    rows = runs.compare_runs(engine, *ids, n_resamples=500).metrics.set_index("metric")
    assert rows.loc["avg_rubrics_score", "item_field"] == "score"
    assert rows.loc["avg_rubrics_score_norm", "item_field"] == "score_norm"
    assert set(rows.loc[["avg_rubrics_score", "avg_rubrics_score_norm"], "verdict"]) == {"worse"}


def test_a_metric_without_direction_changes_up_or_down_never_better_or_worse(engine: Any) -> None:
    """Direction ``none`` (an uncatalogued per-item field here) is never read as "lower is better"."""
    ds = "none_" + uuid.uuid4().hex[:6]
    ids = [_finished(engine, "tier3", ds, [{"answer_chars": 100 + shift + i} for i in range(20)], {})
           for shift in (0, 50)]
    cmp = runs.compare_runs(engine, *ids, n_resamples=500)
    row = cmp.metrics.set_index("metric").loc["item.answer_chars"]
    assert row["direction"] == "none" and row["verdict"] == "changed"
    assert row["n_up"] == 20 and row["n_down"] == 0
    assert pd.isna(row["n_better"]) and pd.isna(row["n_worse"])
    assert set(cmp.item_diff("answer_chars")["change"]) == {"up"}
