"""``real-users`` (utilization, topics and coverage gaps, domain analysis) and ``import-questions``."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from voproshalych_eval.commands.output import add_json_flag, emit, engine, exit_code
from voproshalych_eval.commands.plan_flags import add_plan_flags, plan_params
from voproshalych_eval.commands.resume import add_outcome_flags, execute_plan
from voproshalych_eval.datasets.files import dataframe_csv, split_names
from voproshalych_eval.engine import runs
from voproshalych_eval.jsonable import dumps
from voproshalych_eval.plans import spec as plan_spec


def register(sub: Any) -> None:
    p = sub.add_parser(
        "real-users",
        help="real-user analytics of the question log: chunk utilization, topics and coverage gaps, domain",
        description=(
            "Analyses the whole filtered question log (questions without a stored embedding are embedded, cached) "
            "and records a real_users run. Real-user logs are analytics, not gold retrieval metrics."
        ),
    )
    add_plan_flags(p, "real_users")
    p.add_argument("--analysis", choices=("utilization", "topics", "domain", "all"), default="all")
    p.add_argument("--from", dest="start", type=date.fromisoformat, default=None, help="first day, YYYY-MM-DD")
    p.add_argument("--to", dest="end", type=date.fromisoformat, default=None, help="last day, YYYY-MM-DD")
    p.add_argument("--answered", choices=("yes", "no", "all"), default="all")
    p.add_argument("--score", action="append", default=None,
                   help="keep these scores (repeatable): 5, 1, unrated")
    p.add_argument("--slang", type=Path, default=None, help="slang dictionary (JSON or CSV) merged with the defaults")
    p.add_argument("--answer-rules", type=Path, default=None,
                   help="bot-answer hint rules (JSON: patterns, overrides) that suggest classes and give the classifier its first examples "
                        "telling real answers from declines in disguise (default: the built-in rules)")
    p.add_argument("--report", type=Path, default=None, help="write the coverage-gap report (.md or .html)")
    add_outcome_flags(p)
    p.set_defaults(func=cmd_real_users)

    p = sub.add_parser(
        "answer-labels",
        help="a person's classes for the bot's frequent answer texts (what the answer classifier learns from)",
        description="Import labels from a CSV/JSON/JSONL file of {answer, class[, labelled_by]} records, export "
                    "them, or list them. Classes: answer, not_found, refusal, template, error, clarification.",
    )
    p.add_argument("action", choices=("import", "export", "list"))
    p.add_argument("file", type=Path, nargs="?", default=None, help="the file to import from or export to")
    p.add_argument("--by", default=None, help="who labelled them (when the file has no labelled_by column)")
    add_json_flag(p)
    p.set_defaults(func=cmd_answer_labels)

    p = sub.add_parser(
        "import-questions",
        help="import a question-log export (CSV / JSONL / JSON with production column names) into eval.question_log",
    )
    p.add_argument("file", type=Path)
    p.add_argument("--source", default=None, help="source name (default: the file name without extension)")
    p.add_argument("--skip-bad-rows", action="store_true",
                   help="skip invalid rows and report them (an import with no good row still changes nothing)")
    p.add_argument("--encoding", default=None, help="the file's encoding when it is not UTF-8 (e.g. cp1251)")
    p.add_argument("--ignore-columns", default=None, metavar="A,B",
                   help="import without these columns (an unknown column is otherwise refused, never dropped silently)")
    add_json_flag(p)
    p.set_defaults(func=cmd_import)


def _filters(args: Any) -> Any:
    from voproshalych_eval.analytics import LogFilters  # heavy: defers snowballstemmer (via analytics)

    scores: tuple[int | None, ...] | None = None
    if args.score:
        vals: list[int | None] = []
        for s in args.score:
            if s.lower() in {"unrated", "none"}:
                vals.append(None)
            else:
                vals.append(int(s))
        scores = tuple(vals)
    answered = {"yes": True, "no": False, "all": None}[args.answered]
    return LogFilters(start=args.start, end=args.end, answered=answered, scores=scores)


def cmd_real_users(args: Any) -> int:
    # heavy: defers snowballstemmer (via analytics)
    from voproshalych_eval.analytics import ANALYSES, build_plan

    # heavy: defers snowballstemmer (via analytics.answers)
    from voproshalych_eval.analytics.answers import AnswerRules

    # heavy: defers snowballstemmer (via analytics.text_ru)
    from voproshalych_eval.analytics.text_ru import load_slang

    analyses = None if args.analysis == "all" else (args.analysis,)
    if args.report and "topics" not in (analyses or ANALYSES):
        raise ValueError("--report needs the topics analysis (--analysis topics or all)")
    plan = build_plan(engine(), {
        **plan_params("real_users", args), "analyses": list(analyses) if analyses else None,
        "filters": _filters(args).describe(), "slang": load_slang(args.slang) if args.slang else None,
        "answer_rules": AnswerRules.from_file(args.answer_rules).to_dict() if args.answer_rules else None,
    })
    run_id, prog = execute_plan(plan, args)
    res = plan.outputs.get("result")
    if res is None or prog.status != "done":
        run = runs.get_run(engine(), run_id)
        emit({"run_id": run_id, "status": prog.status, "error": run.error if run else None, "metrics": prog.metrics},
             args.json, f"run #{run_id}: {prog.status} — {run.error if run else ''}")
        return exit_code(prog.status)
    out = {"status": prog.status, **res.to_dict()}
    if args.report:
        # heavy: defers snowballstemmer (via analytics.report)
        from voproshalych_eval.analytics.report import coverage_gap_html, coverage_gap_markdown

        write = coverage_gap_html if args.report.suffix.lower() in {".html", ".htm"} else coverage_gap_markdown
        body = write(res, lang=plan_spec("real_users").resolve(plan_params("real_users", args))["lang"])
        args.report.write_text(body, encoding="utf-8")
        out["report"] = str(args.report)
    # heavy: defers snowballstemmer (via analytics.report)
    from voproshalych_eval.analytics.report import snapshot_label

    # heavy: defers snowballstemmer (via analytics.topics)
    from voproshalych_eval.analytics.topics import silhouette_verdict

    m = res.metrics
    snap = f" · snapshot {snapshot_label(res.snapshot, 'en')}" if res.snapshot else " · no knowledge base (the log alone)"
    lines = [f"run #{res.run_id} · source {res.source}{snap} · n = {res.n_used} questions used "
             f"({m.get('n_stored_embeddings', 0)} stored vectors, {m.get('n_embedded', 0)} embedded)"]
    for k in ("answered_rate", "effective_answered_rate", "n_declined", "chunk_coverage", "chunk_coverage@1",
              "n_never_retrieved", "n_topics", "best_silhouette", "seed_ari_mean", "n_emerging_topics",
              "n_growing_topics", "unique_users", "n_sessions"):
        if k in m:
            lines.append(f"  {k}: {m[k]:.3f}" if isinstance(m[k], float) else f"  {k}: {m[k]}")
    for k, what in (("effective_answered_rate_ci", "effective answered rate with the classifier's errors"),
                    ("answer_classifier_accuracy", "answer classifier, cross-validated accuracy")):
        v = m.get(k)
        if isinstance(v, dict) and v.get("value") is not None and v.get("ci_low") is not None:
            lines.append(f"  {what}: {v['value']:.3f} [95% CI {v['ci_low']:.3f}; {v['ci_high']:.3f}], "
                         f"n = {v['n']} labelled texts")
    if not m.get("answer_classifier_accuracy"):
        lines.append("  answers classified by the patterns only: label the frequent answers (Real users page, or "
                     "`answer-labels import`) to train the classifier and get its accuracy")
    if res.topics is not None:
        tm = res.topics.metrics
        lines.append(f"  silhouette means: {silhouette_verdict(tm.get('best_silhouette'), 'en')}; topic stability ARI (1 = the "
                     f"same topics from other random starting centres): mean {_num(tm.get('seed_ari_mean'))}, "
                     f"min {_num(tm.get('seed_ari_min'))}")
    ks = res.topics.stability.get("k") if res.topics is not None else None
    if ks is not None and len(ks):
        lines.append(f"  k stability: k = {m.get('n_topics')} on the log; silhouette picks k = "
                     f"{', '.join(str(int(k)) for k in ks['k'])} on {len(ks)} other random samples")
    if res.topics is not None:
        lines.append("top coverage gaps:")
        for _, r in res.topics.gaps.head(5).iterrows():
            mixed = (f" [mixed topic: its name is in only {r['name_coverage']:.0%} of its questions — read the "
                     f"examples]" if r.get("mixed") else "")
            lines.append(f"  {int(r['gap_rank'])}. {r['name']}{mixed} — {int(r['size'])} q, answered "
                         f"{r['effective_answered_share']:.0%} (non-empty {r['answered_share']:.0%}), distance "
                         f"{_num(r['nearest_distance'], 3)} (to the KB), gap {_num(r['gap_score'], 3)}")
        if res.topics.trends is not None:
            # heavy: defers snowballstemmer (via analytics.topic_trends)
            from voproshalych_eval.analytics.topic_trends import summary_lines

            lines.append("what changed:")
            lines += [f"  {x}" for x in summary_lines(res.topics.trends, gaps=res.topics.gaps, lang="en")]
    emit(out, args.json, "\n".join(lines))
    return exit_code(prog.status)


def _num(v: Any, digits: int = 2) -> str:
    return "—" if v is None or v != v else f"{float(v):.{digits}f}"  # v != v: NaN


def cmd_import(args: Any) -> int:
    from voproshalych_eval.analytics import import_file  # heavy: defers snowballstemmer (via analytics)
    rep = import_file(engine(), args.file, source=args.source, skip_bad_rows=args.skip_bad_rows,
                      encoding=args.encoding, ignore_columns=split_names(args.ignore_columns))
    human = (f"imported {rep.n_imported} of {rep.n_rows} rows into source '{rep.source}'"
             + (f", skipped {rep.n_skipped}" if rep.n_skipped else "")
             + (f"; {rep.n_empty_questions} rows without question text (kept as events, left out of text analyses)"
                if rep.n_empty_questions else "")
             + (f" (replaced {rep.replaced} earlier rows)" if rep.replaced else ""))
    for e in rep.errors[:20]:
        human += f"\n  row {e['row']}, field '{e['field']}': {e['message']}"
    emit(rep.to_dict(), args.json, human)
    return 0


def cmd_answer_labels(args: Any) -> int:
    # heavy: defers snowballstemmer (via analytics.answer_labels)
    from voproshalych_eval.analytics.answer_labels import import_labels, labels_frame

    if args.action == "import":
        if args.file is None:
            raise ValueError("answer-labels import needs a FILE")
        rep = import_labels(engine(), args.file, by=args.by)
        emit(rep.to_dict(), args.json, f"saved {rep.n_saved} labels from {rep.n_rows} rows of {rep.file}")
        return 0
    df = labels_frame(engine())
    if args.action == "export":
        if args.file is None:
            raise ValueError("answer-labels export needs a FILE (.csv or .json)")
        out = df.assign(labelled_at=df["labelled_at"].astype(str))
        body = (dumps(out.to_dict(orient="records"), indent=1) if args.file.suffix.lower() == ".json"
                else dataframe_csv(out))
        args.file.write_text(body, encoding="utf-8")
        emit({"file": str(args.file), "n_labels": len(df)}, args.json, f"wrote {len(df)} labels to {args.file}")
        return 0
    records = df.assign(labelled_at=df["labelled_at"].astype(str)).to_dict(orient="records")
    emit({"labels": records}, args.json, "\n".join(f"{r['class']:>13}  {r['answer'][:100]}  ({r['labelled_by']})"
                                                 for r in records) or "no answer labels yet")
    return 0
