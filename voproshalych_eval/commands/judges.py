"""``judge-stability`` and ``judge-pipeline`` — the two judge tiers."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.common import add_judge_quorum_flags, exit_code, judge_quorum_params
from voproshalych_eval.commands.resume import add_run_flags, run_and_report


def register(sub: Any) -> None:
    p = sub.add_parser("judge-stability", help="Tier Judge: re-judge each item R times (cache off)")
    p.add_argument("--dataset", default="demo_judge", help="dataset name, id or file")
    p.add_argument("--kind", default="judge", choices=["judge", "golden", "samples"], help="dataset kind")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--judge-model", action="append", default=None, help="judge model (repeatable: inter-judge kappa)")
    p.add_argument("--metric", default="faithfulness",
                   choices=["faithfulness", "answer_relevance", "answer_correctness", "e2e_score", "rag_judge"])
    p.add_argument("--threshold", type=float, default=None, help="pass/fail threshold (default: scale midpoint)")
    add_run_flags(p)
    p.set_defaults(func=cmd_stability)

    p = sub.add_parser("judge-pipeline", help="Tier Judge Pipeline: show/no-show judge vs human labels")
    p.add_argument("--dataset", default="demo_judge", help="labelled judge dataset name, id or file")
    p.add_argument("--judge-model", action="append", default=None)
    p.add_argument("--prompt", default=None, help="custom show/no-show prompt (default: production)")
    p.add_argument("--no-calibrate", action="store_true", help="skip the benchmark-judge calibration")
    p.add_argument("--threshold", type=float, default=0.5, help="benchmark judge PASS threshold")
    add_judge_quorum_flags(p)
    add_run_flags(p)
    p.set_defaults(func=cmd_pipeline)


def cmd_stability(args: Any) -> int:
    from voproshalych_eval.commands.common import engine
    from voproshalych_eval.tiers.judge_stability import build_plan

    plan = build_plan(engine(), {
        "dataset": args.dataset, "dataset_kind": args.kind, "limit": args.limit, "repeats": args.repeats,
        "judge_models": args.judge_model, "metric": args.metric, "threshold": args.threshold,
        "concurrency": args.concurrency, "offline": True if args.offline else None,
    })
    _, prog = run_and_report(plan, args)
    return exit_code(prog.status)


def cmd_pipeline(args: Any) -> int:
    from voproshalych_eval.commands.common import engine
    from voproshalych_eval.tiers.judge_pipeline import build_plan

    plan = build_plan(engine(), {
        "dataset": args.dataset, "limit": args.limit, "judge_models": args.judge_model, "prompt": args.prompt,
        "calibrate": not args.no_calibrate, "threshold": args.threshold, "concurrency": args.concurrency,
        "offline": True if args.offline else None, **judge_quorum_params(args),
    })
    _, prog = run_and_report(plan, args)
    return exit_code(prog.status)
