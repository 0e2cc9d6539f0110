"""The metric catalog: every key a tier aggregates is catalogued; lookups, scales and defaults are sound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.support import tier_records as tr
from voproshalych_eval.engine.runs import flatten_metrics
from voproshalych_eval.metrics import catalog


def _tier_outputs() -> dict[str, dict]:
    """The aggregates of every tier on small inputs (both branches where a tier has two)."""
    from voproshalych_eval.metrics.retrieval import evaluate_retrieval
    from voproshalych_eval.tiers import judge_pipeline, judge_stability, tier0, tier2, tier3, ux

    out: dict[str, dict] = {}
    t2 = [tr.tier2_item(i) for i in range(3)] + [tr.tier2_item(3, faithfulness=None), tr.rec("q9", None, "failed")]
    out["tier2"] = tier2.aggregate(t2, repeats=2)
    t3 = [tr.tier3_item(i) for i in range(3)] + [tr.tier3_item(4, passed=False), tr.rec("q9", None, "failed")]
    t3 += [tr.tier3_outcome(5, "not_found", reason="Chunk not found", answerable=False),
           tr.tier3_outcome(6, "banned", reason="Answer banned"),
           tr.tier3_outcome(7, "error", reason="http_5xx", failures={"http_5xx": 4, "timeout": 1})]
    out["tier3"] = tier3.aggregate(t3, repeats=2, min_pass_rate=0.5)
    st = [tr.stability_item(i, {"a": [1.0, 0.5, 1.0], "b": [1.0, None, 0.0]}) for i in range(3)]
    out["judge"] = judge_stability.aggregate(st, models=["a", "b"], metric="faithfulness")
    jp = [tr.pipeline_item(i, label=i % 2, verdict=i % 2) for i in range(4)] + [tr.pipeline_item(5, label=1, verdict=None)]
    jp += [tr.pipeline_item(6 + i, label=i % 2, verdict=1, context="") for i in range(2)]  # cached answers
    out["judge_pipeline"] = judge_pipeline.aggregate(jp)
    out["ux_dialogs"] = ux.aggregate([tr.ux_dialog_item(i, same=i % 2 == 0) for i in range(4)], source="dialogs")
    out["ux_log"] = ux.aggregate([tr.ux_log_item(i) for i in range(3)], source="log")
    ev = evaluate_retrieval([[1, 2, 3], [4, 5, 6]], [[2], [9]])
    out["tier1"] = {lvl: {k: a.to_dict() for k, a in ev.aggregates(n_resamples=50).items()} for lvl in ("chunk", "url")}
    X = np.random.default_rng(0).normal(size=(40, 8)).astype(np.float32)
    out["tier0"] = tier0.run_metrics(tier0.space_metrics(X, k=3))
    return out


def test_every_key_a_tier_aggregates_is_catalogued() -> None:
    missing = {tier: catalog.uncatalogued(flatten_metrics(m)) for tier, m in _tier_outputs().items()}
    missing = {t: keys for t, keys in missing.items() if keys}
    assert not missing, f"metric keys missing from metrics/catalog.py: {missing}"


def test_uncatalogued_key_is_reported_and_never_guessed() -> None:
    assert catalog.uncatalogued(["mrr", "made_up_latency"]) == ["made_up_latency"]
    assert catalog.direction("made_up_latency") == "none"  # not "lower" guessed from the word
    with pytest.raises(KeyError, match="made_up_latency"):
        catalog.spec("made_up_latency")


@pytest.mark.parametrize(("key", "bare", "direction", "scale"), [
    ("chunk.mrr", "mrr", "higher", "0–1"),
    ("url.ndcg@10", "ndcg@10", "higher", "0–1"),
    ("chunk.hit_rate@7", "hit_rate@7", "higher", "0–1"),
    ("per_model.gpt-4.1.consistency_score", "consistency_score", "higher", "0–1"),
    ("by_question_type.factoid.avg_answer_correctness", "avg_answer_correctness", "higher", "1–5"),
    ("avg_bleu", "avg_bleu", "higher", "0–100"),
    ("corpus_bleu", "corpus_bleu", "higher", "0–100"),
    ("cache_false_hit_rate", "cache_false_hit_rate", "lower", "0–1"),
    ("n_failed_items", "n_failed_items", "lower", "count"),
    ("n_turns", "n_turns", "none", "count"),
    ("latency_p95", "latency_p95", "lower", "seconds"),
    ("timings_s.embed", "timings_s", "none", "seconds"),
    ("benchmark_f1_score", "benchmark_f1_score", "higher", "0–1"),
    ("avg_semantic_similarity", "avg_semantic_similarity", "higher", "−1–1"),
])
def test_lookup_resolves_blocks_families_and_groups(key: str, bare: str, direction: str, scale: str) -> None:
    s = catalog.spec(key)
    assert (s.key, s.direction, s.scale.key) == (bare, direction, scale)


def test_labels_are_bilingual_and_name_the_block() -> None:
    assert catalog.label("chunk.mrr", "ru") == "MRR · чанки"
    assert catalog.label("url.mrr", "en") == "MRR · pages"
    assert catalog.label("per_model.gpt-4.1.flip_rate", "en") == "Flip rate · model / gpt-4.1"
    for key, s in catalog.CATALOG.items():
        assert s.ru and s.en and s.how_ru and s.how_en, key


def test_entries_are_consistent() -> None:
    for key, s in catalog.CATALOG.items():
        assert s.direction in catalog.DIRECTIONS and s.kind in catalog.KINDS, key
        if s.kind == "count":
            assert s.scale is catalog.COUNT, key
        if s.baseline is not None:
            assert s.direction in ("higher", "lower"), key
            assert s.scale.contains(s.baseline) and s.margin >= 0 and s.baseline_tiers, key
        for lo, hi, _ru, _en in s.bands:
            assert s.scale.contains(lo) and s.scale.contains(hi), key


def test_default_baselines_come_from_the_catalog() -> None:
    rows = {(t, m): (v, mg) for t, m, v, mg, _ in catalog.default_baselines()}
    # the seed's scales: correctness on 1–5, BLEU on 0–100 (the reading bands belong to corpus BLEU)
    assert rows[("tier2", "avg_answer_correctness")] == (4.0, 0.3)
    assert rows[("tier2", "corpus_bleu")] == (20.0, 5.0)
    assert catalog.spec("corpus_bleu").band(38.5, "en") == "acceptable (20–40)"
    assert catalog.spec("avg_bleu").bands == ()


def test_facets_group_keys_by_scale() -> None:
    f = catalog.facet(["mrr", "avg_bleu", "n_turns", "hit_rate@5", "unknown"])
    assert f == {"0–1": ["mrr", "hit_rate@5"], "0–100": ["avg_bleu"], "count": ["n_turns"], "?": ["unknown"]}
    assert catalog.axis(catalog.SHARE).range == (0.0, 1.05)
    assert catalog.axis(catalog.COUNT).range is None
    assert math.isinf(catalog.COUNT.high)


def test_every_judge_metric_scores_inside_its_catalogued_scale() -> None:
    """The judge table states each metric's per-sample scale; the catalog's ``avg_<metric>`` scale must hold it
    (the default scale and the score of an empty answer), so the catalog stays the one place for scales."""
    from voproshalych_eval.judges.judge_metrics import JUDGE_METRICS, metric_key

    for name, jm in JUDGE_METRICS.items():
        entry = catalog.get(metric_key(name))
        assert entry is not None, name
        needed = {"text": "Ответ вежлив?", "json": {"1": "плохо", "3": "средне", "5": "отлично"}}
        s = jm.scale(jm.resolve({o.name: needed[o.kind] for o in jm.options if o.required}))
        for v in (s.low, s.high, jm.empty_score(s)):
            assert entry.scale.contains(v), f"{name}: {v} outside the catalog scale {entry.scale.key}"


def test_per_item_fields_without_an_aggregate_are_catalogued() -> None:
    from voproshalych_eval.plots.layout import metric_text

    rank = catalog.for_item_field("first_relevant_rank")
    assert rank is not None and rank.direction == "lower" and rank.scale.key == "rank"
    assert catalog.for_item_field("first_relevant_rank_url").direction == "lower"
    assert catalog.for_item_field("top_distance").direction == "none"
    assert metric_text("item.url_depth", "en") == "Page search depth"
    assert metric_text("item.first_relevant_rank", "ru") == "Ранг первого релевантного"


def test_share_axes_come_from_the_catalog_scale() -> None:
    import pandas as pd

    from voproshalych_eval.plots import real_users, retrieval

    share = list(catalog.axis(catalog.SHARE).range)
    fig = real_users.volume(pd.DataFrame({"period": ["2026-01"], "questions": [3], "answered_rate": [0.5]}))
    assert list(fig.layout.yaxis2.range) == share
    assert list(retrieval.threshold_tradeoff([0.1], [0.5], names=("a", "b")).layout.yaxis.range) == share


def test_a_group_member_is_named_by_the_group_even_when_it_is_also_a_block_name() -> None:
    """``n_by_kind.chunk`` is Tier 0's count of chunk vectors, not a chunk-level metric called ``n_by_kind``: the
    label must carry no raw key (the Runs page's report chart showed ``Chunk level · n_by_kind``)."""
    assert catalog.label("n_by_kind.chunk", "en") == "Vectors: chunks"
    assert catalog.label("n_by_kind.question", "ru") == "Векторов: вопросы журнала"
    assert catalog.get("n_by_kind.golden") is catalog.GROUPS["n_by_kind"]
    assert catalog.label("chunk.mrr", "en") == "MRR · chunks"  # a block before a metric is still a block
    for key in ("n_by_kind.chunk", "n_by_kind.question", "n_by_kind.golden", "n_by_kind.vector"):
        for lang in ("ru", "en"):
            assert "n_by_kind" not in catalog.label(key, lang) and "question" not in catalog.label(key, "ru")
