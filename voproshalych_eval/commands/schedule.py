"""``schedule add|list|show|pause|resume|delete|run-now`` — run commands on a cron line; and the queue's tick.

``voproshalych-eval schedule add nightly --cron "0 3 * * *" -- tier1 --dataset golden_v1`` stores the command;
the workers' periodic tick (:func:`tick`, every minute) defers :func:`start_schedule` for each schedule that is
due (:func:`voproshalych_eval.engine.schedules.claim_due`). A scheduled run takes a fresh snapshot of the source
first, then enqueues the command's run (``--queue``), recorded with the schedule's name; a schedule whose
previous run is still going skips and says so. The jobs of one schedule share a queue lock, so two starts of
one schedule never run at once either.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import logging
from datetime import UTC, datetime
from typing import Any

from voproshalych_eval.commands.output import add_json_flag, emit, engine, progress
from voproshalych_eval.engine import schedules
from voproshalych_eval.engine.executor import run_state
from voproshalych_eval.engine.job_queue import SYSTEM_QUEUE, app
from voproshalych_eval.engine.schedules import START_TASK, defer_start

log = logging.getLogger(__name__)


def register(sub: Any) -> None:
    p = sub.add_parser("schedule", help="run commands on a schedule (cron), executed by the workers")
    ss = p.add_subparsers(dest="schedule_command", metavar="ACTION")
    ss.required = True
    q = ss.add_parser("add", help="add a schedule: NAME --cron '0 3 * * *' -- COMMAND [FLAGS]",
                      description="The command after `--` is any run command with its flags, e.g. "
                                  "`schedule add nightly --cron '0 3 * * *' -- tier1 --dataset golden_v1`.")
    q.add_argument("name")
    q.add_argument("--cron", required=True, help="a cron line: minute hour day month weekday")
    q.add_argument("--timezone", default=None,
                   help=f"the cron line's timezone (default VOPROSHALYCH_EVAL_TIMEZONE or {schedules.DEFAULT_TIMEZONE})")
    q.add_argument("--replace", action="store_true", help="overwrite a schedule of that name")
    q.add_argument("command", nargs="+", help="the run command and its flags (after --)")
    add_json_flag(q)
    q.set_defaults(func=cmd_add)
    for action, helptext, fn in (("show", "one schedule: its command, next time, last runs", cmd_show),
                                 ("pause", "stop starting runs (until resume)", cmd_pause),
                                 ("resume", "start runs again from the next cron time", cmd_resume),
                                 ("delete", "remove the schedule (its runs stay)", cmd_delete),
                                 ("run-now", "start the schedule's run now (on the queue), as the tick would",
                                  cmd_run_now)):
        q = ss.add_parser(action, help=helptext)
        q.add_argument("name")
        add_json_flag(q)
        q.set_defaults(func=fn)
    q = ss.add_parser("list", help="every schedule with its next time and last run")
    add_json_flag(q)
    q.set_defaults(func=cmd_list)


def _cli() -> Any:
    """The ``voproshalych-eval`` module, imported at call time as the CLI imports its command modules (a
    schedule runs CLI commands; a static import would make a cycle commands -> cli)."""
    return importlib.import_module("voproshalych_eval.cli")


def _validate_command(command: list[str]) -> None:
    parser = _cli().build_parser()
    try:
        with contextlib.redirect_stderr(io.StringIO()) as err:
            args = parser.parse_args(command)
    except SystemExit:
        raise ValueError(f"the scheduled command does not parse: {' '.join(command)} "
                         f"({err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else 'bad flags'})"
                         ) from None
    if not hasattr(args, "queue"):
        raise ValueError(f"{command[0]!r} is not a run command (a schedule starts runs: tier1, tier2, real-users …)")


def _line(s: schedules.Schedule) -> str:
    nxt = "paused" if s.paused else f"next {s.next_at():%Y-%m-%d %H:%M %Z}"
    last = f"last run #{s.last_run_id}" if s.last_run_id else "no run yet"
    return (f"{s.name:<16} {s.cron:<14} {s.timezone:<20} {nxt:<28} {last}"
            + (f" · {s.last_note}" if s.last_note else "") + f"\n    {' '.join(s.command)}")


def cmd_add(args: Any) -> int:
    command = [c for c in args.command if c != "--"]
    _validate_command(command)
    s = schedules.add(engine(), args.name, args.cron, command, timezone=args.timezone, replace=args.replace)
    emit({**s.to_json(), "next_at": s.next_at().isoformat()}, args.json, "added\n" + _line(s))
    return 0


def cmd_list(args: Any) -> int:
    found = schedules.list_schedules(engine())
    emit({"schedules": [{**s.to_json(), "next_at": None if s.paused else s.next_at().isoformat()} for s in found]},
         args.json, "\n".join(_line(s) for s in found) or "no schedules")
    return 0


def cmd_show(args: Any) -> int:
    eng = engine()
    s = schedules.get(eng, args.name)
    hist = schedules.history(eng, args.name)
    lines = [_line(s), "runs:"] + [f"  #{h['id']} {h['status']:<18} {h['started_at']:%Y-%m-%d %H:%M}" for h in hist]
    emit({**s.to_json(), "next_at": None if s.paused else s.next_at().isoformat(), "runs": hist}, args.json,
         "\n".join(lines))
    return 0


def cmd_pause(args: Any) -> int:
    s = schedules.set_paused(engine(), args.name, True)
    emit(s.to_json(), args.json, "paused\n" + _line(s))
    return 0


def cmd_resume(args: Any) -> int:
    s = schedules.set_paused(engine(), args.name, False)
    emit(s.to_json(), args.json, "resumed\n" + _line(s))
    return 0


def cmd_delete(args: Any) -> int:
    schedules.delete(engine(), args.name)
    emit({"deleted": args.name}, args.json, f"deleted {args.name}")
    return 0


def cmd_run_now(args: Any) -> int:
    schedules.get(engine(), args.name)  # exists
    job_id = defer_start(args.name, datetime.now(UTC))
    emit({"schedule": args.name, "job_id": job_id}, args.json,
         f"{args.name}: start deferred (job {job_id}); a worker takes the snapshot and enqueues the run")
    return 0


# ------------------------------------------------------------------------------------------- the tick


def run_due(now: datetime | None = None, *, start: Any = None) -> list[str]:
    """Claim the schedules due at ``now`` and start each (default: defer :func:`start_schedule` to the queue);
    returns their names. The workers' tick calls it every minute; tests pass a fake clock."""
    started = []
    for s, fire in schedules.claim_due(engine(), now):
        (start or defer_start)(s.name, fire)
        started.append(s.name)
    return started


