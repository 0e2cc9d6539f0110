"""``worker`` — execute queued runs (and the schedules' tick) from the store's job queue until stopped."""

from __future__ import annotations

from typing import Any

from voproshalych_eval.commands.output import engine, progress
from voproshalych_eval.engine.job_queue import run_worker


def register(sub: Any) -> None:
    p = sub.add_parser(
        "worker",
        help="work the job queue: queued runs (`--queue`, the app's Run buttons) and schedules",
        description=(
            "Takes jobs from the job queue in the store (VOPROSHALYCH_EVAL_STORE_URL, or the embedded server) and "
            "executes them: batches of runs' items, the schedules' tick, the recovery of batches whose worker "
            "died. Any number of workers, on any machines that reach the store, share the work; a run's batches "
            "spread over them. Stops on SIGINT/SIGTERM after the jobs in hand."
        ),
    )
    p.add_argument("--concurrency", type=int, default=1, metavar="N",
                   help="jobs worked at once by this worker (each batch runs its items with the plan's own "
                        "concurrency; the LLM providers' request limit holds across all workers)")
    p.add_argument("--queues", nargs="+", default=None, metavar="QUEUE",
                   help="only these queues (runs, system); default: all")
    p.add_argument("--name", default=None, help="the worker's name in the queue (default: host-pid)")
    p.add_argument("--once", action="store_true", help="stop when the queues are empty (tests, cron)")
    p.set_defaults(func=cmd_worker)


def cmd_worker(args: Any) -> int:
    engine()  # the store is migrated (the queue's schema included) before the worker starts
    progress(f"worker {args.name or ''} on queues {', '.join(args.queues) if args.queues else 'all'} "
             f"(concurrency {args.concurrency}); stop with Ctrl+C".replace("worker  ", "worker "))
    run_worker(concurrency=args.concurrency, queues=args.queues, name=args.name, wait=not args.once)
    return 0
