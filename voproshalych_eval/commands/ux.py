"""``ux`` — cache hit rate, context preservation, multi-turn consistency (log sessions or dialogs)."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.common import exit_code
from voproshalych_eval.commands.resume import add_run_flags, run_and_report


def register(sub: Any) -> None:
    p = sub.add_parser("ux", help="Tier UX: similar-question cache, context preservation, multi-turn consistency")
    p.add_argument("--source", choices=["dialogs", "log"], default="dialogs",
                   help="a dialog dataset, or real sessions from the question log")
    p.add_argument("--dataset", default="demo_dialogs", help="dialog dataset (with --source dialogs)")
    p.add_argument("--cache-distance", type=float, default=0.6, help="cache threshold, cosine distance (production 0.6)")
    p.add_argument("--followup-distance", type=float, default=0.8, help="log: related consecutive questions")
    p.add_argument("--pause-minutes", type=float, default=30, help="log: a longer pause starts a new session")
    p.add_argument("--embedder", default=None)
    p.add_argument("--model", default=None, help="generator for the paraphrase answers (dialogs)")
    p.add_argument("--snapshot", type=int, default=None,
                   help="snapshot id of the knowledge base and log (default: the source's present content)")
    add_run_flags(p)
    p.set_defaults(func=cmd_ux)


def cmd_ux(args: Any) -> int:
    from voproshalych_eval.commands.common import engine
    from voproshalych_eval.tiers.ux import build_plan

    plan = build_plan(engine(), {
        "source": args.source, "dataset": args.dataset, "limit": args.limit, "cache_distance": args.cache_distance,
        "followup_distance": args.followup_distance, "pause_minutes": args.pause_minutes, "embedder": args.embedder,
        "generator_model": args.model, "concurrency": args.concurrency, "offline": True if args.offline else None,
        "snapshot": args.snapshot,
    })
    _, prog = run_and_report(plan, args)
    return exit_code(prog.status)
