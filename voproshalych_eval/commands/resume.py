"""``resume RUN_ID`` — finish the missing items of an interrupted run; the shared CLI runner of plans."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from voproshalych_eval.commands.output import (
    Queued,
    RunCrashed,
    add_json_flag,
    cancel_on_sigterm,
    emit,
    engine,
    exit_code,
    progress,
)
from voproshalych_eval.config import get_settings
from voproshalych_eval.engine import runs
from voproshalych_eval.engine.executor import (
    AlreadyRunning,
    ResumeRefused,
    create_run,
    execute,
    resume,
    run_state,
    summary_line,
)
from voproshalych_eval.engine.job_queue import batches_of, enqueue, requeue
from voproshalych_eval.engine.runs import STATE_LABELS
from voproshalych_eval.metrics import catalog
from voproshalych_eval.metrics.formatting import format_value


def output_language(args: Any) -> str:
    """``--lang`` when given, else the configured language (``VOPROSHALYCH_EVAL_LANG``; Russian by default)."""
    chosen = getattr(args, "lang", None) or get_settings().language
    return chosen if chosen in ("ru", "en") else "ru"


def add_outcome_flags(p: Any) -> None:
    """``--max-failure-share`` and ``--json``: what every command that executes a run takes."""
    p.add_argument("--max-failure-share", type=float, default=None, metavar="SHARE",
                   help="failed share (0-1) above which the run is done_with_failures (exit 3); "
                        "default VOPROSHALYCH_EVAL_MAX_FAILURE_SHARE or 0.1")
    add_queue_flags(p)
    add_json_flag(p)


def add_queue_flags(p: Any) -> None:
    """``--queue``: put the run on the job queue (workers execute it) and print its id instead of running it here."""
    p.add_argument("--queue", action="store_true",
                   help="enqueue the run for the workers (`voproshalych-eval worker`) and return its id at once; "
                        "follow it with `voproshalych-eval runs wait ID`")
    p.add_argument("--batch-items", type=int, default=None, metavar="N",
                   help="with --queue: items per queue job (default: the plan's batch, else 20)")
    p.add_argument("--schedule-name", default=None, help=argparse.SUPPRESS)  # set by a schedule's run


def enqueue_plan(plan: Any, args: Any) -> int:
    """``--queue``: register the run with its frozen configuration, put its batches on the queue, print its id
    (``{"run_id", "status": "queued"}`` with ``--json``) and stop the command (:class:`Queued`: exit 0)."""
    run_id = enqueue(engine(), plan, batch_items=getattr(args, "batch_items", None),
                     schedule=getattr(args, "schedule_name", None))
    n = len(batches_of(plan, getattr(args, "batch_items", None)))
    emit({"run_id": run_id, "tier": plan.tier, "status": "queued", "n_items": len(plan.items), "n_jobs": n},
         getattr(args, "json", False),
         f"run {run_id} ({plan.tier}) queued: {len(plan.items)} items in {n} jobs; "
         f"follow it with `voproshalych-eval runs wait {run_id}`")
    raise Queued(run_id)


def printer() -> Any:
    """An ``on_progress`` callback printing one progress line per second on stderr."""
    last = [0.0]
    last_message = [None]

    def show(p: Any) -> None:
        now = time.monotonic()
        if (p.status != "running" or now - last[0] >= 1.0 or p.finished in (0, p.total)
                or p.message != last_message[0]):
            last[0] = now
            last_message[0] = p.message
            progress(summary_line(p))

    return show


def human_summary(run_id: int, prog: Any, metrics: dict[str, Any], lang: str | None = None) -> str:
    """The outcome of a run and its aggregates (catalog labels, values and CIs by the catalog) in ``lang``
    (default: the configured language, ``VOPROSHALYCH_EVAL_LANG``)."""
    lang = lang or output_language(None)

    def t(ru: str, en: str) -> str:
        return en if lang == "en" else ru

    state_ru, state_en = STATE_LABELS.get(str(prog.status), (str(prog.status), str(prog.status)))
    lines = [t(f"запуск {run_id}: {state_ru}, выполнено {prog.done}, со сбоем {prog.failed} из {prog.total}",
               f"run {run_id}: {state_en}, {prog.done} done, {prog.failed} failed of {prog.total}")]
    if prog.status in ("failed", "done_with_failures") and prog.last_error:
        lines.append(t("  последняя ошибка: ", "  last error: ") + str(prog.last_error))
    for k, v in metrics.items():
        if isinstance(v, dict) and "value" in v:
            val = format_value(k, v.get("value"), lang)
            ci = (f" [{format_value(k, v['ci_low'], lang)}; {format_value(k, v['ci_high'], lang)}]"
                  if v.get("ci_low") is not None else "")
            fails = t(f", сбоев {v['n_failed']}", f", failures {v['n_failed']}") if v.get("n_failed") else ""
            lines.append(f"  {catalog.label(k, lang)}: {val}{ci}" + (f" (n={v.get('n')}{fails})" if "n" in v else ""))
        elif isinstance(v, bool):
            lines.append(f"  {catalog.label(k, lang)}: {t('да', 'yes') if v else t('нет', 'no')}")
        elif isinstance(v, int | float) or v is None:
            lines.append(f"  {catalog.label(k, lang)}: {format_value(k, v, lang)}")
        elif isinstance(v, str):
            lines.append(f"  {catalog.label(k, lang)}: `{v}`")  # a stored identifier, shown as it is
    return "\n".join(lines)


def execute_plan(plan: Any, args: Any) -> tuple[int, Any]:
    """Create a run for ``plan`` and execute it in the foreground with progress on stderr; returns
    ``(run_id, progress)`` (the caller prints what it wants)."""
    if getattr(args, "max_failure_share", None) is not None:
        plan.params["max_failure_share"] = float(args.max_failure_share)
    if getattr(args, "queue", False):
        enqueue_plan(plan, args)
    eng = engine()
    run_id = create_run(eng, plan)
    progress(f"run {run_id} ({plan.tier}): {len(plan.items)} items" + (" — OFFLINE heuristics" if plan.offline else ""))
    with cancel_on_sigterm() as cancel, crash_is_exit_1(run_id):
        prog = execute(eng, run_id, plan, on_progress=printer(), concurrency=getattr(args, "concurrency", None),
                       cancel=cancel)
    return run_id, prog


@contextmanager
def crash_is_exit_1(run_id: int) -> Iterator[None]:
    """An error while a run executes (the store's server crashed…) is the run crashing: :class:`RunCrashed`
    (exit 1); a refusal before it starts (already running, resume refused) stays an error (exit 2)."""
    try:
        yield
    except (AlreadyRunning, ResumeRefused, ValueError, LookupError, KeyboardInterrupt):
        raise  # refused before any item ran: bad input or another process has the run
    except Exception as exc:  # noqa: BLE001 - reported in one sentence by the CLI
        raise RunCrashed(run_id, exc) from exc


def run_and_report(plan: Any, args: Any) -> tuple[int, Any]:
    """:func:`execute_plan`, then print the outcome and the aggregates."""
    run_id, prog = execute_plan(plan, args)
    metrics = prog.metrics or {}
    # heavy: keeps datasets.staleness out of --help (+2 ms)
    from voproshalych_eval.datasets.staleness import dataset_warning, warning_text

    warn = dataset_warning(engine(), plan.dataset_id, plan.snapshot_id)
    if warn:
        progress("WARNING: " + warning_text(warn))
    emit({"run_id": run_id, "tier": plan.tier, "status": prog.status, "offline": plan.offline,
          "n_done": prog.done, "n_failed": prog.failed, "tokens": prog.tokens, "cost_usd": prog.cost_usd,
          "llm_usage": prog.llm, "metrics": metrics, "dataset_warning": warn},
         args.json, human_summary(run_id, prog, metrics))
    return run_id, prog


def register(sub: Any) -> None:
    p = sub.add_parser(
        "resume",
        help="finish the missing (and failed) items of an interrupted run, with the configuration it started with",
        description=(
            "Rebuilds the run's plan from its stored parameters and its stored dataset (never re-reading a file) "
            "and refuses, naming what differs, when the current configuration cannot reproduce the run (LLM "
            "missing, another model, prompt or endpoint, the stored dataset changed). Only one process executes "
            "a run at a time."
        ),
    )
    p.add_argument("run_id", type=int)
    p.add_argument("--keep-failed", action="store_true", help="do not retry items that failed")
    p.add_argument("--force", action="store_true",
                   help="resume even though the configuration changed; the run is then marked mixed")
    p.add_argument("--queue", action="store_true",
                   help="put the missing (and failed) items on the job queue for the workers instead; follow the run "
                        "with `voproshalych-eval runs wait ID`")
    add_json_flag(p)
    p.set_defaults(func=cmd_resume)


def cmd_resume(args: Any) -> int:
    eng = engine()
    state = run_state(eng, args.run_id)
    if state == "unknown":
        raise ValueError(f"run {args.run_id} does not exist")
    before = runs.count_items(eng, args.run_id)
    progress(f"run {args.run_id}: {state}; recorded {before.get('done', 0)} done, {before.get('failed', 0)} failed")
    if args.queue:
        n = requeue(eng, args.run_id, force=args.force) if not args.keep_failed else None
        if n is None:
            raise ValueError("--queue always retries the failed items; drop --keep-failed")
        emit({"run_id": args.run_id, "status": "queued", "n_jobs": n, "resumed_from": before}, args.json,
             f"run {args.run_id}: {n} jobs queued; follow it with `voproshalych-eval runs wait {args.run_id}`")
        return 0
    with cancel_on_sigterm() as cancel, crash_is_exit_1(args.run_id):
        prog = resume(eng, args.run_id, retry_failed=not args.keep_failed, force=args.force, on_progress=printer(),
                      cancel=cancel)
    metrics = prog.metrics or {}
    run = runs.get_run(eng, args.run_id)
    emit({"run_id": args.run_id, "status": prog.status, "n_done": prog.done, "n_failed": prog.failed,
          "resumed_from": before, "tokens": prog.tokens, "mixed": bool(run and run.mixed), "metrics": metrics},
         args.json, human_summary(args.run_id, prog, metrics) + (
             ("\n  СМЕШАННЫЙ: " if output_language(None) == "ru" else "\n  MIXED: ") + str(run.mixed_reason)
             if run and run.mixed else ""))
    return exit_code(prog.status)
