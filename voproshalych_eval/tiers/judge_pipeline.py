"""Tier Judge Pipeline — the production show/no-show judge as a classifier (the benchmark metrics description, section 2.1).

Over a labelled set (question, context, answer, label 1 = show / 0 = no-show) the show/no-show
judge (the production "Yes / No: reason" prompt by default, or a custom prompt with the
placeholders ``{question}``, ``{context}``, ``{answer}``) is asked once per
item. Its reply is parsed STRICTLY by the LLM layer (``Yes`` or ``No: reason``; anything else —
"yesterday", "No, yes…" — is a parse failure, counted and kept with the raw reply, never a verdict).

Positive class = show. A tie between several judge models is *undecided* (``n_undecided``, ``failure_kinds``): no
verdict, not a failure, left out of the classification metrics. Over the items with a valid verdict: ``accuracy``, ``precision``, ``recall``,
``f1_score``, the confusion matrix, ``cohen_kappa`` (verdicts vs human labels); over all calls:
``error_rate`` (transport failures: timeout, 429 after retries, 5xx, connection), ``parse_failure_rate``
(replies that are not a verdict) — both over every call asked, failed items included —, ``failure_kinds``
(every kind), ``n_partial`` (verdicts given by a quorum short of every model), ``latency_p50/p95/p99``. Accuracy per ``kind`` of item
shows which hard negatives fool the judge.

An empty ``context`` is a legitimate input: production judges answers reused from its similar-question
cache without any context (``assess_answer(question, answer)``), so such items are judged with the
production prompt *without* context (``show_no_show_no_context``; a custom prompt gets an empty
``{context}``). Every classification metric is reported overall and split: ``with_context.*`` and
``without_context.*`` (e.g. ``with_context.f1_score``), with the n of each part.

Calibration (``calibrate=True``): the benchmark judge (the bot team's QA method ``rag_judge``, PASS/FAIL at
``threshold``) is run on the same items and compared with the human labels the same way
(``benchmark_*`` keys, its own ``benchmark_failure_kinds``, ``benchmark_error_rate``,
``benchmark_parse_failure_rate`` and ``benchmark_n_partial`` included) — how far the benchmark judge can be
trusted on this data.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Engine

from voproshalych_eval.judges import parse_verdict
from voproshalych_eval.metrics.classification import binary_classification_report, cohen_kappa
from voproshalych_eval.metrics.failures import category, count, request_failures
from voproshalych_eval.plans import ItemResult, Plan, spec
from voproshalych_eval.tiers import aggregation, inputs, llm_calls

TIER = "judge_pipeline"
PLACEHOLDERS = ("{question}", "{context}", "{answer}")
#: the parameters a person sets and their defaults: the plan's table in ``plan_parameters`` (one line each)
DEFAULTS: dict[str, Any] = spec("judge_pipeline").defaults()


def _show_judge(engine: Engine, p: Mapping[str, Any]) -> Any:
    judge = llm_calls.tier_judge(engine, p, use_cache=True)
    if p["prompt"]:
        if getattr(judge, "offline", False):
            raise ValueError("a custom show/no-show prompt needs an LLM; the offline judge has no prompt")
        missing = [f for f in PLACEHOLDERS if f not in p["prompt"]]
        if missing:
            raise ValueError(f"the show/no-show prompt must contain {', '.join(PLACEHOLDERS)}; missing {', '.join(missing)}")
    return judge


def custom_show_no_show(judge: Any, prompt: str, question: str, context: str, answer: str) -> dict[str, Any]:
    """The show/no-show verdict with a custom prompt, parsed by the same strict ``parse_verdict``."""

    text = prompt.replace("{question}", question).replace("{context}", context).replace("{answer}", answer)
    t0 = time.perf_counter()
    try:
        r = judge.client.complete([{"role": "user", "content": text}], model=judge.models[0], temperature=0.0,
                                  max_tokens=300, use_cache=True, purpose="show_no_show")
    except Exception as exc:  # noqa: BLE001 - a counted failure
        return {"score": None, "passed": None, "error": True, "duration_s": time.perf_counter() - t0,
                "failures": [{"kind": getattr(exc, "kind", "error"), "message": str(exc)}]}
    tokens = {"prompt": r.prompt_tokens or 0, "completion": r.completion_tokens or 0}
    v = parse_verdict(r.text)
    if v is None:
        return {"score": None, "passed": None, "raw_replies": [r.text], "duration_s": r.latency_s, "tokens": tokens,
                "failures": [{"kind": "parse_error", "message": "reply is neither 'Yes' nor 'No: reason'", "raw_text": r.text}]}
    return {"score": 1.0 if v[0] else 0.0, "passed": v[0], "explanation": v[1], "raw_replies": [r.text],
            "duration_s": r.latency_s, "tokens": tokens, "failures": []}


def _verdict(res: Mapping[str, Any]) -> bool | None:
    """Show (True) / no-show (False) of a judge result; ``None`` without a verdict or on a tie (undecided)."""
    if res.get("undecided"):
        return None
    v = res.get("passed")
    if v is None and res.get("score") is not None:
        v = bool(res["score"] >= 0.5)
    return None if v is None else bool(v)


def build_plan(engine: Engine, params: Mapping[str, Any]) -> JudgePipelinePlan:
    """The show/no-show plan for ``params`` (see :data:`DEFAULTS`); also used by ``resume``."""
    return JudgePipelinePlan(engine, params)


class JudgePipelinePlan(Plan):
    """The show/no-show judge on a labelled judge dataset (optionally against the benchmark judge)."""

    def __init__(self, engine: Engine, params: Mapping[str, Any]) -> None:
        p = spec("judge_pipeline").resolve(params)
        ds = inputs.load_dataset(engine, p["dataset"], "judge")
        pairs = inputs.select_items(ds, limit=p["limit"])
        self.judge = judge = _show_judge(engine, p)
        self.bench = bench = llm_calls.tier_judge(engine, p) if p["calibrate"] else None
        self.threshold = float(p["threshold"])
        self.prompt = p["prompt"]
        offline = bool(getattr(judge, "offline", False))
        params_out = {**p, "offline": True if offline else p["offline"], "n_items": len(pairs)}
        prompt = p["prompt"] or (judge.prompts("show_no_show") if hasattr(judge, "prompts") else None)
        super().__init__(
            tier=TIER,
            items=pairs,
            concurrency=int(p["concurrency"] or 4),
            params=params_out,
            models={"judges": list(getattr(judge, "models", []) or [])},
            prompts={"show_no_show": prompt if isinstance(prompt, str) else {"production default": prompt}},
            dataset_id=ds.id,
            dataset_name=ds.name,
            dataset_hash=ds.content_hash,
            offline=offline,
            providers=llm_calls.providers_of(judge, bench),
        )

    def work(self, record: dict[str, Any]) -> ItemResult:
        with_context = bool(str(record.get("context") or "").strip())
        if self.prompt:
            res = custom_show_no_show(self.judge, self.prompt, record["question"], record["context"], record["answer"])
        else:
            res = llm_calls.judge_call(self.judge.show_no_show, record["question"], record["context"], record["answer"])
        verdict = _verdict(res)
        out: dict[str, Any] = {
            "question": record["question"],
            "context": record["context"],
            "answer": record["answer"],
            "label": int(record["label"]),
            "kind": record.get("kind"),
            "rationale": record.get("rationale"),
            "with_context": with_context,
            "verdict": None if verdict is None else int(verdict),
            "correct": None if verdict is None else int(verdict) == int(record["label"]),
            "reason": res.get("explanation"),
            "show_no_show": res,
            "failure_kind": None if verdict is not None else (aggregation.judge_kind(res) or "error"),
        }
        tokens = llm_calls.tokens_of(res)
        if self.bench is not None and with_context:  # the benchmark judge grounds in a context: none, no verdict
            sample = llm_calls.make_sample(record["question"], record["answer"], None, [record["context"]])
            b = llm_calls.judge_call(self.bench.rag_judge, sample, threshold=self.threshold)
            bv = _verdict(b)
            out["benchmark"] = b
            out["benchmark_verdict"] = None if bv is None else int(bv)
            tokens += llm_calls.tokens_of(b)
        return ItemResult(out, tokens=tokens)

    def finalize(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        return aggregate(records)


def classification(labels: Sequence[int], verdicts: Sequence[int | None], prefix: str = "") -> dict[str, Any]:
    """Classification metrics over the items with a valid verdict (failures counted apart)."""
    pairs = [(int(y), int(v)) for y, v in zip(labels, verdicts, strict=True) if v is not None]
    out: dict[str, Any] = {f"{prefix}n_valid": len(pairs), f"{prefix}n_failed": len(labels) - len(pairs)}
    if not pairs:
        return out
    y, v = [a for a, _ in pairs], [b for _, b in pairs]
    rep = binary_classification_report(y, v)
    out.update({f"{prefix}{k}": rep[k] for k in ("accuracy", "precision", "recall", "f1_score", "confusion_matrix")})
    out[f"{prefix}cohen_kappa"] = cohen_kappa(y, v)
    return out


def _rates(kinds: Mapping[str, int], n_calls: int, prefix: str = "") -> dict[str, Any]:
    """Request failures (timeout, connection, 429 after retries, 5xx, context overflow, refused requests) and
    unparseable replies, both over the
    same denominator: every call asked (items recorded done or failed)."""
    return {f"{prefix}error_rate": request_failures(kinds) / n_calls if n_calls else None,
            f"{prefix}parse_failure_rate": kinds["parse"] / n_calls if n_calls else None}


def aggregate(records: list[dict[str, Any]]) -> dict[str, Any]:
    res = aggregation.done_results(records)
    labels = [r["label"] for r in res]
    m = classification(labels, [r.get("verdict") for r in res])
    failed_kinds = aggregation.failed_item_kinds(records)
    m["n_items"] = len(records)
    m["n_failed_items"] = len(failed_kinds)
    m["judged_share"] = aggregation.judged_share(sum(1 for r in res if r.get("verdict") is not None), len(records))
    kinds = count([category(r.get("failure_kind")) if r.get("failure_kind") else None for r in res] + failed_kinds)
    m["failure_kinds"] = kinds
    # a tie between judges is undecided: left out of the classification metrics, counted apart (not a failure)
    m["n_undecided"] = kinds["undecided"]
    m["n_failed"] = m["n_failed"] - kinds["undecided"]
    m.update(_rates(kinds, len(res) + len(failed_kinds)))
    m["n_partial"] = sum(bool((r.get("show_no_show") or {}).get("partial")) for r in res)
    calls = aggregation.jury_calls([r.get("show_no_show") for r in res])
    if calls is not None:
        m["judge_calls"] = calls
    m["accuracy_ci"] = aggregation.agg([None if r.get("correct") is None else float(r["correct"]) for r in res])
    m.update(aggregation.latency_percentiles([r.get("show_no_show", {}).get("duration_s") for r in res], "latency"))
    m["tokens"] = sum(llm_calls.tokens_of(r.get("show_no_show", {})) + llm_calls.tokens_of(r.get("benchmark", {}) or {}) for r in res)
    by_kind: dict[str, Any] = {}
    for k in sorted({r.get("kind") or "—" for r in res}):
        sub = [r for r in res if (r.get("kind") or "—") == k]
        valid = [r for r in sub if r.get("correct") is not None]
        by_kind[k] = {"n": len(sub), "accuracy": (sum(1 for r in valid if r["correct"]) / len(valid)) if valid else None}
    m["accuracy_by_kind"] = by_kind
    for part, want in (("with_context", True), ("without_context", False)):
        sub = [r for r in res if _has_context(r) is want]
        m[part] = {"n_items": len(sub), **classification([r["label"] for r in sub], [r.get("verdict") for r in sub])}
    if any("benchmark_verdict" in r for r in res):
        bench = [r for r in res if "benchmark_verdict" in r]
        m.update(classification([r["label"] for r in bench], [r.get("benchmark_verdict") for r in bench],
                                prefix="benchmark_"))
        # the benchmark judge's own failures, by kind, over the calls it was asked (items with a context)
        b_raw = [aggregation.judge_kind(r.get("benchmark")) for r in bench]
        b_kinds = count(category(k) if k else None for k in b_raw)
        m["benchmark_failure_kinds"] = b_kinds
        m["benchmark_n_undecided"] = b_kinds["undecided"]
        m["benchmark_n_failed"] = m["benchmark_n_failed"] - b_kinds["undecided"]
        m.update(_rates(b_kinds, len(bench), prefix="benchmark_"))
        m["benchmark_n_partial"] = sum(bool((r.get("benchmark") or {}).get("partial")) for r in bench)
        b_calls = aggregation.jury_calls([r.get("benchmark") for r in bench])
        if b_calls is not None:
            m["benchmark_judge_calls"] = b_calls
    return m


def _has_context(r: Mapping[str, Any]) -> bool:
    """Whether an item was judged with a context (older records lack the flag: read it from the context)."""
    if "with_context" in r:
        return bool(r["with_context"])
    return bool(str(r.get("context") or "").strip())
