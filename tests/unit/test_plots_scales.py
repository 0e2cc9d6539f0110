"""Charts put one catalog scale on one axis; history lines never join two configurations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from voproshalych_eval.plots import generation, retrieval
from voproshalych_eval.plots import runs as run_plots
from voproshalych_eval.plots.layout import metric_text


def _labels(*keys: str, item_field: bool = False) -> list[str]:
    """What the chart shows for metric keys: their catalog labels (English by default)."""
    return sorted(metric_text(k, "en", item_field=item_field) for k in keys)


def _agg(v: float) -> dict:
    return {"value": v, "n": 10, "n_failed": 0, "ci_low": v * 0.9, "ci_high": min(v * 1.1, v + 1)}


def _axis_traces(fig) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    """Value-axis name -> the metric names plotted on it."""
    out: dict[str, list[str]] = {}
    for t in fig.data:
        names = list(t.x) if t.orientation != "h" and t.type in ("bar", "box") and t.x is not None else None
        if t.type == "box":
            names = [t.name]
        if t.type == "scatter":
            names = list(t.y)
        out.setdefault(t.yaxis if t.type in ("bar", "box") else t.xaxis, []).extend(names or [])
    return out


def test_metric_intervals_one_panel_per_scale() -> None:
    m = {"avg_faithfulness": _agg(0.8), "avg_answer_correctness": _agg(4.2), "avg_bleu": _agg(30.0),
         "avg_rougeL_f": _agg(0.4)}
    fig = generation.metric_intervals(m, list(m))
    axes = _axis_traces(fig)
    assert sorted(map(sorted, axes.values())) == sorted([_labels("avg_answer_correctness"), _labels("avg_bleu"),
                                                         _labels("avg_faithfulness", "avg_rougeL_f")])
    ranges = {fig.layout[f"yaxis{i}" if i > 1 else "yaxis"].range for i in (1, 2, 3)}
    assert ranges == {(0.0, 1.05), (0.8, 5.2), (0.0, 105.0)}


def test_run_metrics_figure_keeps_counts_off_the_share_axis() -> None:
    mf = pd.DataFrame([{"metric": k, **_agg(v)} for k, v in
                       (("cache_hit_rate", 0.8), ("n_turns", 120.0), ("latency_p95", 2.5), ("context_preservation", 0.7))])
    axes = _axis_traces(run_plots.metrics_figure(mf))
    assert sorted(map(sorted, axes.values())) == [["cache_hit_rate", "context_preservation"], ["latency_p95"], ["n_turns"]]


def test_score_distributions_by_item_field_scale() -> None:
    df = pd.DataFrame({"faithfulness": [1.0, 0.5], "answer_correctness": [5, 3], "rougeL_f": [0.2, 0.4]})
    axes = _axis_traces(generation.score_distributions(df, ["faithfulness", "answer_correctness", "rougeL_f"]))
    assert sorted(map(sorted, axes.values())) == sorted([_labels("answer_correctness", item_field=True),
                                                         _labels("faithfulness", "rougeL_f", item_field=True)])


def test_comparison_bars_facet_by_scale() -> None:
    df = pd.DataFrame([{"config": c, "metric": k, "value": v, "ci_low": None, "ci_high": None}
                       for c in ("a", "b") for k, v in (("mrr", 0.5), ("hit_rate@5", 0.7))])
    fig = retrieval.comparison_bars(df)
    assert {t.yaxis for t in fig.data} == {"y"}  # all ranking metrics share the 0–1 axis
    df2 = pd.concat([df, pd.DataFrame([{"config": "a", "metric": "n_unanswerable", "value": 4, "ci_low": None,
                                        "ci_high": None}])])
    assert {t.yaxis for t in retrieval.comparison_bars(df2).data} == {"y", "y2"}


def test_history_draws_one_line_per_configuration() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    hist = pd.DataFrame([
        {"run_id": i, "started_at": t0 + timedelta(days=i), "value": v, "ci_low": None, "ci_high": None, "config": c}
        for i, (v, c) in enumerate([(0.6, "vector · e5"), (0.3, "fts"), (0.62, "vector · e5"), (0.31, "fts")])])
    fig = run_plots.history_figure(hist, metric_label="MRR")
    assert sorted(len(t.x) for t in fig.data) == [2, 2]
    assert {t.name for t in fig.data} == {"vector · e5", "fts"}


def test_config_label_separates_retrievers_and_models() -> None:
    from voproshalych_eval.engine.runs import Run, config_label

    a = Run(1, "tier1", "done", dataset_name="g", params={"retriever": "vector", "k": 10}, models={"embedder": "e5"})
    b = Run(2, "tier1", "done", dataset_name="g", params={"retriever": "fts", "k": 10}, models={})
    c = Run(3, "tier1", "done", dataset_name="g", params={"retriever": "vector", "k": 10}, models={"embedder": "use"})
    assert len({config_label(r) for r in (a, b, c)}) == 3
    assert config_label(a) == config_label(Run(4, "tier1", "done", dataset_name="g", params={"retriever": "vector",
                                                                                           "k": 10}, models={"embedder": "e5"}))


@pytest.mark.parametrize(("tier", "base", "changed"), [
    ("tier1", {"retriever": "vector", "k": 10, "cutoffs": [1, 3, 5, 10]}, {"cutoffs": [1, 3]}),
    ("tier2", {"stem": False, "max_context_chars": None}, {"stem": True}),
    ("tier2", {"max_context_chars": 4000}, {"max_context_chars": 2000}),
    ("tier2", {"system_prompt": "Отвечай кратко. " * 10}, {"system_prompt": "Отвечай подробно. " * 10}),
    ("tier3", {"mode": "api", "api": {"url": "http://bot/a", "method": "GET"}}, {"api": {"url": "http://bot/b"}}),
    ("tier3", {"mode": "api", "api_profile": "prod"}, {"api_profile": "staging"}),
    ("tier3", {"threshold": 0.5}, {"threshold": 0.7}),
    ("judge_metrics", {"metric": "rubrics_score", "aggregate": "average"}, {"aggregate": "min"}),
    ("judge_metrics", {"metric": "aspect_critic", "quorum": None}, {"quorum": "all"}),
    ("judge_metrics", {"metric": "aspect_critic", "vote_quorum": None}, {"vote_quorum": "any"}),
    ("judge_metrics", {"metric": "aspect_critic", "config": {"definition": "Ответ вежлив?"}},
     {"config": {"definition": "Ответ краток?"}}),
    ("judge_metrics", {"metric": "semantic_similarity", "config": {"embedders": ["e5"]}},
     {"config": {"embedders": ["e5", "use"]}}),
])
def test_history_never_joins_runs_that_differ_in_a_configuring_parameter(
        tier: str, base: dict[str, Any], changed: dict[str, Any]) -> None:
    from voproshalych_eval.engine.runs import Run, config_label

    a = Run(1, tier, "done", dataset_name="g", params=base, models={"judge": ["m"]})
    b = Run(2, tier, "done", dataset_name="g", params={**base, **changed}, models={"judge": ["m"]})
    same = Run(3, tier, "done", dataset_name="g", params=dict(base), models={"judge": ["m"]})
    assert config_label(a) != config_label(b)
    assert config_label(a) == config_label(same)
    assert len(config_label(b)) < 300  # long values (a system prompt) are hashed, not spelled out


@pytest.mark.parametrize(("correction", "name"), [("holm", "Holm"), ("fdr_bh", "Benjamini–Hochberg")])
def test_diff_chart_hover_shows_the_adjusted_p_and_names_the_correction(correction: str, name: str) -> None:
    df = pd.DataFrame([{"metric": "mrr", "paired_mean_diff": 0.1, "ci_low": 0.05, "ci_high": 0.15, "p_value": 0.01,
                        "p_adjusted": 0.03, "effect_size": 0.9, "effect_ci_low": 0.5, "effect_ci_high": 1.3,
                        "n_pairs": 40, "verdict": "better"}])
    trace = run_plots.diff_figure(df, correction=correction).data[0]
    assert f"p ({name}) = %{{customdata[2]" in trace.hovertemplate and "d_z" in trace.hovertemplate
    assert list(trace.customdata[0]) == [0.01, 40, 0.03, 0.9, 0.5, 1.3]
