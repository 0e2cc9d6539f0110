"""``judge``: run one judge metric over a file of samples (JSON array or JSONL, Sample fields in snake case).

    voproshalych-eval judge --metric faithfulness --input samples.jsonl [--models a,b] [--aggregate median]
        [--quorum all|majority|any|N] [--vote-quorum ...] [--threshold 0.7] [--definition "..."]
        [--min-score 0 --max-score 5] [--strictness 3] [--rubrics rubrics.json] [--embedders a,b]
        [--no-cache] [--offline] [--lang en] [--json]

The metric flags come from the judge-metric table (``judges/judge_metrics.py``): each applies to the
metrics that have the option, and a flag a metric does not take is an error. For ``semantic_similarity``
``--models`` names the embedding models (seed 002) and ``--aggregate`` combines them.

Output: one result per sample and an aggregate (mean, 95% CI, n, failures); the run is recorded (tier
``judge_metrics``) with every item.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voproshalych_eval.commands.common import add_json_flag, emit, engine, progress


def register(sub: Any) -> None:
    from voproshalych_eval.judges import AGGREGATORS, JUDGE_METRICS
    from voproshalych_eval.judges.base import QUORUMS

    p = sub.add_parser("judge", help="run a judge metric (faithfulness, aspect_critic, ...) on a file of samples")
    p.add_argument("--metric", required=True, choices=sorted(JUDGE_METRICS))
    p.add_argument("--input", required=True,
                   help="JSON array, JSONL or CSV of samples (user_input, response, reference, retrieved_contexts)")
    p.add_argument("--encoding", default=None, help="encoding of --input when it is not UTF-8 (e.g. cp1251)")
    p.add_argument("--models", default=None, help="comma-separated judge models (default: first configured); for "
                   "semantic_similarity: the embedding models (seed 002 'models')")
    p.add_argument("--aggregate", default="average", choices=AGGREGATORS, help="multi-model aggregator")
    p.add_argument("--quorum", default=None, help=f"models that must answer: {', '.join(QUORUMS)} or a number "
                   "(default: all for min/max/consensus, a strict majority otherwise)")
    p.add_argument("--vote-quorum", default=None, help="strictness votes of one model that must answer (default: "
                   "a strict majority)")
    # one flag per option of the judge-metric table; each applies only to the metrics that have it
    options: dict[str, tuple[Any, list[str]]] = {}
    for spec in JUDGE_METRICS.values():
        for o in spec.options:
            options.setdefault(o.name, (o, []))[1].append(spec.key)
    for name, (o, metrics) in options.items():
        kind = {"int": int, "float": float}.get(o.kind, str)
        extra = " (JSON file or JSON object)" if o.kind == "json" else " (comma-separated)" if o.kind == "list" else ""
        p.add_argument(o.flag, dest=f"opt_{name}", type=kind, default=None, metavar=name.upper(),
                       help=f"{o.help_en or o.en}{extra}; for {', '.join(metrics)}")
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
    """The metric's options from the CLI flags (checked against the judge-metric table); a flag the metric does
    not take is an error, never silently ignored."""
    from voproshalych_eval.judges import JUDGE_METRICS

    spec = JUDGE_METRICS[metric]
    names = {o.name for o in spec.options}
    cfg: dict[str, Any] = {}
    for key, value in vars(args).items():
        if not key.startswith("opt_") or value is None:
            continue
        name = key.removeprefix("opt_")
        if name not in names:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} does not apply to {metric} (its options: "
                             f"{', '.join(o.flag for o in spec.options) or 'none'})")
        opt = spec.option(name)
        if opt is not None and opt.kind == "json" and isinstance(value, str):
            value = read_rubrics(value)  # a JSON file or an inline JSON object, read by the one file reader
        cfg[name] = value
    if spec.prompt is None and "embedders" in names and getattr(args, "models", None):
        cfg["embedders"] = args.models  # seed 002: the models of Semantic Similarity are embedding models
    return spec.resolve(cfg)


def _quorum(value: str | None) -> str | int | None:
    return int(value) if value is not None and value.isdigit() else value


def run_judge_metric(eng: Any, metric: str, samples: list[dict[str, Any]], *, judge: Any, cfg: dict[str, Any],
                     dataset_name: str | None = None, progress_cb: Any = None, cancel: Any = None) -> dict[str, Any]:
    """Evaluate, record a ``judge_metrics`` run with every item, and return the JSON-ready summary."""
    from voproshalych_eval import runs
    from voproshalych_eval.datasets import content_hash
    from voproshalych_eval.judges import METRIC_KEYS

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
            ok = r.score is not None or r.failure_kind == "not_applicable"  # not applicable: nothing to retry
            runs.record_item(eng, run.id, key, d, status="done" if ok else "failed",
                             error=None if ok else f"{r.failure_kind}: " + "; ".join(
                                 str(f.get("message", "")) for f in r.failures)[:500])
            items.append(d)
        metrics = judge_metric_aggregates(metric, [r for r in results if r is not None])
        agg_d = metrics[METRIC_KEYS[metric]]
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
        "aggregate": {**agg_d, "key": METRIC_KEYS[metric], "n_failures": agg_d["n_failed"]},
        "metrics": metrics,
    }


def judge_metric_aggregates(metric: str, results: list[Any]) -> dict[str, Any]:
    """Run-level aggregates of a judge metric over its results: ``avg_<metric>`` on the metric's own scale
    (with failure kinds, not-applicable and partial counts), its 0–1 twin where the scale is not 0–1 and the
    twin is useful (``avg_rubrics_score_norm``), and the ``pass_rate`` of the results with a verdict."""
    from voproshalych_eval.judges import METRIC_KEYS
    from voproshalych_eval.metrics.statistics import summarize

    def kind(r: Any) -> str | None:
        return "empty_answer" if r.empty_answer else r.failure_kind

    kinds = [kind(r) for r in results]
    partial = [r.partial for r in results]
    out: dict[str, Any] = {
        METRIC_KEYS[metric]: summarize([r.score for r in results], kinds=kinds, partial=partial).to_dict()}
    if metric == "rubrics_score":
        out[f"{METRIC_KEYS[metric]}_norm"] = summarize([r.score_norm for r in results], kinds=kinds,
                                                       partial=partial).to_dict()
    passed = [r.passed for r in results if r.passed is not None]
    if passed:
        out["pass_rate"] = summarize([float(p) for p in passed]).to_dict()
    out["n_partial"] = sum(1 for r in results if r.partial)
    return out


def cmd_judge(args: Any) -> int:
    from voproshalych_eval.config import get_settings
    from voproshalych_eval.judges import get_judge

    settings = get_settings()
    samples = read_samples(args.input, encoding=args.encoding)
    cfg = metric_config(args.metric, args)
    eng = engine()
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    from voproshalych_eval.judges import JUDGE_METRICS

    llm_models = models if JUDGE_METRICS[args.metric].prompt is not None else None
    judge = get_judge(settings, eng, models=llm_models, aggregate=args.aggregate,
                      offline=True if args.offline else None, use_cache=not args.no_cache,
                      lang=args.lang or settings.language, quorum=_quorum(args.quorum),
                      vote_quorum=_quorum(args.vote_quorum))
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
    kinds = ", ".join(f"{k} {n}" for k, n in (a.get("failure_kinds") or {}).items() if n)
    lines.append(f"{a['key']} = {f(a['value'])} (95% CI {f(a['ci_low'])}–{f(a['ci_high'])}, n={a['n']}, "
                 f"failures={a['n_failed']}, partial={a.get('n_partial', 0)}, "
                 f"not applicable={a.get('n_not_applicable', 0)}" + (f"; {kinds}" if kinds else "") + ")")
    emit(out, args.json, "\n".join(lines))
    return 0
