"""``judge``: run one judge metric over a file of samples (JSON array or JSONL, Sample fields in snake case).

    voproshalych-eval judge --metric faithfulness --input samples.jsonl [--models a,b] [--aggregate median]
        [--quorum all|majority|any|N] [--vote-quorum ...] [--threshold 0.7] [--definition "..."]
        [--min-score 0 --max-score 5] [--strictness 3] [--rubrics rubrics.json] [--embedders a,b]
        [--no-cache] [--offline] [--lang en] [--json]

The metric flags come from the judge-metric table (``judges/judge_metrics.py``): each applies to the
metrics that have the option, and a flag a metric does not take is an error. For ``semantic_similarity``
``--models`` names the embedding models (of the Semantic Similarity metric) and ``--aggregate`` combines them.

Output: one result per sample and an aggregate (mean, 95% CI, n, failures). The samples are stored as a
dataset and the run (``judge_metrics``) is executed by the engine: each sample recorded as it finishes,
resumable with ``resume RUN_ID`` (which reads the stored samples, never the file again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voproshalych_eval.commands.output import emit, engine, exit_code, progress
from voproshalych_eval.commands.plan_flags import add_plan_flags, plan_params
from voproshalych_eval.commands.resume import add_outcome_flags, execute_plan
from voproshalych_eval.engine import runs
from voproshalych_eval.judges import JUDGE_METRICS
from voproshalych_eval.tiers.judge_metrics import (
    build_plan,
    read_rubrics,
    read_samples,
    run_summary,
    store_samples,
)


def register(sub: Any) -> None:
    p = sub.add_parser("judge", help="run a judge metric (faithfulness, aspect_critic, ...) on a file of samples")
    add_plan_flags(p, "judge_metrics", required=("metric",))
    p.add_argument("--input", required=True,
                   help="JSON array, JSONL or CSV of samples (user_input, response, reference, retrieved_contexts)")
    p.add_argument("--encoding", default=None, help="encoding of --input when it is not UTF-8 (e.g. cp1251)")
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
    add_outcome_flags(p)
    p.set_defaults(func=cmd_judge)


def metric_config(metric: str, args: Any) -> dict[str, Any]:
    """The metric's options from the CLI flags (checked against the judge-metric table); a flag the metric does
    not take is an error, never silently ignored."""
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
        cfg["embedders"] = args.models  # Ragas Semantic Similarity: the models of Semantic Similarity are embedding models
    return spec.resolve(cfg)


def cmd_judge(args: Any) -> int:
    if args.metric not in JUDGE_METRICS:
        raise ValueError(f"unknown --metric {args.metric!r}; known: {', '.join(sorted(JUDGE_METRICS))}")
    samples = read_samples(args.input, encoding=args.encoding, metric=args.metric)
    cfg = metric_config(args.metric, args)
    eng = engine()
    dataset = store_samples(eng, samples, Path(args.input).stem)
    plan = build_plan(eng, {**plan_params("judge_metrics", args), "dataset": dataset.id, "config": cfg})
    if plan.offline:
        progress("No LLM provider configured (or --offline): using the offline heuristic judge.")
    judges = plan.models["judge"]
    progress(f"judge {args.metric}: {len(plan.items)} samples, models {', '.join(judges)}")
    run_id, prog = execute_plan(plan, args)
    out = run_summary(runs.get_run(eng, run_id), runs.item_records(eng, run_id))
    a = out["aggregate"]

    def f(x: Any) -> str:
        return "—" if x is None else f"{x:.3f}"

    lines = [
        f"run #{run_id} ({prog.status}) · {args.metric} · models: {', '.join(judges)} · aggregate: {plan.params['aggregate']}"
        + (" · OFFLINE HEURISTIC" if plan.offline else ""),
    ]
    for r in out["results"]:
        lines.append(f"  [{r['item_key']}] score={f(r.get('score'))}"
                     + (f" passed={r['passed']}" if r.get("passed") is not None else "")
                     + (f" failures={len(r['failures'])}" if r.get("failures") else ""))
    kinds = ", ".join(f"{k} {n}" for k, n in (a.get("failure_kinds") or {}).items() if n)
    lines.append(f"{a['key']} = {f(a.get('value'))} (95% CI {f(a.get('ci_low'))}–{f(a.get('ci_high'))}, n={a.get('n')}, "
                 f"failures={a.get('n_failed')}, partial={a.get('n_partial', 0)}, "
                 f"not applicable={a.get('n_not_applicable', 0)}" + (f"; {kinds}" if kinds else "") + ")")
    emit(out, args.json, "\n".join(lines))
    return exit_code(prog.status)
