"""Schedules: named run commands started on a cron line, in an explicit timezone (``eval.schedules``).

A schedule is a run command with its flags (``tier1 --dataset golden_v1``), a cron line (``0 3 * * *``) and a
timezone (default :data:`DEFAULT_TIMEZONE`, Tyumen's; ``VOPROSHALYCH_EVAL_TIMEZONE``). The queue's periodic tick
(:mod:`voproshalych_eval.commands.schedule`) asks :func:`claim_due` which schedules are due: the latest fire time
of the cron line not after *now* that is newer than the one last claimed. The claim is one conditional
``UPDATE``, so however many workers tick, each fire time is claimed once. A claimed schedule whose previous
run is still going is skipped and says so (:func:`note`): a schedule never overlaps itself.

Rows are read and written only here; the table is read at every tick, so schedules can be added, edited,
paused and deleted while the workers run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from sqlalchemy import Engine, text

from voproshalych_eval.config import env

#: Tyumen's timezone (UTC+5), the default of every schedule
DEFAULT_TIMEZONE = "Asia/Yekaterinburg"

_COLS = ("name, cron, timezone, command, paused, created_at, updated_at, last_due_at, last_run_id, "
         "last_started_at, last_note")


@dataclass
class Schedule:
    name: str
    cron: str
    timezone: str
    command: list[str]
    paused: bool = False
    created_at: datetime | None = None
    updated_at: datetime | None = None
    last_due_at: datetime | None = None
    last_run_id: int | None = None
    last_started_at: datetime | None = None
    last_note: str | None = None

    def next_at(self, now: datetime | None = None) -> datetime:
        """The next fire time after ``now``, in the schedule's timezone."""
        tz = ZoneInfo(self.timezone)
        return croniter(self.cron, (now or datetime.now(UTC)).astimezone(tz)).get_next(datetime)

    def to_json(self) -> dict[str, Any]:
        return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in self.__dict__.items()}


def default_timezone() -> str:
    """``VOPROSHALYCH_EVAL_TIMEZONE``, else :data:`DEFAULT_TIMEZONE`."""
    return env("VOPROSHALYCH_EVAL_TIMEZONE") or DEFAULT_TIMEZONE


def check(name: str, cron: str, timezone: str, command: list[str]) -> None:
    """Refuse a bad schedule with a sentence naming the field."""
    if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise ValueError(f"schedule name {name!r}: use letters, digits, '-', '_' or '.'")
    if not croniter.is_valid(cron):
        raise ValueError(f"schedule {name!r}: cron {cron!r} is not a valid cron line (e.g. '0 3 * * *')")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"schedule {name!r}: unknown timezone {timezone!r} (e.g. Asia/Yekaterinburg)") from None
    if not command:
        raise ValueError(f"schedule {name!r}: no run command given (after `--`, e.g. `-- tier1 --dataset golden_v1`)")


def _row(row: Any) -> Schedule:
    d = dict(row._mapping)
    d["command"] = list(d["command"] or [])
    return Schedule(**d)


def add(engine: Engine, name: str, cron: str, command: list[str], *, timezone: str | None = None,
        replace: bool = False) -> Schedule:
    """Create (or with ``replace`` overwrite) a schedule; its first fire is the first cron time after now."""
    timezone = timezone or default_timezone()
    check(name, cron, timezone, command)
    conflict = ("DO UPDATE SET cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, command = EXCLUDED.command, "
                "updated_at = now(), last_due_at = now()") if replace else "DO NOTHING"
    with engine.begin() as conn:
        row = conn.execute(text(
            "INSERT INTO eval.schedules(name, cron, timezone, command, last_due_at) VALUES (:n, :c, :tz, "
            f"CAST(:cmd AS jsonb), now()) ON CONFLICT (name) {conflict} RETURNING {_COLS}"),
            {"n": name, "c": cron, "tz": timezone, "cmd": json.dumps(list(command))}).one_or_none()
    if row is None:
        raise ValueError(f"schedule {name!r} exists already (delete it first, or replace it)")
    return _row(row)


