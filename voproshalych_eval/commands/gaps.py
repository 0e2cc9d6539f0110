"""``what-if``: a knowledge-base edit measured before publishing; ``gaps``: coverage gaps a team works on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from voproshalych_eval.commands.output import add_json_flag, emit, engine, exit_code, progress
from voproshalych_eval.commands.resume import add_outcome_flags, execute_plan
from voproshalych_eval.engine import runs
from voproshalych_eval.tiers.sandbox import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE, read_text_file


def register(sub: Any) -> None:
    p = sub.add_parser(
        "what-if",
        help="retrieval before -> after a knowledge-base edit in a sandbox (add / replace / remove pages)",
        description="Derives a sandbox snapshot from the current one (the source is never touched), chunks added "
                    "and replaced texts with production's splitter (LangChain RecursiveCharacterTextSplitter), embeds "
                    "them, and runs Tier 1's retrieval on the parent and on the sandbox for the same questions. Prints "
                    "one JSON object with --json: sandbox, before, after, per_question, regression.",
    )
    p.add_argument("--add", action="append", default=[], metavar="FILE",
                   help="add a page from a text/Markdown file (URL draft://<file name>; or URL=FILE)")
    p.add_argument("--replace-page", action="append", default=[], metavar="URL=FILE", help="replace a page's text")
    p.add_argument("--remove-page", action="append", default=[], metavar="URL", help="remove a page")
    p.add_argument("--gap", action="append", default=[], type=int, metavar="ID", help="the questions of a gap")
    p.add_argument("--dataset", action="append", default=[], metavar="NAME", help="a golden dataset's questions")
    p.add_argument("--regression", default=None, metavar="DATASET",
                   help="golden dataset whose answers must not move (every top-1 change is listed)")
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK_SIZE,
                   help=f"splitter chunk size in characters (production: {DEFAULT_CHUNK_SIZE})")
    p.add_argument("--chunk-overlap", type=int, default=DEFAULT_CHUNK_OVERLAP,
                   help=f"splitter overlap in characters (production: {DEFAULT_CHUNK_OVERLAP})")
    p.add_argument("--snapshot", type=int, default=None, help="the parent snapshot (default: the current one)")
    p.add_argument("--embedder", default=None, help="embedder (default: the model of the stored vectors)")
    t3 = p.add_mutually_exclusive_group()
    t3.add_argument("--tier3", dest="tier3", action="store_const", const=True, default=None,
                    help="also run the gaps' questions through the internal Tier 3 pipeline on both snapshots "
                         "(answered / declined / judged before -> after); default: when an LLM is configured, "
                         "with none the offline extractive generator (labelled offline)")
    t3.add_argument("--no-tier3", dest="tier3", action="store_const", const=False, help="skip the Tier 3 part")
    p.add_argument("--tier3-sample", type=int, default=None, metavar="N",
                   help="Tier 3 part over a seeded sample of at most N gap questions (default: all)")
    p.add_argument("--offline", action="store_true", help="offline generator and judge even if an LLM is configured")
    add_outcome_flags(p)
    p.set_defaults(func=cmd_what_if)

    p = sub.add_parser("gaps", help="coverage gaps a team works on: list, show, status, diagnose, draft")
    gsub = p.add_subparsers(dest="gaps_command", metavar="ACTION")
    gsub.required = True
    q = gsub.add_parser("list", help="every gap (synced with the real-users runs): id, name, questions, raw and "
                        "effective answered rate, category, status")
    add_json_flag(q)
    q.set_defaults(func=cmd_list)
    q = gsub.add_parser("show", help="one gap: numbers per analysis run, status history, re-check, diagnosis, drafts")
    q.add_argument("id", type=int)
    add_json_flag(q)
    q.set_defaults(func=cmd_show)
    q = gsub.add_parser("create", help="a gap of hand-picked real questions (log ids or question texts, on the "
                        "command line or in a CSV/JSON/JSONL file with a log_id or question column)")
    q.add_argument("--questions", nargs="+", default=[], metavar="ID_OR_TEXT",
                   help="log ids (integers) or question texts as logged (case, ё and spaces do not matter)")
    q.add_argument("--file", default=None, metavar="FILE", help="a .csv/.json/.jsonl file: log_id or question per record")
    q.add_argument("--name", default=None, help="the gap's name (default: its first question)")
    q.add_argument("--owner", default=None)
    add_json_flag(q)
    q.set_defaults(func=cmd_create)
    q = gsub.add_parser("status", help="set a gap's status (dismissed needs --note with the reason)")
    q.add_argument("id", type=int)
    q.add_argument("status", choices=("open", "in_progress", "addressed", "dismissed"))
    q.add_argument("--note", default=None)
    q.add_argument("--owner", default=None)
    q.add_argument("--at", default=None, metavar="DATE",
                   help="when the change took effect, ISO date or time (default now): the re-check of an addressed "
                        "gap compares questions asked before it with those asked after it")
    add_json_flag(q)
    q.set_defaults(func=cmd_status)
    q = gsub.add_parser("diagnose", help="why is it a gap: missing / retrieval miss / declined or wrong / out of scope "
                        "per question (LLM judge when configured, else a labelled heuristic)")
    q.add_argument("id", type=int)
    q.add_argument("--sample", type=int, default=30, help="diagnose at most N questions (a seeded sample; default 30)")
    q.add_argument("--offline", action="store_true", help="the offline heuristic even if an LLM is configured")
    add_json_flag(q)
    q.set_defaults(func=cmd_diagnose)
    q = gsub.add_parser("draft", help="a new outline version for the gap (LLM when configured, else an offline "
                        "template), checked for invented numbers and names; or keep an uploaded draft (--upload)")
    q.add_argument("id", type=int)
    q.add_argument("--out", default=None, metavar="FILE", help="write the draft there (.md: Markdown; .xhtml / .html: "
                   "Confluence storage format)")
    q.add_argument("--upload", default=None, metavar="FILE", help="keep this Markdown/text file as the new version")
    q.add_argument("--offline", action="store_true", help="the offline template even if an LLM is configured")
    add_json_flag(q)
    q.set_defaults(func=cmd_draft)


def cmd_what_if(args: Any) -> int:
    # heavy: keeps tiers.sandbox and tiers.whatif out of --help (+10 ms)
    from voproshalych_eval.tiers import sandbox, whatif

    if not (args.gap or args.dataset):
        raise ValueError("what-if needs questions: --gap ID and/or --dataset NAME")
    eng = engine()
    edits = sandbox.edits_from_args(args.add, args.replace_page, args.remove_page)
    snap, info = sandbox.create(eng, edits, parent=args.snapshot, chunk_size=args.chunk_size,
                                chunk_overlap=args.chunk_overlap, embedder=args.embedder, progress=progress)
    plan = whatif.build_plan(eng, {"sandbox": snap.id, "datasets": args.dataset, "gaps": args.gap,
                                   "regression": args.regression, "embedder": args.embedder, "tier3": args.tier3,
                                   "tier3_sample": args.tier3_sample, "offline": True if args.offline else None})
    run_id, prog = execute_plan(plan, args)
    run = runs.get_run(eng, run_id)
    records = runs.item_records(eng, run_id)
    out = whatif.report(records, run.metrics or {}, sandbox={**info.to_json(), "id": snap.id, "label": snap.label,
                                                             "n_chunks": snap.n_chunks, "reused": snap.reused})
    out = {"run_id": run_id, "status": prog.status, **out}
    emit(out, args.json, _human(out))
    return exit_code(prog.status)


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}"


def _human(out: dict[str, Any]) -> str:
    from voproshalych_eval.tiers.whatif import KEY_METRICS  # heavy: keeps tiers.whatif out of --help (+10 ms)

    sb = out["sandbox"]
    lines = [f"what-if run {out['run_id']} ({out['status']}): sandbox #{sb['id']} of #{sb['parent_id']} "
             f"(chunks {sb['chunk_size']}/{sb['chunk_overlap']}, {sb['embedder']})"]

    def block(title: str, before: dict[str, Any], after: dict[str, Any]) -> None:
        lines.append(f"{title} (n={before['n']}):")
        for key in KEY_METRICS:
            k = f"url_{key}"
            lines.append(f"  {k:18s} {_fmt(before['metrics'].get(k))} -> {_fmt(after['metrics'].get(k))}")

    block("questions", out["before"], out["after"])
    moved = [q for q in out["per_question"] if q["rank_before"] != q["rank_after"]]
    lines.append(f"  page rank changed for {len(moved)} question(s)")
    t3 = out.get("tier3") or {}
    if t3.get("skipped"):
        lines.append(f"Tier 3 part skipped: {t3['skipped']}")
    elif t3:
        lines.append(f"Tier 3 part over {t3.get('n_sampled')} of {t3.get('n_gap_questions')} gap question(s), generator "
                     f"{t3.get('generator')}" + (" — OFFLINE (extractive, no LLM)" if t3.get("offline") else ""))
        for side in ("before", "after"):
            d = t3.get(side) or {}
            lines.append(f"  {side:6s} answered {d.get('n_answered')}, declined {d.get('n_declined')}, errors "
                         f"{d.get('n_error')}" + (f", judged PASS {d.get('n_passed')} of {d.get('n_judged')}"
                                                 if t3.get("judged") else ""))
        lines += [f"  paired test {t['metric']}: mean diff {t['mean_diff']:+.3f}, p = {t['p_value']}"
                  for t in t3.get("paired_tests") or []]
    reg = out.get("regression")
    if reg:
        block("regression", reg["before"], reg["after"])
        lines.append(f"  top-1 page changed for {len(reg['top1_changed'])} question(s)")
        lines += [f"    {q['id']}: {q['top1_before']} -> {q['top1_after']}" for q in reg["top1_changed"][:20]]
    return "\n".join(lines)


def _sync(eng: Any) -> list[dict[str, Any]]:
    from voproshalych_eval.gap_sync import sync  # heavy: defers snowballstemmer (via gap_sync)

    done = sync(eng)
    for d in done:
        progress(f"real-users run {d['run_id']}: {len(d['matched'])} gap(s) updated, {len(d['created'])} new")
    return done


def _pct(v: Any) -> str:
    return "—" if v is None else f"{100 * v:.0f}%"


def cmd_list(args: Any) -> int:
    from voproshalych_eval.analytics import gaps  # heavy: defers snowballstemmer (via analytics.gaps)

    eng = engine()
    _sync(eng)
    rows = [g.row() for g in gaps.list_gaps(eng)]
    human = "\n".join(
        f"#{r['id']:<4d} {r['status']:11s} {str(r['n_questions'] or 0):>4s} q  raw {_pct(r['answered_rate']):>4s}  "
        f"effective {_pct(r['effective_answered_rate']):>4s}  {r['category'] or '—':15s} {r['name']}" for r in rows
    ) or "no gaps yet: run the real-users analysis (voproshalych-eval real-users)"
    emit({"gaps": rows}, args.json, human)
    return 0


def cmd_show(args: Any) -> int:
    from voproshalych_eval.analytics import gaps  # heavy: defers snowballstemmer (via analytics.gaps)

    eng = engine()
    _sync(eng)
    g = gaps.get_gap(eng, args.id)
    out = {**g.to_json(), "history": gaps.history(eng, g.id), "events": gaps.events(eng, g.id),
           "recheck": gaps.recheck(eng, g.id), "diagnosis": gaps.latest_diagnosis(eng, g.id),
           "drafts": [{k: v for k, v in d.items() if k != "body"} for d in gaps.drafts(eng, g.id)]}
    lines = [f"gap #{g.id}: {g.name} [{g.status}]" + (f" owner {g.owner}" if g.owner else "")
             + (f" — {g.note}" if g.note else "")]
    for h in out["history"]:
        lines.append(f"  run {h['run_id']}: {h.get('n_questions')} questions, raw {_pct(h.get('answered_rate'))}, "
                     f"effective {_pct(h.get('effective_answered_rate'))}, thumbs down {h.get('thumbs_down')}, "
                     f"rank {h.get('gap_rank')}")
    rc = out["recheck"]
    if rc:
        lines.append(f"  re-check: effective {_pct(rc['effective_before'])} (n={rc['n_before']}) before -> "
                     f"{_pct(rc['effective_after'])} (n={rc['n_after']}) after: {rc['verdict']}")
    emit(out, args.json, "\n".join(lines))
    return 0


def cmd_create(args: Any) -> int:
    from voproshalych_eval.analytics import gaps  # heavy: defers snowballstemmer (via analytics.gaps)
    from voproshalych_eval.gap_sync import create_picked  # heavy: defers snowballstemmer (via gap_sync)

    refs = gaps.refs_from_args(args.questions) + (gaps.refs_from_file(args.file) if args.file else [])
    if not refs:
        raise ValueError("gaps create needs questions: --questions ID_OR_TEXT ... and/or --file FILE")
    eng = engine()
    g = create_picked(eng, refs, name=args.name, owner=args.owner)
    out = {**g.to_json(), "log_ids": [q["log_id"] for q in gaps.gap_questions(eng, g.id)]}
    emit(out, args.json, f"gap #{g.id}: {g.name} — {g.latest.get('n_questions')} question(s) of real-users run "
                         f"{g.latest_run_id}, effective answered {_pct(g.latest.get('effective_answered_rate'))}")
    return 0


def cmd_status(args: Any) -> int:
    from voproshalych_eval.analytics import gaps  # heavy: defers snowballstemmer (via analytics.gaps)

    at = None
    if args.at:
        try:
            at = datetime.fromisoformat(args.at)
        except ValueError:
            raise ValueError(f"--at {args.at!r}: expected an ISO date or time (2026-03-01 or 2026-03-01T12:00)") from None
        at = at if at.tzinfo else at.replace(tzinfo=UTC)
    g = gaps.set_status(engine(), args.id, args.status, note=args.note, owner=args.owner, at=at)
    emit(g.to_json(), args.json, f"gap #{g.id}: {g.status}" + (f" — {g.note}" if g.note else ""))
    return 0


def cmd_diagnose(args: Any) -> int:
    from voproshalych_eval.analytics import gaps  # heavy: defers snowballstemmer (via analytics.gaps)

    # heavy: defers snowballstemmer (via tiers.gap_diagnosis)
    from voproshalych_eval.tiers.gap_diagnosis import CATEGORY_NAMES, diagnose

    eng = engine()
    _sync(eng)
    res = diagnose(eng, args.id, sample=args.sample, offline=args.offline or None, progress=progress)
    res["id"] = gaps.save_diagnosis(eng, args.id, res)
    label = "LLM judge" if res["method"] == "judge" else "OFFLINE heuristic (lexical + embedding support)"
    lines = [f"gap #{args.id}: {res['n_sampled']} of {res['n_questions']} question(s) diagnosed — {label}"]
    for c, n in res["counts"].items():
        lines.append(f"  {CATEGORY_NAMES[c][1]:50s} {n}")
    if res["category"]:
        lines.append(f"category: {res['category']} ({100 * res['category_share']:.0f}%) — fix: {res['fix'][1]}")
    for it in [i for i in res["items"] if i["category"] == "retrieval_miss"][:10]:
        lines.append(f"  retrieval miss: {it['question']!r} -> chunk {it['chunk_id']} ({it['chunk_url']}) at rank "
                     f"{it['production_rank'] or '>' + str(200)}")
    emit(res, args.json, "\n".join(lines))
    return 0


def cmd_draft(args: Any) -> int:
    # heavy: defers snowballstemmer (via generation.gap_drafts)
    from voproshalych_eval.generation import gap_drafts
    eng = engine()
    _sync(eng)
    if args.upload:
        res = gap_drafts.save_edit(eng, args.id, read_text_file(args.upload), source="upload")
        res["label"] = f"upload: {Path(args.upload).name}"
    else:
        res = gap_drafts.draft_outline(eng, args.id, offline=args.offline or None)
    if args.out:
        out = Path(args.out)
        body = gap_drafts.to_confluence(res["body"]) if out.suffix.lower() in (".xhtml", ".html") else res["body"]
        out.write_text(body, encoding="utf-8")
        res["out"] = str(out)
    flags = res["checks"]["flags"]
    lines = [f"gap #{args.id}: draft v{res['version']} ({res['label']})", "", res["body"]]
    if flags:
        lines.append(f"CHECK: {len(flags)} number(s)/name(s) found neither in the knowledge base nor in the questions:")
        lines += [f"  line {f['line']}: {f['kind']} {f['text']!r}" for f in flags]
    else:
        lines.append("check: no number or name outside the knowledge base and the questions")
    emit(res, args.json, "\n".join(lines))
    return 0
