"""Tier aggregates: seed scales, the perfect run is green, failure kinds, empty answers, corpus BLEU,
not-applicable judge stability, transport errors in the judge pipeline."""

from __future__ import annotations

import pytest

from tests.support import tier_records as tr
from voproshalych_eval.engine import baselines as bl
from voproshalych_eval.tiers import judge_pipeline, judge_stability, tier2, tier3

N = 8  # >= baselines.MIN_N, so every metric is judged


def _judge_rows(status: bl.RunStatus) -> dict[str, str]:
    return {r["metric"]: r["status"] for r in status.metrics}


def test_a_run_with_the_best_judgements_is_green_on_every_judge_metric() -> None:
    table = list(bl.DEFAULT_BASELINES)
    # Tier 2: every judge at its best (faithfulness 1, relevance 1, correctness 5 on the seed's 1–5 scale)
    t2 = tier2.aggregate([tr.tier2_item(i) for i in range(N)])
    assert t2["avg_answer_correctness"]["value"] == 5.0  # the seed's scale, not (s−1)/4
    s2 = bl.evaluate_run(table, "tier2", "done", t2)
    rows = _judge_rows(s2)
    for key in ("avg_faithfulness", "avg_answer_relevance", "avg_answer_correctness"):
        assert rows[key] == "good", (key, rows)
    assert s2.status == "good", s2.metrics
    # Tier 3: PASS everywhere, e2e 1
    s3 = bl.evaluate_run(table, "tier3", "done", tier3.aggregate([tr.tier3_item(i) for i in range(N)]))
    assert _judge_rows(s3)["pass_rate"] == "good" and _judge_rows(s3)["avg_e2e_score"] == "good"
    assert s3.status == "good", s3.metrics
    # Judge stability: identical repeats, no failure
    st = judge_stability.aggregate([tr.stability_item(i, {"m": [1.0, 1.0, 1.0]}) for i in range(N)],
                                   models=["m"], metric="faithfulness")
    sj = bl.evaluate_run(table, "judge", "done", st)
    assert _judge_rows(sj) == {"consistency_score": "good", "error_rate": "good"} and sj.status == "good"
    # Judge pipeline: every verdict right
    jp = judge_pipeline.aggregate([tr.pipeline_item(i, label=i % 2, verdict=i % 2) for i in range(N)])
    sp = bl.evaluate_run(table, "judge_pipeline", "done", jp)
    rows = _judge_rows(sp)
    assert rows["f1_score"] == rows["accuracy"] == "good" and set(rows.values()) == {"good"} and sp.status == "good"


def test_failure_kinds_are_counted_apart() -> None:
    recs = [tr.tier2_item(i) for i in range(4)]
    recs.append(tr.tier2_item(4, faithfulness=None))  # the judge reply could not be parsed
    t = tr.tier2_item(5, faithfulness=None)
    t["result"]["judges"]["faithfulness"]["failures"] = [{"kind": "rate_limited", "message": "429"}]
    recs.append(t)
    recs.append(tr.rec("q9", None, "failed", "RuntimeError: generation failed on every repeat: timeout: read timed out"))
    m = tier2.aggregate(recs)
    f = m["avg_faithfulness"]
    assert (f["n"], f["n_failed"]) == (4, 3)
    # a 429 that outlived the retries is a rate limit, a timeout a transport failure: counted apart
    assert (f["failure_kinds"]["parse"], f["failure_kinds"]["transport"], f["failure_kinds"]["rate_limit"]) == (1, 1, 1)
    assert m["failure_kinds"]["transport"] == 1 and m["failure_kinds"]["rate_limit"] == 1
    assert m["failure_kinds"]["parse"] == 1
    assert m["n_failed_items"] == 1


def test_partial_scores_are_shown() -> None:
    recs = [tr.tier2_item(i) for i in range(3)]
    recs[0]["result"]["judges"]["faithfulness"].update(partial=True, n_asked=3, n_answered=2)
    m = tier2.aggregate(recs)
    assert m["avg_faithfulness"]["n_partial"] == 1 and m["n_partial"] == 1


