"""Tier Judge — stability of the benchmark judge (the benchmark metrics description, section 8).

Each item (question, context, answer) is judged R times (default 5) by every judge model with the
cache OFF, so every repeat is a real call. Scores are read on 0–1, normalised by the judged metric's own
scale (answer correctness is asked on 1–5). Per model:

* ``avg_score_std`` — mean over items of the population std of the item's valid repeat scores;
* ``consistency_score`` — ``1 − avg_score_std / max_std`` where ``max_std = 0.5`` is the largest std a
  score on 0–1 can have; 1.0 = every repeat identical, 0 = maximal
  spread. (Not the same number as ``exact_agreement_rate``: small jitter lowers it only a little.)
* ``exact_agreement_rate`` — share of items whose repeats are all equal;
* ``flip_rate`` — share of items whose pass/fail verdict (score ≥ threshold) changes between repeats;
* ``intra_judge_fleiss_kappa`` — Fleiss' kappa of the verdicts, the repeats acting as raters;
* ``error_rate`` — calls that failed in transport (timeout, 429 after retries, 5xx, connection) / the
  applicable calls; ``parse_failure_rate`` — replies that came back but could not be parsed / the
  applicable calls (both are failures, never scores); ``failure_kinds`` counts every kind;
* ``n_not_applicable`` — calls the metric does not apply to (e.g. answer correctness on a set without
  reference answers): not failures, left out of every rate — a set where nothing applies says so
  (``not_applicable``) instead of showing a 100 % error rate;
* ``latency_p50/p95/p99`` over ALL calls (seconds), ``tokens`` in total.

Across models (two or more): ``inter_judge_cohen_kappa`` (two models) and
``inter_judge_fleiss_kappa`` on each item's majority verdict per model (a tie of the repeats is undecided —
``n_undecided`` per model — and leaves the item out, never a pass), and
``inter_judge_mean_abs_diff`` of the per-item mean scores. The top-level metrics are those of the
first model; every model's are under ``per_model``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from voproshalych_eval.judges import JUDGE_METRICS
from voproshalych_eval.metrics.classification import cohen_kappa, fleiss_kappa
from voproshalych_eval.metrics.consistency import exact_agreement_rate, flip_rate, score_std_per_item
from voproshalych_eval.metrics.failures import count, request_failures
from voproshalych_eval.plans import ItemResult, Plan, spec
from voproshalych_eval.tiers import aggregation, inputs, llm_calls

TIER = "judge"
METRICS = ("faithfulness", "answer_relevance", "answer_correctness", "e2e_score", "rag_judge")
#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = spec("judge").defaults()


def _record_to_sample(record: Mapping[str, Any], kind: str) -> tuple[str, str | None, str | None, list[str]]:
    if kind == "judge":
        return record["question"], record["answer"], record.get("reference"), [record["context"]]
    if kind == "samples":
        return record["user_input"], record.get("response"), record.get("reference"), list(record.get("retrieved_contexts") or [])
    # golden: judge the reference answer on its reference chunk
    return record["question"], record.get("ground_truth_answer"), record.get("ground_truth_answer"), [record.get("chunk_text") or ""]


def _classify_failure(res: Mapping[str, Any]) -> str | None:
    """``None`` (a score, an empty answer included) or the failure kind of one call (``transport``, ``parse``,
    ``not_applicable``, …; see :mod:`voproshalych_eval.metrics.failures`)."""
    kind = aggregation.judge_kind(res)
    return None if kind == "empty_answer" else kind


def build_plan(engine: Engine, params: Mapping[str, Any]) -> JudgeStabilityPlan:
    """The judge-stability plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    return JudgeStabilityPlan(engine, params)