def start_now(name: str, due_at: str | None = None) -> int | None:
    """Start schedule ``name``'s run: skip (and say so) while its previous run is still going; else take a
    fresh snapshot of the source and enqueue the command's run under the schedule's name. Returns the run id."""
    main = _cli().main
    eng = engine()
    s = schedules.get(eng, name)
    if s.last_run_id is not None and run_state(eng, s.last_run_id) == "running":
        msg = f"skipped at {due_at or 'now'}: run #{s.last_run_id} is still running"
        log.warning("schedule %s %s", name, msg)
        schedules.note(eng, name, msg)
        return None
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["snapshot", "take", "--json"])
    if code != 0:
        schedules.note(eng, name, f"failed: the snapshot could not be taken: {err.getvalue().strip()[-500:]}")
        return None
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*s.command, "--queue", "--schedule-name", name, "--json"])
    if code != 0:
        schedules.note(eng, name, f"failed: {' '.join(s.command)} exited {code}: {err.getvalue().strip()[-500:]}")
        return None
    run_id = int(json.loads(out.getvalue())["run_id"])
    schedules.note(eng, name, f"started run #{run_id}", run_id=run_id)
    progress(f"schedule {name}: run #{run_id} queued")
    return run_id


@app.task(name=START_TASK, queue=SYSTEM_QUEUE)
def start_schedule(name: str, due_at: str | None = None) -> int | None:
    """The queue's job starting one schedule's run (:func:`start_now`)."""
    return start_now(name, due_at)


@app.periodic(cron="* * * * *", periodic_id="schedules_tick")
@app.task(name="voproshalych_eval.schedules_tick", queue=SYSTEM_QUEUE, queueing_lock="schedules_tick")
def schedules_tick(timestamp: int) -> list[str]:
    """Every minute: defer the start of every schedule that is due."""
    return run_due(datetime.fromtimestamp(timestamp, UTC))
