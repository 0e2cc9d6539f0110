"""``judge``: run one judge metric over a file of samples (JSON array or JSONL, Sample fields in snake case).

    voproshalych-eval judge --metric faithfulness --input samples.jsonl [--models a,b] [--aggregate median]
        [--threshold 0.7] [--definition "..."] [--min-score 0 --max-score 5] [--strictness 3]
        [--rubrics rubrics.json] [--no-cache] [--offline] [--lang en] [--json]

Output: one result per sample and an aggregate (mean, 95% CI, n, failures); the run is recorded (tier
``judge_metrics``) with every item.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voproshalych_eval.commands.common import add_json_flag, emit, engine, progress


def register(sub: Any) -> None:
    from voproshalych_eval.judges import AGGREGATORS, METRICS

    p = sub.add_parser("judge", help="run a judge metric (faithfulness, aspect_critic, ...) on a file of samples")
    p.add_argument("--metric", required=True, choices=sorted(METRICS))
    p.add_argument("--input", required=True,
                   help="JSON array, JSONL or CSV of samples (user_input, response, reference, retrieved_contexts)")
    p.add_argument("--encoding", default=None, help="encoding of --input when it is not UTF-8 (e.g. cp1251)")
    p.add_argument("--models", default=None, help="comma-separated judge models (default: first configured)")
    p.add_argument("--aggregate", default="average", choices=AGGREGATORS, help="multi-model aggregator")
    p.add_argument("--threshold", type=float, default=None, help="pass threshold (rag_judge default 0.5)")
    p.add_argument("--definition", default=None, help="criterion for aspect_critic / simple_criteria_score")
    p.add_argument("--min-score", type=float, default=0.0)
    p.add_argument("--max-score", type=float, default=5.0)
    p.add_argument("--strictness", type=int, default=1)
    p.add_argument("--n-questions", type=int, default=3, help="response_relevancy: questions to generate")
    p.add_argument("--rubrics", default=None, help="JSON file or JSON object {score1_description: ..., ...}")
    p.add_argument("--no-cache", action="store_true", help="fresh LLM calls (stability runs)")
    p.add_argument("--offline", action="store_true", help="use the offline heuristic judge")
    p.add_argument("--lang", default=None, choices=["ru", "en"], help="prompt/explanation language")
    add_json_flag(p)
    p.set_defaults(func=cmd_judge)


_SAMPLE_FIELDS = {"user_input": "user_input", "retrieved_contexts": "retrieved_contexts", "response": "response",
                  "reference": "reference"}


def read_samples(path: str | Path, *, data: bytes | None = None, encoding: str | None = None,
                 name: str | None = None) -> list[dict[str, Any]]:
    """Samples from a JSON array (or {"samples": [...]}), JSONL or CSV file, read by the one file reader
    (:func:`record_files.read_file`); every problem is a ``RecordFileError`` naming the file, row and field.
    A CSV ``retrieved_contexts`` cell holds a JSON array of strings (or one context)."""
    from voproshalych_eval.judges import Sample
    from voproshalych_eval.record_files import FieldError, RecordFileError, as_json_value, read_file

    f = read_file(path, data=data, encoding=encoding, name=name or Path(path).name)
    out = []
    for rec, row in zip(f.records, f.rows, strict=True):
        r = dict(rec)
        try:
            for k in ("retrieved_contexts", "retrievedContexts", "contexts"):
                if k in r:
                    r[k] = as_json_value(r[k], k)
            if "id" in r and (isinstance(r["id"], bool) or not isinstance(r["id"], (str, int))):
                raise FieldError("id", f"must be a string or an integer, got {type(r['id']).__name__}")
            sample = Sample.from_dict(r)
        except FieldError as exc:
            raise f.error(row, exc) from None
        except ValueError as exc:
            first = str(exc).split(" ", 1)[0]
            raise RecordFileError(f.file, row, _SAMPLE_FIELDS.get(first), str(exc)) from None
        out.append(sample.to_dict() | ({"id": r["id"]} if r.get("id") not in (None, "") else {}))
    if not out:
        raise RecordFileError(f.file, None, None, "no samples")
    return out


def read_rubrics(src: str) -> dict[str, str]:
    """Rubrics from a JSON file or inline JSON: ``{"score1_description": "...", ...}`` (string values)."""
    from voproshalych_eval.record_files import RecordFileError, parse_json_object, read_json_object

    inline = src.lstrip().startswith("{")
    name = "--rubrics" if inline else Path(src).name
    obj = parse_json_object(src, name) if inline else read_json_object(src, name=name)
    for k, v in obj.items():
        if not isinstance(v, str) or not v.strip():
            raise RecordFileError(name, None, k, "a rubric description must be non-empty text")
    return obj


def metric_config(metric: str, args: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {}
    if metric in ("aspect_critic", "simple_criteria_score"):
        if not args.definition:
            raise ValueError(f"--definition is required for {metric}")
        cfg["definition"] = args.definition
        cfg["strictness"] = args.strictness
    if metric == "simple_criteria_score":
        cfg["min_score"], cfg["max_score"] = args.min_score, args.max_score
    if metric == "rubrics_score":
        if not args.rubrics:
            raise ValueError("--rubrics is required for rubrics_score")
        cfg["rubrics"] = read_rubrics(args.rubrics)
    if metric == "response_relevancy":
        cfg["n_questions"] = args.n_questions
    thresholded = ("faithfulness", "answer_relevance", "answer_correctness", "e2e_score", "semantic_similarity")
    if metric in thresholded and args.threshold is not None:
        cfg["threshold"] = args.threshold
    if metric == "rag_judge":
        cfg["threshold"] = 0.5 if args.threshold is None else args.threshold
    return cfg


def run_judge_metric(eng: Any, metric: str, samples: list[dict[str, Any]], *, judge: Any, cfg: dict[str, Any],
                     dataset_name: str | None = None, progress_cb: Any = None, cancel: Any = None) -> dict[str, Any]:
    """Evaluate, record a ``judge_metrics`` run with every item, and return the JSON-ready summary."""
    from voproshalych_eval import runs
    from voproshalych_eval.datasets import content_hash
    from voproshalych_eval.judges import METRIC_KEYS
    from voproshalych_eval.metrics.statistics import summarize

    run = runs.create_run(
        eng, "judge_metrics",
        params={"metric": metric, "aggregate": judge.aggregate, "use_cache": judge.use_cache, "lang": judge.lang,
                **{k: v for k, v in cfg.items()}},
        models={"judge": judge.models, "offline": judge.offline},
        prompts=judge.prompts(metric), dataset_name=dataset_name, dataset_hash=content_hash(samples),
        n_items_total=len(samples), offline=judge.offline,
    )
    judge.run_id = run.id
    try:
        results = judge.evaluate_many(metric, samples, progress=progress_cb, cancel=cancel, **cfg)
        items = []
        for i, (s, r) in enumerate(zip(samples, results, strict=True)):
            key = str(s.get("id", i))
            if r is None:
                continue
            d = r.to_dict() | {"item_key": key, "user_input": s["user_input"]}
            runs.record_item(eng, run.id, key, d, status="done" if r.score is not None else "failed",
                             error=None if r.score is not None else "; ".join(f.get("message", "") for f in r.failures)[:500])
            items.append(d)
        agg = summarize([r.score if r is not None else None for r in results])
        metrics: dict[str, Any] = {METRIC_KEYS[metric]: agg.to_dict()}
        passed = [r.passed for r in results if r is not None and r.passed is not None]
        if passed:
            metrics["pass_rate"] = summarize([float(p) for p in passed]).to_dict()
        status = "cancelled" if cancel is not None and cancel.is_set() else "done"
        runs.finish_run(eng, run.id, metrics, status=status)
    except BaseException as exc:
        runs.fail_run(eng, run.id, str(exc))
        raise
    return {
        "run_id": run.id,
        "metric": metric,
        "models": judge.models,
        "aggregate_method": judge.aggregate,
        "offline": judge.offline,
        "label": "offline heuristic" if judge.offline else None,
        "config": cfg,
        "results": items,
        "aggregate": {**agg.to_dict(), "key": METRIC_KEYS[metric], "n_failures": agg.n_failed},
        "metrics": metrics,
    }


def cmd_judge(args: Any) -> int:
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.judges import get_judge

    settings = get_settings()
    samples = read_samples(args.input, encoding=args.encoding)
    cfg = metric_config(args.metric, args)
    eng = engine()
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    judge = get_judge(settings, eng, models=models, aggregate=args.aggregate, offline=True if args.offline else None,
                      use_cache=not args.no_cache, lang=args.lang or settings.language)
    if judge.offline:
        progress("No LLM provider configured (or --offline): using the offline heuristic judge.")
    progress(f"judge {args.metric}: {len(samples)} samples, models {', '.join(judge.models)}")
    out = run_judge_metric(eng, args.metric, samples, judge=judge, cfg=cfg, dataset_name=Path(args.input).name,
                           progress_cb=lambda d, t: progress(f"  {d}/{t}") if d == t or d % 10 == 0 else None)
    a = out["aggregate"]

    def f(x: Any) -> str:
        return "—" if x is None else f"{x:.3f}"

    lines = [
        f"run #{out['run_id']} · {args.metric} · models: {', '.join(judge.models)} · aggregate: {judge.aggregate}"
        + (" · OFFLINE HEURISTIC" if judge.offline else ""),
    ]
    for r in out["results"]:
        lines.append(f"  [{r['item_key']}] score={f(r['score'])}" + (f" passed={r['passed']}" if r["passed"] is not None else "")
                     + (f" failures={len(r['failures'])}" if r["failures"] else ""))
    lines.append(f"{a['key']} = {f(a['value'])} (95% CI {f(a['ci_low'])}–{f(a['ci_high'])}, n={a['n']}, failures={a['n_failed']})")
    emit(out, args.json, "\n".join(lines))
    return 0
