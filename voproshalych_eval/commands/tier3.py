"""``tier3`` — end to end: internal pipeline or the bot's HTTP API; a pass-rate gate for deployments.

Exit status (for CI; the command-wide codes of :data:`~voproshalych_eval.commands.common.EXIT_CODES_HELP`):
``0`` — the run completed and the gate passed (or no ``--min-pass-rate`` was set); ``1`` — the gate FAILED
(or every item failed); ``2`` — the command could not start (bad settings, unknown profile, a header's
``${VARIABLE}`` not set, ...); ``3`` — more failed items than allowed (``--max-failure-share``); ``4`` —
cancelled.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from voproshalych_eval.commands.common import add_judge_quorum_flags, judge_quorum_params
from voproshalych_eval.commands.resume import add_run_flags, run_and_report

#: exit status of a failed deployment gate (the same code as a failed run)
EXIT_GATE_FAILED = 1


def register(sub: Any) -> None:
    from voproshalych_eval.bot_api.spec import PRESETS
    from voproshalych_eval.tiers.page_context import MODES

    p = sub.add_parser(
        "tier3",
        help="Tier 3: end to end (internal pipeline or the bot's HTTP API, --api URL)",
        description="Tier 3: end to end. Exit status: 0 gate PASS (or no gate), 1 gate FAIL or every item "
        "failed, 2 bad settings, 3 more failed items than allowed, 4 cancelled.",
    )
    p.add_argument("--dataset", default="demo_golden", help="golden dataset name, id or file")
    api = p.add_argument_group("bot API (API mode)")
    api.add_argument("--api", default=None, metavar="URL",
                     help="the bot's base URL (the preset adds its path) or a full URL template with {question}")
    api.add_argument("--api-preset", choices=sorted(PRESETS), default=None,
                     help="voproshalych: POST /qa/ of the production QA service; search-rag: the RAG + LLM test's "
                     "GET /llm/search-rag?questions=; custom: the URL as given (default: search-rag, "
                     "or custom when the URL holds {question} or a body/POST is given)")
    api.add_argument("--api-profile", default=None, metavar="NAME", help="a saved bot profile (settings of one bot)")
    api.add_argument("--save-api-profile", default=None, metavar="NAME",
                     help="save the resulting bot settings as a profile (no secrets: only variable names)")
    api.add_argument("--api-method", choices=["GET", "POST"], default=None)
    api.add_argument("--api-body", default=None, metavar="JSON",
                     help='JSON body template, e.g. \'{"question": "{question}", "dialog_context": "{dialog_context}"}\'')
    api.add_argument("--api-header", action="append", default=None, metavar="'NAME: VALUE'",
                     help="extra header (repeatable); values may use ${VARIABLE}, read from the environment or "
                     "secrets.toml at call time, e.g. 'Authorization: Bearer ${BOT_TOKEN}'")
    api.add_argument("--answer-path", default=None, help="JSON path of the answer in the reply (default: answer)")
    api.add_argument("--url-path", default=None, help="JSON path of the page URL (voproshalych: confluence_url)")
    api.add_argument("--chunks-path", default=None, help="JSON path of the chunk texts (e.g. chunks.*.text)")
    api.add_argument("--http-timeout", type=float, default=None, help="seconds per request (default 60)")
    api.add_argument("--api-rps", type=float, default=None,
                     help="at most this many requests per second over all workers (voproshalych preset: 1)")
    api.add_argument("--api-retries", type=int, default=None,
                     help="retries of timeouts, connection errors, 5xx and 429 (default 3)")
    api.add_argument("--api-backoff", type=float, default=None, metavar="SECONDS",
                     help="first pause before a retry, doubled each time (default 1; a 429's Retry-After wins)")
    api.add_argument("--api-outcome", action="append", default=None, metavar="STATUS[:REGEX]=OUTCOME",
                     help="reply -> outcome rule, checked before the preset's (repeatable), e.g. "
                     "'404:^Answer banned=banned', '200:Ответ не найден=not_found'; outcomes: answered, "
                     "not_found, banned, error")
    api.add_argument("--context-from", choices=list(MODES), default=None,
                     help="when the API returns only a page URL: judge on all chunks of that page (page), "
                     "on the nearest ones to the question (nearest), or on none (default: the bot profile's, "
                     "else page)")
    api.add_argument("--context-k", type=int, default=None,
                     help="chunks kept by --context-from nearest (default: the bot profile's, else 3)")
    internal = p.add_argument_group("internal pipeline")
    internal.add_argument("--top-k", type=int, default=1, help="chunks retrieved (production: 1)")
    internal.add_argument("--model", default=None, help="generator model")
    internal.add_argument("--system-prompt", default=None)
    p.add_argument("--embedder", default=None)
    p.add_argument("--judge-model", action="append", default=None)
    add_judge_quorum_flags(p)
    p.add_argument("--threshold", type=float, default=0.5, help="PASS when the RAG + LLM test judge's score >= this")
    p.add_argument("--min-pass-rate", type=float, default=None,
                   help="gate: exit with status 1 when the gate pass rate is below this (answered items need a "
                   "PASS; a decline passes only on an unanswerable question; errors never pass)")
    p.add_argument("--repeats", type=int, default=1)
    add_run_flags(p)
    p.set_defaults(func=cmd_tier3)


def _body(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--api-body is not valid JSON: {exc}") from None


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
    from voproshalych_eval.commands.common import engine, exit_code, progress
    from voproshalych_eval.tiers.tier3 import api_spec, build_plan

    api_mode = bool(args.api or args.api_profile)
    params = {
        "dataset": args.dataset, "limit": args.limit, "mode": "api" if api_mode else "internal",
        "api_url": args.api, "api_preset": args.api_preset, "api_profile": args.api_profile,
        "api_method": args.api_method, "api_body": _body(args.api_body), "api_headers": args.api_header,
        "answer_path": args.answer_path, "url_path": args.url_path, "chunks_path": args.chunks_path,
        "http_timeout": args.http_timeout, "api_rps": args.api_rps, "api_retries": args.api_retries,
        "api_backoff": args.api_backoff,
        "api_outcomes": args.api_outcome, "context_from": args.context_from, "context_k": args.context_k,
        "top_k": args.top_k, "embedder": args.embedder,
        "generator_model": args.model, "system_prompt": args.system_prompt, "judge_models": args.judge_model,
        "threshold": args.threshold, "min_pass_rate": args.min_pass_rate, "repeats": args.repeats,
        "concurrency": args.concurrency, "offline": True if args.offline else None, **judge_quorum_params(args),
    }
    eng = engine()
    if args.save_api_profile:
        if not api_mode:
            raise ValueError("--save-api-profile needs the bot's settings (--api URL and options, or --api-profile)")
        from voproshalych_eval.bot_api.profiles import JudgeContext, require_profile, save_profile

        base = require_profile(eng, args.api_profile).judge_context if args.api_profile else JudgeContext()
        prof = save_profile(eng, args.save_api_profile, api_spec(eng, params), judge_context=JudgeContext(
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
