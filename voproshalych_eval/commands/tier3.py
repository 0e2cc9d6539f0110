"""``tier3`` — end to end: internal pipeline or the bot's HTTP API; a pass-rate gate for deployments."""

from __future__ import annotations

import sys
from typing import Any

from voproshalych_eval.commands.resume import add_run_flags, run_and_report


def register(sub: Any) -> None:
    p = sub.add_parser("tier3", help="Tier 3: end to end (internal pipeline or --api URL of the bot)")
    p.add_argument("--dataset", default="demo_golden", help="golden dataset name, id or file")
    p.add_argument("--api", default=None, metavar="URL",
                   help="the bot's base URL (adds /llm/search-rag?questions=...) or a template with {question}")
    p.add_argument("--answer-path", default="answer", help="JSON path of the answer in the API reply")
    p.add_argument("--chunks-path", default="chunks", help="JSON path of the chunks (e.g. chunks.*.text)")
    p.add_argument("--http-timeout", type=float, default=60.0)
    p.add_argument("--top-k", type=int, default=1, help="internal pipeline: chunks retrieved (production: 1)")
    p.add_argument("--embedder", default=None)
    p.add_argument("--model", default=None, help="internal pipeline: generator model")
    p.add_argument("--system-prompt", default=None)
    p.add_argument("--judge-model", action="append", default=None)
    p.add_argument("--threshold", type=float, default=0.5, help="PASS when the seed-003 judge score >= this")
    p.add_argument("--min-pass-rate", type=float, default=None,
                   help="gate: exit with status 1 when PASS / all items is below this")
    p.add_argument("--repeats", type=int, default=1)
    add_run_flags(p)
    p.set_defaults(func=cmd_tier3)


def cmd_tier3(args: Any) -> int:
    from voproshalych_eval.commands.common import engine, exit_code, progress
    from voproshalych_eval.tiers.tier3 import build_plan

    plan = build_plan(engine(), {
        "dataset": args.dataset, "limit": args.limit, "mode": "api" if args.api else "internal",
        "api_url": args.api, "answer_path": args.answer_path, "chunks_path": args.chunks_path,
        "http_timeout": args.http_timeout, "top_k": args.top_k, "embedder": args.embedder,
        "generator_model": args.model, "system_prompt": args.system_prompt, "judge_models": args.judge_model,
        "threshold": args.threshold, "min_pass_rate": args.min_pass_rate, "repeats": args.repeats,
        "concurrency": args.concurrency, "offline": True if args.offline else None,
    })
    _, prog = run_and_report(plan, args)
    if prog.status != "done":
        return exit_code(prog.status)
    metrics = prog.metrics or {}
    if args.min_pass_rate is not None and not metrics.get("gate_passed"):
        progress(
            f"GATE FAILED: pass rate {metrics.get('gate_pass_rate')} < {args.min_pass_rate} "
            "(PASS verdicts / all items; errors count as failing)"
        )
        sys.stderr.flush()
        return 1
    return 0
