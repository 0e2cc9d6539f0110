"""Small recorded items of every executor tier, as ``runs.item_records`` returns them, for aggregate tests.

Each builder takes the per-item values that matter and fills the rest with plausible ones, so tests can
aggregate a perfect run, a run with failures, a run with empty answers, ... without a database.
"""

from __future__ import annotations

from typing import Any

#: an answer long enough for 4-gram BLEU (a one-word answer has no 4-gram: corpus BLEU 0 even when identical)
LONG = "Стипендию выплачивают 25 числа каждого месяца на карту студента."


def rec(key: str, result: dict[str, Any] | None, status: str = "done", error: str | None = None) -> dict[str, Any]:
    return {"item_key": key, "status": status, "error": error, "result": result or {}}


def judged(score: float | None, *, kind: str | None = None, passed: bool | None = None,
           per_model: dict[str, float | None] | None = None, n_asked: int = 1) -> dict[str, Any]:
    """A judge result dict as ``tiers.llm_calls.judge_call`` stores it."""
    failures = [] if score is not None else [{"kind": kind or "parse_error", "message": "x"}]
    n_answered = n_asked if score is not None else 0
    return {"score": score, "passed": passed, "failures": failures, "per_model": per_model or {"m": score},
            "n_asked": n_asked, "n_answered": n_answered, "duration_s": 0.1, "tokens": {"prompt": 10, "completion": 5}}


def tier2_item(i: int, *, faithfulness: float | None = 1.0, relevance: float | None = 1.0,
               correctness: float | None = 5.0, answer: str = LONG, reference: str = LONG,
               qtype: str = "factoid") -> dict[str, Any]:
    from voproshalych_eval.tiers import overlap

    judges = {"faithfulness": judged(faithfulness), "answer_relevance": judged(relevance),
              "answer_correctness": judged(correctness)}
    return rec(f"q{i}", {
        "question": f"Вопрос {i}?", "question_type": qtype, "reference": reference, "answer": answer,
        "context_truncated": False, "generation": {"latency_s": 0.5, "model": "g", "offline": False},
        "judges": judges, "faithfulness": faithfulness, "answer_relevance": relevance,
        "answer_correctness": correctness, "response_exact_match": 1.0, "response_semantic_consistency": 1.0,
        **overlap.overlap_scores(answer, reference),
    })


def tier3_item(i: int, *, passed: bool | None = True, e2e: float | None = 1.0, answer: str = "Ответ.",
               reference: str = "Ответ.") -> dict[str, Any]:
    from voproshalych_eval.tiers import overlap

    rag = judged(1.0 if passed else (0.0 if passed is False else None), passed=passed)
    return rec(f"q{i}", {
        "question": f"Вопрос {i}?", "question_type": "factoid", "reference": reference, "answer": answer,
        "retrieved_chunk_ids": [1], "retrieval_hit": True, "url_hit": True, "context_source": "api", "latency_s": 0.4, "judges": {"rag_judge": rag,
                                                                                         "e2e_score": judged(e2e)},
        "rag_score": rag["score"], "passed": passed, "e2e_score": e2e, "semantic_similarity": 1.0,
        "euclidean_distance": 0.0, "response_exact_match": 1.0, "response_semantic_consistency": 1.0,
        **overlap.overlap_scores(answer, reference),
    })


def tier3_outcome(i: int, outcome: str, *, reason: str, answerable: bool = True,
                  failures: dict[str, int] | None = None) -> dict[str, Any]:
    """A Tier 3 item the bot declined (``not_found`` / ``banned``) or failed to answer (``error``, recorded failed)."""
    error = outcome == "error"
    return rec(f"o{i}", {
        "question": f"Вопрос {i}?", "answerable": answerable, "outcome": outcome, "reason": reason,
        "error_kind": reason if error else None, "transport_failures": failures or {},
        "gate_pass": False if error else not answerable,
    }, status="failed" if error else "done", error=f"{reason}: x" if error else None)


def stability_item(i: int, models: dict[str, list[float | None]], *, kind: str | None = None) -> dict[str, Any]:
    calls = {m: [dict(judged(s, kind=kind), failure_kind=None if s is not None else (kind or "parse"))
                 for s in scores] for m, scores in models.items()}
    return rec(f"j{i}", {"question": f"В{i}", "context": "к", "answer": "о", "label": 1, "kind": "pos",
                         "calls": calls, "scores": {m: s for m, s in models.items()}})


def pipeline_item(i: int, *, label: int, verdict: int | None, kind: str = "pos",
                  failure_kind: str | None = None, context: str = "к", partial: bool = False,
                  benchmark_failure: str | None = None) -> dict[str, Any]:
    res = judged(None if verdict is None else float(verdict), kind=failure_kind) | {"partial": partial}
    out = {"question": f"В{i}", "context": context, "answer": "о", "label": label, "kind": kind, "verdict": verdict,
           "correct": None if verdict is None else verdict == label, "show_no_show": res,
           "failure_kind": None if verdict is not None else (failure_kind or "parse"),
           "with_context": bool(context.strip())}
    if context.strip():  # the benchmark judge needs a context
        if benchmark_failure:
            out.update({"benchmark": judged(None, kind=benchmark_failure), "benchmark_verdict": None})
        else:
            out.update({"benchmark": judged(1.0, passed=True), "benchmark_verdict": label})
    return rec(f"p{i}", out)


def ux_dialog_item(i: int, *, same: bool = True) -> dict[str, Any]:
    turns = [{"cache_hit": False, "retrieval_hit": True}, {"cache_hit": same, "retrieval_hit": True}]
    return rec(f"d{i}", {"turns": turns, "paraphrase_of": "same" if same else "different",
                         "followup_pairs": [{"preserved": True}],
                         "reask_pairs": [{"answer_similarity": 0.9, "same_page": True}]})


def ux_log_item(i: int) -> dict[str, Any]:
    return rec(f"s{i}", {"turns": [{"cache_hit": False}, {"cache_hit": True}], "n_turns": 2,
                         "followup_pairs": [{"same_page": True}],
                         "reask_pairs": [{"answer_similarity": 0.8, "same_page": False}]})
