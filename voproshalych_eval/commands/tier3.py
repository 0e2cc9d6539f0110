"""``tier3`` — end to end: internal pipeline or the bot's HTTP API; a pass-rate gate for deployments.

Exit status (for CI; the command-wide codes of :data:`~voproshalych_eval.commands.output.EXIT_CODES_HELP`):
``0`` — the run completed and the gate passed (or no ``--min-pass-rate`` was set); ``1`` — the gate FAILED
(or every item failed); ``2`` — the command could not start (bad settings, unknown profile, a header's
``${VARIABLE}`` not set, ...); ``3`` — more failed items than allowed (``--max-failure-share``); ``4`` —
cancelled.
"""

from __future__ import annotations

import sys
from typing import Any

from voproshalych_eval.commands.output import engine, exit_code, progress
from voproshalych_eval.commands.plan_flags import add_plan_flags, plan_params
from voproshalych_eval.commands.resume import add_outcome_flags, run_and_report
from voproshalych_eval.plans import spec as plan_spec

#: exit status of a failed deployment gate (the same code as a failed run)
EXIT_GATE_FAILED = 1


def register(sub: Any) -> None:
    p = sub.add_parser(
        "tier3",
        help="Tier 3: end to end (internal pipeline or the bot's HTTP API, --api URL)",
        description="Tier 3: end to end. Exit status: 0 gate PASS (or no gate), 1 gate FAIL or every item "
        "failed, 2 bad settings, 3 more failed items than allowed, 4 cancelled.",
    )
    add_plan_flags(p, "tier3")
    p.add_argument("--save-api-profile", default=None, metavar="NAME",
                   help="save the resulting bot settings as a profile (no secrets: only variable names)")
    add_outcome_flags(p)
    p.set_defaults(func=cmd_tier3)


def outcome_lines(metrics: dict[str, Any]) -> list[str]:
    """Outcome counts, errors by kind, context reconstruction and the gate, as lines for stderr."""
    n = metrics.get("n_items") or 0
    lines = [
        f"outcomes of {n} items: answered {metrics.get('n_answered', 0)}, not found {metrics.get('n_not_found', 0)}, "
        f"banned {metrics.get('n_banned', 0)}, error {metrics.get('n_error', 0)}"
    ]
    if metrics.get("errors_by_kind"):
        lines.append("errors by kind: " + ", ".join(f"{k} {v}" for k, v in metrics["errors_by_kind"].items()))
    if metrics.get("transport_failures"):
        lines.append("transport failures met (retried included): "
                     + ", ".join(f"{k} {v}" for k, v in metrics["transport_failures"].items()))
    lines.append(f"judge metrics are over the {metrics.get('n_answered', 0)} answered items")
    if metrics.get("n_context_reconstructed"):
        lines.append(f"context reconstructed from the knowledge base (page URL only) for "
                     f"{metrics['n_context_reconstructed']} answered items")
    if metrics.get("n_context_cut"):
        lines.append(f"context cut to fit the judge model's context window for {metrics['n_context_cut']} answered "
                     "items (each item's context_cut says how much)")
    overflow = (metrics.get("failure_kinds") or {}).get("context_overflow")
    if overflow:
        lines.append(f"{overflow} judge results failed as context_overflow: the prompt did not fit the model's window")
    if metrics.get("llm_retries"):
        lines.append(f"LLM requests retried: {metrics['llm_retries']} ({metrics.get('llm_recovered', 0)} calls "
                     "recovered by a retry)")
    if metrics.get("gate"):
        lines.append(f"GATE {metrics['gate']}: gate pass rate {metrics.get('gate_pass_rate'):.3f} vs minimum "
                     f"{metrics.get('min_pass_rate')} (declines pass only on unanswerable questions; errors never pass)")
    return lines


def cmd_tier3(args: Any) -> int:
    # heavy: keeps tiers.tier3 out of --help (+3 ms)
    from voproshalych_eval.tiers.tier3 import api_spec, build_plan

    api_mode = bool(args.api or args.api_profile)
    params = {**plan_params("tier3", args), "mode": "api" if api_mode else "internal"}
    eng = engine()
    if args.save_api_profile:
        if not api_mode:
            raise ValueError("--save-api-profile needs the bot's settings (--api URL and options, or --api-profile)")
        # heavy: keeps bot_api.profiles out of --help (+5 ms)
        from voproshalych_eval.bot_api.profiles import JudgeContext, require_profile, save_profile

        base = require_profile(eng, args.api_profile).judge_context if args.api_profile else JudgeContext()
        prof = save_profile(eng, args.save_api_profile, api_spec(eng, plan_spec("tier3").resolve(params)), judge_context=JudgeContext(
            args.context_from or base.context_from, args.context_k or base.context_k))
        progress(f"saved bot profile {prof.name!r} ({prof.spec.method} {prof.spec.url})")
        params["api_profile"] = prof.name
        params["api_url"] = params["api_preset"] = None
        params.update(dict.fromkeys(("api_method", "api_body", "api_headers", "answer_path", "url_path", "chunks_path",
                                     "http_timeout", "api_rps", "api_retries", "api_backoff", "api_outcomes")))
    plan = build_plan(eng, params)
    _, prog = run_and_report(plan, args)
    metrics = prog.metrics or {}
    for line in outcome_lines(metrics):
        progress(line)
    sys.stderr.flush()
    if prog.status != "done":
        return exit_code(prog.status)
    if args.min_pass_rate is not None and not metrics.get("gate_passed"):
        return EXIT_GATE_FAILED
    return 0
