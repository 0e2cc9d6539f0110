"""``labels``, ``judge-agreement`` and ``judge-align``: human labels, a judge's agreement with them, alignment.

    voproshalych-eval labels import FILE [--metric M] [--annotator NAME]   # a labels file or a judge set
    voproshalych-eval labels import --demo                                  # the demo's 92 show/no-show labels
    voproshalych-eval labels import --review DATASET                        # a dataset's review decisions
    voproshalych-eval labels export [--metric M] [--format csv|json] [--output FILE]
    voproshalych-eval labels list [--metric M] [--json]
    voproshalych-eval judge-agreement --metric M [--model ...] [--version V] [--annotator A] [--limit N] [--json]
    voproshalych-eval judge-agreement --metric dataset_review --run RUN_ID [--folds 5] [--json]  # the gates
    voproshalych-eval judge-align --metric M --folds 5 [--model ...] [--examples 4] [--limit N] [--json]

``judge-agreement`` judges the labelled items of ``M`` (a judge-metric key, ``show_no_show`` for the judge
pipeline's production judge) — items a stored run judged with the same model and prompt come from the LLM
cache, the others are asked — and prints ``n``, ``kappa`` (binary) or ``alpha`` (ordinal) or ``spearman``
(continuous), each with ``ci``, ``bias`` (judge − human), ``confusion``, ``per_topic``, ``human_ceiling``.
``judge-align`` prints ``version``, ``folds`` (held-out item keys per fold), ``before`` and ``after``
(held-out agreement with ``ci``), ``difference`` and ``adopted`` (true only when the improvement's CI excludes
zero); the version is stored with its lineage and becomes the metric's default only when adopted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from voproshalych_eval.commands.output import add_json_flag, emit, engine, progress
from voproshalych_eval.config import get_settings
from voproshalych_eval.db import labels as store
from voproshalych_eval.engine import runs
from voproshalych_eval.judges import get_judge, labels
from voproshalych_eval.judges.judge_metrics import JUDGE_METRICS
from voproshalych_eval.judges.labels import EXTRA_METRICS, export_labels


def register(sub: Any) -> None:
    metrics = sorted([*JUDGE_METRICS, *EXTRA_METRICS])
    p = sub.add_parser("labels", help="human labels of judged items: import, export, list")
    lsub = p.add_subparsers(dest="labels_command", metavar="ACTION")
    imp = lsub.add_parser("import", help="import a label file (CSV/JSON/JSONL) or a judge set")
    imp.add_argument("file", nargs="?", default=None, help="labels file or judge set (label / ground_truth_show)")
    imp.add_argument("--metric", default=None, choices=metrics, help="the metric of every row (else its column)")
    imp.add_argument("--annotator", default=None, help="who labelled (else the annotator column; a judge set: its name)")
    imp.add_argument("--demo", action="store_true", help="import the demo's judge set (92 show/no-show labels)")
    imp.add_argument("--review", default=None, metavar="DATASET", help="import a dataset's review decisions")
    add_json_flag(imp)
    imp.set_defaults(func=cmd_import)
    exp = lsub.add_parser("export", help="write the stored labels as a label file")
    exp.add_argument("--metric", default=None, choices=metrics)
    exp.add_argument("--format", default="csv", choices=["csv", "json"])
    exp.add_argument("--output", default=None, help="file to write (default: stdout)")
    exp.set_defaults(func=cmd_export)
    lst = lsub.add_parser("list", help="labels per metric (or the labels of one metric)")
    lst.add_argument("--metric", default=None, choices=metrics)
    add_json_flag(lst)
    lst.set_defaults(func=cmd_list)
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])

    for name, helptext in (("judge-agreement", "agreement of a judge metric with its human labels"),
                           ("judge-align", "align a judge metric with its labels (k-fold, held-out before/after)")):
        a = sub.add_parser(name, help=helptext)
        a.add_argument("--metric", required=True, choices=metrics)
        a.add_argument("--model", action="append", default=None, help="judge model (repeatable; default: the first "
                       "configured)")
        a.add_argument("--annotator", action="append", default=None, help="only these annotators' labels")
        a.add_argument("--limit", type=int, default=None, help="only the first N labelled items")
        a.add_argument("--concurrency", type=int, default=None, help="judge calls in flight (default: the LLM's)")
        a.add_argument("--offline", action="store_true", help="the offline heuristic judge")
        a.add_argument("--lang", default="ru", choices=["ru", "en"])
        a.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
        if name == "judge-agreement":
            a.add_argument("--version", default=None, help="aligned judge version (default: the metric's adopted one; "
                           "METRIC@builtin for the built-in prompt)")
            a.add_argument("--run", type=int, default=None, help="dataset_review: every gate of this generation run "
                           "against the reviewers' decisions on its kept items, thresholds calibrated by k-fold")
            a.add_argument("--folds", type=int, default=5, help="dataset_review --run: folds of the threshold calibration")
            a.set_defaults(func=cmd_agreement)
        else:
            a.add_argument("--folds", type=int, default=5)
            a.add_argument("--examples", type=int, default=4, help="few-shot examples per version")
            a.add_argument("--seed", type=int, default=0)
            a.set_defaults(func=cmd_align)
        add_json_flag(a)


def cmd_import(args: Any) -> int:
    eng = engine()
    if args.demo:
        n = labels.import_demo_judge_set(eng)
    elif args.review:
        n = labels.import_review_decisions(eng, args.review)
    elif args.file:
        n = labels.import_file(eng, Path(args.file), metric=args.metric, annotator=args.annotator)
    else:
        raise ValueError("labels import needs a FILE, --demo or --review DATASET")
    emit({"imported": n}, args.json, f"{n} label(s) stored")
    return 0


def cmd_export(args: Any) -> int:
    out = export_labels(engine(), args.metric, args.format)
    if args.output:
        Path(args.output).write_text(out, encoding="utf-8")
        progress(f"labels written to {args.output}")
    else:
        sys.stdout.write(out)
    return 0


def cmd_list(args: Any) -> int:
    eng = engine()
    if args.metric:
        rows = [{k: r[k] for k in ("id", "item_id", "item_key", "value", "annotator", "note", "source", "updated_at")}
                for r in store.list_labels(eng, args.metric)]
        human = "\n".join(f"{r['id']}\t{r['item_id'] or r['item_key']}\t{r['value']:g}\t{r['annotator']}\t"
                          f"{(r['note'] or '')[:60]}" for r in rows) or "no labels"
        emit({"metric": args.metric, "labels": rows}, args.json, human)
    else:
        rows = store.label_counts(eng)
        human = "\n".join(f"{r['metric']}: {r['n_labels']} label(s), {r['n_items']} item(s), "
                          f"{r['n_annotators']} annotator(s)" for r in rows) or "no labels"
        emit({"metrics": rows}, args.json, human)
    return 0


def _judge(eng: Any, args: Any, version: Any) -> Any:
    return get_judge(get_settings(), eng, models=args.model, offline=True if args.offline else None, lang=args.lang,
                     versions={args.metric: version} if version is not None else None)


def _items(eng: Any, args: Any) -> list[Any]:
    # heavy: keeps judges.agreement out of --help (+2 ms)
    from voproshalych_eval.judges.agreement import labelled_items

    items = labelled_items(eng, args.metric, annotators=args.annotator)
    if not items:
        raise ValueError(f"no labels for {args.metric}; import some with `labels import` (e.g. --demo)")
    return items[: args.limit] if args.limit else items


def cmd_agreement(args: Any) -> int:
    # heavy: keeps judges.agreement out of --help (+2 ms)
    from voproshalych_eval.judges.agreement import measure

    # heavy: keeps judges.versions out of --help (+1 ms)
    from voproshalych_eval.judges.versions import resolve_versions

    eng = engine()
    if args.metric == "dataset_review" and args.run is not None:
        return _run_gate_agreement(eng, args)
    items = _items(eng, args)
    if args.metric == "dataset_review":  # the reviewers' decisions are the labels of the well-formed question gate
        return _gate_agreement(eng, args, items)
    version = resolve_versions(eng, [args.version] if args.version else None, defaults_for=[args.metric]).get(args.metric)
    judge = _judge(eng, args, version)
    progress(f"judging {len(items)} labelled item(s) of {args.metric} with {judge.label}")
    rep = measure(judge, args.metric, items, concurrency=args.concurrency, n_resamples=args.resamples)
    store.save_agreement(eng, rep)  # run reports warn next to a metric whose judge agrees poorly
    main = rep["main"]
    value = (rep.get(main) or {}).get("value")
    human = (f"{args.metric} · {rep['version']} · {judge.label}: n={rep['n']} (failed {rep['n_failed']}), "
             f"{main}={_f(value)} CI {_ci((rep.get(main) or {}).get('ci'))}, bias={_f((rep.get('bias') or {}).get('mean'))} "
             f"CI {_ci((rep.get('bias') or {}).get('ci'))}" + (" — agrees poorly" if rep.get("poor") else ""))
    emit(rep, args.json, human)
    return 0


def _gate_agreement(eng: Any, args: Any, items: list[Any]) -> int:
    """Agreement of the generation's well-formed question gate (a pure rule, no LLM) with the reviewers'
    accept (1) / reject (0) decisions on the same items."""
    # heavy: keeps generation.gates out of --help (+3 ms)
    from voproshalych_eval.generation.gates import strip_preamble, well_formed_question

    # heavy: keeps judges.agreement out of --help (+2 ms)
    from voproshalych_eval.judges.agreement import agreement

    judged = [1.0 if well_formed_question(strip_preamble(it.question))[0] else 0.0 for it in items]
    rep = agreement([it.human("binary") for it in items], judged, kind="binary", n_resamples=args.resamples)
    rep.update({"metric": "dataset_review", "models": ["gate:well_formed"], "version": "well_formed@gate",
                "n_labelled": len(items), "failure_kinds": {}, "tokens": {}, "n_cached": 0, "human_ceiling": None})
    store.save_agreement(eng, rep)
    main = (rep.get("kappa") or {}).get("value")
    emit(rep, args.json, f"well-formed question gate vs reviewers: n={rep['n']}, kappa="
                         f"{'—' if main is None else f'{main:.3f}'}")
    return 0


def _run_gate_agreement(eng: Any, args: Any) -> int:
    """Every gate of a generation run against the reviewers' accept/reject of its kept items
    (:mod:`voproshalych_eval.generation.gate_review`); each gate's measurement is stored like a judge's."""
    # heavy: keeps generation.gate_review out of --help (+4 ms)
    from voproshalych_eval.generation.gate_review import gate_agreement, run_review

    review = run_review(eng, runs.get_run(eng, args.run), runs.item_records(eng, args.run))
    if not review["items"]:
        raise ValueError(f"generation run {args.run} has no reviewed kept item; accept or reject its items on the "
                         "Dataset review page first")
    gates = gate_agreement(review["items"], thresholds=review["thresholds"], folds=args.folds,
                           n_resamples=args.resamples)
    for gate, rep in gates.items():
        store.save_agreement(eng, {**rep, "metric": "dataset_review", "main": "kappa", "models": [f"gate:{gate}"],
                                   "version": f"{gate}@gate", "run_id": args.run})
    review.pop("items")
    out = {**review, "metric": "dataset_review", "gates": gates}
    lines = [f"run {args.run} {review['dataset_ref']}: {review['n_reviewed']} reviewed of {review['n_kept']} kept, "
             f"{review['n_rejected']} rejected"]
    for gate, rep in gates.items():
        cal = rep.get("calibration") or {}
        extra = ""
        if cal:
            held = (cal.get("held_out") or {}).get("kappa") or {}
            extra = (f"; threshold {cal['threshold']:g} → calibrated {_f(cal.get('calibrated'))}, held-out kappa "
                     f"{_f(held.get('value'))} CI {_ci(held.get('ci'))}" + (" (adopt)" if cal.get("adopt") else ""))
        lines.append(f"  {gate}: n={rep['n']}, kappa={_f((rep.get('kappa') or {}).get('value'))}, "
                     f"bias={_f((rep.get('bias') or {}).get('mean'))}{extra}")
    emit(out, args.json, "\n".join(lines))
    return 0


def cmd_align(args: Any) -> int:
    # heavy: keeps judges.alignment out of --help (+3 ms)
    from voproshalych_eval.judges.alignment import OPTIMIZER, align

    eng = engine()
    items = _items(eng, args)
    base = _judge(eng, args, None)
    progress(f"aligning {args.metric} on {len(items)} labelled item(s), {args.folds} folds, judge {base.label}")
    out = align(lambda v: base if v is None else _judge(eng, args, v), args.metric, items, folds=args.folds,
                n_examples=args.examples, seed=args.seed, n_resamples=args.resamples, lang=args.lang,
                concurrency=args.concurrency, base=str(base.prompts(args.metric)))
    final = out.pop("final")
    lineage = {"labels": [it.key for it in items], "annotators": sorted({a for it in items for a in it.values}),
               "folds": out["folds"], "optimizer": OPTIMIZER, "models": base.models, "offline": base.offline,
               "before": out["before"], "after": out["after"], "difference": out["difference"],
               "tokens": out["tokens"], "duration_s": out["duration_s"]}
    store.save_version(eng, args.metric, final.version, final.spec(), lineage, adopted=out["adopted"])
    st = out["statistic"]

    def val(rep: dict[str, Any]) -> str:
        return f"{_f((rep.get(st) or {}).get('value'))} CI {_ci((rep.get(st) or {}).get('ci'))}"

    d = out["difference"]
    human = (f"{args.metric}: held-out {st} before {val(out['before'])} → after {val(out['after'])}; "
             f"Δ={_f(d.get('delta'))} CI {_ci(d.get('ci'))}; "
             + (f"adopted {out['version']} as the default" if out["adopted"] else
                f"not adopted (stored {out['version']}; the built-in prompt stays the default)"))
    emit(out, args.json, human)
    return 0


def _f(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}"


def _ci(ci: Any) -> str:
    return "—" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"
