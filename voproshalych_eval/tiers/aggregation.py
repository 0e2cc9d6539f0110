"""Aggregation over recorded items: per-item values at a path (failed items as failures, by kind), judge
and text-overlap aggregates, ``summarize`` as a dict, latency percentiles over all calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from voproshalych_eval.metrics.failures import FAILURES, count, from_message, item_kind, request_failures
from voproshalych_eval.metrics.statistics import percentiles, summarize
from voproshalych_eval.metrics.text_overlap import corpus_bleu
from voproshalych_eval.tiers.overlap import OVERLAP_KEYS


def agg(values: Sequence[float | None], *, kinds: Sequence[str | None] | None = None,
        partial: Sequence[bool] | None = None) -> dict[str, Any]:
    """``summarize`` as a dict: value, n, n_failed, 95% CI (+ per-kind counts and ``n_partial`` when given)."""
    return summarize(list(values), kinds=kinds, partial=partial).to_dict()


def failed_item_kinds(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The failure kind of every failed item (from its recorded error: ``timeout: …`` -> ``transport``)."""
    return [from_message(r.get("error")) for r in records if r["status"] != "done"]


def judge_kind(result: Mapping[str, Any] | None) -> str | None:
    """The kind of one stored judge result: ``empty_answer``, ``undecided`` (a tie), its ``failure_kind``, or (older records and
    exceptions) the kind named by its failures; ``None`` for a plain score."""
    if not result:
        return None
    if result.get("empty_answer"):
        return "empty_answer"
    if result.get("undecided"):
        return "undecided"
    if result.get("failure_kind"):
        return str(result["failure_kind"])
    if result.get("score") is None:
        return item_kind(result.get("failures") or [], n_answered=int(result.get("n_answered") or 0))
    return None


def judged_agg(results: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]], judge: str,
               field: str | None = None) -> dict[str, Any]:
    """Aggregate of a judge metric stored per item (``field``, default ``judge``) with the judge results'
    kinds and partial flags under ``judges.<judge>``; failed items count with their own kind."""
    failed = failed_item_kinds(records)
    js = [(r.get("judges") or {}).get(judge) for r in results]
    values = column(results, field or judge) + [None] * len(failed)
    kinds = [judge_kind(j) for j in js] + failed
    partial = [bool(j and j.get("partial")) for j in js] + [False] * len(failed)
    return agg(values, kinds=kinds, partial=partial)


def overlap_kind(result: Mapping[str, Any]) -> str | None:
    """``not_applicable`` without a reference, ``empty_answer`` for an empty answer, else ``None``."""
    if not str(result.get("reference") or "").strip():
        return "not_applicable"
    if not str(result.get("answer") or "").strip():
        return "empty_answer"
    return None