def test_an_empty_answer_scores_zero_and_is_never_left_out() -> None:
    good = [tr.tier2_item(i, answer="Стипендия 25 числа.", reference="Стипендия 25 числа.") for i in range(3)]
    empty = tr.tier2_item(3, answer="", reference="Стипендия 25 числа.", faithfulness=0.0, relevance=0.0,
                          correctness=1.0)
    for name in ("faithfulness", "answer_relevance", "answer_correctness"):
        empty["result"]["judges"][name]["empty_answer"] = True
    m = tier2.aggregate([*good, empty])
    assert m["avg_rougeL_f"]["value"] == pytest.approx(0.75) and m["avg_rougeL_f"]["n"] == 4
    assert m["avg_bleu"]["value"] == pytest.approx(75.0)
    assert m["avg_faithfulness"]["value"] == pytest.approx(0.75)
    assert m["avg_answer_correctness"]["value"] == pytest.approx(4.0)
    assert m["avg_rougeL_f"]["failure_kinds"]["empty_answer"] == 1 and m["failure_kinds"]["empty_answer"] == 1
    assert m["avg_faithfulness"]["n_failed"] == 0


def test_corpus_bleu_beside_mean_sentence_bleu() -> None:
    from voproshalych_eval.metrics.catalog import spec
    from voproshalych_eval.metrics.text_overlap import bleu, corpus_bleu

    answers = ["Стипендию выплачивают 25 числа каждого месяца на карту.", "Общежитие находится на улице Мельникайте, дом 44.",
               "Справку можно получить в деканате."]
    refs = ["Стипендия выплачивается 25 числа каждого месяца.", "Общежитие расположено на Мельникайте 44.",
            "Справку выдают в деканате института."]
    m = tier2.aggregate([tr.tier2_item(i, answer=a, reference=r) for i, (a, r) in enumerate(zip(answers, refs, strict=True))])
    import sacrebleu

    expected = sacrebleu.corpus_bleu(answers, [refs], tokenize="intl").score
    assert m["corpus_bleu"]["value"] == pytest.approx(expected) == pytest.approx(corpus_bleu(answers, refs))
    assert m["avg_bleu"]["value"] == pytest.approx(sum(bleu(a, r) for a, r in zip(answers, refs, strict=True)) / 3)
    assert m["corpus_bleu"]["value"] != pytest.approx(m["avg_bleu"]["value"], abs=0.5)
    assert spec("corpus_bleu").bands and not spec("avg_bleu").bands  # the seed's bands read the corpus one
    assert spec("corpus_bleu").band(m["corpus_bleu"]["value"], "en") == "needs substantial improvement (< 20)"


def test_stability_on_a_set_without_references_is_not_applicable() -> None:
    na = {"score": None, "failures": [{"kind": "missing_field", "field": "reference"}], "failure_kind": "not_applicable"}
    rec = tr.stability_item(0, {"m": [None, None]})
    rec["result"]["calls"]["m"] = [dict(na, failure_kind="not_applicable"), dict(na, failure_kind="not_applicable")]
    st = judge_stability.aggregate([rec, rec], models=["m"], metric="answer_correctness")
    assert st["error_rate"] is None and st["parse_failure_rate"] is None  # not 100 %
    assert st["n_not_applicable"] == 4 and st["not_applicable"]
    assert st["consistency_score"]["value"] is None


def test_stability_reads_answer_correctness_on_its_1_5_scale() -> None:
    rows = [tr.stability_item(i, {"m": [5.0, 5.0, 1.0]}) for i in range(3)]
    st = judge_stability.aggregate(rows, models=["m"], metric="answer_correctness")
    assert st["scale"] == [1.0, 5.0]
    assert st["avg_score"]["value"] == pytest.approx(2 / 3)  # normalised: (1 + 1 + 0) / 3
    # population std of (1, 1, 0) = 0.4714 on 0–1; consistency = 1 − std / 0.5
    assert st["consistency_score"]["value"] == pytest.approx(1 - 0.47140452 / 0.5)


