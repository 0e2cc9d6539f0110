"""``tier1``: the retrieval benchmark on a golden dataset (and ``tier1-compare`` for two runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voproshalych_eval.commands.common import add_json_flag, emit, engine, progress

KEY_METRICS = ("hit_rate@1", "hit_rate@5", "hit_rate@10", "mrr", "ndcg@10", "map")


def register(sub: Any) -> None:
    p = sub.add_parser("tier1", help="Tier 1 retrieval benchmark (chunk and URL level metrics with 95% CIs)")
    p.add_argument("--dataset", default="demo_golden", help="golden dataset file (JSON/JSONL/CSV) or stored name/id")
    p.add_argument("--retriever", choices=("vector", "fts", "hybrid"), default="vector")
    p.add_argument("--embedder", default=None, help="embedder name (default: the model of the stored vectors)")
    p.add_argument("--k", type=int, default=10, help="answer depth: the top-k the generator gets (default 10); chunks "
                   "are always retrieved to at least the largest cut-off")
    p.add_argument("--cutoffs", default="1,3,5,10", help="the K of the @K metrics, comma-separated (default 1,3,5,10)")
    p.add_argument("--hnsw", action="store_true", help="search an HNSW index (built in the eval schema) and report its recall")
    p.add_argument("--ef-search", type=int, default=None, help="HNSW ef_search (default 40)")
    p.add_argument("--repeats", type=int, default=1, help="repeats for retrieval_consistency (HNSW / external API)")
    p.add_argument("--export-run", metavar="FILE", default=None, help="write the TREC run file (qrels to FILE.qrels)")
    p.add_argument("--level", choices=("chunk", "url"), default="chunk", help="level of the TREC export")
    p.add_argument("--snapshot", type=int, default=None,
                   help="knowledge-base snapshot id to search (default: the source's present content)")
    add_json_flag(p)
    p.set_defaults(func=cmd_tier1)

    p = sub.add_parser("tier1-compare", help="paired test of two Tier 1 runs on the same dataset")
    p.add_argument("run_a", type=int)
    p.add_argument("run_b", type=int)
    p.add_argument("--metric", default="mrr")
    p.add_argument("--level", choices=("chunk", "url"), default="chunk")
    add_json_flag(p)
    p.set_defaults(func=cmd_compare)


def _fmt(v: Any) -> str:
    return "—" if v is None else f"{v:.3f}"


def cmd_tier1(args: Any) -> int:
    from voproshalych_eval.tiers.tier1 import export_trec, run_tier1

    eng = engine()
    res = run_tier1(
        eng,
        args.dataset,
        retriever=args.retriever,
        embedder=args.embedder,
        k=args.k,
        cutoffs=[int(c) for c in str(args.cutoffs).split(",") if c.strip()],
        use_index=args.hnsw,
        ef_search=args.ef_search,
        repeats=args.repeats,
        progress=progress,
        snapshot=args.snapshot,
    )
    out = {
        "run_id": res.run_id,
        "snapshot": res.snapshot,
        "dataset": res.dataset,
        "retriever": args.retriever,
        "embedder": res.params.get("embedder"),
        "k": args.k,
        "metrics": res.metrics,
        "ci": res.ci,
        "n_questions": res.n_questions,
        "n_evaluated": res.n_evaluated["questions"],
        "n_evaluated_by_level": {"chunk": res.n_evaluated["chunk"], "url": res.n_evaluated["url"]},
        "n_unanswerable": res.n_unanswerable,
        "unanswerable": res.unanswerable,
        "retrieval_consistency": res.retrieval_consistency,
        "hnsw": res.hnsw,
    }
    from voproshalych_eval.generation.staleness import dataset_warning, warning_text

    out["dataset_warning"] = dataset_warning(eng, res.dataset.get("id"), (res.snapshot or {}).get("id"))
    if out["dataset_warning"]:
        progress("WARNING: " + warning_text(out["dataset_warning"]))
    if args.export_run:
        run_file = Path(args.export_run)
        qrels_file = run_file.with_name(run_file.name + ".qrels")
        out["export"] = export_trec(eng, res.run_id, run_file, qrels_file, level=args.level)
    lines = [
        f"Tier 1 run {res.run_id}: {args.retriever}"
        + (f" ({out['embedder']})" if out["embedder"] else "")
        + f", top-{args.k}, dataset {res.dataset['name']} ({res.dataset['hash'][:12]})",
        f"questions: {res.n_questions}, evaluated: {res.n_evaluated['questions']}, unanswerable (excluded): {res.n_unanswerable}",
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
        "retrieval_consistency: " + (_fmt(rc["value"]) if rc.get("value") is not None else f"not applicable ({rc['reason']})")
    )
    if res.hnsw:
        lines.append(f"HNSW: {res.hnsw}")
    if "export" in out:
        lines.append(f"TREC run: {out['export']['run_file']}, qrels: {out['export']['qrels_file']} ({args.level} level)")
    emit(out, args.json, "\n".join(lines))
    return 0


def cmd_compare(args: Any) -> int:
    from voproshalych_eval.tiers.tier1 import compare_tier1_runs

    res = compare_tier1_runs(engine(), args.run_a, args.run_b, metric=args.metric, level=args.level)
    b = res["bootstrap"]
    human = (
        f"{args.metric} ({args.level}): run {args.run_a} = {_fmt(res['mean_a'])}, run {args.run_b} = {_fmt(res['mean_b'])}, "
        f"diff = {b['mean_diff']:+.3f} [{b['ci_low']:+.3f}; {b['ci_high']:+.3f}], n = {res['n_pairs']}\n"
        f"paired bootstrap p = {b['p_value']:.4f}, permutation p = {res['permutation']['p_value']:.4f} -> "
        + ("the difference is significant" if res["significant"] else "no significant difference")
    )
    emit(res, args.json, human)
    return 0