def overlap_aggs(results: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``avg_<overlap metric>`` for ROUGE/BLEU/chrF, plus ``corpus_bleu`` over every item with a reference."""
    failed = failed_item_kinds(records)
    kinds = [overlap_kind(r) for r in results] + failed
    out = {f"avg_{k}": agg(column(results, k) + [None] * len(failed), kinds=kinds) for k in OVERLAP_KEYS}
    pairs = [(str(r.get("answer") or ""), str(r["reference"])) for r in results if overlap_kind(r) != "not_applicable"]
    out["corpus_bleu"] = {"value": corpus_bleu([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None,
                          "n": len(pairs), "n_failed": len(failed), "ci_low": None, "ci_high": None}
    return out


def item_outcomes(results: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]],
                  judges: Sequence[str]) -> dict[str, Any]:
    """Run-level outcome counts: ``failure_kinds`` — failed items by kind, empty answers, undecided verdicts (a
    tie between judges) and every judge result of ``judges`` left without a score, by kind — and ``n_partial`` (items with at least one partial judge score)."""
    kinds: list[str | None] = list(failed_item_kinds(records))
    n_partial = 0
    for r in results:
        if r.get("answer") is not None and not str(r.get("answer")).strip():
            kinds.append("empty_answer")
        js = [(r.get("judges") or {}).get(j) for j in judges]
        kinds += [k for k in (judge_kind(j) for j in js) if k not in (None, "empty_answer")]
        n_partial += any(bool(j and j.get("partial")) for j in js)
    return {"failure_kinds": count(kinds), "n_partial": n_partial}


def latency_percentiles(latencies: Sequence[float | None], prefix: str = "latency") -> dict[str, float | None]:
    """p50/p95/p99 over ALL calls (seconds)."""
    vals = [v for v in latencies if v is not None]
    if not vals:
        return {f"{prefix}_p50": None, f"{prefix}_p95": None, f"{prefix}_p99": None}
    p = percentiles(vals)
    return {f"{prefix}_{k}": v for k, v in p.items()}


def done_results(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(r["result"]) for r in records if r["status"] == "done"]


def n_failed_items(records: Sequence[Mapping[str, Any]]) -> int:
    return sum(1 for r in records if r["status"] != "done")


def column(results: Sequence[Mapping[str, Any]], path: str, n_failed_items: int = 0) -> list[float | None]:
    """Values at a dotted path in each result (None when missing), plus one None per failed item."""
    out: list[float | None] = []
    for r in results:
        v: Any = r
        for part in path.split("."):
            v = v.get(part) if isinstance(v, Mapping) else None
        out.append(float(v) if isinstance(v, int | float) and not isinstance(v, bool) else (float(v) if isinstance(v, bool) else None))
    return out + [None] * n_failed_items


def judged_share(n_judged: int, n_judgeable: int) -> dict[str, Any]:
    """``judged_share``: items with a usable judgement / the items that could be judged (each tier says which),
    an aggregate-shaped dict (``value``, ``n``, ``n_judged``, ``n_failed`` = the rest; no CI). The engine ends a
    run ``failed`` when this share is below ``Settings.min_judged_share`` (``VOPROSHALYCH_EVAL_MIN_JUDGED_SHARE``);
    ``value`` is ``None`` when nothing could be judged (e.g. every Tier 3 question declined) — then no check."""
    n, k = int(n_judgeable), int(n_judged)
    return {"value": k / n if n else None, "n": n, "n_judged": k, "n_failed": n - k, "ci_low": None, "ci_high": None}


#: a judge model that failed more than this share of its calls is named on the page and in reports
FAILING_MODEL_SHARE = 0.5


def _call_block(n_calls: int, kinds: Mapping[str, int]) -> dict[str, Any]:
    tally = count(k for k, n in kinds.items() for _ in range(int(n)))
    failed = sum(tally[k] for k in FAILURES)
    return {"n_calls": n_calls, "n_failed_calls": failed, "failure_kinds": tally,
            "parse_failure_rate_calls": tally["parse"] / n_calls if n_calls else None,
            "error_rate_calls": request_failures(tally) / n_calls if n_calls else None}


def jury_calls(results: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """Every judge call of ``results`` (stored judge results; their ``details.calls``, see ``Judge._run_llm``)
    counted per call, per model and in total: ``n_calls``, ``n_failed_calls``, ``failure_kinds`` and the
    rates ``parse_failure_rate_calls`` / ``error_rate_calls`` whose denominator is every call asked
    (``denominator: "calls"``); ``failing_models`` names the models that failed more than
    :data:`FAILING_MODEL_SHARE` of their calls. ``None`` when no result made a call (offline, empty answers)."""
    per: dict[str, tuple[int, dict[str, int]]] = {}
    for res in results:
        for model, c in (((res or {}).get("details") or {}).get("calls") or {}).items():
            n, kinds = per.setdefault(str(model), (0, {}))
            for k, v in (c.get("failure_kinds") or {}).items():
                kinds[k] = kinds.get(k, 0) + int(v)
            per[str(model)] = (n + int(c.get("n_calls") or 0), kinds)
    if not per:
        return None
    total: dict[str, int] = {}
    for _, kinds in per.values():
        for k, v in kinds.items():
            total[k] = total.get(k, 0) + v
    models = {m: _call_block(n, kinds) for m, (n, kinds) in sorted(per.items())}
    return {**_call_block(sum(n for n, _ in per.values()), total), "denominator": "calls", "per_model": models,
            "failing_models": [m for m, b in models.items()
                               if b["n_calls"] and b["n_failed_calls"] / b["n_calls"] > FAILING_MODEL_SHARE]}