def test_stability_counts_transport_apart_from_parse() -> None:
    rows = [tr.stability_item(0, {"m": [1.0, None, None, 1.0]})]
    calls = rows[0]["result"]["calls"]["m"]
    calls[1].update(failure_kind="transport", failures=[{"kind": "timeout"}])
    calls[2].update(failure_kind="parse")
    st = judge_stability.aggregate(rows, models=["m"], metric="faithfulness")
    assert st["error_rate"] == 0.25 and st["parse_failure_rate"] == 0.25
    assert st["failure_kinds"]["transport"] == 1 and st["failure_kinds"]["parse"] == 1


def test_pipeline_error_rate_counts_transport_not_parse() -> None:
    rows = [tr.pipeline_item(i, label=1, verdict=1) for i in range(6)]
    rows.append(tr.pipeline_item(6, label=1, verdict=None, failure_kind="transport"))
    rows.append(tr.pipeline_item(7, label=0, verdict=None, failure_kind="transport"))
    rows.append(tr.pipeline_item(8, label=0, verdict=None, failure_kind="parse"))
    rows.append(tr.rec("p9", None, status="failed", error="timeout: read timed out"))  # the whole item failed
    m = judge_pipeline.aggregate(rows)
    # one denominator for both rates: every call asked, the failed item's included
    assert m["error_rate"] == pytest.approx(3 / 10) and m["parse_failure_rate"] == pytest.approx(1 / 10)
    assert m["failure_kinds"]["transport"] == 3 and m["n_failed"] == 3 and m["n_failed_items"] == 1


def test_pipeline_counts_partial_verdicts_and_the_benchmark_judges_failures() -> None:
    rows = [tr.pipeline_item(i, label=1, verdict=1, partial=i < 2) for i in range(6)]
    rows.append(tr.pipeline_item(6, label=1, verdict=1, benchmark_failure="timeout"))
    rows.append(tr.pipeline_item(7, label=0, verdict=0, benchmark_failure="parse_error"))
    m = judge_pipeline.aggregate(rows)
    assert m["n_partial"] == 2 and m["benchmark_n_partial"] == 0
    assert m["benchmark_failure_kinds"]["transport"] == 1 and m["benchmark_failure_kinds"]["parse"] == 1
    assert m["benchmark_error_rate"] == pytest.approx(1 / 8) and m["benchmark_n_failed"] == 2
    assert m["failure_kinds"]["transport"] == 0  # the production judge's own counts are untouched
    from voproshalych_eval.engine.runs import flatten_metrics
    from voproshalych_eval.metrics import catalog

    assert catalog.uncatalogued(flatten_metrics(m)) == []


def test_tier1_counts_failed_questions_by_kind() -> None:
    from voproshalych_eval.tiers import tier1

    def q(i: int) -> dict:
        return tr.rec(f"q{i}", {"answerable": True, "top_distance": 0.1, "retrieved_ids": [1],
                                "metrics_chunk": {"mrr": 1.0}, "metrics_url": {"mrr": 1.0}})

    rows = [q(i) for i in range(4)] + [tr.rec("q4", None, "failed", "RateLimited: rate_limited after 3 retries"),
                                       tr.rec("q5", None, "failed", "ValueError: bad vector")]
    m = tier1.aggregate(rows, keys=[r["item_key"] for r in rows], k=5, n_resamples=50)
    assert m["failure_kinds"]["rate_limit"] == 1 and m["failure_kinds"]["error"] == 1 and m["n_failed_items"] == 2
    assert m["chunk"]["mrr"]["failure_kinds"]["rate_limit"] == 1


def test_offline_runs_are_never_compared_to_a_baseline() -> None:
    t2 = tier2.aggregate([tr.tier2_item(i) for i in range(N)])
    st = bl.evaluate_run(list(bl.DEFAULT_BASELINES), "tier2", "done", t2, offline=True)
    assert st.status == bl.OFFLINE == "offline" and st.reason == bl.OFFLINE_REASON
    assert bl.STATUS_LABELS[st.status] == ("офлайн — не сравнивается", "offline — not compared")
    assert st.metrics and all(r["status"] is None for r in st.metrics)
