"""Helpers shared by the LLM tiers (2, 3, judges, UX): datasets, contexts, judge results, aggregation.

Nothing here computes a metric itself: per-item text metrics call ``metrics.text_overlap``, vectors
``metrics.similarity``, aggregates ``metrics.statistics.summarize``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval import datasets
from voproshalych_eval.metrics.statistics import percentiles, summarize

# ----------------------------------------------------------------- datasets and the knowledge base


def load_dataset(engine: Engine, ref: str | int, kind: str) -> datasets.Dataset:
    """A stored dataset by id or name, or a file path (imported and stored)."""
    if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
        return datasets.get_dataset(engine, int(ref), kind)
    return datasets.resolve(engine, str(ref), kind)


def select_items(ds: datasets.Dataset, *, limit: int | None = None, only: Sequence[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """``(item_key, record)`` pairs of a dataset, optionally a subset (first ``limit`` / listed keys)."""
    pairs = list(zip(ds.keys(), ds.records, strict=True))
    if only:
        wanted = {str(k) for k in only}
        pairs = [p for p in pairs if p[0] in wanted]
    if limit is not None and limit > 0:
        pairs = pairs[:limit]
    return pairs


def chunk_texts(engine: Engine, ids: Iterable[int], *, snapshot: Any = None) -> dict[int, dict[str, Any]]:
    """``{chunk id: {"text", "url"}}`` read from a snapshot of the knowledge base (default: the current one)."""
    from voproshalych_eval.db.errors import SnapshotError
    from voproshalych_eval.db.production import read_chunks

    wanted = sorted({int(i) for i in ids})
    if not wanted:
        return {}
    try:
        df = read_chunks(engine, ids=wanted, snapshot=snapshot)
    except SnapshotError:  # no knowledge base at all: callers fall back to the dataset's chunk_text
        return {}
    return {int(r.id): {"url": r.url, "text": r.text} for r in df.itertuples(index=False)}


def full_reference_context(
    record: Mapping[str, Any], kb: Mapping[int, Mapping[str, Any]], *, max_chars: int | None = None
) -> dict[str, Any]:
    """The FULL reference context of a golden item: the texts of all its relevant chunks, in order.

    Chunk texts come from the knowledge base (never the dataset's possibly shortened ``chunk_text``,
    which is only a fallback for chunks missing from the KB). Nothing is cut unless ``max_chars`` is
    given; then the total is cut at ``max_chars`` characters and the cut is reported
    (``truncated``, ``chars_full``, ``chars_used``).
    """
    ids = [int(i) for i in (record.get("relevant_chunk_ids") or [])]
    if not ids and record.get("chunk_id") is not None:
        ids = [int(record["chunk_id"])]
    contexts: list[str] = []
    missing: list[int] = []
    for cid in ids:
        if cid in kb:
            contexts.append(str(kb[cid]["text"]))
        else:
            missing.append(cid)
    if not contexts and record.get("chunk_text"):
        contexts = [str(record["chunk_text"])]
    full = sum(len(c) for c in contexts)
    truncated = False
    if max_chars is not None and max_chars > 0 and full > max_chars:
        out, left = [], max_chars
        for c in contexts:
            if left <= 0:
                break
            out.append(c[:left])
            left -= len(out[-1])
        contexts, truncated = out, True
    return {
        "contexts": contexts,
        "chunk_ids": ids,
        "missing_chunk_ids": missing,
        "truncated": truncated,
        "chars_full": full,
        "chars_used": sum(len(c) for c in contexts),
    }


# ----------------------------------------------------------------- the LLM layer (issue 5)


def make_generator(
    engine: Engine, *, model: str | None = None, system_prompt: str | None = None, offline: bool | None = None, **kwargs: Any
) -> Any:
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.llm.generation import get_generator

    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    return get_generator(get_settings(), engine, model=model, system_prompt=system_prompt, offline=offline, **kwargs)


def generator_prompts(generator: Any) -> dict[str, Any]:
    fn = getattr(generator, "prompts", None)
    try:
        return dict(fn()) if callable(fn) else {}
    except Exception:  # noqa: BLE001
        return {}


def make_judge(
    engine: Engine,
    *,
    models: Sequence[str] | None = None,
    aggregate: str = "average",
    offline: bool | None = None,
    use_cache: bool = True,
) -> Any:
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.judges import get_judge

    return get_judge(
        get_settings(), engine, models=list(models) if models else None, aggregate=aggregate, offline=offline, use_cache=use_cache
    )


def make_sample(question: str, response: str | None, reference: str | None, contexts: Sequence[str]) -> Any:
    from voproshalych_eval.judges import Sample

    return Sample(user_input=question, response=response, reference=reference, retrieved_contexts=list(contexts))


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


def eval_dict(res: Any) -> dict[str, Any]:
    """An ``EvaluationResult`` as a JSON-ready dict (score None on failure, raw replies kept)."""
    if res is None:
        return {"score": None, "failures": ["not evaluated"]}
    d = res.to_dict() if hasattr(res, "to_dict") else dict(res)
    return {k: _plain(v) for k, v in d.items()}


def judge_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call one judge metric; an exception becomes a counted failure (never a score)."""
    try:
        return eval_dict(fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the failure is kept with the item and counted
        return {"score": None, "passed": None, "failures": [f"{type(exc).__name__}: {exc}"], "error": True}


def generation_dict(gen: Any) -> dict[str, Any]:
    return {
        "text": getattr(gen, "text", None),
        "model": getattr(gen, "model", None),
        "offline": bool(getattr(gen, "offline", False)),
        "latency_s": getattr(gen, "latency_s", None),
        "tokens": _tokens(getattr(gen, "tokens", None)),
        "error": getattr(gen, "error", None),
    }


def _tokens(t: Any) -> int:
    if t is None:
        return 0
    if isinstance(t, int | float):
        return int(t)
    if isinstance(t, Mapping):
        if t.get("total") or t.get("total_tokens"):
            return int(t.get("total") or t.get("total_tokens") or 0)
        return int(t.get("prompt") or 0) + int(t.get("completion") or 0)
    return 0


def tokens_of(*dicts: Mapping[str, Any]) -> int:
    return sum(_tokens(d.get("tokens")) for d in dicts if d)


# ----------------------------------------------------------------- text overlap per item


OVERLAP_KEYS = ("rouge1_f", "rouge2_f", "rougeL_f", "bleu", "chrf")


def overlap_scores(prediction: str | None, reference: str | None, *, stem: bool = False) -> dict[str, float | None]:
    """ROUGE-1/2/L F, BLEU (0-100) and chrF (0-100) of one answer against its reference.

    No reference (or no answer at all) -> ``None`` (not applicable); an EMPTY answer -> 0.0 on every
    metric: it is the bad answer it is, never left out of the means."""
    keys = OVERLAP_KEYS
    if prediction is None or not (reference or "").strip():
        return dict.fromkeys(keys)
    if not prediction.strip():
        return dict.fromkeys(keys, 0.0)
    from voproshalych_eval.metrics.text_overlap import bleu, chrf, rouge_scores

    r = rouge_scores(prediction, reference, stem=stem)
    return {
        "rouge1_f": _rouge_f(r, "rouge1"),
        "rouge2_f": _rouge_f(r, "rouge2"),
        "rougeL_f": _rouge_f(r, "rougeL"),
        "bleu": float(bleu(prediction, reference)),
        "chrf": float(chrf(prediction, reference)),
    }


def _rouge_f(r: Mapping[str, Any], name: str) -> float | None:
    for k in (f"{name}_f", f"{name}_fmeasure", name):
        if k in r:
            v = r[k]
            return float(v.fmeasure if hasattr(v, "fmeasure") else v)
    return None


# ----------------------------------------------------------------- aggregation


def agg(values: Sequence[float | None], *, kinds: Sequence[str | None] | None = None,
        partial: Sequence[bool] | None = None) -> dict[str, Any]:
    """``summarize`` as a dict: value, n, n_failed, 95% CI (+ per-kind counts and ``n_partial`` when given)."""
    return summarize(list(values), kinds=kinds, partial=partial).to_dict()


def failed_item_kinds(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The failure kind of every failed item (from its recorded error: ``timeout: …`` -> ``transport``)."""
    from voproshalych_eval.metrics.failures import from_message

    return [from_message(r.get("error")) for r in records if r["status"] != "done"]


def judge_kind(result: Mapping[str, Any] | None) -> str | None:
    """The kind of one stored judge result: ``empty_answer``, its ``failure_kind``, or (older records and
    exceptions) the kind named by its failures; ``None`` for a plain score."""
    from voproshalych_eval.metrics.failures import item_kind

    if not result:
        return None
    if result.get("empty_answer"):
        return "empty_answer"
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
    from voproshalych_eval.metrics.text_overlap import corpus_bleu

    failed = failed_item_kinds(records)
    kinds = [overlap_kind(r) for r in results] + failed
    out = {f"avg_{k}": agg(column(results, k) + [None] * len(failed), kinds=kinds) for k in OVERLAP_KEYS}
    pairs = [(str(r.get("answer") or ""), str(r["reference"])) for r in results if overlap_kind(r) != "not_applicable"]
    out["corpus_bleu"] = {"value": corpus_bleu([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None,
                          "n": len(pairs), "n_failed": len(failed), "ci_low": None, "ci_high": None}
    return out


def item_outcomes(results: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]],
                  judges: Sequence[str]) -> dict[str, Any]:
    """Run-level outcome counts: ``failure_kinds`` — failed items by kind, empty answers, and every judge result
    of ``judges`` left without a score, by kind — and ``n_partial`` (items with at least one partial judge score)."""
    from voproshalych_eval.metrics.failures import count

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


class Lazy:
    """A value computed once, on first use, by whichever worker thread needs it first."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self._lock = threading.Lock()
        self._done = False
        self._value: Any = None

    def get(self) -> Any:
        with self._lock:
            if not self._done:
                self._value = self._fn()
                self._done = True
            return self._value


def json_path(obj: Any, path: str) -> Any:
    """Follow a dotted path (``data.answer``, ``chunks.*.text``, ``items.0``) into parsed JSON.

    ``*`` maps the rest of the path over a list. An empty path returns ``obj``. Missing -> None.
    """
    if not path:
        return obj
    head, _, rest = path.partition(".")
    if head == "*":
        if not isinstance(obj, list):
            return None
        return [json_path(x, rest) for x in obj]
    if isinstance(obj, list):
        try:
            return json_path(obj[int(head)], rest)
        except (ValueError, IndexError):
            return None
    if isinstance(obj, Mapping):
        if head not in obj:
            return None
        return json_path(obj[head], rest)
    return None
