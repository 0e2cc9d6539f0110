"""``tier1``: the retrieval benchmark on a golden dataset (and ``tier1-compare`` for two runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voproshalych_eval.commands.output import add_json_flag, emit, engine, exit_code, progress
from voproshalych_eval.commands.plan_flags import add_plan_flags, plan_params
from voproshalych_eval.commands.resume import add_outcome_flags, execute_plan
from voproshalych_eval.db import snapshots
from voproshalych_eval.engine import runs

KEY_METRICS = ("hit_rate@1", "hit_rate@5", "hit_rate@10", "mrr", "ndcg@10", "map")


def register(sub: Any) -> None:
    p = sub.add_parser("tier1", help="Tier 1 retrieval benchmark (chunk and URL level metrics with 95%% CIs)")
    add_plan_flags(p, "tier1")
    p.add_argument("--export-run", metavar="FILE", default=None, help="write the TREC run file (qrels to FILE.qrels)")
    p.add_argument("--level", choices=("chunk", "url"), default="chunk", help="level of the TREC export")
    add_outcome_flags(p)
    p.set_defaults(func=cmd_tier1)

    p = sub.add_parser("tier1-compare", help="paired test of one metric of two Tier 1 runs on the same dataset "
                                             "(the metric's row of `runs compare`)")
    p.add_argument("run_a", type=int)
    p.add_argument("run_b", type=int)
    p.add_argument("--metric", default="mrr")
    p.add_argument("--level", choices=("chunk", "url"), default="chunk")
    p.add_argument("--method", choices=("permutation", "bootstrap"), default="permutation")
    p.add_argument("--force", action="store_true", help="compare runs on different datasets anyway")
    add_json_flag(p)
    p.set_defaults(func=cmd_compare)


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}"


def cmd_tier1(args: Any) -> int:
    # heavy: keeps tiers.tier1 out of --help (+9 ms)
    from voproshalych_eval.tiers.tier1 import Tier1Result, build_plan, export_trec

    eng = engine()
    plan = build_plan(eng, plan_params("tier1", args))
    run_id, prog = execute_plan(plan, args)
    run = runs.get_run(eng, run_id)
    records = runs.item_records(eng, run_id)
    res = Tier1Result.from_run(run, records, snapshots.get(eng, run.snapshot_id) if run.snapshot_id else None)
    out = {
        "run_id": res.run_id,
        "status": prog.status,
        "snapshot": res.snapshot,
        "dataset": res.dataset,
        "retriever": res.params.get("retriever"),
        "embedder": res.params.get("embedder"),
        "k": res.params.get("k"),
        "metrics": res.metrics,
        "ci": res.ci,
        "n_questions": res.n_questions,
        "n_failed": prog.failed,
        "n_evaluated": res.n_evaluated.get("questions"),
        "n_evaluated_by_level": {"chunk": res.n_evaluated.get("chunk"), "url": res.n_evaluated.get("url")},
        "n_unanswerable": res.n_unanswerable,
        "unanswerable": res.unanswerable,
        "retrieval_consistency": res.retrieval_consistency,
        "hnsw": res.hnsw,
    }
    # heavy: keeps datasets.staleness out of --help (+2 ms)
    from voproshalych_eval.datasets.staleness import dataset_warning, warning_text

    out["dataset_warning"] = dataset_warning(eng, res.dataset.get("id"), (res.snapshot or {}).get("id"))
    if out["dataset_warning"]:
        progress("WARNING: " + warning_text(out["dataset_warning"]))
    if args.export_run:
        run_file = Path(args.export_run)
        qrels_file = run_file.with_name(run_file.name + ".qrels")
        out["export"] = export_trec(run, records, run_file, qrels_file, level=args.level)
    lines = [
        f"Tier 1 run {res.run_id} ({prog.status}): {out['retriever']}"
        + (f" ({out['embedder']})" if out["embedder"] else "")
        + f", top-{out['k']}, dataset {res.dataset['name']} ({(res.dataset['hash'] or '')[:12]})",
        f"questions: {res.n_questions}, evaluated: {out['n_evaluated']}, unanswerable (excluded): {res.n_unanswerable}"
        + (f", failed: {prog.failed}" if prog.failed else ""),
        f"knowledge base: snapshot #{res.snapshot['id']} ({res.snapshot['content_hash'][:12]}, "
        f"{res.snapshot['n_chunks']} chunks)" if res.snapshot else "knowledge base: snapshot unknown",
    ]
    for level in ("chunk", "url"):
        parts = []
        for key in KEY_METRICS:
            agg = res.ci[level].get(key)
            if agg:
                parts.append(f"{key}={_fmt(agg['value'])} [{_fmt(agg['ci_low'])}; {_fmt(agg['ci_high'])}]")
        lines.append(f"{level:5s}: " + ", ".join(parts))
    rc = res.retrieval_consistency
    lines.append(
        "retrieval_consistency: " + (_fmt(rc["value"]) if rc.get("value") is not None else f"not applicable ({rc.get('reason')})")
    )
    if res.hnsw:
        lines.append(f"HNSW: {res.hnsw}")
    if "export" in out:
        lines.append(f"TREC run: {out['export']['run_file']}, qrels: {out['export']['qrels_file']} ({args.level} level)")
    emit(out, args.json, "\n".join(lines))
    return exit_code(prog.status)


def cmd_compare(args: Any) -> int:
    cmp = runs.compare_runs(engine(), args.run_a, args.run_b, method=args.method, force=args.force)
    key = f"{args.level}.{args.metric}"
    rows = cmp.metrics[cmp.metrics["metric"] == key]
    if rows.empty:
        known = ", ".join(m.split(".", 1)[1] for m in cmp.metrics["metric"] if m.startswith(f"{args.level}."))
        raise KeyError(f"Runs {args.run_a} and {args.run_b} have no metric {args.metric!r} at level {args.level}; known: {known}")
    row = runs.frame_records(rows)[0]
    res = {"run_a": args.run_a, "run_b": args.run_b, "metric": args.metric, "level": args.level, **row,
           "warnings": cmp.warnings}
    ci = (f"[{row['ci_low']:+.3f}; {row['ci_high']:+.3f}]" if row.get("ci_low") is not None else "—")
    human = (
        f"{args.metric} ({args.level}): run {args.run_a} = {_fmt(row['a'])}, run {args.run_b} = {_fmt(row['b'])}, "
        f"paired diff = {_fmt(row['paired_mean_diff'])} {ci}, n = {row['n_pairs']}, "
        f"p ({row['method'] or args.method}) = {_fmt(row['p_value'])} -> {row['verdict']}"
    )
    emit(res, args.json, human)
    return 0
