"""``tier2`` — generation on the full reference context, scored by judges and text overlap."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.common import add_judge_quorum_flags, exit_code, judge_quorum_params
from voproshalych_eval.commands.resume import add_run_flags, run_and_report


def register(sub: Any) -> None:
    p = sub.add_parser("tier2", help="Tier 2: generation on a fixed (full reference) context")
    p.add_argument("--dataset", default="demo_golden", help="golden dataset name, id or file")
    p.add_argument("--repeats", type=int, default=1, help="answers per item (>= 2 adds self-consistency)")
    p.add_argument("--model", default=None, help="generator model (default: first configured)")
    p.add_argument("--system-prompt", default=None, help="generator system prompt (default: production bot's)")
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--judge-model", action="append", default=None, help="judge model (repeatable)")
    p.add_argument("--max-context-chars", type=int, default=None, help="cut the context (default: full, never cut)")
    p.add_argument("--stem", action="store_true", help="Russian stemming for ROUGE")
    p.add_argument("--embedder", default=None, help="embedder for semantic self-consistency")
    add_judge_quorum_flags(p)
    add_run_flags(p)
    p.set_defaults(func=cmd_tier2)


def cmd_tier2(args: Any) -> int:
    from voproshalych_eval.commands.common import engine
    from voproshalych_eval.tiers.tier2 import build_plan

    plan = build_plan(engine(), {
        "dataset": args.dataset, "limit": args.limit, "repeats": args.repeats, "generator_model": args.model,
        "system_prompt": args.system_prompt, "temperature": args.temperature, "judge_models": args.judge_model,
        "max_context_chars": args.max_context_chars, "stem": args.stem, "embedder": args.embedder,
        "concurrency": args.concurrency, "offline": True if args.offline else None, **judge_quorum_params(args),
    })
    _, prog = run_and_report(plan, args)
    return exit_code(prog.status)