class JudgeStabilityPlan(Plan):
    """Judge stability: every item judged ``repeats`` times by each judge model (no cache)."""

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        p = spec("judge").resolve(params)
        if p["metric"] not in METRICS:
            raise ValueError(f"metric must be one of {', '.join(METRICS)}")
        ds = inputs.load_dataset(engine, p["dataset"], p["dataset_kind"])
        pairs = inputs.select_items(ds, limit=p["limit"])
        self.repeats = repeats = max(2, int(p["repeats"]))
        models = list(p["judge_models"] or [])
        if models:
            judges = {m: llm_calls.make_judge(engine, models=[m], offline=p["offline"], use_cache=False) for m in models}
        else:
            j = llm_calls.make_judge(engine, offline=p["offline"], use_cache=False)
            judges = {(list(getattr(j, "models", []) or ["default"]))[0]: j}
        self.judges = judges
        self.metric = metric = p["metric"]
        self.threshold = p["threshold"]
        self.dataset_kind = p["dataset_kind"]
        offline = all(bool(getattr(j, "offline", False)) for j in judges.values())
        params_out = {**p, "judge_models": list(judges), "repeats": repeats, "offline": True if offline else p["offline"],
                      "n_items": len(pairs)}
        super().__init__(
            tier=TIER,
            items=pairs,
            concurrency=int(p["concurrency"] or 4),
            params=params_out,
            models={"judges": list(judges)},
            prompts={"metric": metric, **llm_calls.judge_prompts([metric], *judges.values())},
            dataset_id=ds.id,
            dataset_name=ds.name,
            dataset_hash=ds.content_hash,
            offline=offline,
            providers=llm_calls.providers_of(*judges.values()),
        )

    def work(self, record: dict[str, Any]) -> ItemResult:
        q, answer, reference, contexts = _record_to_sample(record, self.dataset_kind)
        sample = llm_calls.make_sample(q, answer, reference, contexts)
        metric, threshold = self.metric, self.threshold
        calls: dict[str, list[dict[str, Any]]] = {}
        tokens = 0
        for name, judge in self.judges.items():
            fn = getattr(judge, metric)
            reps = []
            for _ in range(self.repeats):
                r = (llm_calls.judge_call(fn, sample, threshold=threshold) if metric == "rag_judge" and threshold is not None
                     else llm_calls.judge_call(fn, sample))
                r["failure_kind"] = _classify_failure(r)
                reps.append(r)
            tokens += llm_calls.tokens_of(*reps)
            calls[name] = reps
        out = {
            "question": q,
            "context": "\n\n".join(contexts),
            "answer": answer,
            "label": record.get("label"),
            "kind": record.get("kind") or record.get("question_type"),
            "calls": calls,
            "scores": {m: [c.get("score") for c in cs] for m, cs in calls.items()},
        }
        return ItemResult(out, tokens=tokens)

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return aggregate(records, models=list(self.judges), metric=self.metric, threshold=self.threshold)


def _scale(metric: str) -> tuple[float, float]:
    """The judged metric's own scale (answer correctness 1–5, the rest 0–1), from the judge-metric table."""
    spec = JUDGE_METRICS[metric]
    sc = spec.scale(spec.resolve({}))
    return sc.low, sc.high


def _norm(call: Mapping[str, Any], lo: float, hi: float) -> float | None:
    """A call's score on 0–1 (its ``score_norm`` when stored, else normalised by the metric's scale)."""
    if call.get("score") is None:
        return None
    if call.get("score_norm") is not None:
        return float(call["score_norm"])
    return (float(call["score"]) - lo) / (hi - lo)


def _verdict(call: Mapping[str, Any], threshold: float, lo: float = 0.0, hi: float = 1.0) -> bool | None:
    """Pass/fail of one call: its own ``passed``, else its normalised score ≥ ``threshold`` (on 0–1)."""
    if call.get("passed") is not None:
        return bool(call["passed"])
    s = _norm(call, lo, hi)
    return None if s is None else s >= threshold


def _majority(verdicts: Sequence[bool | None]) -> bool | None:
    """The majority verdict of the repeats; ``None`` without one or on a tie (undecided, never a pass)."""
    valid = [v for v in verdicts if v is not None]
    if not valid:
        return None
    c = Counter(valid)
    return None if c[True] == c[False] else c[True] > c[False]


def _tied(verdicts: Sequence[bool | None]) -> bool:
    valid = [v for v in verdicts if v is not None]
    return bool(valid) and 2 * sum(valid) == len(valid)


