"""``dataset``: generate golden sets from the knowledge base, list / show / export / import them, their
versions (history, diff), annotation files for review in a spreadsheet, staleness, and realq labelling."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from voproshalych_eval.commands.output import add_json_flag, emit, engine, exit_code, progress
from voproshalych_eval.commands.plan_flags import add_plan_flags, plan_params
from voproshalych_eval.commands.resume import add_outcome_flags, execute_plan
from voproshalych_eval.datasets.files import split_names
from voproshalych_eval.datasets.store import (
    export_csv,
    get_dataset,
    list_datasets,
    n_truncated,
    store_file,
    truncation_note,
)
from voproshalych_eval.db import snapshots
from voproshalych_eval.engine import runs


def _csv_list(value: str | None) -> list[str] | None:
    if not value:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def register(sub: Any) -> None:
    p = sub.add_parser("dataset", help="golden datasets: generate, list, show, export/import, versions, annotations, realq")
    dsub = p.add_subparsers(dest="dataset_command", metavar="ACTION")
    dsub.required = True

    g = dsub.add_parser("generate", help="generate a synthetic golden set from the knowledge base (a resumable run)")
    add_plan_flags(g, "dataset_generation", required=("size",))
    g.add_argument("--threshold", action="append", default=None, metavar="GATE=VALUE",
                   help="a gate's threshold (verbatim, support, qa_fit, qa_fit_offline, near_duplicate; repeatable), e.g. "
                        "the one `judge-agreement --metric dataset_review --run` calibrated")
    add_outcome_flags(g)
    g.set_defaults(func=cmd_generate)

    a = dsub.add_parser("list", help="stored datasets (newest version of each name)")
    a.add_argument("--kind", default=None, help="golden, judge, dialogs, samples")
    a.add_argument("--all-versions", action="store_true", help="every stored version, not only the heads")
    add_json_flag(a)
    a.set_defaults(func=cmd_list)

    a = dsub.add_parser("show", help="one dataset: version, counts, staleness, first items (NAME, NAME@v2, id or hash)")
    a.add_argument("name")
    a.add_argument("--items", type=int, default=3, help="items to print")
    a.add_argument("--refresh", action="store_true", help="take a knowledge-base snapshot first when the source changed")
    add_json_flag(a)
    a.set_defaults(func=cmd_show)

    a = dsub.add_parser("export", help="write a dataset in the golden format of the benchmark methodology (JSON or CSV)")
    a.add_argument("name")
    a.add_argument("--format", choices=("json", "csv"), default="json")
    a.add_argument("--output", "-o", default=None, help="file to write (default: stdout)")
    a.set_defaults(func=cmd_export)

    a = dsub.add_parser("import", help="validate and store a dataset file (a new version when the name exists)")
    a.add_argument("file")
    a.add_argument("--name", default=None, help="stored name (default: the file name)")
    a.add_argument("--kind", default="golden")
    a.add_argument("--ignore-columns", default=None, metavar="A,B",
                   help="import without these columns (a column resembling a known field is otherwise refused)")
    add_json_flag(a)
    a.set_defaults(func=cmd_import)

    a = dsub.add_parser("annotate-export", help="annotation file for review in a spreadsheet (is_question_ok, is_answer_ok, is_chunk_ok, notes)")
    a.add_argument("name")
    a.add_argument("--format", choices=("csv", "json"), default="csv")
    a.add_argument("--output", "-o", default=None)
    a.set_defaults(func=cmd_annotate_export)

    a = dsub.add_parser("annotate-import", help="apply an edited annotation file (one new version; bad rows reported)")
    a.add_argument("file")
    a.add_argument("--dataset", default=None, help="dataset name (default: the file's 'dataset' column)")
    a.add_argument("--skip-bad-rows", action="store_true", help="apply the good rows and report the bad ones")
    a.add_argument("--merge", action="store_true",
                   help="a file exported from an older version: apply only the cells changed in it (three-way), "
                        "refusing rows that conflict with later edits (default: refuse the file)")
    a.add_argument("--ignore-columns", default=None, metavar="A,B",
                   help="apply the file without these columns (an unknown column is otherwise refused)")
    add_json_flag(a)
    a.set_defaults(func=cmd_annotate_import)

    a = dsub.add_parser("history", help="versions of a dataset")
    a.add_argument("name")
    add_json_flag(a)
    a.set_defaults(func=cmd_history)

    a = dsub.add_parser("diff", help="items added, removed and changed between two versions")
    a.add_argument("name")
    a.add_argument("a", help="version (3, v3 or a hash prefix)")
    a.add_argument("b", help="version")
    add_json_flag(a)
    a.set_defaults(func=cmd_diff)

    a = dsub.add_parser("stale", help="datasets referencing chunks that changed in the knowledge base (with suggestions)")
    a.add_argument("name", nargs="?", default=None, help="one dataset (default: every golden dataset, no suggestions)")
    a.add_argument("--refresh", action="store_true",
                   help="take a knowledge-base snapshot first when the source changed since the current one")
    add_json_flag(a)
    a.set_defaults(func=cmd_stale)

    a = dsub.add_parser("realq-pick", help="put real questions from the log into the labelling pool of a realq set")
    a.add_argument("name", help="realq dataset name")
    a.add_argument("--strategy", choices=("random_stratified", "unanswered", "thumbs_down", "topic", "coverage_gap"),
                   default="random_stratified")
    a.add_argument("--n", type=int, default=20)
    a.add_argument("--topic", type=int, default=None)
    a.add_argument("--source", default=None, help="question log source (default: the bot's table)")
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--topics-run", type=int, default=None,
                   help="topic and coverage_gap: take the topics of this finished real-users run (with the topics "
                        "analysis) instead of running the topic analysis (a recorded, resumable real_users run)")
    add_json_flag(a)
    a.set_defaults(func=cmd_realq_pick)

    a = dsub.add_parser("label", help="label a pooled real question: its relevant chunks, or not in the knowledge base")
    a.add_argument("name")
    a.add_argument("key", help="item key of the pooled question (see realq-pick / show)")
    grp = a.add_mutually_exclusive_group(required=True)
    grp.add_argument("--chunks", default=None, help="relevant chunk ids a person confirmed (comma-separated)")
    grp.add_argument("--not-in-kb", action="store_true", help="the knowledge base does not answer it")
    a.add_argument("--answer", default=None, help="reference answer")
    add_json_flag(a)
    a.set_defaults(func=cmd_label)

    a = dsub.add_parser("review-share", help="per generation run: the share of kept items later rejected in review")
    a.add_argument("--run", type=int, default=None, help="one generation run (default: the newest ones that stored a set)")
    a.add_argument("--limit", type=int, default=50, help="how many of the newest generation runs")
    add_json_flag(a)
    a.set_defaults(func=cmd_review_share)


# ---------------------------------------------------------------- generate


def cmd_generate(args: Any) -> int:
    # heavy: keeps generation.plan out of --help (+10 ms)
    from voproshalych_eval.generation.plan import build_plan

    eng = engine()
    params = plan_params("dataset_generation", args)
    if args.threshold:
        params["thresholds"] = _thresholds(args.threshold)
    plan = build_plan(eng, params)
    progress(f"{len(plan.items)} slots for {args.size} items -> dataset {plan.dataset_name}"
             + (" — OFFLINE template generator (not a substitute for an LLM-generated set)" if plan.offline else ""))
    run_id, prog = execute_plan(plan, args)
    m = dict(prog.metrics or {})
    version = int(m["dataset_ref"].rsplit("@v", 1)[1]) if m.get("dataset_ref") else None
    cost = m.get("cost_usd")
    total_cost = (cost.get("total") or {}).get("value") if isinstance(cost, dict) else cost
    out = {
        "dataset": m.get("dataset"), "version": version, "dataset_ref": m.get("dataset_ref"),
        "dataset_hash": m.get("dataset_hash"),
        "n_items": m.get("n_items", 0), "pages_covered": m.get("pages_covered", 0), "pages_total": m.get("pages_total"),
        "by_type": m.get("by_type", {}), "dropped": m.get("dropped", {}), "run_id": run_id, "status": prog.status,
        "offline": plan.offline, "generator": m.get("generator"), "n_failed_items": prog.failed,
        "tokens": m.get("tokens"), "cost_usd": total_cost, "warnings": m.get("warnings", []),
        "size_requested": m.get("size_requested"), "n_surplus": m.get("n_surplus"),
    }
    human = "\n".join([
        f"run {run_id}: {prog.status}; dataset {out['dataset'] or '— (not stored)'}"
        + (f" v{out['version']}" if out["version"] else "") + f": {out['n_items']} of {args.size} items"
        + (" [OFFLINE templates]" if plan.offline else ""),
        f"pages covered: {out['pages_covered']} of {out['pages_total']}",
        "by type: " + ", ".join(f"{k} {v}" for k, v in sorted(out["by_type"].items())),
        "dropped: " + ", ".join(f"{k} {v}" for k, v in out["dropped"].items() if v) + (" (none)" if not any(out["dropped"].values()) else ""),
        f"failed items: {prog.failed}; tokens: {out['tokens']}; cost: "
        + ("unknown (no price for the model)" if total_cost is None and not plan.offline else f"${total_cost or 0:.4f}"),
        *[f"warning: {w['message']}" for w in out["warnings"]],
    ])
    emit(out, args.json, human)
    # exit codes as every run (0 done, 1 failed, 3 done_with_failures, 4 cancelled); a finished run that
    # stored nothing (every item dropped or failed) is a failure
    return exit_code(prog.status) if out["dataset"] or prog.status != "done" else 1


def _source_check(eng: Any, refresh: bool) -> dict[str, Any]:
    """Whether the source changed since the current snapshot; with ``refresh`` a snapshot is taken then."""
    # heavy: keeps datasets.staleness out of --help (+2 ms)
    from voproshalych_eval.datasets.staleness import source_note, source_text

    note = source_note(eng)
    out: dict[str, Any] = {"source_changed": bool(note), "refreshed": False,
                           "current_snapshot_id": snapshots.current_id(eng)}
    if note and refresh:
        snap = snapshots.take(eng, progress=progress)
        out.update(refreshed=True, current_snapshot_id=snap.id)
        progress(f"the source changed: took snapshot #{snap.id}")
    elif note:
        out["warning"] = source_text(note)
        progress("WARNING: " + out["warning"])
    return out


# ---------------------------------------------------------------- list / show / export / import


def cmd_list(args: Any) -> int:
    rows = list_datasets(engine(), args.kind, heads_only=not args.all_versions)
    out = [{k: (str(v) if k == "created_at" else v) for k, v in r.items()} for r in rows]
    human = "\n".join(f"{r['name']:<32} {r['kind']:<8} v{r['version'] or '?':<4} {r['n_items']:>6} items  "
                      f"{r['content_hash'][:12]}  {str(r['created_at'])[:16]}" for r in out) or "no datasets"
    emit({"datasets": out}, args.json, human)
    return 0


def cmd_show(args: Any) -> int:
    eng = engine()
    ds = get_dataset(eng, args.name)
    source = _source_check(eng, args.refresh) if ds.kind == "golden" else None
    info: dict[str, Any] = {
        "dataset": ds.name, "kind": ds.kind, "version": ds.version, "id": ds.id, "content_hash": ds.content_hash,
        "n_items": len(ds), "source": ds.source,
    }
    if ds.kind == "golden":
        # heavy: keeps datasets.staleness out of --help (+2 ms)
        from voproshalych_eval.datasets.staleness import dataset_warning

        info["by_type"] = dict(Counter(str(r.get("question_type") or "—") for r in ds.records))
        info["by_source"] = dict(Counter(str(r.get("question_source") or "—") for r in ds.records))
        info["pages"] = len({u for r in ds.records for u in r.get("relevant_urls") or []})
        info["offline_items"] = sum(1 for r in ds.records if (r.get("generation") or {}).get("offline"))
        info["chunk_text_truncated"] = n_truncated(ds.records)
        info["stale"] = dataset_warning(eng, ds.id)
        info["kb_source"] = source
    info["items"] = ds.records[: max(0, args.items)]
    human = "\n".join(
        [f"{ds.name} v{ds.version} ({ds.kind}, id {ds.id}, {ds.content_hash[:12]}): {len(ds)} items"]
        + [f"{k}: {v}" for k, v in info.items() if k in ("by_type", "by_source", "pages", "offline_items", "source")]
        + ([f"STALE: {info['stale']['n_items_affected']} item(s) reference changed chunks {info['stale']['by_kind']}"]
           if info.get("stale") else [])
        + ([f"WARNING: {source['warning']}"] if source and source.get("warning") else [])
        + ([truncation_note(info["chunk_text_truncated"], len(ds))] if info.get("chunk_text_truncated") else [])
        + [f"- {r.get('id', '')}: {r.get('question') or r.get('dialog_id') or ''}" for r in info["items"]]
    )
    emit(info, args.json, human)
    return 0


def _write(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
        progress(f"wrote {output}")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def cmd_export(args: Any) -> int:
    ds = get_dataset(engine(), args.name)
    if args.format == "csv":
        if ds.kind != "golden":
            raise ValueError("CSV export is for golden datasets; use --format json")
        _write(export_csv(ds.records), args.output)
    else:
        _write(json.dumps(ds.records, ensure_ascii=False, indent=1), args.output)
    return 0


def cmd_import(args: Any) -> int:
    ds = store_file(engine(), args.file, args.kind, name=args.name, ignore_columns=split_names(args.ignore_columns))
    out = {"dataset": ds.name, "kind": ds.kind, "version": ds.version, "id": ds.id, "content_hash": ds.content_hash,
           "n_items": len(ds), "chunk_text_truncated": n_truncated(ds.records)}
    emit(out, args.json, f"stored {ds.name} v{ds.version} ({len(ds)} items, {ds.content_hash[:12]})"
         + (f"\n{truncation_note(out['chunk_text_truncated'], len(ds))}" if out["chunk_text_truncated"] else ""))
    return 0


# ---------------------------------------------------------------- annotations


def cmd_annotate_export(args: Any) -> int:
    # heavy: keeps annotations out of --help (+5 ms)
    from voproshalych_eval.datasets.annotations import export_annotations

    _write(export_annotations(engine(), args.name, args.format), args.output)
    return 0


def cmd_annotate_import(args: Any) -> int:
    # heavy: keeps annotations out of --help (+5 ms)
    from voproshalych_eval.datasets.annotations import AnnotationImportError, import_annotations

    try:
        rep = import_annotations(engine(), args.file, dataset=args.dataset, skip_bad_rows=args.skip_bad_rows,
                                 merge=args.merge, ignore_columns=split_names(args.ignore_columns))
    except AnnotationImportError as exc:
        for e in exc.errors:
            progress(f"{Path(args.file).name}" + (f", row {e['row']}" if e["row"] is not None else "")
                     + f", field '{e['field']}': {e['message']}")
        raise
    human = "\n".join([
        f"{rep.dataset}: v{rep.version_before} -> v{rep.version_after}; {rep.n_applied} of {rep.n_rows} rows applied",
        f"edited {len(rep.edited)}, rejected {len(rep.rejected)}, restored {len(rep.restored)}, accepted {len(rep.accepted)}",
        *[f"row {e['row']}, field '{e['field']}': {e['message']}" for e in rep.errors],
    ])
    emit(rep.to_dict(), args.json, human)
    return 0


def cmd_history(args: Any) -> int:
    # heavy: keeps dataset_versions out of --help (+3 ms)
    from voproshalych_eval.datasets.versions import history

    hist = history(engine(), args.name)
    if not hist:
        raise LookupError(f"No stored dataset {args.name!r}.")
    out = [{"version": h.version, "dataset_id": h.dataset_id, "content_hash": h.content_hash, "n_items": h.n_items,
            "action": h.action, "note": h.note, "parent_version": h.parent_version, "changes": h.changes,
            "created_by": h.created_by, "created_at": str(h.created_at)} for h in hist]
    human = "\n".join(f"v{h['version']:<4} {h['action']:<16} {h['n_items']:>5} items {h['content_hash'][:12]} "
                      f"{h['created_at'][:16]} {h['note'] or ''}" for h in out)
    emit({"dataset": args.name, "versions": out}, args.json, human)
    return 0


def cmd_diff(args: Any) -> int:
    # heavy: keeps dataset_versions out of --help (+3 ms)
    from voproshalych_eval.datasets.versions import diff_versions

    d = diff_versions(engine(), args.name, args.a, args.b)
    out = {"dataset": args.name, "a": args.a, "b": args.b, "added": d.added, "removed": d.removed,
           "changed": [{"key": c.key, "fields": {f: {"old": o, "new": n} for f, (o, n) in c.fields.items()}} for c in d.changed]}
    lines = [f"{args.name}: {args.a} -> {args.b}: +{len(d.added)} -{len(d.removed)} ~{len(d.changed)}"]
    lines += [f"+ {k}" for k in d.added] + [f"- {k}" for k in d.removed]
    for c in d.changed:
        for f, (o, n) in c.fields.items():
            if f == "chunk_text":
                lines.append(f"~ {c.key}.{f}: ({len(str(o or ''))} -> {len(str(n or ''))} chars)")
            else:
                lines.append(f"~ {c.key}.{f}: {json.dumps(o, ensure_ascii=False)} -> {json.dumps(n, ensure_ascii=False)}")
    emit(out, args.json, "\n".join(lines))
    return 0


def cmd_stale(args: Any) -> int:
    # heavy: keeps datasets.staleness out of --help (+2 ms)
    from voproshalych_eval.datasets.staleness import check_all, check_dataset

    eng = engine()
    source = _source_check(eng, args.refresh)
    reps = [check_dataset(eng, args.name)] if args.name else check_all(eng)
    out = {"datasets": [r.to_dict() for r in reps], "n_stale": sum(r.stale for r in reps), "kb_source": source}
    lines = [f"WARNING: {source['warning']}"] if source.get("warning") else []
    for r in reps:
        lines.append(f"{r.dataset} v{r.version}: " + (f"STALE — {len(r.affected)} of {r.n_items} items {r.by_kind()}" if r.stale else "up to date"))
        for a in r.affected[:20]:
            sug = f" -> suggest chunk {a.suggestion['chunk_id']} ({a.suggestion['similarity']})" if a.suggestion else ""
            lines.append(f"  {a.item_key}: " + ", ".join(f"{p['kind']} {p.get('chunk_id') or p.get('old_url')}" for p in a.problems) + sug)
    emit(out, args.json, "\n".join(lines) or "no golden datasets")
    return 0


# ---------------------------------------------------------------- realq


def cmd_realq_pick(args: Any) -> int:
    from voproshalych_eval.generation import realq  # heavy: keeps generation.realq out of --help (+6 ms)

    eng = engine()
    topics, topics_run = None, args.topics_run
    if args.strategy in realq.TOPIC_STRATEGIES:
        if topics_run is None:
            topics_run, prog = execute_plan(realq.topics_plan(eng, source=args.source), args)
            if prog.status not in ("done", "done_with_failures"):
                progress(f"the topic analysis (run {topics_run}) ended {prog.status}: {prog.last_error or ''} — "
                         f"resume it with `resume {topics_run}`, then pass --topics-run {topics_run}")
                return exit_code(prog.status)
        topics = realq.topic_assignments(runs.item_records(eng, topics_run))
    pooled = realq.pool(eng, args.name)
    df = realq.candidates(eng, strategy=args.strategy, n=args.n, source=args.source, topic=args.topic, seed=args.seed,
                          topics=topics, exclude=pooled["question"].tolist() if len(pooled) else ())
    added = realq.add_to_pool(eng, args.name, df)
    out = {"dataset": args.name, "strategy": args.strategy, "added": added, "n_pool": len(pooled) + len(added),
           "topics_run": topics_run}
    emit(out, args.json, f"{len(added)} question(s) added to the labelling pool of {args.name} ({out['n_pool']} pooled)\n"
         + "\n".join(added))
    return 0


def cmd_label(args: Any) -> int:
    from voproshalych_eval.generation import realq  # heavy: keeps generation.realq out of --help (+6 ms)

    ids = [int(x) for x in _csv_list(args.chunks) or []]
    ds = realq.label(engine(), args.name, args.key, relevant_chunk_ids=ids, not_in_kb=args.not_in_kb, answer=args.answer)
    emit({"dataset": ds.name, "version": ds.version, "n_items": len(ds), "item": args.key}, args.json,
         f"{ds.name} v{ds.version}: {args.key} labelled ({len(ds)} labelled items)")
    return 0


def cmd_review_share(args: Any) -> int:
    """Per generation run: kept items, reviewed, rejected, ``rejected_share`` (of kept) and
    ``rejected_share_reviewed`` (of reviewed, with its Wilson CI) — computed from the store."""
    # heavy: keeps generation.gate_review out of --help (+4 ms)
    from voproshalych_eval.generation.gate_review import TIER, review_shares, run_review

    eng = engine()
    if args.run is not None:
        rep = run_review(eng, runs.get_run(eng, args.run), runs.item_records(eng, args.run))
        rep["items"] = [{"key": it.key, "decision": it.decision, "reason": it.reason} for it in rep["items"]]
        rows = [rep]
    else:
        rows = review_shares(eng, runs.list_runs(eng, tier=TIER, limit=args.limit))

    def pct(v: Any) -> str:
        return "—" if v is None else f"{100 * v:.0f}%"

    human = "\n".join(f"run {r['run_id']} {r['dataset_ref']}: kept {r['n_kept']}, reviewed {r['n_reviewed']}, rejected "
                      f"{r['n_rejected']} ({pct(r['rejected_share'])} of kept, {pct(r['rejected_share_reviewed'])} of "
                      "reviewed)" for r in rows) or "no generation run stored a dataset"
    emit({"runs": rows}, args.json, human)
    return 0


def _thresholds(pairs: list[str] | None) -> dict[str, float] | None:
    """``--threshold GATE=VALUE`` flags as ``{gate: value}``; a clear error for an unknown gate or a non-number."""
    # heavy: keeps generation.gates out of --help (+3 ms)
    from voproshalych_eval.generation.gates import DEFAULT_THRESHOLDS

    if not pairs:
        return None
    out = {}
    for pair in pairs:
        gate, sep, value = pair.partition("=")
        if not sep or gate.strip() not in DEFAULT_THRESHOLDS:
            raise ValueError(f"--threshold {pair!r}: use GATE=VALUE with GATE one of {', '.join(DEFAULT_THRESHOLDS)}")
        try:
            out[gate.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--threshold {pair!r}: {value!r} is not a number") from None
    return out