def get(engine: Engine, name: str) -> Schedule:
    with engine.connect() as conn:
        row = conn.execute(text(f"SELECT {_COLS} FROM eval.schedules WHERE name = :n"), {"n": name}).one_or_none()
    if row is None:
        raise LookupError(f"no schedule named {name!r}")
    return _row(row)


def list_schedules(engine: Engine) -> list[Schedule]:
    with engine.connect() as conn:
        return [_row(r) for r in conn.execute(text(f"SELECT {_COLS} FROM eval.schedules ORDER BY name"))]


def set_paused(engine: Engine, name: str, paused: bool) -> Schedule:
    """Pause or resume; a resumed schedule fires next at its first cron time after now (no catch-up)."""
    with engine.begin() as conn:
        row = conn.execute(text(
            "UPDATE eval.schedules SET paused = :p, updated_at = now(), "
            f"last_due_at = CASE WHEN :p THEN last_due_at ELSE now() END WHERE name = :n RETURNING {_COLS}"),
            {"n": name, "p": paused}).one_or_none()
    if row is None:
        raise LookupError(f"no schedule named {name!r}")
    return _row(row)


def delete(engine: Engine, name: str) -> None:
    with engine.begin() as conn:
        if not conn.execute(text("DELETE FROM eval.schedules WHERE name = :n"), {"n": name}).rowcount:
            raise LookupError(f"no schedule named {name!r}")


def latest_fire(s: Schedule, now: datetime) -> datetime:
    """The schedule's latest cron time not after ``now`` (aware, UTC), computed in the schedule's timezone."""
    local = now.astimezone(ZoneInfo(s.timezone)) + timedelta(seconds=1)
    return croniter(s.cron, local).get_prev(datetime).astimezone(UTC)


def claim_due(engine: Engine, now: datetime | None = None) -> list[tuple[Schedule, datetime]]:
    """The schedules due at ``now`` (default: the clock), each claimed once for its latest fire time."""
    now = now or datetime.now(UTC)
    out = []
    for s in list_schedules(engine):
        if s.paused:
            continue
        fire = latest_fire(s, now)
        if s.last_due_at is not None and fire <= s.last_due_at:
            continue
        with engine.begin() as conn:
            won = conn.execute(text(
                "UPDATE eval.schedules SET last_due_at = :f WHERE name = :n AND NOT paused "
                "AND (last_due_at IS NULL OR last_due_at < :f)"), {"f": fire, "n": s.name}).rowcount
        if won:
            out.append((s, fire))
    return out


def note(engine: Engine, name: str, message: str, *, run_id: int | None = None) -> None:
    """What the schedule did last (``started run #N``, ``skipped: run #N still running`` …)."""
    with engine.begin() as conn:
        conn.execute(text(
            "UPDATE eval.schedules SET last_note = :m, last_run_id = coalesce(:r, last_run_id), "
            "last_started_at = CASE WHEN :r IS NULL THEN last_started_at ELSE now() END WHERE name = :n"),
            {"n": name, "m": message[:1000], "r": run_id})


def history(engine: Engine, name: str, limit: int = 20) -> list[dict[str, Any]]:
    """The schedule's runs, newest first: id, tier, status, started, finished."""
    from voproshalych_eval.engine.runs import schedule_runs  # heavy: defers pandas (via runs)

    return schedule_runs(engine, name, limit)


#: the queue's task that starts one schedule's run (defined with the CLI: ``commands.schedule``)
START_TASK = "voproshalych_eval.start_schedule"


def defer_start(name: str, due_at: datetime) -> int:
    """Put the start of schedule ``name`` on the queue (one queue lock per schedule: its starts never run at
    once); returns the job id. "Run now" and the workers' tick both come here."""
    # heavy: defers procrastinate (via job_queue)
    from voproshalych_eval.engine.job_queue import SYSTEM_QUEUE, open_sync

    return open_sync().configure_task(START_TASK, queue=SYSTEM_QUEUE, lock=f"schedule:{name}").defer(
        name=name, due_at=due_at.isoformat())