def model_metrics(items: Sequence[Sequence[Mapping[str, Any]]], *, metric: str, threshold: float | None) -> dict[str, Any]:
    """Stability metrics of ONE judge model; ``items[i]`` holds item i's repeat calls.

    Scores are read on 0–1 (normalised by the judged metric's scale); ``threshold`` is on the metric's own
    scale. Calls the metric does not apply to (a required field missing) are *not applicable*: they are
    neither scores nor failures, and the rates are over the applicable calls (``None`` when there is none).
    """
    all_calls = [c for item in items for c in item]
    lo, hi = _scale(metric)
    thr = 0.5 if threshold is None else (float(threshold) - lo) / (hi - lo)
    applicable = [[c for c in item if c.get("failure_kind") != "not_applicable"] for item in items]
    applicable = [item for item in applicable if item]
    calls = [c for item in applicable for c in item]
    scores = [[_norm(c, lo, hi) for c in item] for item in applicable]
    stds = score_std_per_item(scores)
    std_agg = aggregation.agg(stds)
    max_std = 0.5  # the largest std of scores on [0, 1]
    cons = [None if s is None else max(0.0, 1.0 - s / max_std) for s in stds]
    verdicts = [[_verdict(c, thr, lo, hi) for c in item] for item in applicable]
    kinds = count(c.get("failure_kind") for c in all_calls)
    n_calls, n_app = len(all_calls), len(calls)
    out: dict[str, Any] = {
        "consistency_score": aggregation.agg(cons),
        "avg_score_std": std_agg,
        "avg_score": aggregation.agg([_norm(c, lo, hi) for c in calls]),
        "n_calls": n_calls,
        "n_not_applicable": n_calls - n_app,
        "error_rate": request_failures(kinds) / n_app if n_app else None,
        "parse_failure_rate": kinds["parse"] / n_app if n_app else None,
        "n_errors": request_failures(kinds),
        "n_parse_failures": kinds["parse"],
        "failure_kinds": kinds,
        "n_partial": sum(1 for c in calls if c.get("partial")),
        "tokens": sum(llm_calls.tokens_of(c) for c in all_calls),
        "scale": [lo, hi],
        "verdict_threshold": thr,
    }
    if not n_app:
        out["not_applicable"] = "every call lacks a field the metric needs (e.g. the reference answer)"
    try:
        out["exact_agreement_rate"] = exact_agreement_rate(scores)
    except ValueError:
        out["exact_agreement_rate"] = None
    try:
        out["flip_rate"] = flip_rate(verdicts)
    except ValueError:
        out["flip_rate"] = None
    full = [[bool(v) for v in item] for item in verdicts if item and all(v is not None for v in item)]
    out["intra_judge_fleiss_kappa"] = fleiss_kappa(full) if full else None
    out.update(aggregation.latency_percentiles([c.get("duration_s") for c in calls], "latency"))
    return out


def aggregate(records: list[dict[str, Any]], *, models: Sequence[str], metric: str, threshold: float | None = None) -> dict[str, Any]:
    res = aggregation.done_results(records)
    per_model: dict[str, Any] = {}
    majority: dict[str, list[bool | None]] = {}
    means: dict[str, list[float | None]] = {}
    for m in models:
        items = [r.get("calls", {}).get(m, []) for r in res]
        if not items:
            continue
        per_model[m] = model_metrics(items, metric=metric, threshold=threshold)
        thr = per_model[m]["verdict_threshold"]
        lo, hi = _scale(metric)
        verdicts = [[_verdict(c, thr, lo, hi) for c in item] for item in items]
        majority[m] = [_majority(v) for v in verdicts]
        per_model[m]["n_undecided"] = sum(1 for v in verdicts if _tied(v))
        means[m] = [aggregation.agg([_norm(c, lo, hi) for c in item])["value"] for item in items]
    out: dict[str, Any] = {}
    if per_model:
        first = per_model[next(iter(per_model))]
        out.update({k: v for k, v in first.items()})
        out["n_undecided"] = first["n_undecided"]
    out["metric"] = metric
    out["n_items"] = len(records)
    # items with a valid score from some model / items some call applied to (all items when none applied)
    calls = [[c for cs in r.get("calls", {}).values() for c in cs] for r in res]
    n_app = sum(1 for cs in calls if any(c.get("failure_kind") != "not_applicable" for c in cs))
    out["judged_share"] = aggregation.judged_share(
        sum(1 for cs in calls if any(c.get("score") is not None for c in cs)), n_app or len(records))
    out["n_failed_items"] = aggregation.n_failed_items(records)
    out["repeats"] = max((len(c) for r in res for c in r.get("calls", {}).values()), default=0)
    out["per_model"] = per_model
    if len(per_model) >= 2:
        names = list(per_model)
        rows = [[majority[m][i] for m in names] for i in range(len(res))]
        rows = [r for r in rows if all(v is not None for v in r)]
        if rows:
            out["inter_judge_fleiss_kappa"] = fleiss_kappa(rows)
            if len(names) == 2:
                out["inter_judge_cohen_kappa"] = cohen_kappa([r[0] for r in rows], [r[1] for r in rows])
        diffs = [
            abs(a - b)
            for a, b in zip(means[names[0]], means[names[1]], strict=True)
            if a is not None and b is not None
        ]
        out["inter_judge_mean_abs_diff"] = aggregation.agg(diffs)
    return out


def repeat_rows(items: pd.DataFrame) -> pd.DataFrame:
    """One row per item and judge model of a stability run's items (``jobs.items_frame``): its repeated scores,
    their population standard deviation ``std = sqrt(mean((s - mean(s))^2))`` over the valid scores (None with
    fewer than two) and ``n_failed_calls`` (repeats without a score)."""
    rows = []
    for r in items.to_dict("records"):
        for model, scores in (r.get("scores") or {}).items():
            valid = [s for s in scores if s is not None]
            rows.append({"item_key": r["item_key"], "status": r["status"], "model": model, "question": r.get("question"),
                         "scores": scores, "std": pd.Series(valid).std(ddof=0) if len(valid) > 1 else None,
                         "n_failed_calls": len(scores) - len(valid)})
    return pd.DataFrame(rows)
