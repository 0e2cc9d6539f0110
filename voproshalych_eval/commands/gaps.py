"""``what-if``: a knowledge-base edit measured before publishing; ``gaps``: coverage gaps a team works on."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.common import add_json_flag, emit, engine, exit_code, progress
from voproshalych_eval.commands.resume import add_outcome_flags, execute_plan


def register(sub: Any) -> None:
    from voproshalych_eval.tiers.sandbox import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_SIZE

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
    add_outcome_flags(p)
    p.set_defaults(func=cmd_what_if)


def cmd_what_if(args: Any) -> int:
    from voproshalych_eval import runs
    from voproshalych_eval.tiers import sandbox, whatif

    if not (args.gap or args.dataset):
        raise ValueError("what-if needs questions: --gap ID and/or --dataset NAME")
    eng = engine()
    edits = sandbox.edits_from_args(args.add, args.replace_page, args.remove_page)
    snap, info = sandbox.create(eng, edits, parent=args.snapshot, chunk_size=args.chunk_size,
                                chunk_overlap=args.chunk_overlap, embedder=args.embedder, progress=progress)
    plan = whatif.build_plan(eng, {"sandbox": snap.id, "datasets": args.dataset, "gaps": args.gap,
                                   "regression": args.regression, "embedder": args.embedder})
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
    from voproshalych_eval.tiers.whatif import KEY_METRICS

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
    reg = out.get("regression")
    if reg:
        block("regression", reg["before"], reg["after"])
        lines.append(f"  top-1 page changed for {len(reg['top1_changed'])} question(s)")
        lines += [f"    {q['id']}: {q['top1_before']} -> {q['top1_after']}" for q in reg["top1_changed"][:20]]
    return "\n".join(lines)


__all__ = ["add_json_flag", "register"]
